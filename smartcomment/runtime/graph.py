"""``RuntimeGraph``: an immutable view (nodes, edges, ops) with id-based set algebra."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from smartcomment.runtime import _render
from smartcomment.runtime.operation import RuntimeEdge, RuntimeOp
from smartcomment.runtime.variable import RuntimeVariable

__all__ = ["RuntimeEdge", "RuntimeGraph", "RuntimeOp", "RuntimeVariable"]


def _as_set(values: str | Iterable[str] | None) -> set[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        return {values}
    return set(values)


class RuntimeGraph:
    """A read-only subgraph: lists of variable, edge and operation handles (order as given)."""

    __slots__ = ("nodes", "edges", "ops")

    def __init__(
        self,
        nodes: Iterable[RuntimeVariable] = (),
        edges: Iterable[RuntimeEdge] = (),
        ops: Iterable[RuntimeOp] = (),
    ) -> None:
        self.nodes: list[RuntimeVariable] = list(nodes)
        self.edges: list[RuntimeEdge] = list(edges)
        self.ops: list[RuntimeOp] = list(ops)

    # ------------------------------------------------------------------ basics
    def __contains__(self, full_node_id: object) -> bool:
        return any(n.full_node_id == full_node_id for n in self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def edge_count(self) -> int:
        """Number of edges."""
        return len(self.edges)

    @property
    def op_count(self) -> int:
        """Number of operations."""
        return len(self.ops)

    @property
    def is_empty(self) -> bool:
        """True when the view has no nodes, edges or operations."""
        return not self.nodes and not self.edges and not self.ops

    def __repr__(self) -> str:
        return f"RuntimeGraph(nodes={len(self.nodes)}, edges={len(self.edges)}, ops={len(self.ops)})"

    def _ids(self) -> tuple[set[str], set[str], set[str]]:
        return (
            {n.full_node_id for n in self.nodes},
            {e.edge_id for e in self.edges},
            {o.op_id for o in self.ops},
        )

    # ------------------------------------------------------------------ filters
    def induced_subgraph(self, ids: Iterable[str]) -> RuntimeGraph:
        """Nodes whose ids are in ``ids``, the edges between them, and those edges' ops."""
        keep = set(ids)
        nodes = [n for n in self.nodes if n.full_node_id in keep]
        present = {n.full_node_id for n in nodes}
        edges = [e for e in self.edges if e.source_full_node_id in present and e.target_full_node_id in present]
        op_ids = {e.op_id for e in edges}
        return RuntimeGraph(nodes, edges, [o for o in self.ops if o.op_id in op_ids])

    def filter_by_category(self, category: str | Iterable[str]) -> RuntimeGraph:
        """Induced subgraph of the nodes whose category is in ``category``."""
        cats = _as_set(category) or set()
        return self.induced_subgraph(n.full_node_id for n in self.nodes if n.category in cats)

    def filter_by_time(self, start: str | None = None, end: str | None = None) -> RuntimeGraph:
        """Induced subgraph of the nodes created within ``[start, end]`` (inclusive)."""
        return self.induced_subgraph(
            n.full_node_id
            for n in self.nodes
            if (start is None or n.created_at >= start) and (end is None or n.created_at <= end)
        )

    def time_range(self) -> tuple[str, str] | None:
        """``(min, max)`` node creation time, or None for a graph without nodes."""
        if not self.nodes:
            return None
        stamps = [n.created_at for n in self.nodes]
        return min(stamps), max(stamps)

    def get_root_nodes(self) -> list[RuntimeVariable]:
        """Nodes without an incoming edge inside this view."""
        targets = {e.target_full_node_id for e in self.edges}
        return [n for n in self.nodes if n.full_node_id not in targets]

    def get_leaf_nodes(self) -> list[RuntimeVariable]:
        """Nodes without an outgoing edge inside this view."""
        sources = {e.source_full_node_id for e in self.edges}
        return [n for n in self.nodes if n.full_node_id not in sources]

    # ------------------------------------------------------------------ algebra
    def __and__(self, other: RuntimeGraph) -> RuntimeGraph:
        other_nodes, other_edges, _ = other._ids()
        nodes = [n for n in self.nodes if n.full_node_id in other_nodes]
        common = {n.full_node_id for n in nodes}
        edges = [
            e
            for e in self.edges
            if e.edge_id in other_edges and e.source_full_node_id in common and e.target_full_node_id in common
        ]
        op_ids = {e.op_id for e in edges}
        return RuntimeGraph(nodes, edges, [o for o in self.ops if o.op_id in op_ids])

    def __or__(self, other: RuntimeGraph) -> RuntimeGraph:
        node_ids, edge_ids, op_ids = self._ids()
        return RuntimeGraph(
            self.nodes + [n for n in other.nodes if n.full_node_id not in node_ids],
            self.edges + [e for e in other.edges if e.edge_id not in edge_ids],
            self.ops + [o for o in other.ops if o.op_id not in op_ids],
        )

    def __sub__(self, other: RuntimeGraph) -> RuntimeGraph:
        other_nodes, _, other_ops = other._ids()
        nodes = [n for n in self.nodes if n.full_node_id not in other_nodes]
        remaining = {n.full_node_id for n in nodes}
        edges = [
            e
            for e in self.edges
            if e.op_id not in other_ops and e.source_full_node_id in remaining and e.target_full_node_id in remaining
        ]
        op_ids = {e.op_id for e in edges}
        return RuntimeGraph(nodes, edges, [o for o in self.ops if o.op_id in op_ids])

    def __xor__(self, other: RuntimeGraph) -> RuntimeGraph:
        a_nodes, a_edges, a_ops = self._ids()
        b_nodes, b_edges, b_ops = other._ids()
        x_nodes, x_edges, x_ops = a_nodes ^ b_nodes, a_edges ^ b_edges, a_ops ^ b_ops
        nodes = [n for n in self.nodes + other.nodes if n.full_node_id in x_nodes]
        edges = [
            e
            for e in self.edges + other.edges
            if e.edge_id in x_edges
            and e.op_id in x_ops
            and e.source_full_node_id in x_nodes
            and e.target_full_node_id in x_nodes
        ]
        kept_ops = {e.op_id for e in edges}
        return RuntimeGraph(nodes, edges, [o for o in self.ops + other.ops if o.op_id in kept_ops])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RuntimeGraph):
            return NotImplemented
        return self._ids() == other._ids()

    __hash__ = None  # type: ignore[assignment]

    def issubset(self, other: RuntimeGraph) -> bool:
        """True when every node, edge and op id of this view is in ``other``."""
        return all(mine <= theirs for mine, theirs in zip(self._ids(), other._ids(), strict=True))

    def issuperset(self, other: RuntimeGraph) -> bool:
        """True when ``other`` is a subset of this view."""
        return other.issubset(self)

    def __le__(self, other: RuntimeGraph) -> bool:
        return self.issubset(other)

    def __ge__(self, other: RuntimeGraph) -> bool:
        return self.issuperset(other)

    def __lt__(self, other: RuntimeGraph) -> bool:
        return self.issubset(other) and self != other

    def __gt__(self, other: RuntimeGraph) -> bool:
        return self.issuperset(other) and self != other

    # ------------------------------------------------------------------ rendering
    def to_xml(self, *, include_metadata: bool = False, include_variable_value: bool = True) -> str:
        """The ``<graph>`` document (spec §2.6); ``<graph />`` when empty."""
        return _render.graph_xml(
            self.nodes, self.edges, self.ops, include_metadata=include_metadata,
            include_variable_value=include_variable_value,
        )

    def to_markdown(self, *, include_metadata: bool = False, include_variable_value: bool = True) -> str:
        """The Markdown rendering (``## Graph`` ...)."""
        return _render.graph_markdown(
            self.nodes, self.edges, self.ops, include_metadata=include_metadata,
            include_variable_value=include_variable_value,
        )

    def visualize(self, backend: str = "dot", **kwargs: Any) -> Any:
        """Render with a visual backend (``"dot"`` text; see :mod:`smartcomment.visualize`)."""
        from smartcomment.visualize import visualize

        return visualize(self, backend=backend, **kwargs)
