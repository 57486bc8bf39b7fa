"""The no-LLM ``evidence_flow`` attributor: follow the critical information, blame where it is lost.

The steps, each in its own module:

1. **Evidence** (:mod:`._evidence`) — the seed messages and the facts they state, from the
   starting evidence the caller hands over and the golden answer; never from gold labels.
2. **Probe** (:mod:`._probe`) — the rule that decides whether a text still says the fact: the
   golden answer with the fact's distinctive (rare) words around it, no conflicting person,
   polarity, date, number or name.
3. **Construction and lifecycle** (:mod:`._flow`) — the information is followed by lineage from
   the seeds through every op that builds memory and through every version and deletion of
   every memory unit: never held → ``ExtractionError`` where it was last dropped; held, then no
   unit holds it at question time → ``UpdateError``/``DeletionError`` at the op that emptied
   the set.
4. **Query time** (:mod:`._query_time`) — by unit identity: the context built from a holding
   unit → ``ResponseError`` at the answering op; else ``RetrievalError`` at the retrieval op that
   lost (or never surfaced) the holding unit.

Every result carries a ``confidence`` (how sure the evidence choice was times how clear the
deciding verdict was). Below ``min_confidence`` the attributor abstains: ``status`` is
``abstained``, ``error_type``/``op_id`` are None and ``best_guess`` holds what it would have said.

Deterministic, no model calls; one graph index is built per graph and reused by its cases.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from smartcomment.schema.base import gc_paused

from ._calibration import calibrate_to_seeds
from ._case_facts import case_facts
from ._evidence import EvidenceChoice, choose_evidence
from ._evidence import resolve_given as _resolve_given
from ._flow import StoreState, follow_construction, node_text
from ._graph_view import GraphView, NodeRec
from ._hops import second_hop
from ._parts import answer_parts, one_message_states_all
from ._query_time import context_units, find_answering, judge_query_time
from ._rendered import RenderedLoss, rendered_loss
from ._text import (
    DEFAULT_ANSWER_THRESHOLD,
    DEFAULT_EMBEDDING_THRESHOLD,
    DEFAULT_EVIDENCE_THRESHOLD,
    Embedder,
    content_tokens,
    message_text,
)
from ._trail import Trail
from ._triage import NON_MEMORY_STATUSES, Triage, annotation_error, judge_error
from .judges import DEFAULT_JUDGE, JudgeFactory, PresenceJudge, make_judge_factory

__all__ = ["DEFAULT_MIN_CONFIDENCE", "STATUSES", "attribute_case_evidence_flow", "clear_graph_cache"]

#: ``status`` values: ``attributed`` (error_type and op_id set); ``abstained`` (confidence below
#: ``min_confidence``: no type given, ``best_guess`` holds it); ``evidence_absent`` (no message
#: holds the information: no type forced); ``query_not_found`` (the case's query node is not in
#: the graph); ``op_not_found`` (a stage was blamed but the graph lacks the op that performs it);
#: ``llm_judge_error`` and ``annotation_error`` (not a memory error: see :mod:`._triage`; no type or op,
#: ``triage`` names the kind and ``best_guess`` what the flow alone would have said).
STATUSES = ("attributed", "abstained", "evidence_absent", "query_not_found", "op_not_found", *NON_MEMORY_STATUSES)
#: Confidence below which the attributor abstains instead of guessing.
DEFAULT_MIN_CONFIDENCE = 0.25

# The graph index is built once per graph object and shared by its cases (a benchmark graph
# holds several); the entry keeps the graph alive so its id cannot be reused. Graphs are
# treated as read-only: mutate one and call clear_graph_cache().
_VIEW_CACHE: dict[int, tuple[Any, GraphView]] = {}
_VIEW_CACHE_SIZE = 8
_VIEW_LOCK = threading.Lock()
_BUILD_LOCK = threading.Lock()


def clear_graph_cache() -> None:
    """Forget the cached graph indexes (they are rebuilt on demand)."""
    with _VIEW_LOCK:
        _VIEW_CACHE.clear()


def _cached_view(graph: Any) -> GraphView | None:
    with _VIEW_LOCK:
        hit = _VIEW_CACHE.get(id(graph))
    return hit[1] if hit is not None and hit[0] is graph else None


def _view_for(graph: Any) -> GraphView:
    view = _cached_view(graph)
    if view is not None:
        return view
    with _BUILD_LOCK:  # a warm-up thread and a case asking at once build the index once
        view = _cached_view(graph)
        if view is not None:
            return view
        view = GraphView.build(graph)
        with _VIEW_LOCK:
            if len(_VIEW_CACHE) >= _VIEW_CACHE_SIZE:
                _VIEW_CACHE.pop(next(iter(_VIEW_CACHE)))
            _VIEW_CACHE[id(graph)] = (graph, view)
    return view


@gc_paused()
def prepare_graph(graph: Any) -> None:
    """Index a graph before its first case: what every case of the graph shares (the node, edge
    and op indexes, the construction edges, the memory units' producers and deletions, message
    rarity). A viewer calls this in the background so that the first attribution of a big graph
    does not pay for it; the attributor does the same on demand.

    Raises:
        TypeError: if ``graph`` is neither an ``ExecNetwork`` nor an exported graph dict.
    """
    view = _view_for(graph)
    for shared in ("construction_edges", "memory_units", "unit_producers", "unit_deletions", "memory_bound",
                   "document_frequency", "speakers", "proper_names"):
        getattr(view, shared)


def _case_field(case: Any, name: str, default: Any = None) -> Any:
    if isinstance(case, dict):
        return case.get(name, default)
    return getattr(case, name, default)


def _golden_text(case: Any) -> str:
    golden = str(_case_field(case, "golden_answer") or "")
    if golden.startswith("[") and golden.endswith("]"):
        golden = golden[1:-1]
    return golden


def _annotated_ids(case: Any, query: NodeRec) -> list[str]:
    """The evidence the caller did not hand over but allowed: the case's, else the query's record."""
    ids = [str(e) for e in _case_field(case, "source_evidence_full_node_ids") or []]
    return ids or [str(e) for e in query.metadata.get("evidence") or []]


def _result(error_type: str | None, op_id: str | None, status: str, reason: str, trail: Trail, *,
            confidence: float = 0.0, choice: EvidenceChoice | None = None) -> dict[str, Any]:
    evidence = None
    if choice is not None:
        evidence = {"mode": choice.mode, "source": choice.source,
                    "seeds": [n.full_node_id for n in choice.seeds], "notes": list(choice.notes),
                    "seed_confidence": round(choice.confidence, 3), "seed_uncertain": bool(choice.uncertain),
                    "seed_uncertain_because": choice.uncertain}
    return {"error_type": error_type, "op_id": op_id, "reason": reason, "trail": trail.as_dicts(), "status": status,
            "confidence": round(confidence, 3), "evidence": evidence}


# The first case of a graph indexes it (hundreds of thousands of small acyclic records); the cyclic
# collector would rescan them over and over, which doubled that time on a 46k-node graph.
@gc_paused()
def attribute_case_evidence_flow(
    graph: Any,
    case: Any,
    evidence_ids: Sequence[str] | None = None,
    *,
    answer_threshold: float = DEFAULT_ANSWER_THRESHOLD,
    evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD,
    embedder: Embedder | None = None,
    embedding_threshold: float = DEFAULT_EMBEDDING_THRESHOLD,
    judge: JudgeFactory | str | None = None,
    triage: bool = True,
    evidence_is_pseudo: bool = False,
    allow_annotated_fallback: bool = True,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
) -> dict[str, Any]:
    """Attribute one failed case by following its critical information through the graph.

    Args:
        graph: the case's ``ExecNetwork`` (or its exported dict).
        case: a ``toolkits.bench_utils.FailedQueryCase`` or any object/dict with
            ``query_full_node_id``, ``query``, ``golden_answer``, ``prediction`` and
            ``source_evidence_full_node_ids``. Only these are read (never gold labels).
        evidence_ids: starting evidence node ids (annotated, or retrieved when
            ``evidence_is_pseudo``); ``None`` reads the case's evidence, then the query's
            ``metadata.evidence`` (only while ``allow_annotated_fallback``).
        answer_threshold: golden-answer token recall that counts as stating the answer.
        evidence_threshold: distinctive-content share needed when no message states the answer.
        embedder: an embedder for the ``embedding`` judge; given alone (``judge`` None) it picks
            that judge, as earlier versions used it as a second opinion.
        embedding_threshold: cosine similarity the embedding judge needs.
        judge: the presence judge (:mod:`.judges`): a factory, or the name of one (``rules``,
            ``embedding`` with ``embedder``); None = ``rules``, or ``embedding`` when an
            embedder is given.
        triage: first check whether the failure is a memory error at all (:mod:`._triage`): a
            prediction that states the golden answer, a golden answer no message supports.
        evidence_is_pseudo: ``evidence_ids`` were retrieved, not annotated: they are checked
            against the golden answer and never replaced by annotated evidence; the result says
            when retrieval found nothing.
        allow_annotated_fallback: when ``evidence_ids`` is None, read the annotated evidence. False
            when the caller withholds evidence on purpose: the golden answer alone finds it then.
        min_confidence: below this confidence the attributor abstains (``status`` ``abstained``).

    Returns:
        ``{"error_type", "op_id", "reason", "trail", "status", "confidence", "evidence", "judge"}``
        (``judge``: the presence judge's name and, for a model judge, its calls and tokens) and,
        when abstaining, ``"best_guess"``; a non-memory failure adds ``"triage"``. ``status`` is one of :data:`STATUSES`;
        ``error_type``/``op_id`` are None unless it is ``attributed`` (``op_not_found`` keeps
        the type); ``trail`` lists the checked steps (stage, op id and name, node id, presence,
        score ≥ 1.0 = present, note); ``evidence`` names the seeds, how they were found and notes.
    """
    view = _view_for(graph)
    query_id = _case_field(case, "query_full_node_id") or ""
    query = view.resolve(query_id) if query_id else None
    if query is None:
        missing = _result(None, None, "query_not_found",
                          f"query node {query_id!r} is not in the graph; nothing to follow", Trail(view))
        missing["judge"] = {"name": _judge_factory(judge, embedder, embedding_threshold).name}
        return missing

    golden = _golden_text(case)
    # the runner hands the query node's value as recorded (a quoted repr: "'When did ...?'"), which
    # would hide the question's first word ("when") from every rule that reads it
    question = message_text(str(_case_field(case, "query") or query.value))
    if evidence_ids is None and allow_annotated_fallback and not evidence_is_pseudo:
        evidence_ids = _annotated_ids(case, query)
    settings = _Settings(evidence_ids=None if evidence_ids is None else list(evidence_ids),
                         pseudo=evidence_is_pseudo or evidence_ids is None, answer_threshold=answer_threshold,
                         evidence_threshold=evidence_threshold,
                         judges=_judge_factory(judge, embedder, embedding_threshold))
    flow = _follow(view, case, query, question, golden, settings)
    parts = answer_parts(golden, question=question)
    if len(parts) > 1 and not one_message_states_all(view, flow.choice.seeds, parts, answer_threshold):
        flow = _decisive_part(view, flow, [_follow(view, case, query, question, part, settings, part=part)
                                           for part in parts])
    elif flow.choice.mode == "evidence" and settings.evidence_ids:
        given, _ = _resolve_given(view, settings.evidence_ids)
        hop = second_hop(view, flow.choice.seeds, given, content_tokens(question))
        if hop is not None:
            # the second message is followed from itself: searched again, the conversation's best
            # match to the question would be the first message once more
            second = _follow(view, case, query, question, golden,
                             dataclasses.replace(settings, evidence_ids=[hop.full_node_id], pseudo=False),
                             hop=hop.full_node_id)
            flow = _decisive_hop(view, flow, second)
    result = _finish(flow, min_confidence)
    found = _triage(view, case, question, golden, answer_threshold) if triage else None
    if found is not None:
        result = _non_memory(result, found)
    result["judge"] = _judge_record(settings)
    return result


def _triage(view: GraphView, case: Any, question: str, golden: str, answer_threshold: float) -> Triage | None:
    prediction = str(_case_field(case, "prediction") or "")
    names = view.speakers | view.proper_names
    return (judge_error(golden, prediction, names=names, question=question)
            or annotation_error(view, golden, answer_threshold=answer_threshold, question=question))


def _non_memory(result: dict[str, Any], found: Triage) -> dict[str, Any]:
    """The result of a failure that is not a memory error: its own status, no type or op."""
    guess = result.get("best_guess")
    if result["status"] == "attributed":
        guess = {"error_type": result["error_type"], "op_id": result["op_id"]}
    out = {**result, "error_type": None, "op_id": None, "status": found.status, "reason": found.reason,
           "triage": found.as_dict()}
    if guess is not None:
        out["best_guess"] = guess
    return out


def _judge_factory(judge: JudgeFactory | str | None, embedder: Embedder | None,
                   embedding_threshold: float) -> JudgeFactory:
    if judge is None:
        judge = "embedding" if embedder is not None else DEFAULT_JUDGE
    if not isinstance(judge, str):
        return judge
    factory = make_judge_factory(judge, embedder=embedder)
    if judge == "embedding":
        factory = dataclasses.replace(factory, threshold=embedding_threshold)
    return factory


def _judge_record(settings: _Settings) -> dict[str, Any]:
    """The judge's name and, for a model judge, what it cost this case."""
    record: dict[str, Any] = {"name": settings.judges.name}
    usages = [made.usage.as_dict() for made in settings.made if hasattr(made, "usage")]
    for usage in usages:
        for key, value in usage.items():
            record[key] = record.get(key, 0) + value
    return record


@dataclass(frozen=True, kw_only=True)
class _Settings:
    evidence_ids: list[str] | None
    pseudo: bool
    answer_threshold: float
    evidence_threshold: float
    judges: JudgeFactory
    made: list[PresenceJudge] = dataclasses.field(default_factory=list)
    """The judges made for this case (their usage goes into the result)."""


@dataclass(kw_only=True)
class _Flow:
    """One followed piece of information: its evidence, the verdict and the steps checked."""

    choice: EvidenceChoice
    trail: Trail
    verdict: tuple[str, str | None, str, float] | None = None
    """``(error type, op id, reason, clarity)``; None when no seed was found."""
    golden: str
    part: str | None = None
    """The answer part followed (None: the whole answer)."""


def _follow(view: GraphView, case: Any, query: NodeRec, question: str, golden: str, settings: _Settings, *,
            part: str | None = None, hop: str | None = None) -> _Flow:
    """Steps 1–4 of the module docstring for one piece of critical information."""
    trail = Trail(view)
    if part is not None:
        trail.add("evidence", note=f"answer part {part!r}, followed on its own")
    if hop is not None:
        trail.add("evidence", node_id=hop, note="second message of the question, followed on its own")
    answer = content_tokens(golden)
    choice = choose_evidence(view, query=query, question=question, answer=answer, evidence_ids=settings.evidence_ids,
                             pseudo=settings.pseudo, answer_threshold=settings.answer_threshold, golden=golden)
    for missing in choice.unresolved:
        trail.add("evidence", node_id=missing, note="not in the graph")
    flow = _Flow(choice=choice, trail=trail, golden=golden, part=part if hop is None else hop)
    if not choice.seeds:
        return flow
    probe = settings.judges.judge(case_facts(view, choice, question=question, golden=golden,
                                             answer_threshold=settings.answer_threshold,
                                             evidence_threshold=settings.evidence_threshold))
    settings.made.append(probe)
    probe = calibrate_to_seeds(probe, [node_text(seed) for seed in choice.seeds])
    for note in choice.notes:
        trail.add("evidence", note=note)
    uncertain = f"; uncertain seed (confidence {choice.confidence:.2f}): {choice.uncertain}" if choice.uncertain else ""
    for seed in choice.seeds:
        trail.add("evidence", node=seed, present=True, note=f"{choice.mode} mode seed ({choice.source}){uncertain}")
    state = follow_construction(view, probe, choice.seeds, query, trail)
    flow.verdict = _decide(view, probe, state, query, case, trail)
    return flow


def _shown_loss(view: GraphView, probe: PresenceJudge, qa_op: str | None, context: NodeRec,
                state: StoreState) -> RenderedLoss | None:
    """A holding unit of the context whose shown fields lack the information (see :mod:`._rendered`)."""
    in_context = {unit.full_name for unit in context_units(view, qa_op, context)}
    holders = [n for n in state.holders.values() if n.full_name in in_context]
    return rendered_loss(view, probe, context, node_text(context), holders) if holders else None


def _decisive_hop(view: GraphView, first: _Flow, second: _Flow) -> _Flow:
    """Of two messages that answer the question together, the one lost at the earlier op decides;
    when both reached the context, the first flow's verdict stands."""
    lost = _earliest_loss(view, [first, second])
    if lost is None or lost is first:
        if second.verdict is not None:
            first.trail.steps.extend(second.trail.steps)
        return first
    error_type, op_id, reason, clarity = lost.verdict
    reason = (f"The question needs two messages; {second.part} holds what the first leaves out and decides. "
              f"{reason}")
    trail = Trail(view)
    trail.steps.extend(second.trail.steps)
    trail.steps.extend(first.trail.steps)
    # the second message is a weaker match to the question than the first: no surer than it
    choice = dataclasses.replace(second.choice, confidence=min(second.choice.confidence, first.choice.confidence))
    return _Flow(choice=choice, trail=trail, verdict=(error_type, op_id, reason, clarity), golden=second.golden)


def _earliest_loss(view: GraphView, flows: list[_Flow]) -> _Flow | None:
    """The flow whose information was lost before the answer step, at the earliest op (None when
    every followed piece reached the context)."""
    lost = [f for f in flows if f.verdict is not None and f.verdict[0] != "ResponseError" and f.verdict[1] is not None]
    if not lost:
        return None

    def when(flow: _Flow) -> tuple[str, int]:
        op = view.ops.get(flow.verdict[1] or "")
        return (op.created_at if op else "", flows.index(flow))

    return min(lost, key=when)


def _decisive_part(view: GraphView, whole: _Flow, parts: list[_Flow]) -> _Flow:
    """The part lost at the earliest op decides; when every part reached the context, the answer
    step is at fault (the whole answer's flow says so when it agrees)."""
    followed = [f for f in parts if f.verdict is not None]
    decisive = _earliest_loss(view, parts)
    if decisive is None:
        if not followed or (whole.verdict is not None and whole.verdict[0] == "ResponseError"):
            return whole
        decisive = followed[0]
    others = [f.part for f in parts if f is not decisive]
    error_type, op_id, reason, clarity = decisive.verdict
    reason = (f"The answer has {len(parts)} parts told by different messages; part {decisive.part!r} decides. "
              f"{reason}" + (f" (Also followed: {', '.join(repr(o) for o in others)}.)" if others else ""))
    trail = Trail(view)
    for flow in [decisive, *(f for f in parts if f is not decisive)]:
        trail.steps.extend(flow.trail.steps)
    return _Flow(choice=decisive.choice, trail=trail, verdict=(error_type, op_id, reason, clarity),
                 golden=decisive.golden, part=decisive.part)


def _finish(flow: _Flow, min_confidence: float) -> dict[str, Any]:
    choice, trail = flow.choice, flow.trail
    if flow.verdict is None:
        searched = "; ".join(choice.notes) + ("; " if choice.notes else "")
        return _result(None, None, "evidence_absent",
                       f"{searched}no message of the conversation states the golden answer {flow.golden!r} and no "
                       "usable evidence was given: the information cannot be shown to have existed in the "
                       "conversation, so no memory operation can be blamed for losing it.", trail, choice=choice)
    error_type, op_id, reason, clarity = flow.verdict
    if choice.notes:  # how the evidence was found (e.g. that retrieval found nothing) belongs in the answer
        reason = f"Evidence: {'; '.join(choice.notes)}. {reason}"
    confidence = choice.confidence * clarity
    if op_id is None:
        return _result(error_type, None, "op_not_found", reason, trail, confidence=confidence, choice=choice)
    if confidence < min_confidence:
        result = _result(None, None, "abstained",
                         f"Not confident enough (confidence {confidence:.2f} < {min_confidence:.2f}) to attribute; "
                         f"the best guess is {error_type} at {op_id}. {reason}", trail, confidence=confidence,
                         choice=choice)
        result["best_guess"] = {"error_type": error_type, "op_id": op_id}
        return result
    return _result(error_type, op_id, "attributed", reason, trail, confidence=confidence, choice=choice)


def _margin(score: float | None) -> float:
    """How clearly a 'lost' verdict was lost (1.0 = nothing of it left)."""
    if score is None:
        return 1.0
    return max(0.0, min(1.0, 1.0 - score))


def _decide(view: GraphView, probe: PresenceJudge, state: StoreState, query: NodeRec, case: Any,
            trail: Trail) -> tuple[str, str | None, str, float]:
    """``(error type, op id, reason, clarity)`` from the store state and the query-time step."""
    what = probe.describe()
    if not state.ever_captured:
        drop = state.extraction_drop
        if drop is not None:
            edge = drop.edge
            trail.add("construction", op_id=edge.op_id, node_id=edge.target, present=False, score=drop.verdict.score,
                      note=f"{edge.source} -> {edge.target} loses it ({drop.verdict.why})")
            reason = (f"No memory unit derived from the evidence ever held the critical information ({what}). "
                      f"It was last carried by {edge.source}, read by op {edge.op_id} ({view.op_name(edge.op_id)}), "
                      f"whose output {edge.target} no longer says it ({drop.verdict.why}): the information was "
                      "never captured into memory.")
            clarity = 0.5 + 0.5 * min(_margin(drop.verdict.score), _margin(state.best_unit_score))
            return "ExtractionError", edge.op_id, reason, clarity
        carry = state.last_carry
        if carry is not None:
            trail.add("construction", op_id=carry.op_id, node_id=carry.target, present=True,
                      note=f"{carry.target} is the last to hold it; nothing made from it holds it")
            reason = (f"No memory unit ever held the critical information ({what}). It was last carried by "
                      f"{carry.target}, written by op {carry.op_id} ({view.op_name(carry.op_id)}), and went no "
                      "further: that op had the information and stored no memory unit with it.")
            return "ExtractionError", carry.op_id, reason, 0.6
        consumer = state.first_consumer
        if consumer is not None:
            reason = (f"No memory unit ever held the critical information ({what}); op {consumer.op_id} "
                      f"({view.op_name(consumer.op_id)}) read the evidence without passing it on.")
            return "ExtractionError", consumer.op_id, reason, 0.6
        if state.next_op is not None:
            reason = (f"No memory unit ever held the critical information ({what}) and no op read the evidence "
                      f"message: op {state.next_op} ({view.op_name(state.next_op)}), the first construction op "
                      "after it, should have taken it in.")
            return "ExtractionError", state.next_op, reason, 0.5
        return ("ExtractionError", None, "No memory unit ever held the critical information and no construction "
                "op read the evidence messages.", 0.0)

    if not state.holders:
        loss = state.last_loss
        assert loss is not None  # captured and now empty implies a recorded loss
        trail.add("store", present=False, note="no memory unit holds it when the question is asked")
        verb = "an explicit deletion of" if loss.error_type == "DeletionError" else "a new version of"
        why = f" ({loss.verdict.why})" if loss.verdict is not None else ""
        reason = (f"The critical information ({what}) was captured into memory, but op {loss.op_id} "
                  f"({view.op_name(loss.op_id) if loss.op_id else None}) made {verb} {loss.node.full_name}{why} the "
                  "last step after which no memory unit holds it, so it was missing from the store when the "
                  "question was asked.")
        clarity = 0.5 + 0.5 * _margin(loss.verdict.score if loss.verdict is not None else None)
        if loss.error_type == "UpdateError" and view.op_category(loss.op_id or "") == "extraction":
            # an extraction op that wrote the unit's content without it (over a first version that
            # only held a raw copy or a boundary summary) failed to capture it
            reason += " The op is an extraction op: the information was never captured into the unit's content."
            return "ExtractionError", loss.op_id, reason, clarity
        return loss.error_type, loss.op_id, reason, clarity

    # in the order they were written, never by id: unit ids are fresh uuids in every run
    holders = [n.full_node_id for n in sorted(state.holders.values(), key=lambda n: (n.created_at, n.order))]
    trail.add("store", present=True, note="held at question time by " + ", ".join(holders[:5]))
    held = min(v.score for v in state.holder_verdicts.values()) if state.holder_verdicts else 1.0
    held_clarity = 0.5 + 0.5 * max(0.0, min(1.0, held - 0.5))
    answering = find_answering(view, query, str(_case_field(case, "prediction") or ""))
    verdict = judge_query_time(view, probe, query, answering, state.holders, trail)
    clarity = held_clarity if verdict.by_identity else held_clarity * 0.8
    if verdict.context_has and verdict.by_identity and answering.context is not None:
        shown = _shown_loss(view, probe, answering.op_id, answering.context, state)
        if shown is not None:
            trail.add("context", op_id=answering.op_id, node=answering.context, present=False, note=shown.detail)
            reason = (f"The store held the critical information ({what}), but {shown.detail}: op {shown.op_id} "
                      f"({view.op_name(shown.op_id)}) is where the shown content lost it.")
            return shown.error_type, shown.op_id, reason, clarity * 0.8
    if verdict.context_has:
        if answering.prediction is not None:
            trail.add("answer", op_id=answering.op_id, node=answering.prediction, present=False)
        reason = (f"The final context {answering.context.full_node_id if answering.context else None} is built from "
                  f"{', '.join(holders[:3])}, which hold the critical information ({what}), yet the answer is "
                  f"wrong: the answering op {answering.op_id} failed to use it.")
        return "ResponseError", verdict.op_id, reason, clarity
    trail.add("retrieval" if verdict.error_type == "RetrievalError" else "answer", op_id=verdict.op_id,
              present=False, note=verdict.detail)
    reason = (f"The store held the critical information ({what}) in {', '.join(holders[:3])}, but "
              f"{verdict.detail} (op {verdict.op_id}, {view.op_name(verdict.op_id) if verdict.op_id else None}), so "
              "the final context lacks it.")
    return verdict.error_type, verdict.op_id, reason, clarity
