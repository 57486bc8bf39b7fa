"""The session record: a named stage of a traced run (construction, search, evaluation...)."""

from __future__ import annotations

import uuid
from typing import Any

from smartcomment.schema.base import TraceableModel, copy_metadata


class Session(TraceableModel):
    """A session groups the variables, operations and edges recorded while it was active."""

    __slots__ = ("session_id", "session_name", "graph_id", "user_id", "project_id", "comment", "category")

    def __init__(
        self,
        *,
        graph_id: str,
        filename: str,
        lineno: int,
        session_id: str | None = None,
        session_name: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        comment: str | None = None,
        category: str = "session",
        created_at: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self._init_location(created_at, filename, lineno)
        self.session_id = session_id if session_id is not None else "session-" + uuid.uuid4().hex
        self.session_name = session_name
        self.graph_id = graph_id
        self.user_id = user_id
        self.project_id = project_id
        self.comment = comment
        self.category = category
        self._metadata = copy_metadata(metadata) if metadata else {}

    def model_dump(self) -> dict[str, Any]:
        """The record as exported by smartcomment 0.1.2."""
        return {
            "created_at": self.created_at,
            "filename": self.filename,
            "lineno": self.lineno,
            "session_id": self.session_id,
            "session_name": self.session_name,
            "graph_id": self.graph_id,
            "user_id": self.user_id,
            "project_id": self.project_id,
            "comment": self.comment,
            "category": self.category,
            "metadata": copy_metadata(self._metadata),
            "trigger_point": self.trigger_point,
        }
