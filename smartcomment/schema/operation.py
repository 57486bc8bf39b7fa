"""Operation and edge records."""

from __future__ import annotations

import uuid
from typing import Any

from smartcomment.schema.base import TraceableModel, copy_metadata


class OpRecord(TraceableModel):
    """An operation: a named step whose edges connect the variables it read and wrote."""

    __slots__ = ("op_id", "op_name", "comment", "category", "graph_id", "user_id", "project_id", "session_id")

    def __init__(
        self,
        *,
        graph_id: str,
        session_id: str,
        filename: str,
        lineno: int,
        op_id: str | None = None,
        op_name: str | None = None,
        comment: str | None = None,
        category: str = "operation",
        user_id: str | None = None,
        project_id: str | None = None,
        created_at: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._init_location(created_at, filename, lineno)
        self.op_id = op_id if op_id is not None else "op-" + uuid.uuid4().hex
        self.op_name = op_name
        self.comment = comment
        self.category = category
        self.graph_id = graph_id
        self.user_id = user_id
        self.project_id = project_id
        self.session_id = session_id
        self._metadata = copy_metadata(metadata) if metadata else {}

    def model_dump(self) -> dict[str, Any]:
        """The record as exported by smartcomment 0.1.2."""
        return {
            "created_at": self.created_at,
            "filename": self.filename,
            "lineno": self.lineno,
            "op_id": self.op_id,
            "op_name": self.op_name,
            "comment": self.comment,
            "category": self.category,
            "graph_id": self.graph_id,
            "user_id": self.user_id,
            "project_id": self.project_id,
            "session_id": self.session_id,
            "metadata": copy_metadata(self._metadata),
            "trigger_point": self.trigger_point,
        }


class OpEdge(TraceableModel):
    """A directed edge ``source -> target`` that belongs to one operation."""

    __slots__ = (
        "edge_id",
        "graph_id",
        "user_id",
        "project_id",
        "session_id",
        "op_id",
        "category",
        "source_full_node_id",
        "target_full_node_id",
        "comment",
    )

    def __init__(
        self,
        *,
        graph_id: str,
        session_id: str,
        op_id: str,
        source_full_node_id: str,
        target_full_node_id: str,
        filename: str,
        lineno: int,
        edge_id: str | None = None,
        category: str = "operation",
        comment: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        created_at: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._init_location(created_at, filename, lineno)
        self.edge_id = edge_id if edge_id is not None else "edge-" + uuid.uuid4().hex
        self.graph_id = graph_id
        self.user_id = user_id
        self.project_id = project_id
        self.session_id = session_id
        self.op_id = op_id
        self.category = category
        self.source_full_node_id = source_full_node_id
        self.target_full_node_id = target_full_node_id
        self.comment = comment
        self._metadata = copy_metadata(metadata) if metadata else {}

    def model_dump(self) -> dict[str, Any]:
        """The record as exported by smartcomment 0.1.2."""
        return {
            "created_at": self.created_at,
            "filename": self.filename,
            "lineno": self.lineno,
            "edge_id": self.edge_id,
            "graph_id": self.graph_id,
            "user_id": self.user_id,
            "project_id": self.project_id,
            "session_id": self.session_id,
            "op_id": self.op_id,
            "category": self.category,
            "source_full_node_id": self.source_full_node_id,
            "target_full_node_id": self.target_full_node_id,
            "comment": self.comment,
            "metadata": copy_metadata(self._metadata),
            "trigger_point": self.trigger_point,
        }
