"""Step 4 — from the units that hold the information at question time to the answer.

Query time is judged by **identity**, not by words: the question's retrieval either reaches a
unit version that holds the information (or a list node that names that unit's id), or it does
not. A near-duplicate unit about another event, however many words it shares, is another unit.
Only nodes that name no unit at all (a formatted document list, say) are judged by the probe.

* The answering op's context is built from a holding unit → ``ResponseError`` at that op.
* Otherwise the question's retrieval edges are followed from the nodes that contain a holder;
  the deepest drop (the last node that still contained one, and the op that did not pass it on)
  is the faulty retrieval op — a ``RetrievalError`` (``ResponseError`` when the loss happens
  while the answering op builds its context). When no retrieval node ever contained a holder,
  the question's first retrieval op never surfaced it: a ``RetrievalError`` there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._flow import node_text
from ._graph_view import EdgeRec, GraphView, NodeRec, is_memory_unit, is_parameter
from .judges import PresenceJudge

__all__ = ["Answering", "QueryTimeVerdict", "context_units", "find_answering", "judge_query_time"]

_UNIT_PREFIX = "memory-unit-"
_MIN_ID_LENGTH = 4


@dataclass(frozen=True, kw_only=True)
class Answering:
    """The answering op of the question, its context and its prediction nodes."""

    op_id: str | None
    context: NodeRec | None
    prediction: NodeRec | None


@dataclass(frozen=True, kw_only=True)
class QueryTimeVerdict:
    """Where the held information was lost at query time (or that the context had it)."""

    error_type: str
    op_id: str | None
    context_has: bool
    by_identity: bool
    detail: str


def _normal(text: str) -> str:
    return " ".join(text.split()).strip().lower()


def find_answering(view: GraphView, query: NodeRec, prediction_text: str) -> Answering:
    """The op that answered this question (the one whose prediction is the case's, if several)."""
    candidates: list[tuple[str, NodeRec]] = []
    for edge in view.out_edges.get(query.full_node_id, []):
        if view.op_category(edge.op_id) != "evaluation" or view.op_name(edge.op_id) == "llm-judge":
            continue
        target = view.nodes.get(edge.target)
        if target is None or target.class_name in ("judge_response", "judge_score"):
            continue
        candidates.append((edge.op_id, target))
    if not candidates:
        return Answering(op_id=None, context=None, prediction=None)
    wanted = _normal(prediction_text)
    matching = [c for c in candidates if wanted and _normal(node_text(c[1])) == wanted]
    op_id, prediction = (matching or candidates)[0]
    context = None
    for edge in view.op_edges.get(op_id, []):
        node = view.nodes.get(edge.source)
        if edge.target == prediction.full_node_id and node is not None and (
            node.category == "memory_context" or node.class_name == "context"
        ):
            context = node
            break
    return Answering(op_id=op_id, context=context, prediction=prediction)


def query_window(view: GraphView, query: NodeRec, qa_op: str | None) -> tuple[list[EdgeRec], str | None]:
    """Edges of this question's retrieval, in order, plus its answering op's edges.

    The window starts at the first retrieval edge leaving the query node and ends before the
    first retrieval edge of another query (searches run one question at a time); the answering
    op's edges follow, because building the context can lose information too.
    """
    query_id = query.full_node_id
    start = next((i for i, e in enumerate(view.edges)
                  if e.source == query_id and view.op_category(e.op_id) == "retrieval"), None)
    window: list[EdgeRec] = []
    first_op: str | None = None
    if start is not None:
        first_op = view.edges[start].op_id
        for edge in view.edges[start:]:
            category = view.op_category(edge.op_id)
            if category != "retrieval":
                if category == "evaluation":
                    break
                continue
            source = view.nodes.get(edge.source)
            if source is not None and source.class_name == "query" and edge.source != query_id:
                break
            if source is not None and is_parameter(source):
                continue
            window.append(edge)
    if first_op is None:
        # An empty retrieval records an op without edges: the first retrieval op after the query.
        later = sorted((op for op in view.ops.values()
                        if op.category == "retrieval" and op.created_at >= query.created_at),
                       key=lambda op: op.created_at)
        first_op = later[0].op_id if later else None
    if qa_op is not None:
        window.extend(view.op_edges.get(qa_op, []))
    return window, first_op


def _unit_id(node: NodeRec) -> str | None:
    name = node.full_name
    if name.startswith(_UNIT_PREFIX) and len(name) - len(_UNIT_PREFIX) >= _MIN_ID_LENGTH:
        return name[len(_UNIT_PREFIX):]
    return None


class _Containment:
    """Whether a query-time node contains one of the holding unit versions."""

    def __init__(self, view: GraphView, probe: PresenceJudge, holders: dict[str, NodeRec]) -> None:
        self.view = view
        self.probe = probe
        self.holder_ids = {n.full_node_id for n in holders.values()}
        self.holder_names = set(holders)
        self.holder_unit_ids = {uid for n in holders.values() if (uid := _unit_id(n))}
        if "unit_id_pattern" not in view.memo:  # one pattern per graph, shared by its cases
            all_ids = {uid for n in view.nodes.values() if is_memory_unit(n) and (uid := _unit_id(n))}
            view.memo["unit_id_pattern"] = (
                re.compile("|".join(re.escape(u) for u in sorted(all_ids, key=len, reverse=True))) if all_ids else None)
        self._any_id = view.memo["unit_id_pattern"]
        self._cache: dict[str, tuple[bool, bool]] = {}

    def check(self, node: NodeRec) -> tuple[bool, bool]:
        """``(contains, by_identity)`` for one node."""
        hit = self._cache.get(node.full_node_id)
        if hit is None:
            hit = self._check(node)
            self._cache[node.full_node_id] = hit
        return hit

    def _check(self, node: NodeRec) -> tuple[bool, bool]:
        if node.full_node_id in self.holder_ids:
            return True, True
        if is_memory_unit(node):
            # another version of a holding unit (e.g. a snapshot recorded at retrieval) counts
            # only if it still says it; any other unit is another unit
            if node.full_name in self.holder_names:
                return self.probe.assess(node_text(node)).present, True
            return False, True
        if self._any_id is not None:
            named = set(self._any_id.findall(node.value))
            if named:
                return bool(named & self.holder_unit_ids), True
        return self.probe.assess(node_text(node, flow=True)).present, False


def _served_versions(view: GraphView, window: list[EdgeRec], qa_op: str | None) -> dict[str, list[NodeRec]]:
    """Unit versions the answering op links that this question's retrieval did not serve, each mapped
    to the versions of the same unit that retrieval did serve.

    Evaluation links a retrieved memory by its identity, which resolves to the unit's *latest*
    version; when retrieval served an older snapshot (a stale cache, a version recorded at search
    time), the context was built from what retrieval served, not from the latest version.
    """
    served: dict[str, list[NodeRec]] = {}
    for edge in window:
        if edge.op_id == qa_op or view.op_category(edge.op_id) != "retrieval":
            continue
        node = view.nodes.get(edge.target)
        if node is not None and is_memory_unit(node):
            versions = served.setdefault(node.full_name, [])
            if all(v.full_node_id != node.full_node_id for v in versions):
                versions.append(node)
    out: dict[str, list[NodeRec]] = {}
    for edge in view.op_edges.get(qa_op or "", []):
        node = view.nodes.get(edge.source)
        if node is None or not is_memory_unit(node) or node.full_name not in served:
            continue
        if all(v.full_node_id != node.full_node_id for v in served[node.full_name]):
            out[node.full_node_id] = served[node.full_name]
    return out


def context_units(view: GraphView, qa_op: str | None, context: NodeRec) -> list[NodeRec]:
    """The memory unit versions the answering op built ``context`` from."""
    return [view.nodes[e.source] for e in view.op_edges.get(qa_op or "", [])
            if e.target == context.full_node_id and e.source in view.nodes and is_memory_unit(view.nodes[e.source])]


def judge_query_time(view: GraphView, probe: PresenceJudge, query: NodeRec, answering: Answering,
                     holders: dict[str, NodeRec], trail: Any) -> QueryTimeVerdict:
    """Follow the holders through the question's retrieval into the context (module docstring)."""
    contain = _Containment(view, probe, holders)
    window, first_retrieval_op = query_window(view, query, answering.op_id)
    served = _served_versions(view, window, answering.op_id)
    context = answering.context
    if context is not None:
        units = context_units(view, answering.op_id, context)
        if units:
            context_has = any(contain.check(v)[0] for u in units for v in served.get(u.full_node_id, [u]))
            by_identity = True
        else:
            context_has, by_identity = contain.check(context)
        trail.add("context", op_id=answering.op_id, node=context, present=context_has,
                  note="built from a holding unit" if context_has and by_identity else
                  "no holding unit among its memories" if by_identity else "judged by its text")
        if context_has:
            return QueryTimeVerdict(error_type="ResponseError", op_id=answering.op_id, context_has=True,
                                    by_identity=by_identity, detail="the context holds the information")

    containing: set[str] = set()
    drops: list[EdgeRec] = []
    identity = True
    for edge in window:
        source = view.nodes.get(edge.source)
        target = view.nodes.get(edge.target)
        if source is None or target is None or is_parameter(source) or is_parameter(target):
            continue
        for node in (source, target):
            if node.full_node_id not in containing:
                stand_ins = served.get(node.full_node_id)
                if stand_ins is not None:  # the answering op names another version than retrieval served
                    has, by_id = any(contain.check(v)[0] for v in stand_ins), True
                else:
                    has, by_id = contain.check(node)
                identity = identity and (by_id or not has)
                if has:
                    containing.add(node.full_node_id)
                    trail.add("retrieval", op_id=edge.op_id, node=node, present=True,
                              note="contains a holding unit" if by_id else "says it")
        if edge.source in containing and edge.target not in containing:
            drops.append(edge)
    drop = max(drops, key=lambda e: (view.nodes[e.source].created_at, view.nodes[e.source].order, -e.order),
               default=None)
    if drop is not None and containing:
        error_type = "ResponseError" if view.op_category(drop.op_id) == "evaluation" else "RetrievalError"
        return QueryTimeVerdict(error_type=error_type, op_id=drop.op_id, context_has=False, by_identity=identity,
                                detail=f"{drop.source} -> {drop.target} does not pass a holding unit on")
    return QueryTimeVerdict(error_type="RetrievalError", op_id=first_retrieval_op, context_has=False,
                            by_identity=identity, detail="no retrieval result contains a holding unit")
