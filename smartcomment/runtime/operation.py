"""Read-only handles over operations and edges."""

from __future__ import annotations

from smartcomment.runtime import _render
from smartcomment.schema.operation import OpEdge, OpRecord


class RuntimeOp:
    """A read-only view of an operation record."""

    __slots__ = ("_op",)

    def __init__(self, op: OpRecord) -> None:
        self._op = op

    @property
    def op(self) -> OpRecord:
        """The underlying record."""
        return self._op

    op_id = property(lambda self: self._op.op_id)
    op_name = property(lambda self: self._op.op_name)
    comment = property(lambda self: self._op.comment)
    category = property(lambda self: self._op.category)
    metadata = property(lambda self: self._op.metadata)
    graph_id = property(lambda self: self._op.graph_id)
    session_id = property(lambda self: self._op.session_id)
    user_id = property(lambda self: self._op.user_id)
    project_id = property(lambda self: self._op.project_id)
    trigger_point = property(lambda self: self._op.trigger_point)
    created_at = property(lambda self: self._op.created_at)

    def to_xml(self, include_metadata: bool = False) -> str:
        """The ``<operation>`` element."""
        return _render.op_xml(self._op, include_metadata=include_metadata)

    def to_markdown(self, include_metadata: bool = False) -> str:
        """The Markdown block of the operation."""
        return _render.op_markdown(self._op, include_metadata=include_metadata)

    def __repr__(self) -> str:
        return f"RuntimeOp(op_id={self._op.op_id!r}, op_name={self._op.op_name!r})"


class RuntimeEdge:
    """A read-only view of an edge record."""

    __slots__ = ("_edge",)

    def __init__(self, edge: OpEdge) -> None:
        self._edge = edge

    @property
    def edge(self) -> OpEdge:
        """The underlying record."""
        return self._edge

    edge_id = property(lambda self: self._edge.edge_id)
    source_full_node_id = property(lambda self: self._edge.source_full_node_id)
    target_full_node_id = property(lambda self: self._edge.target_full_node_id)
    op_id = property(lambda self: self._edge.op_id)
    comment = property(lambda self: self._edge.comment)
    category = property(lambda self: self._edge.category)
    graph_id = property(lambda self: self._edge.graph_id)
    session_id = property(lambda self: self._edge.session_id)
    user_id = property(lambda self: self._edge.user_id)
    project_id = property(lambda self: self._edge.project_id)
    metadata = property(lambda self: self._edge.metadata)
    trigger_point = property(lambda self: self._edge.trigger_point)
    created_at = property(lambda self: self._edge.created_at)

    def to_xml(self, include_metadata: bool = False) -> str:
        """The ``<edge>`` element."""
        return _render.edge_xml(self._edge, include_metadata=include_metadata)

    def to_markdown(self, include_metadata: bool = False) -> str:
        """The Markdown block of the edge."""
        return _render.edge_markdown(self._edge, include_metadata=include_metadata)

    def __repr__(self) -> str:
        e = self._edge
        return f"RuntimeEdge({e.source_full_node_id!r} -> {e.target_full_node_id!r}, op_id={e.op_id!r})"
