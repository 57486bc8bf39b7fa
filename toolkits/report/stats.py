"""The statistical report: numbers about the failures that need no model.

:func:`collect_case_facts` resolves what each record says (memory system, dataset source, the
blamed operation's name and category in its graph, the funnel stage where the information was
lost, gold labels, cost) and :func:`build_statistics` aggregates them into one JSON-ready dict:

* ``error_types`` — counts and shares per error type, overall, per memory system and per
  dataset source (shares are of the attributed cases of that group);
* ``blamed_operations`` — the most-blamed operation names and categories; per operation name up
  to ``examples_per_op`` example cases (question, gold, prediction, reason, the trail in one line,
  a viewer deep link), the prompt targets it depends on and, for Mem0's
  ``update_memory_decision``, the ``ADD``/``UPDATE``/``DELETE``/``NONE`` split;
* ``prompt_targets`` — blamed cases per optimization target (the optimizer's registry);
* ``replay`` — when records carry a counterfactual replay: the rescued share per operation and
  per prompt target (the recovery gain);
* ``loss_funnel`` — how many cases still carried the critical information after each pipeline
  stage, overall and per memory system, placed by the verdict's error type (so it agrees with
  ``error_types``), with the cases whose ``evidence_flow`` trail contradicts the verdict listed;
* ``non_memory`` — verdicts that are not memory errors (``LLMAsAJudgeError``,
  ``AnnotationError`` candidates), counted as their own error types and never blamed on an op;
* ``unavailable_graphs`` — records whose graph file is missing or unreadable;
* ``gold`` — when records carry ``final_error_type``/``final_op_id``: accuracy per gold error
  type and the confusion matrix (computed by :mod:`toolkits.metrics`, the attribution CLI's own
  scorer);
* ``costs`` — tokens, model calls and seconds per case;
* ``failed_attributions`` — records without a usable attribution (kept out of the model batches).
"""

from __future__ import annotations

import statistics as pystats
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from toolkits.bench_utils import ERROR_TYPES

from .case_details import (
    DECISION_EVENTS,
    DEFAULT_VIEWER_URL,
    Replay,
    decision_event_of,
    is_decision_op,
    prompt_target_of,
    replay_of,
    viewer_link,
)
from .funnel import FUNNEL_STAGES, find_trail, loss_stage_of, trail_summary
from .graphs import GraphStore, OpInfo, dataset_source_of, memory_system_of
from .inputs import NON_MEMORY_ERROR_TYPES, ReportRecord

__all__ = ["CaseFacts", "build_statistics", "collect_case_facts", "summary_for_prompt"]

UNRESOLVED_OP = "(unresolved)"
"""Op name used when the blamed op id is empty, not in the graph, or the graph is missing."""
NO_PROMPT_TARGET = "(no prompt target)"
"""Target name of blamed cases whose operation consumes no optimizable prompt."""
DEFAULT_EXAMPLES_PER_OP = 3


@dataclass(frozen=True, kw_only=True)
class CaseFacts:
    """What the statistics need to know about one record."""

    index: int
    query_id: str
    graph_path: str | None
    memory_system: str
    dataset_source: str
    failure: str | None
    """Why the attribution failed; None for an attributed case."""
    error_type: str | None
    op_id: str | None
    op_name: str | None
    """Name of the blamed op in the graph, None when it cannot be resolved."""
    op_category: str | None
    loss_stage: str | None
    """The funnel stage the verdict's error type implies (None: failed, non-memory or unknown type)."""
    loss_basis: str
    """``error_type`` or ``unknown``."""
    trail_stage: str | None
    """The stage the ``evidence_flow`` trail shows the loss at, when the record has a trail."""
    gold_error_type: str | None
    gold_op_id: str | None
    input_tokens: int | None
    output_tokens: int | None
    model_calls: int | None
    seconds: float | None
    cached: bool
    non_memory: str | None = None
    """``LLMAsAJudgeError``/``AnnotationError`` for a non-memory verdict (``error_type`` holds it too)."""
    query: str = ""
    golden_answer: str = ""
    prediction: str = ""
    reason: str = ""
    trail_line: str = ""
    """The ``evidence_flow`` trail in one line (empty without a trail)."""
    graph_error: str | None = None
    """Why the record's graph cannot be loaded (None when it loads)."""
    viewer_link: str | None = None
    prompt_target: str | None = None
    """Bundle field of the optimization target the blamed op consumes (None: no prompt target)."""
    decision_event: str | None = None
    """``ADD``/``UPDATE``/``DELETE``/``NONE`` for a blamed memory update decision."""
    decision_basis: str | None = None
    replay: Replay | None = None

    @property
    def attributed(self) -> bool:
        """True when the record blames a memory operation."""
        return self.failure is None and self.non_memory is None

    @property
    def has_verdict(self) -> bool:
        """True for a memory-error attribution and for a non-memory verdict."""
        return self.failure is None

    @property
    def trail_contradicts(self) -> bool:
        """True when the trail places the loss at another stage than the verdict."""
        return self.trail_stage is not None and self.loss_stage is not None and self.trail_stage != self.loss_stage


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _recorded_op(value: Any) -> OpInfo | None:
    """The op name and category the attribution run recorded, used when the graph cannot tell."""
    if isinstance(value, dict) and isinstance(value.get("op_name"), str) and value["op_name"]:
        return OpInfo(op_name=value["op_name"], category=str(value.get("category") or "(none)"))
    return None


def _op_details(record: ReportRecord, graph: Any, info: OpInfo | None) -> dict[str, Any]:
    """Prompt target and decision event of an attributed record whose op is in its graph."""
    if graph is None or info is None or not record.op_id:
        return {}
    target = prompt_target_of(graph, record.op_id)
    details: dict[str, Any] = {"prompt_target": target.field if target else None}
    if is_decision_op(info.op_name):
        event, basis = decision_event_of(graph, record.op_id, error_type=record.error_type,
                                         trail=find_trail(record.raw))
        details.update(decision_event=event, decision_basis=basis)
    return details


def _usage_numbers(record: ReportRecord) -> dict[str, Any]:
    usage = record.raw.get("attribution_usage")
    usage = usage if isinstance(usage, dict) else {}
    calls = _number(usage.get("num_calls"))
    tokens_in = _number(usage.get("input_tokens"))
    tokens_out = _number(usage.get("output_tokens"))
    return {
        "input_tokens": int(tokens_in) if tokens_in is not None else None,
        "output_tokens": int(tokens_out) if tokens_out is not None else None,
        "model_calls": int(calls) if calls is not None else None,
        "seconds": _number(record.raw.get("attribution_seconds")),
        "cached": bool(record.raw.get("attribution_cached")),
    }


def _graph_location(record: ReportRecord, graphs: GraphStore) -> str | None:
    """The graph file as an absolute path when it exists (a viewer started anywhere opens it),
    else as the record names it."""
    path = graphs.resolve_path(record)
    return str(path.resolve()) if path is not None else record.graph_path


def _case_facts(record: ReportRecord, graphs: GraphStore, viewer_url: str) -> CaseFacts:
    graph = graphs.graph_for(record)
    info = graphs.op_info(record, record.op_id) if record.attributed else None
    op_details = _op_details(record, graph, info)
    if info is None and record.attributed:
        info = _recorded_op(record.raw.get("attributed_operation"))
    loss = loss_stage_of(record.raw, record.error_type) if record.attributed else None
    gold_type = record.raw.get("final_error_type")
    gold_op = record.raw.get("final_op_id")
    return CaseFacts(
        index=record.index,
        query_id=record.query_id,
        graph_path=record.graph_path,
        memory_system=memory_system_of(record, graph),
        dataset_source=dataset_source_of(record, graph),
        failure=record.failure,
        error_type=record.error_type,
        op_id=record.op_id,
        op_name=info.op_name if info else None,
        op_category=info.category if info else None,
        loss_stage=loss.stage if loss else None,
        loss_basis=loss.basis if loss else "unknown",
        trail_stage=loss.trail_stage if loss else None,
        gold_error_type=str(gold_type) if isinstance(gold_type, str) and gold_type else None,
        gold_op_id=str(gold_op) if gold_op is not None else None,
        **_usage_numbers(record),
        non_memory=record.non_memory,
        query=record.query,
        golden_answer=record.golden_answer,
        prediction=record.prediction,
        reason=record.reason or (record.failure or ""),
        trail_line=trail_summary(find_trail(record.raw)),
        graph_error=graphs.error_for(record) if graph is None else None,
        viewer_link=viewer_link(viewer_url, graph_path=_graph_location(record, graphs), query_id=record.query_id,
                                split=record.split),
        replay=replay_of(record.raw),
        **op_details,
    )


def collect_case_facts(
    records: Sequence[ReportRecord], graphs: GraphStore, *, viewer_url: str = DEFAULT_VIEWER_URL
) -> list[CaseFacts]:
    """Resolve every record against its graph (graph by graph, each file read once); the facts
    come back in record-index (input) order.

    Args:
        records: The input records.
        graphs: Where the graphs are loaded from.
        viewer_url: Base URL of the annotation viewer, for each case's deep link.
    """
    facts = [_case_facts(record, graphs, viewer_url) for record in graphs.by_graph(records)]
    facts.sort(key=lambda fact: fact.index)
    return facts


_KNOWN_TYPES = (*ERROR_TYPES, *NON_MEMORY_ERROR_TYPES)


def _type_order(types: Iterable[str]) -> list[str]:
    seen = set(types)
    return [t for t in _KNOWN_TYPES if t in seen] + sorted(seen - set(_KNOWN_TYPES))


def _type_breakdown(facts: Sequence[CaseFacts]) -> dict[str, Any]:
    """Counts per verdict: the memory error types and, as their own rows, non-memory verdicts;
    shares are of the cases with a verdict."""
    judged = [f for f in facts if f.has_verdict]
    counts = Counter(f.error_type for f in judged)
    n = len(judged)
    return {
        "records": len(facts),
        "attributed": sum(1 for f in judged if f.attributed),
        "non_memory": sum(1 for f in judged if not f.attributed),
        "verdicts": n,
        "failed": len(facts) - n,
        "counts": {t: counts[t] for t in _type_order(counts)},
        "shares": {t: counts[t] / n for t in _type_order(counts)} if n else {},
    }


def _grouped(facts: Sequence[CaseFacts], key: str) -> dict[str, list[CaseFacts]]:
    groups: dict[str, list[CaseFacts]] = {}
    for f in facts:
        groups.setdefault(getattr(f, key), []).append(f)
    return dict(sorted(groups.items()))


def example_of(fact: CaseFacts) -> dict[str, Any]:
    """One example case as the report shows it."""
    return {
        "index": fact.index,
        "query_id": fact.query_id,
        "memory_system": fact.memory_system,
        "question": fact.query,
        "golden_answer": fact.golden_answer,
        "prediction": fact.prediction,
        "error_type": fact.error_type,
        "reason": fact.reason,
        "trail": fact.trail_line,
        "viewer_link": fact.viewer_link,
        "decision_event": fact.decision_event,
        "rescued": None if fact.replay is None else fact.replay.rescued,
    }


def _replay_counts(members: Sequence[CaseFacts]) -> dict[str, int]:
    replayed = [m for m in members if m.replay is not None]
    return {"replayed": len(replayed), "rescued": sum(1 for m in replayed if m.replay and m.replay.rescued)}


def _op_row(name: str, members: list[CaseFacts], label: str, n: int, examples: int) -> dict[str, Any]:
    types = Counter(m.error_type for m in members)
    systems = Counter(m.memory_system for m in members)
    row: dict[str, Any] = {
        label: name,
        "count": len(members),
        "share": len(members) / n if n else 0.0,
        "error_types": {t: types[t] for t in _type_order(types)},
        "memory_systems": dict(sorted(systems.items())),
        "replay": _replay_counts(members),
    }
    if label != "op_name":
        return row
    targets = Counter(m.prompt_target or NO_PROMPT_TARGET for m in members)
    row["prompt_targets"] = dict(targets.most_common())
    events = Counter(m.decision_event for m in members if m.decision_event)
    if events:
        row["decision_events"] = {e: events[e] for e in DECISION_EVENTS}
    row["examples"] = [example_of(m) for m in members[:examples]]
    return row


def _blamed_operations(facts: Sequence[CaseFacts], top: int, examples: int = DEFAULT_EXAMPLES_PER_OP) -> dict[str, Any]:
    attributed = [f for f in facts if f.attributed]
    n = len(attributed)
    by_name: dict[str, list[CaseFacts]] = {}
    by_category: dict[str, list[CaseFacts]] = {}
    for f in attributed:
        by_name.setdefault(f.op_name or UNRESOLVED_OP, []).append(f)
        by_category.setdefault(f.op_category or UNRESOLVED_OP, []).append(f)

    def rows(groups: dict[str, list[CaseFacts]], label: str) -> list[dict[str, Any]]:
        ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
        return [_op_row(name, members, label, n, examples) for name, members in ordered[:top]]

    return {
        "attributed": n,
        "unresolved": sum(1 for f in attributed if f.op_name is None),
        "distinct_op_names": len(by_name),
        "by_name": rows(by_name, "op_name"),
        "by_category": rows(by_category, "category"),
    }


def _prompt_targets(facts: Sequence[CaseFacts]) -> list[dict[str, Any]]:
    """Blamed cases per optimization target (the target their operation consumes)."""
    groups: dict[str, list[CaseFacts]] = {}
    for f in facts:
        if f.attributed:
            groups.setdefault(f.prompt_target or NO_PROMPT_TARGET, []).append(f)
    out = []
    for name, members in sorted(groups.items(), key=lambda item: (item[0] == NO_PROMPT_TARGET, -len(item[1]), item[0])):
        ops = Counter(m.op_name or UNRESOLVED_OP for m in members)
        types = Counter(m.error_type for m in members)
        out.append({"target": name, "count": len(members), "operations": dict(ops.most_common()),
                    "error_types": {t: types[t] for t in _type_order(types)}, "replay": _replay_counts(members)})
    return out


def _recovery_rows(groups: dict[str, list[CaseFacts]], label: str) -> list[dict[str, Any]]:
    rows = []
    for name, members in groups.items():
        counts = _replay_counts(members)
        if counts["replayed"]:
            rows.append({label: name, **counts, "recovery_gain": counts["rescued"] / counts["replayed"]})
    return sorted(rows, key=lambda r: (-r["rescued"], -r["replayed"], r[label]))


def _replay(facts: Sequence[CaseFacts]) -> dict[str, Any] | None:
    """Recovery gain: of the failures replayed with their blamed op repaired, the share rescued."""
    replayed = [f for f in facts if f.replay is not None]
    if not replayed:
        return None
    by_op: dict[str, list[CaseFacts]] = {}
    by_target: dict[str, list[CaseFacts]] = {}
    for f in replayed:
        by_op.setdefault(f.op_name or UNRESOLVED_OP, []).append(f)
        by_target.setdefault(f.prompt_target or NO_PROMPT_TARGET, []).append(f)

    def total(field: str) -> float | None:
        values = [getattr(f.replay, field) for f in replayed if f.replay and getattr(f.replay, field) is not None]
        return float(sum(values)) if values else None

    labels = Counter(f.replay.counterfactual_label for f in replayed if f.replay and f.replay.counterfactual_label)
    return {
        **_replay_counts(replayed),
        "recovery_gain": sum(1 for f in replayed if f.replay and f.replay.rescued) / len(replayed),
        "by_op": _recovery_rows(by_op, "op_name"),
        "by_prompt_target": _recovery_rows(by_target, "target"),
        "new_calls": total("new_calls"),
        "tokens": total("tokens"),
        "seconds": total("seconds"),
        "counterfactual_labels": dict(labels.most_common()),
    }


def _non_memory(facts: Sequence[CaseFacts]) -> dict[str, Any]:
    members = [f for f in facts if f.has_verdict and not f.attributed]
    counts = Counter(f.non_memory for f in members)
    return {
        "counts": {t: counts[t] for t in _type_order(c for c in counts if c)},
        "cases": [{**example_of(f), "label": f.non_memory} for f in members],
    }


def _funnel(facts: Sequence[CaseFacts]) -> dict[str, Any]:
    attributed = [f for f in facts if f.attributed]
    known = [f for f in attributed if f.loss_stage is not None]
    lost = Counter(f.loss_stage for f in known)
    remaining = len(known)
    carried: dict[str, int] = {}
    for stage in FUNNEL_STAGES:
        remaining -= lost[stage]
        carried[stage] = remaining
    checked = [f for f in known if f.trail_stage is not None]
    return {
        "stages": list(FUNNEL_STAGES),
        "cases": len(known),
        "lost_at": {s: lost[s] for s in FUNNEL_STAGES},
        "carried_after": carried,
        "unknown": len(attributed) - len(known),
        "non_memory": sum(1 for f in facts if f.has_verdict and not f.attributed),
        "trail": {
            "checked": len(checked),
            "agrees": sum(1 for f in checked if not f.trail_contradicts),
            "contradicts": sum(1 for f in checked if f.trail_contradicts),
        },
    }


def _contradictions(facts: Sequence[CaseFacts]) -> list[dict[str, Any]]:
    """Cases whose trail places the loss at another stage than their verdict (kept at the verdict's)."""
    return [
        {"index": f.index, "query_id": f.query_id, "memory_system": f.memory_system, "error_type": f.error_type,
         "op_name": f.op_name, "verdict_stage": f.loss_stage, "trail_stage": f.trail_stage, "trail": f.trail_line,
         "viewer_link": f.viewer_link}
        for f in facts
        if f.attributed and f.trail_contradicts
    ]


def _gold(facts: Sequence[CaseFacts]) -> dict[str, Any] | None:
    from toolkits.metrics import AttributionRecord, attribution_metrics

    labelled = [f for f in facts if f.gold_error_type is not None and f.gold_op_id is not None]
    if not labelled:
        return None
    scored = [
        AttributionRecord(
            gold_error_type=f.gold_error_type or "",
            gold_op_id=f.gold_op_id or "",
            predicted_error_type=f.error_type,
            predicted_op_id=f.op_id,
            group=f.memory_system,
        )
        for f in labelled
    ]
    metrics = attribution_metrics(scored, bootstrap_samples=0)

    def summary(m: dict[str, Any]) -> dict[str, Any]:
        return {
            "cases": m["total_cases"],
            "failed": m["failed_cases"],
            "error_type_accuracy": m["error_type_prediction_accuracy"],
            "op_accuracy": m["operation_identifier_prediction_accuracy"],
            "joint_accuracy": m["joint_accuracy"],
        }

    return {
        **summary(metrics),
        "unlabelled_records": len(facts) - len(labelled),
        "by_gold_error_type": {t: summary(m) for t, m in metrics["by_error_type"].items()},
        "by_memory_system": {g: summary(m) for g, m in metrics["by_group"].items()},
        "confusion_matrix": metrics["confusion_matrix"],
    }


def _spread(values: Sequence[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "total": float(sum(values)),
        "mean": float(pystats.fmean(values)),
        "median": float(pystats.median(values)),
        "max": float(max(values)),
    }


def _costs(facts: Sequence[CaseFacts]) -> dict[str, Any]:
    executed = [f for f in facts if not f.cached]

    def of(field: str, members: Sequence[CaseFacts]) -> dict[str, float] | None:
        return _spread([float(getattr(f, field)) for f in members if getattr(f, field) is not None])

    per_system = {
        system: {
            "cases": len(members),
            "input_tokens": of("input_tokens", members),
            "output_tokens": of("output_tokens", members),
            "seconds": of("seconds", members),
        }
        for system, members in _grouped(executed, "memory_system").items()
    }
    return {
        "executed_cases": len(executed),
        "cached_cases": len(facts) - len(executed),
        "input_tokens": of("input_tokens", executed),
        "output_tokens": of("output_tokens", executed),
        "model_calls": of("model_calls", executed),
        "seconds": of("seconds", executed),
        "by_memory_system": per_system,
    }


def build_statistics(
    facts: Sequence[CaseFacts], *, top_operations: int = 15, examples_per_op: int = DEFAULT_EXAMPLES_PER_OP
) -> dict[str, Any]:
    """Aggregate the per-case facts (see the module docstring for the keys).

    Args:
        facts: One entry per input record, failed attributions included.
        top_operations: How many op names and categories to list.
        examples_per_op: Example cases listed per blamed operation name.

    Returns:
        A JSON-ready dict.
    """
    facts = list(facts)
    by_system = _grouped(facts, "memory_system")
    return {
        "records": len(facts),
        "attributed": sum(1 for f in facts if f.attributed),
        "non_memory_verdicts": sum(1 for f in facts if f.has_verdict and not f.attributed),
        "failed": sum(1 for f in facts if not f.has_verdict),
        "memory_systems": list(by_system),
        "dataset_sources": list(_grouped(facts, "dataset_source")),
        "error_types": {
            "overall": _type_breakdown(facts),
            "by_memory_system": {k: _type_breakdown(v) for k, v in by_system.items()},
            "by_dataset_source": {k: _type_breakdown(v) for k, v in _grouped(facts, "dataset_source").items()},
        },
        "blamed_operations": _blamed_operations(facts, top_operations, examples_per_op),
        "prompt_targets": _prompt_targets(facts),
        "replay": _replay(facts),
        "loss_funnel": {
            "overall": _funnel(facts),
            "by_memory_system": {k: _funnel(v) for k, v in by_system.items()},
            "contradictions": _contradictions(facts),
        },
        "non_memory": _non_memory(facts),
        "gold": _gold(facts),
        "costs": _costs(facts),
        "failed_attributions": [
            {"index": f.index, "query_id": f.query_id, "memory_system": f.memory_system,
             "graph_path": f.graph_path, "failure": f.failure}
            for f in facts
            if not f.has_verdict
        ],
        "unavailable_graphs": [
            {"index": f.index, "query_id": f.query_id, "graph_path": f.graph_path, "reason": f.graph_error}
            for f in facts
            if f.graph_error
        ],
    }


def summary_for_prompt(statistics: dict[str, Any]) -> str:
    """A few lines of the statistics for the report model (counts over all cases, no case ids)."""
    overall = statistics["error_types"]["overall"]
    lines = [
        f"{statistics['records']} failed question(s) in total, {statistics['attributed']} attributed "
        f"({statistics['failed']} whose attribution failed are not shown to you).",
        "Error types: "
        + (", ".join(f"{t} {n} ({overall['shares'][t]:.0%})" for t, n in overall["counts"].items()) or "none")
        + ".",
    ]
    systems = statistics["error_types"]["by_memory_system"]
    if len(systems) > 1:
        for name, block in systems.items():
            lines.append(
                f"- {name}: " + ", ".join(f"{t} {n}" for t, n in block["counts"].items()) + f" ({block['attributed']} attributed)."
            )
    blamed = statistics["blamed_operations"]["by_name"][:5]
    if blamed:
        lines.append("Most-blamed operations: " + ", ".join(f"{r['op_name']} {r['count']}" for r in blamed) + ".")
    targets = [t for t in statistics.get("prompt_targets", []) if not t["target"].startswith("(")]
    if targets:
        lines.append("Prompts the blamed operations depend on: " + ", ".join(f"{t['target']} {t['count']}" for t in targets)
                     + ".")
    replay = statistics.get("replay")
    if replay:
        lines.append(f"Replaying failures with the blamed operation repaired rescued {replay['rescued']} of "
                     f"{replay['replayed']}: " + ", ".join(f"{r['op_name']} {r['rescued']}/{r['replayed']}"
                                                          for r in replay["by_op"]) + ".")
    non_memory = statistics.get("non_memory", {}).get("counts") or {}
    if non_memory:
        lines.append("Not memory errors (not shown to you): " + ", ".join(f"{t} {n}" for t, n in non_memory.items()) + ".")
    funnel = statistics["loss_funnel"]["overall"]
    if funnel["cases"]:
        lines.append(
            "Stage where the critical information was lost: "
            + ", ".join(f"{stage} {n}" for stage, n in funnel["lost_at"].items() if n)
            + "."
        )
    return "\n".join(lines)
