"""Tracing state carried in ContextVars: current graph, session, op and naming context.

Every ``with`` scope sets its ContextVar and resets it by token on exit, so state is safe
across threads (a new thread starts empty) and asyncio tasks (each task copies the context).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smartcomment.runtime.network import ExecNetwork
    from smartcomment.runtime.variable import RuntimeVariable
    from smartcomment.schema.operation import OpRecord
    from smartcomment.schema.session import Session

logger = logging.getLogger("smartcomment")

_GRAPH: ContextVar[ExecNetwork | None] = ContextVar("smartcomment_graph", default=None)
_SESSION: ContextVar[Session | None] = ContextVar("smartcomment_session", default=None)
_OP: ContextVar[OpRecord | None] = ContextVar("smartcomment_op", default=None)
_CONTEXT: ContextVar[TracingContext | None] = ContextVar("smartcomment_context", default=None)
_ENABLED_OVERRIDE: ContextVar[bool | None] = ContextVar("smartcomment_enabled", default=None)

# Process-wide switch, as in smartcomment 0.1.2 (the MemBase runners toggle it from config);
# ``tracing_enabled`` below scopes an override to the current context instead.
_TRACING_ENABLED = True


def is_tracing_enabled() -> bool:
    """True when recording is on (a scoped override wins over the process-wide switch)."""
    override = _ENABLED_OVERRIDE.get()
    return _TRACING_ENABLED if override is None else override


def enable_tracing() -> bool:
    """Turn recording on for every thread; returns the previous process-wide state."""
    global _TRACING_ENABLED
    previous, _TRACING_ENABLED = _TRACING_ENABLED, True
    logger.info("smartcomment tracing enabled")
    return previous


def disable_tracing() -> bool:
    """Turn recording off for every thread; returns the previous process-wide state."""
    global _TRACING_ENABLED
    previous, _TRACING_ENABLED = _TRACING_ENABLED, False
    logger.info("smartcomment tracing disabled")
    return previous


@contextmanager
def tracing_enabled(enabled: bool) -> Iterator[None]:
    """Scope recording on or off to this context (thread / task); restored on exit."""
    token = _ENABLED_OVERRIDE.set(bool(enabled))
    try:
        yield
    finally:
        _ENABLED_OVERRIDE.reset(token)


def current_graph() -> ExecNetwork | None:
    """The active graph, or None."""
    return _GRAPH.get()


def current_session() -> Session | None:
    """The active session record, or None."""
    return _SESSION.get()


def current_op() -> OpRecord | None:
    """The active operation record, or None."""
    return _OP.get()


def current_context() -> TracingContext | None:
    """The active naming context, or None."""
    return _CONTEXT.get()


class TracingContext:
    """Named handles (``name -> RuntimeVariable``) and propagated metadata of a scope.

    Graph, session and propagation scopes push a child context that starts as a shallow copy
    of its parent; names registered inside a scope disappear when it ends.
    """

    __slots__ = ("_variables", "_names_by_id", "_metadata")

    def __init__(
        self,
        variables: dict[str, RuntimeVariable] | None = None,
        names_by_id: dict[str, dict[str, None]] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._variables: dict[str, RuntimeVariable] = dict(variables) if variables else {}
        self._names_by_id: dict[str, dict[str, None]] = (
            {k: dict(v) for k, v in names_by_id.items()} if names_by_id else {}
        )
        self._metadata: dict[str, Any] = dict(metadata) if metadata else {}

    @classmethod
    def inherit(cls, parent: TracingContext | None, extra_metadata: dict[str, Any] | None = None) -> TracingContext:
        """A child context copying ``parent``'s names and metadata, plus ``extra_metadata``."""
        if parent is None:
            return cls(metadata=extra_metadata)
        metadata = {**parent._metadata, **extra_metadata} if extra_metadata else parent._metadata
        return cls(parent._variables, parent._names_by_id, metadata)

    @property
    def metadata(self) -> dict[str, Any]:
        """A copy of the propagated metadata."""
        return dict(self._metadata)

    def update_metadata(self, metadata: dict[str, Any]) -> None:
        """Merge into the propagated metadata."""
        self._metadata.update(metadata)

    @property
    def graph(self) -> ExecNetwork | None:
        """The active graph."""
        return _GRAPH.get()

    @property
    def session(self) -> Session | None:
        """The active session record."""
        return _SESSION.get()

    @property
    def op(self) -> OpRecord | None:
        """The active operation record."""
        return _OP.get()

    def register_variable(self, name: str, rv: RuntimeVariable, overwrite: bool = False) -> None:
        """Bind ``name`` to a handle (ValueError if taken and not ``overwrite``)."""
        old = self._variables.get(name)
        if old is not None:
            if not overwrite:
                raise ValueError(f"context variable {name!r} is already registered (pass overwrite=True to replace it)")
            self._forget(name, old)
        self._variables[name] = rv
        self._names_by_id.setdefault(rv.full_node_id, {})[name] = None

    def _forget(self, name: str, rv: RuntimeVariable) -> None:
        names = self._names_by_id.get(rv.full_node_id)
        if names is not None:
            names.pop(name, None)
            if not names:
                del self._names_by_id[rv.full_node_id]

    def get_variable(self, name: str) -> RuntimeVariable:
        """The handle bound to ``name`` (NameError if none)."""
        try:
            return self._variables[name]
        except KeyError:
            raise NameError(f"no context variable named {name!r}; registered: {sorted(self._variables)}") from None

    def get_variable_by_full_node_id(self, full_node_id: str) -> RuntimeVariable:
        """A handle registered for this node (NameError if none)."""
        names = self._names_by_id.get(full_node_id)
        if not names:
            raise NameError(f"no context variable refers to node {full_node_id!r}")
        return self._variables[next(iter(names))]

    def get_names_by_full_node_id(self, full_node_id: str) -> set[str]:
        """Every name bound to this node."""
        return set(self._names_by_id.get(full_node_id, ()))

    def remove_variable(self, name: str) -> RuntimeVariable:
        """Unbind ``name`` and return its handle (NameError if none); the graph is untouched."""
        try:
            rv = self._variables.pop(name)
        except KeyError:
            raise NameError(f"no context variable named {name!r}") from None
        self._forget(name, rv)
        return rv

    def query_variables(
        self,
        *,
        name_pattern: str | None = None,
        category: str | Iterable[str] | None = None,
        class_name: str | None = None,
    ) -> list[RuntimeVariable]:
        """Registered handles matching all filters (regex on the registered name), in order."""
        rx = re.compile(name_pattern) if name_pattern is not None else None
        cats = {category} if isinstance(category, str) else (set(category) if category is not None else None)
        return [
            rv
            for name, rv in self._variables.items()
            if (rx is None or rx.search(name))
            and (cats is None or rv.category in cats)
            and (class_name is None or rv.class_name == class_name)
        ]

    def __repr__(self) -> str:
        return f"TracingContext(variables={sorted(self._variables)}, metadata={self._metadata!r})"
