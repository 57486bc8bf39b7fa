"""Read-only handle over a stored variable version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smartcomment.runtime import _render
from smartcomment.schema.variable import Variable


class RuntimeVariable:
    """A read-only view of one variable version, optionally carrying a decoder.

    ``value`` is ``decoding_fn(raw_value)`` when a decoder is set, else the raw stored string
    (handles obtained from graph queries and imports have no decoder).
    """

    __slots__ = ("_variable", "encoding_fn", "decoding_fn", "schema")

    def __init__(
        self,
        variable: Variable,
        *,
        encoding_fn: Callable[[Any], str] | None = None,
        decoding_fn: Callable[[str], Any] | None = None,
        schema: Any = None,
    ) -> None:
        if schema is not None:
            encoding_fn = encoding_fn or (lambda v: v.model_dump_json())
            decoding_fn = decoding_fn or schema.model_validate_json
        self._variable = variable
        self.encoding_fn = encoding_fn
        self.decoding_fn = decoding_fn
        self.schema = schema

    @property
    def variable(self) -> Variable:
        """The underlying record."""
        return self._variable

    name = property(lambda self: self._variable.name)
    full_name = property(lambda self: self._variable.full_name)
    version = property(lambda self: self._variable.version)
    node_id = property(lambda self: self._variable.node_id)
    full_node_id = property(lambda self: self._variable.full_node_id)
    raw_value = property(lambda self: self._variable.value)
    comment = property(lambda self: self._variable.comment)
    category = property(lambda self: self._variable.category)
    class_name = property(lambda self: self._variable.class_name)
    graph_id = property(lambda self: self._variable.graph_id)
    session_id = property(lambda self: self._variable.session_id)
    user_id = property(lambda self: self._variable.user_id)
    project_id = property(lambda self: self._variable.project_id)
    trigger_point = property(lambda self: self._variable.trigger_point)
    created_at = property(lambda self: self._variable.created_at)
    metadata = property(lambda self: self._variable.metadata)

    @property
    def value(self) -> Any:
        """The decoded value, or the raw stored string when no decoder is attached."""
        raw = self._variable.value
        return self.decoding_fn(raw) if self.decoding_fn is not None else raw

    def to_xml(self, include_metadata: bool = False, include_variable_value: bool = True) -> str:
        """The ``<variable>`` element (see spec §2.6)."""
        return _render.variable_xml(
            self._variable, include_metadata=include_metadata, include_variable_value=include_variable_value
        )

    def to_markdown(self, include_metadata: bool = False, include_variable_value: bool = True) -> str:
        """The Markdown block of the variable."""
        return _render.variable_markdown(
            self._variable, include_metadata=include_metadata, include_variable_value=include_variable_value
        )

    def __repr__(self) -> str:
        return repr(self._variable.value)
