"""The no-LLM ``evidence_flow`` attributor.

It follows the failed case's critical information forward through the execution graph, in
execution order, and blames the first operation after which the information is lost:

1. **Critical information** — the golden answer's content tokens when the source evidence
   contains them (*answer mode*), else the evidence messages' content tokens (*evidence mode*).
   Evidence ids come from the caller, the case, or the query node's ``metadata.evidence``;
   when none of them states the golden answer (or there are none), the messages of the
   conversation that state it stand in (answer mode); evidence mode is used only when no
   message states it (inferred answers) — and, for retrieved (pseudo) evidence, only with the
   evidence recorded on the query node. When there is neither usable evidence nor a message
   stating the answer, the case is reported as ``evidence_absent`` with no error type.
2. **Construction** — starting at the evidence messages, every construction edge (ops that are
   not ``retrieval``/``evaluation``) whose source carries the information passes it on when
   its target carries it too (measured, see :mod:`._text`), else it is a *drop*. When no
   memory unit ever carries the information, the op of the deepest drop (the drop whose
   source was created last) is an ``ExtractionError``.
3. **Lifecycle** — every version and every deletion of every memory unit, in order, maintains
   the set of units that hold the information (so migration to another unit is followed). The
   op that last empties the set before the question is asked is an ``UpdateError`` (a new
   version lost it) or a ``DeletionError`` (an explicit delete marker).
4. **Retrieval** — the store held the information; the query-time edges of this question
   (retrieval ops, then the question-answering op that builds the context) are followed from
   the holding units. The op of the deepest drop, or the first retrieval op of the query when
   no holding unit was reached at all, is a ``RetrievalError`` (``ResponseError`` when the
   loss happens while building the context inside the answering op).
5. **Response** — the context carries the information and the answer is still wrong:
   ``ResponseError`` at the question-answering op.

Deterministic, no model calls; one graph index is built per graph and reused by its cases.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ._graph_view import (
    EdgeRec,
    GraphView,
    NodeRec,
    is_delete_marker,
    is_memory_unit,
    is_message,
)
from ._text import (
    DEFAULT_ANSWER_THRESHOLD,
    DEFAULT_EMBEDDING_THRESHOLD,
    DEFAULT_EVIDENCE_THRESHOLD,
    Embedder,
    Probe,
    content_tokens,
    memory_text,
    message_text,
    text_lines,
    token_recall,
)

__all__ = ["STATUSES", "attribute_case_evidence_flow", "clear_graph_cache"]

#: ``status`` values: ``attributed`` (error_type and op_id set); ``evidence_absent`` (the
#: information never existed in the conversation: no type forced); ``query_not_found`` (the
#: case's query node is not in the graph); ``op_not_found`` (a stage was blamed but the graph
#: lacks the op that performs it, e.g. no answering op).
STATUSES = ("attributed", "evidence_absent", "query_not_found", "op_not_found")

_MAX_TRAIL_CARRIES = 12
# The graph index is built once per graph object and shared by its cases (a benchmark graph
# holds several); the entry keeps the graph alive so its id cannot be reused. Graphs are
# treated as read-only: mutate one and call clear_graph_cache().
_VIEW_CACHE: dict[int, tuple[Any, GraphView]] = {}
_VIEW_CACHE_SIZE = 8
_VIEW_LOCK = threading.Lock()


def clear_graph_cache() -> None:
    """Forget the cached graph indexes (they are rebuilt on demand)."""
    with _VIEW_LOCK:
        _VIEW_CACHE.clear()


def _view_for(graph: Any) -> GraphView:
    with _VIEW_LOCK:
        hit = _VIEW_CACHE.get(id(graph))
    if hit is not None and hit[0] is graph:
        return hit[1]
    view = GraphView.build(graph)
    with _VIEW_LOCK:
        if len(_VIEW_CACHE) >= _VIEW_CACHE_SIZE:
            _VIEW_CACHE.pop(next(iter(_VIEW_CACHE)))
        _VIEW_CACHE[id(graph)] = (graph, view)
    return view


@dataclass(kw_only=True)
class _Step:
    stage: str
    op_id: str | None = None
    op_name: str | None = None
    node_id: str | None = None
    present: bool | None = None
    score: float | None = None
    note: str = ""


def _case_field(case: Any, name: str, default: Any = None) -> Any:
    if isinstance(case, dict):
        return case.get(name, default)
    return getattr(case, name, default)


def _node_text(node: NodeRec, *, flow: bool = False) -> str:
    """What a node says. Memory units count by their retrievable content, except when following
    the flow (``flow=True``): raw copies of source messages inside a unit still pass the
    information on to the ops that read the unit (e.g. EverMemOS's episode extraction)."""
    if is_message(node):
        return message_text(node.value)
    return memory_text(node.value, unit=is_memory_unit(node) and not flow)


class _Tracer:
    """State of one attribution (the view is shared, the rest is per case)."""

    def __init__(self, view: GraphView, probe: Probe) -> None:
        self.view = view
        self.probe = probe
        self.trail: list[_Step] = []

    def carries(self, node: NodeRec, *, flow: bool = False) -> bool:
        return self.probe.present(_node_text(node, flow=flow))

    def score(self, node: NodeRec) -> float:
        return round(self.probe.score(_node_text(node)), 3)

    def step(self, stage: str, *, op_id: str | None = None, node: NodeRec | None = None,
             present: bool | None = None, note: str = "") -> None:
        self.trail.append(
            _Step(
                stage=stage,
                op_id=op_id,
                op_name=self.view.op_name(op_id) if op_id else None,
                node_id=node.full_node_id if node else None,
                present=present,
                score=self.score(node) if node is not None and present is not None else None,
                note=note,
            )
        )

    def propagate(self, edges: Sequence[EdgeRec], seeds: set[str], stage: str) -> tuple[set[str], list[EdgeRec]]:
        """Pass the information along ``edges`` from ``seeds``; return carriers and drops."""
        carriers = set(seeds)
        drops: list[EdgeRec] = []
        shown = 0
        for edge in edges:
            if edge.source not in carriers or edge.target in carriers:
                continue
            target = self.view.nodes.get(edge.target)
            if target is None:
                continue
            if self.carries(target, flow=True):
                carriers.add(edge.target)
                if shown < _MAX_TRAIL_CARRIES:
                    self.step(stage, op_id=edge.op_id, node=target, present=True,
                              note=f"{edge.source} -> {edge.target} keeps it")
                    shown += 1
            else:
                drops.append(edge)
        return carriers, drops

    def deepest_drop(self, drops: list[EdgeRec]) -> EdgeRec | None:
        """The drop whose carrying source was created last (ties: the earliest edge)."""
        best: EdgeRec | None = None
        best_key: tuple[str, int] | None = None
        for edge in drops:
            source = self.view.nodes[edge.source]
            key = (source.created_at, source.order)
            if best_key is None or key > best_key:
                best, best_key = edge, key
        return best


def _build_probe(golden: str, evidence: list[NodeRec], *,
                 answer_threshold: float, evidence_threshold: float,
                 embedder: Embedder | None, embedding_threshold: float) -> tuple[Probe, list[NodeRec]]:
    answer_tokens = content_tokens(golden)
    carrying = [n for n in evidence if answer_tokens and _line_recall(answer_tokens, _node_text(n)) >= answer_threshold]
    if carrying:
        mode, seeds, evidence_sets = "answer", carrying, ()
    else:
        mode, seeds = "evidence", evidence
        evidence_sets = tuple(content_tokens(_node_text(n)) for n in evidence)
    probe_text = golden if mode == "answer" else "\n".join(_node_text(n) for n in evidence)
    probe = Probe(
        answer_tokens=answer_tokens,
        evidence_token_sets=evidence_sets,
        mode=mode,
        answer_threshold=answer_threshold,
        evidence_threshold=evidence_threshold,
        embedder=embedder,
        embedding_threshold=embedding_threshold,
        probe_text=probe_text,
    )
    return probe, seeds


def _line_recall(probe: frozenset[str], text: str) -> float:
    return max(token_recall(probe, content_tokens(line)) for line in text_lines(text))


def _result(error_type: str | None, op_id: str | None, status: str, reason: str,
            trail: list[_Step]) -> dict[str, Any]:
    return {
        "error_type": error_type,
        "op_id": op_id,
        "reason": reason,
        "trail": [asdict(s) for s in trail],
        "status": status,
    }


def _resolve_evidence(view: GraphView, ids: Sequence[str], trail: list[_Step]) -> list[NodeRec]:
    found: list[NodeRec] = []
    for ev_id in ids:
        node = view.resolve(ev_id)
        if node is None:
            trail.append(_Step(stage="evidence", node_id=ev_id, note="not in the graph"))
        elif node.full_node_id not in {n.full_node_id for n in found}:
            found.append(node)
    return found


def _before(node_or_edge: NodeRec | EdgeRec, query: NodeRec | None) -> bool:
    return query is None or node_or_edge.created_at <= query.created_at


def attribute_case_evidence_flow(
    graph: Any,
    case: Any,
    evidence_ids: Sequence[str] | None = None,
    *,
    answer_threshold: float = DEFAULT_ANSWER_THRESHOLD,
    evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD,
    embedder: Embedder | None = None,
    embedding_threshold: float = DEFAULT_EMBEDDING_THRESHOLD,
    evidence_is_pseudo: bool = False,
    allow_annotated_fallback: bool = True,
) -> dict[str, Any]:
    """Attribute one failed case by following its critical information through the graph.

    Args:
        graph: the case's ``ExecNetwork`` (or its exported dict).
        case: a ``toolkits.bench_utils.FailedQueryCase`` or any object/dict with
            ``query_full_node_id``, ``golden_answer``, ``prediction``,
            ``source_evidence_full_node_ids`` and optionally ``metadata["annotation"]``.
        evidence_ids: source-evidence node ids to use instead of the case's (e.g. retrieved
            pseudo evidence); ``None`` uses the case's, then the query's ``metadata.evidence``.
        answer_threshold: golden-answer token recall that counts as presence.
        evidence_threshold: evidence-content token recall that counts as presence.
        embedder: optional embedder; cosine ≥ ``embedding_threshold`` also counts as presence.
        embedding_threshold: see ``embedder``.
        evidence_is_pseudo: ``evidence_ids`` were retrieved, not annotated. When neither they
            nor any message state the golden answer, they are not trusted: the query node's
            recorded evidence replaces them, or the case is ``evidence_absent``.
        allow_annotated_fallback: when ``evidence_ids`` is None (or pseudo evidence misses the
            answer), read the annotated evidence (the case's ``source_evidence_full_node_ids``,
            the query's ``metadata.evidence``). False when the caller withholds evidence on
            purpose (no starting nodes): only the conversation's messages are used then.

    Returns:
        ``{"error_type", "op_id", "reason", "trail", "status"}``: ``status`` is one of
        :data:`STATUSES`; ``error_type``/``op_id`` are None unless the status is
        ``attributed`` (``op_not_found`` keeps the type); ``trail`` lists the checked steps
        (stage, op id and name, node id, presence, score ≥ 1.0 = present, note).
    """
    view = _view_for(graph)
    trail: list[_Step] = []
    query_id = _case_field(case, "query_full_node_id") or ""
    query = view.resolve(query_id) if query_id else None
    if query is None:
        return _result(None, None, "query_not_found",
                       f"query node {query_id!r} is not in the graph; nothing to follow", trail)

    golden = str(_case_field(case, "golden_answer") or "")
    if golden.startswith("[") and golden.endswith("]"):
        golden = golden[1:-1]
    if evidence_ids is None and not allow_annotated_fallback:
        evidence_ids = []
    elif evidence_ids is None:
        evidence_ids = list(_case_field(case, "source_evidence_full_node_ids") or [])
        if not evidence_ids:
            evidence_ids = [str(e) for e in query.metadata.get("evidence") or []]
    evidence = _resolve_evidence(view, evidence_ids, trail)
    answer_tokens = content_tokens(golden)

    if not evidence:
        # No usable evidence ids: the messages that state the golden answer stand in.
        if answer_tokens:
            evidence = [
                n for n in view.nodes.values()
                if is_message(n) and _before(n, query)
                and _line_recall(answer_tokens, message_text(n.value)) >= answer_threshold
            ]
        for n in evidence:
            trail.append(_Step(stage="evidence", node_id=n.full_node_id, present=True,
                               note="message stating the golden answer (no evidence ids)"))
        if not evidence:
            return _result(
                None, None, "evidence_absent",
                f"No source-evidence node exists in the graph and no message of the conversation "
                f"states the golden answer {golden!r}: the information never existed in the "
                "conversation, so no memory operation can have lost it.",
                trail,
            )

    if answer_tokens and not any(_line_recall(answer_tokens, _node_text(n)) >= answer_threshold for n in evidence):
        # The given evidence (e.g. retrieved pseudo evidence) does not state the answer: the
        # messages that do are the real evidence, if there are any.
        stating = [
            n for n in view.nodes.values()
            if is_message(n) and _before(n, query)
            and _line_recall(answer_tokens, message_text(n.value)) >= answer_threshold
        ]
        if stating:
            trail.append(_Step(stage="evidence", note="the given evidence does not state the golden answer; "
                               f"{len(stating)} message(s) that do stand in"))
            evidence = stating
        elif evidence_is_pseudo:
            # Retrieved evidence that does not state the answer is unverified; only the graph's
            # own record of the evidence (the query's metadata) may replace it.
            recorded_ids = query.metadata.get("evidence") if allow_annotated_fallback else None
            recorded = _resolve_evidence(view, [str(e) for e in recorded_ids or []], trail)
            if not recorded:
                return _result(
                    None, None, "evidence_absent",
                    f"No message of the conversation states the golden answer {golden!r}, the "
                    "retrieved evidence does not either and the query records no evidence: the "
                    "information cannot be shown to have existed in the conversation.",
                    trail,
                )
            trail.append(_Step(stage="evidence", note="the retrieved evidence does not state the golden answer; "
                               "the evidence recorded on the query node stands in"))
            evidence = recorded
    probe, seeds = _build_probe(golden, evidence, answer_threshold=answer_threshold,
                                evidence_threshold=evidence_threshold, embedder=embedder,
                                embedding_threshold=embedding_threshold)
    tracer = _Tracer(view, probe)
    tracer.trail = trail
    for n in evidence:
        tracer.step("evidence", node=n, present=tracer.carries(n),
                    note=f"{probe.mode} mode" + (" seed" if n in seeds else ""))

    # ---------------------------------------------------------------- construction
    construction_edges = [
        e for e in view.edges if not view.is_query_time_op(e.op_id) and _before(e, query)
    ]
    seed_ids = {n.full_node_id for n in seeds}
    carriers, drops = tracer.propagate(construction_edges, seed_ids, "construction")

    # ---------------------------------------------------------------- unit lifecycle
    produced_by: dict[str, EdgeRec] = {}
    deletions: list[EdgeRec] = []
    for e in construction_edges:
        target = view.nodes.get(e.target)
        source = view.nodes.get(e.source)
        if target is None or source is None:
            continue
        if is_memory_unit(target) and e.target not in produced_by:
            produced_by[e.target] = e
        if is_delete_marker(target) and is_memory_unit(source):
            deletions.append(e)
    events: list[tuple[tuple[str, int, int], str, NodeRec, str | None]] = []
    for node in view.nodes.values():
        if not is_memory_unit(node):
            continue
        edge = produced_by.get(node.full_node_id)
        if edge is not None:
            events.append(((edge.created_at, 0, edge.order), "version", node, edge.op_id))
        elif not view.in_edges.get(node.full_node_id) and _before(node, query):
            events.append(((node.created_at, -1, node.order), "version", node, None))
    for e in deletions:
        events.append(((e.created_at, 0, e.order), "delete", view.nodes[e.source], e.op_id))
    events.sort(key=lambda ev: ev[0])

    live: dict[str, NodeRec] = {}
    ever_captured = False
    last_loss: tuple[str, str | None, NodeRec] | None = None
    for _, kind, node, op_id in events:
        name = node.full_name
        if kind == "version":
            if tracer.carries(node):
                if name not in live:
                    tracer.step("lifecycle", op_id=op_id, node=node, present=True,
                                note="memory unit holds it" + (" again" if ever_captured else ""))
                live[name] = node
                ever_captured = True
            elif name in live:
                del live[name]
                tracer.step("lifecycle", op_id=op_id, node=node, present=False,
                            note=f"new version of {name} lost it"
                            + ("" if live else "; no unit holds it any more"))
                if not live:
                    last_loss = ("UpdateError", op_id, node)
        elif name in live:
            del live[name]
            tracer.step("lifecycle", op_id=op_id, node=node, present=False,
                        note=f"{name} deleted" + ("" if live else "; no unit holds it any more"))
            if not live:
                last_loss = ("DeletionError", op_id, node)

    if not ever_captured:
        drop = tracer.deepest_drop(drops)
        if drop is not None:
            source = view.nodes[drop.source]
            tracer.step("construction", op_id=drop.op_id, node=view.nodes.get(drop.target), present=False,
                        note=f"{drop.source} -> {drop.target} loses it")
            reason = (
                f"No memory unit ever carried the critical information ({_probe_desc(probe)}). "
                f"It was last carried by {source.full_node_id}, consumed by op {drop.op_id} "
                f"({view.op_name(drop.op_id)}), whose output {drop.target} no longer carries it: "
                "the information was never captured into memory."
            )
            return _result("ExtractionError", drop.op_id, "attributed", reason, tracer.trail)
        consumer = next((e for e in construction_edges if e.source in seed_ids), None)
        if consumer is not None:
            reason = (f"No memory unit ever carried the critical information ({_probe_desc(probe)}); "
                      f"op {consumer.op_id} ({view.op_name(consumer.op_id)}) consumed the evidence "
                      "without passing it on.")
            return _result("ExtractionError", consumer.op_id, "attributed", reason, tracer.trail)
        return _result("ExtractionError", None, "op_not_found",
                       "No memory unit ever carried the critical information and no construction op "
                       "consumed the evidence messages.", tracer.trail)

    if not live:
        assert last_loss is not None  # captured and now empty implies a recorded loss
        error_type, op_id, node = last_loss
        tracer.step("store", present=False, note="no memory unit holds it when the question is asked")
        verb = "an explicit deletion of" if error_type == "DeletionError" else "a new version of"
        reason = (f"The critical information ({_probe_desc(probe)}) was captured into memory, but "
                  f"op {op_id} ({view.op_name(op_id) if op_id else None}) made {verb} "
                  f"{node.full_name} the last step after which no memory unit holds it, so it was "
                  "missing from the store when the question was asked.")
        status = "attributed" if op_id else "op_not_found"
        return _result(error_type, op_id, status, reason, tracer.trail)

    holders = sorted(n.full_node_id for n in live.values())
    tracer.step("store", present=True, note="held at question time by " + ", ".join(holders[:5]))

    # ---------------------------------------------------------------- query time
    qa_op, context, prediction = _find_answering(view, query, case)
    retrieval_edges, first_retrieval_op = _query_window(view, query, qa_op)
    holder_ids = {n.full_node_id for n in view.nodes.values()
                  if is_memory_unit(n) and n.full_name in live and tracer.carries(n)}
    _, q_drops = tracer.propagate(retrieval_edges, holder_ids, "retrieval")

    context_has = context is not None and tracer.carries(context)
    if context is not None:
        tracer.step("context", op_id=qa_op, node=context, present=context_has)
    if not context_has:
        drop = tracer.deepest_drop(q_drops)
        if drop is not None:
            error_type = "ResponseError" if view.op_category(drop.op_id) == "evaluation" else "RetrievalError"
            reason = (f"The store held the critical information ({_probe_desc(probe)}) in "
                      f"{', '.join(holders[:3])}; at op {drop.op_id} ({view.op_name(drop.op_id)}) "
                      f"{drop.source} -> {drop.target} loses it, so the final context lacks it.")
            return _result(error_type, drop.op_id, "attributed", reason, tracer.trail)
        op_id = first_retrieval_op
        reason = (f"The store held the critical information ({_probe_desc(probe)}) in "
                  f"{', '.join(holders[:3])}, but retrieval op {op_id} "
                  f"({view.op_name(op_id) if op_id else None}) never surfaced a unit carrying it "
                  "and the final context lacks it.")
        return _result("RetrievalError", op_id, "attributed" if op_id else "op_not_found", reason,
                       tracer.trail)

    note = ""
    if prediction is not None:
        pred_has = _line_recall(answer_tokens, memory_text(prediction.value)) >= answer_threshold
        tracer.step("answer", op_id=qa_op, node=prediction, present=pred_has)
        if pred_has and answer_tokens:
            note = " (the prediction does contain the golden answer's tokens: the judge may be wrong)"
    reason = (f"The final context {context.full_node_id} carries the critical information "
              f"({_probe_desc(probe)}) yet the answer is wrong: the answering op {qa_op} failed to use "
              f"it{note}.")
    return _result("ResponseError", qa_op, "attributed" if qa_op else "op_not_found", reason, tracer.trail)


def _probe_desc(probe: Probe) -> str:
    if probe.mode == "answer":
        return "golden-answer tokens " + ", ".join(sorted(probe.answer_tokens))
    return f"the content tokens of {len(probe.evidence_token_sets)} evidence message(s)"


def _find_answering(view: GraphView, query: NodeRec, case: Any) -> tuple[str | None, NodeRec | None, NodeRec | None]:
    """Return (answering op id, context node, prediction node) of this query."""
    annotation = (_case_field(case, "metadata") or {}).get("annotation") or {}
    pred_id = annotation.get("prediction_id")
    candidates: list[tuple[str, NodeRec]] = []
    for e in view.out_edges.get(query.full_node_id, []):
        if view.op_category(e.op_id) != "evaluation":
            continue
        target = view.nodes.get(e.target)
        if target is None or target.class_name in ("judge_response", "judge_score"):
            continue
        if view.op_name(e.op_id) == "llm-judge":
            continue
        candidates.append((e.op_id, target))
    if pred_id:
        preferred = [c for c in candidates if c[1].full_node_id == pred_id]
        candidates = preferred or candidates
    if not candidates:
        return None, None, view.resolve(pred_id) if pred_id else None
    qa_op, prediction = candidates[0]
    context = None
    for e in view.op_edges.get(qa_op, []):
        node = view.nodes.get(e.source)
        if e.target == prediction.full_node_id and node is not None and (
            node.category == "memory_context" or node.class_name == "context"
        ):
            context = node
            break
    return qa_op, context, prediction


def _query_window(view: GraphView, query: NodeRec, qa_op: str | None) -> tuple[list[EdgeRec], str | None]:
    """Edges of this question's retrieval, in order, plus its answering op's edges.

    The window starts at the first retrieval edge leaving the query node and ends before the
    first retrieval edge of another query (searches run one question at a time); the
    answering op's edges follow, because building the context can lose information too.
    """
    query_id = query.full_node_id
    start = next(
        (i for i, e in enumerate(view.edges)
         if e.source == query_id and view.op_category(e.op_id) == "retrieval"),
        None,
    )
    window: list[EdgeRec] = []
    first_op: str | None = None
    if start is not None:
        first_op = view.edges[start].op_id
        for e in view.edges[start:]:
            if view.op_category(e.op_id) != "retrieval":
                if view.op_category(e.op_id) == "evaluation":
                    break
                continue
            source = view.nodes.get(e.source)
            if source is not None and source.class_name == "query" and e.source != query_id:
                break
            window.append(e)
    if first_op is None:
        # An empty retrieval records an op without edges: take the first retrieval op
        # created after the query node.
        later = sorted((op for op in view.ops.values()
                        if op.category == "retrieval" and op.created_at >= query.created_at),
                       key=lambda op: op.created_at)
        first_op = later[0].op_id if later else None
    if qa_op is not None:
        window.extend(view.op_edges.get(qa_op, []))
    return window, first_op
