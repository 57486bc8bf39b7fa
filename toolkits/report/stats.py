"""The statistical report: numbers about the failures that need no model.

:func:`collect_case_facts` resolves what each record says (memory system, dataset source, the
blamed operation's name and category in its graph, the funnel stage where the information was
lost, gold labels, cost) and :func:`build_statistics` aggregates them into one JSON-ready dict:

* ``error_types`` — counts and shares per error type, overall, per memory system and per
  dataset source (shares are of the attributed cases of that group);
* ``blamed_operations`` — the most-blamed operation names and categories;
* ``loss_funnel`` — how many cases still carried the critical information after each pipeline
  stage, overall and per memory system, and whether the stage came from an ``evidence_flow``
  trail or from the error type;
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

from .funnel import FUNNEL_STAGES, loss_stage_of
from .graphs import GraphStore, OpInfo, dataset_source_of, memory_system_of
from .inputs import ReportRecord

__all__ = ["CaseFacts", "build_statistics", "collect_case_facts", "summary_for_prompt"]

UNRESOLVED_OP = "(unresolved)"
"""Op name used when the blamed op id is empty, not in the graph, or the graph is missing."""


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
    loss_basis: str
    """``trail``, ``error_type`` or ``unknown``."""
    trail_agrees: bool | None
    gold_error_type: str | None
    gold_op_id: str | None
    input_tokens: int | None
    output_tokens: int | None
    model_calls: int | None
    seconds: float | None
    cached: bool

    @property
    def attributed(self) -> bool:
        """True when the record has a usable attribution."""
        return self.failure is None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _recorded_op(value: Any) -> OpInfo | None:
    """The op name and category the attribution run recorded, used when the graph cannot tell."""
    if isinstance(value, dict) and isinstance(value.get("op_name"), str) and value["op_name"]:
        return OpInfo(op_name=value["op_name"], category=str(value.get("category") or "(none)"))
    return None


def collect_case_facts(records: Sequence[ReportRecord], graphs: GraphStore) -> list[CaseFacts]:
    """Resolve every record against its graph (graph by graph, each file read once); the facts
    come back in record-index (input) order."""
    facts: list[CaseFacts] = []
    for record in graphs.by_graph(records):
        graph = graphs.graph_for(record)
        info = graphs.op_info(record, record.op_id) if record.attributed else None
        if info is None and record.attributed:
            info = _recorded_op(record.raw.get("attributed_operation"))
        loss = loss_stage_of(record.raw, record.error_type) if record.attributed else None
        usage = record.raw.get("attribution_usage")
        usage = usage if isinstance(usage, dict) else {}
        gold_type = record.raw.get("final_error_type")
        gold_op = record.raw.get("final_op_id")
        calls = _number(usage.get("num_calls"))
        tokens_in = _number(usage.get("input_tokens"))
        tokens_out = _number(usage.get("output_tokens"))
        facts.append(
            CaseFacts(
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
                trail_agrees=loss.agrees_with_error_type if loss else None,
                gold_error_type=str(gold_type) if isinstance(gold_type, str) and gold_type else None,
                gold_op_id=str(gold_op) if gold_op is not None else None,
                input_tokens=int(tokens_in) if tokens_in is not None else None,
                output_tokens=int(tokens_out) if tokens_out is not None else None,
                model_calls=int(calls) if calls is not None else None,
                seconds=_number(record.raw.get("attribution_seconds")),
                cached=bool(record.raw.get("attribution_cached")),
            )
        )
    facts.sort(key=lambda fact: fact.index)
    return facts


def _type_order(types: Iterable[str]) -> list[str]:
    seen = set(types)
    return [t for t in ERROR_TYPES if t in seen] + sorted(seen - set(ERROR_TYPES))


def _type_breakdown(facts: Sequence[CaseFacts]) -> dict[str, Any]:
    attributed = [f for f in facts if f.attributed]
    counts = Counter(f.error_type for f in attributed)
    n = len(attributed)
    return {
        "records": len(facts),
        "attributed": n,
        "failed": len(facts) - n,
        "counts": {t: counts[t] for t in _type_order(counts)},
        "shares": {t: counts[t] / n for t in _type_order(counts)} if n else {},
    }


def _grouped(facts: Sequence[CaseFacts], key: str) -> dict[str, list[CaseFacts]]:
    groups: dict[str, list[CaseFacts]] = {}
    for f in facts:
        groups.setdefault(getattr(f, key), []).append(f)
    return dict(sorted(groups.items()))


def _blamed_operations(facts: Sequence[CaseFacts], top: int) -> dict[str, Any]:
    attributed = [f for f in facts if f.attributed]
    n = len(attributed)
    by_name: dict[str, list[CaseFacts]] = {}
    by_category: dict[str, list[CaseFacts]] = {}
    for f in attributed:
        by_name.setdefault(f.op_name or UNRESOLVED_OP, []).append(f)
        by_category.setdefault(f.op_category or UNRESOLVED_OP, []).append(f)

    def rows(groups: dict[str, list[CaseFacts]], label: str) -> list[dict[str, Any]]:
        ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
        out = []
        for name, members in ordered[:top]:
            types = Counter(m.error_type for m in members)
            systems = Counter(m.memory_system for m in members)
            out.append(
                {
                    label: name,
                    "count": len(members),
                    "share": len(members) / n if n else 0.0,
                    "error_types": {t: types[t] for t in _type_order(types)},
                    "memory_systems": dict(sorted(systems.items())),
                }
            )
        return out

    return {
        "attributed": n,
        "unresolved": sum(1 for f in attributed if f.op_name is None),
        "distinct_op_names": len(by_name),
        "by_name": rows(by_name, "op_name"),
        "by_category": rows(by_category, "category"),
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
    trail_based = [f for f in known if f.loss_basis == "trail"]
    return {
        "stages": list(FUNNEL_STAGES),
        "cases": len(known),
        "lost_at": {s: lost[s] for s in FUNNEL_STAGES},
        "carried_after": carried,
        "basis": {
            "trail": len(trail_based),
            "error_type": sum(1 for f in known if f.loss_basis == "error_type"),
            "unknown": len(attributed) - len(known),
        },
        "trail_disagrees_with_error_type": sum(1 for f in trail_based if f.trail_agrees is False),
    }


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


def build_statistics(facts: Sequence[CaseFacts], *, top_operations: int = 15) -> dict[str, Any]:
    """Aggregate the per-case facts (see the module docstring for the keys).

    Args:
        facts: One entry per input record, failed attributions included.
        top_operations: How many op names and categories to list.

    Returns:
        A JSON-ready dict.
    """
    facts = list(facts)
    by_system = _grouped(facts, "memory_system")
    return {
        "records": len(facts),
        "attributed": sum(1 for f in facts if f.attributed),
        "failed": sum(1 for f in facts if not f.attributed),
        "memory_systems": list(by_system),
        "dataset_sources": list(_grouped(facts, "dataset_source")),
        "error_types": {
            "overall": _type_breakdown(facts),
            "by_memory_system": {k: _type_breakdown(v) for k, v in by_system.items()},
            "by_dataset_source": {k: _type_breakdown(v) for k, v in _grouped(facts, "dataset_source").items()},
        },
        "blamed_operations": _blamed_operations(facts, top_operations),
        "loss_funnel": {
            "overall": _funnel(facts),
            "by_memory_system": {k: _funnel(v) for k, v in by_system.items()},
        },
        "gold": _gold(facts),
        "costs": _costs(facts),
        "failed_attributions": [
            {"index": f.index, "query_id": f.query_id, "memory_system": f.memory_system,
             "graph_path": f.graph_path, "failure": f.failure}
            for f in facts
            if not f.attributed
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
    funnel = statistics["loss_funnel"]["overall"]
    if funnel["cases"]:
        lines.append(
            "Stage where the critical information was lost: "
            + ", ".join(f"{stage} {n}" for stage, n in funnel["lost_at"].items() if n)
            + "."
        )
    return "\n".join(lines)
