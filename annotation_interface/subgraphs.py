"""The subgraphs the viewer shows, as smartcomment ``RuntimeGraph`` objects.

* the **message subgraph** of the timeline: the ops that processed one message
  (:meth:`GraphIndex.message_op_ids`) joined with ``ExecNetwork.filter_by_operation``;
* the three **candidate subgraphs** of the attribution view (spec-tracer §6): construction (one
  per evidence message), retrieval, response (question-answering op ∪ judge op);
* the **related variables** of a node: a one-hop ``bfs`` backward, forward or both;
* the **trail** of an automatic attribution: the union of the ops its steps name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .loader import ParsedGraph
from .parser import QARecord

__all__ = [
    "Subgraph",
    "attribution_subgraphs",
    "construction_subgraphs",
    "message_subgraph",
    "op_subgraph",
    "related_variables",
    "response_subgraph",
    "retrieval_subgraph",
    "trail_subgraph",
]

SubgraphKind = Literal["message", "construction", "retrieval", "response", "operation", "related", "trail"]
MAX_TRAIL_OPS = 40
MAX_RELATED = 150


@dataclass(kw_only=True)
class Subgraph:
    """A titled subgraph with the ops it was built from."""

    kind: SubgraphKind
    title: str
    op_ids: list[str]
    graph: Any
    """``smartcomment.RuntimeGraph``."""
    focus_ids: tuple[str, ...] = ()
    """Nodes the figure highlights (the message, the evidence, the query, …)."""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def candidates(self) -> list[tuple[str, list[str]]]:
        """``[(op_id, [edge_id, …])]`` in op order: what an annotation of this subgraph can name."""
        by_op: dict[str, list[str]] = {op: [] for op in self.op_ids}
        for e in self.graph.edges:
            by_op.setdefault(e.op_id, []).append(e.edge_id)
        return [(op, edges) for op, edges in by_op.items() if edges]

    @property
    def is_empty(self) -> bool:
        """True when no op contributed an edge."""
        return self.graph.edge_count == 0 and len(self.graph) == 0


def _filter(pg: ParsedGraph, op_ids: Sequence[str]) -> Any:
    return pg.network.filter_by_operation(list(op_ids))


def op_subgraph(pg: ParsedGraph, op_id: str) -> Subgraph:
    """The operation subgraph of one op (all its edges, both endpoints, the op)."""
    op = pg.index.ops.get(op_id)
    title = f"{op.label} · {op_id}" if op else op_id
    return Subgraph(kind="operation", title=title, op_ids=[op_id], graph=_filter(pg, [op_id]))


def message_subgraph(pg: ParsedGraph, message_full_node_id: str) -> Subgraph:
    """The construction ops that processed one message (spec §6 "Edge & Variable Subgraph")."""
    msg = pg.index.message(message_full_node_id)
    ops = pg.index.message_op_ids(message_full_node_id)
    if not ops and message_full_node_id in pg.network:
        ops = [op.op_id for op in pg.network.get_operations_by_variable(message_full_node_id)
               if pg.index.is_construction_op(op.op_id)]
    label = f"{msg.message_id} ({msg.speaker})" if msg else message_full_node_id
    return Subgraph(kind="message", title=f"Ops that processed message {label}", op_ids=ops,
                    graph=_filter(pg, ops), focus_ids=(message_full_node_id,),
                    note="" if ops else "no construction operation processed this message")


def construction_subgraphs(pg: ParsedGraph, qa: QARecord) -> list[Subgraph]:
    """One construction subgraph per evidence node of the question."""
    out = []
    for ev in qa.case_evidence_ids:
        node_id = ev if ev in pg.network else pg.index.latest.get(ev, ev)
        if pg.index.message(node_id) is not None:
            sub = message_subgraph(pg, node_id)
        elif node_id in pg.network:
            ops = [op.op_id for op in pg.network.get_operations_by_variable(node_id)
                   if pg.index.is_construction_op(op.op_id)]
            sub = Subgraph(kind="construction", title="", op_ids=ops, graph=_filter(pg, ops), focus_ids=(node_id,))
        else:
            sub = Subgraph(kind="construction", title="", op_ids=[], graph=_filter(pg, []), focus_ids=(),
                           note=f"evidence {ev!r} is not in the graph")
        sub.kind = "construction"
        sub.title = f"Construction · evidence {ev}"
        out.append(sub)
    return out


def retrieval_subgraph(pg: ParsedGraph, qa: QARecord) -> Subgraph:
    """The retrieval ops of the question (or the retrieval time window after the query)."""
    ops = pg.index.retrieval_op_ids(qa)
    return Subgraph(kind="retrieval", title=f"Retrieval · {qa.qa_id}", op_ids=ops, graph=_filter(pg, ops),
                    focus_ids=(qa.query_full_node_id, *qa.retrieved_ids),
                    note="" if ops else "no retrieval operation found for this question")


def response_subgraph(pg: ParsedGraph, qa: QARecord) -> Subgraph:
    """The question-answering op ∪ the judge op of the question (whichever exist)."""
    ops = pg.index.response_op_ids(qa)
    missing = [name for name, op in (("question-answering", qa.qa_op_id), ("llm-judge", qa.judge_op_id)) if not op]
    focus = tuple(x for x in (qa.query_full_node_id, qa.prediction_id) if x)
    return Subgraph(kind="response", title=f"Response · {qa.qa_id}", op_ids=ops, graph=_filter(pg, ops),
                    focus_ids=focus, note=f"no {' / '.join(missing)} op for this question" if missing else "")


def attribution_subgraphs(pg: ParsedGraph, qa: QARecord) -> list[Subgraph]:
    """The three candidate subgraphs of spec §6: construction (per evidence), retrieval, response."""
    return [*construction_subgraphs(pg, qa), retrieval_subgraph(pg, qa), response_subgraph(pg, qa)]


def related_variables(pg: ParsedGraph, full_node_id: str,
                      direction: Literal["backward", "forward", "both"] = "both",
                      limit: int = MAX_RELATED) -> Subgraph:
    """The one-hop neighbourhood of a variable (``bfs(max_depth=1)``, as the reference UI does).

    Shared variables (a prompt read by every extraction, an empty-facts response produced by
    thousands) have thousands of neighbours: then only the first ``limit`` edges in recording
    order are kept (read from the viewer's index, so the cost stays O(limit)), and the note says
    how many there are.
    """
    from smartcomment.runtime import RuntimeGraph

    ix = pg.index
    edges = []
    if direction in ("forward", "both"):
        edges.extend(ix.out_edges.get(full_node_id, ()))
    if direction in ("backward", "both"):
        edges.extend(ix.in_edges.get(full_node_id, ()))
    if len(edges) <= limit:
        rg = pg.network.bfs(full_node_id, direction=direction, max_depth=1, include_sibling_inputs=False)
        note = ""
    else:
        note = f"{len(edges)} edges to neighbours; the first {limit} in recording order are shown"
        kept = sorted(edges, key=lambda e: e.order)[:limit]
        net = pg.network
        nodes = list(dict.fromkeys([full_node_id, *(e.target if e.source == full_node_id else e.source for e in kept)]))
        rg = RuntimeGraph([net.get_variable(n) for n in nodes], [net.get_edge(e.edge_id) for e in kept],
                          [net.get_operation(op) for op in dict.fromkeys(e.op_id for e in kept)])
    ops = list(dict.fromkeys(op.op_id for op in rg.ops))
    return Subgraph(kind="related", title=f"{direction} neighbours of {full_node_id}", op_ids=ops, graph=rg,
                    focus_ids=(full_node_id,), note=note)


def trail_subgraph(pg: ParsedGraph, trail: Iterable[dict[str, Any]]) -> Subgraph:
    """The ops named by an attribution trail, plus the nodes its steps checked."""
    steps = [s for s in trail if isinstance(s, dict)]
    ops = list(dict.fromkeys(s["op_id"] for s in steps if s.get("op_id") and s["op_id"] in pg.index.ops))
    note = ""
    if len(ops) > MAX_TRAIL_OPS:
        note = f"the trail names {len(ops)} ops; the first {MAX_TRAIL_OPS} are drawn"
        ops = ops[:MAX_TRAIL_OPS]
    graph = _filter(pg, ops)
    loose = [s["node_id"] for s in steps if s.get("node_id") and s["node_id"] in pg.network and s["node_id"] not in graph]
    if loose:
        graph = graph | pg.network.induced_subgraph(loose)
    return Subgraph(kind="trail", title="Attribution trail", op_ids=ops, graph=graph, note=note,
                    focus_ids=tuple(dict.fromkeys(s["node_id"] for s in steps if s.get("node_id"))))
