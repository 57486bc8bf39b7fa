"""Read-only handle over a session record."""

from __future__ import annotations

from smartcomment.runtime import _render
from smartcomment.schema.session import Session


class RuntimeSession:
    """A read-only view of a session record."""

    __slots__ = ("_session",)

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def session(self) -> Session:
        """The underlying record."""
        return self._session

    session_id = property(lambda self: self._session.session_id)
    session_name = property(lambda self: self._session.session_name)
    graph_id = property(lambda self: self._session.graph_id)
    user_id = property(lambda self: self._session.user_id)
    project_id = property(lambda self: self._session.project_id)
    comment = property(lambda self: self._session.comment)
    category = property(lambda self: self._session.category)
    metadata = property(lambda self: self._session.metadata)
    trigger_point = property(lambda self: self._session.trigger_point)
    created_at = property(lambda self: self._session.created_at)

    def to_xml(self, include_metadata: bool = False) -> str:
        """The ``<session>`` element."""
        return _render.session_xml(self._session, include_metadata=include_metadata)

    def to_markdown(self, include_metadata: bool = False) -> str:
        """The Markdown block of the session."""
        return _render.session_markdown(self._session, include_metadata=include_metadata)

    def __repr__(self) -> str:
        return f"RuntimeSession(session_id={self._session.session_id!r})"
