"""The variable (node) record: one immutable version of a named value."""

from __future__ import annotations

from typing import Any

from smartcomment.schema.base import TraceableModel, copy_metadata


def _has_alnum(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


class Variable(TraceableModel):
    """One version of a variable in the execution graph.

    ``full_name`` is ``"{class_name}:{name}"`` (or ``name``), ``full_node_id`` is
    ``"{full_name}@{version}"`` and is the node's key in the graph.
    """

    __slots__ = (
        "name",
        "version",
        "value",
        "comment",
        "category",
        "graph_id",
        "user_id",
        "class_name",
        "project_id",
        "session_id",
        "full_name",
        "full_node_id",
    )

    def __init__(
        self,
        *,
        name: str,
        value: str,
        graph_id: str,
        session_id: str,
        filename: str,
        lineno: int,
        version: int = 1,
        comment: str | None = None,
        category: str = "variable",
        user_id: str | None = None,
        class_name: str | None = None,
        project_id: str | None = None,
        created_at: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not _has_alnum(name):
            raise ValueError(f"variable name must contain an alphanumeric character, got {name!r}")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError(f"variable version must be an integer >= 1, got {version!r}")
        self._init_location(created_at, filename, lineno)
        self.name = name
        self.version = version
        self.value = value
        self.comment = comment
        self.category = category
        self.graph_id = graph_id
        self.user_id = user_id
        self.class_name = class_name
        self.project_id = project_id
        self.session_id = session_id
        self._metadata = copy_metadata(metadata) if metadata else {}
        self.full_name = f"{class_name}:{name}" if class_name else name
        self.full_node_id = f"{self.full_name}@{version}"

    @property
    def node_id(self) -> str:
        """``"{name}@{version}"``."""
        return f"{self.name}@{self.version}"

    def model_dump(self) -> dict[str, Any]:
        """The record as exported by smartcomment 0.1.2 (field order included)."""
        return {
            "created_at": self.created_at,
            "filename": self.filename,
            "lineno": self.lineno,
            "name": self.name,
            "version": self.version,
            "value": self.value,
            "comment": self.comment,
            "category": self.category,
            "graph_id": self.graph_id,
            "user_id": self.user_id,
            "class_name": self.class_name,
            "project_id": self.project_id,
            "session_id": self.session_id,
            "metadata": copy_metadata(self._metadata),
            "trigger_point": self.trigger_point,
            "full_name": self.full_name,
            "node_id": self.node_id,
            "full_node_id": self.full_node_id,
        }
