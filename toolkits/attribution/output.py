"""The output JSON of an attribution run: one record per case, then the metrics (spec §6.4, extended).

A record is the case's annotation (copied, never shared) plus what the attribution found
(``error_attribution_result``, the blamed operation's name and category, failure, attempts,
seconds, tokens, the starting evidence and the strategy's own details). The output wraps the
records with the run's identity (split, strategy, model), the sampled graph paths and the
metrics: gold-label scores (ETA, OIA, joint accuracy, breakdowns, bootstrap intervals) for a
MemTraceBench split, or the prediction distribution for a run folder of ``python -m membase``.
"""

from __future__ import annotations

import argparse
import copy
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from toolkits.runner import CaseResult, RunCosts

__all__ = [
    "FinishedRun",
    "OutputSettings",
    "assemble_output",
    "build_output",
    "build_record",
    "operation_info",
    "record_graph_path",
    "run_costs",
    "write_output",
]


@dataclass(frozen=True, kw_only=True)
class OutputSettings:
    """What an output says about its run, and how its records are scored.

    Attributes:
        dataset_dir: The MemTraceBench folder or the run folder the cases came from.
        split: The benchmark split (a run folder's layer split, or None).
        exploration_strategy: The strategy's name, as given on the command line.
        model: The chat model's name (``--model-name``).
        run_mode: True for a run folder of ``python -m membase`` (no gold labels: the metrics
            are a prediction distribution), False for a MemTraceBench split.
        seed: Seed of the bootstrap resamples.
        bootstrap_samples: Resamples of the 95 % intervals (0: none).
    """

    dataset_dir: str
    split: str | None
    exploration_strategy: str = "graph_search"
    model: str = "gpt-4.1-mini"
    run_mode: bool = False
    seed: int = 42
    bootstrap_samples: int = 1000

    @classmethod
    def from_args(cls, args: argparse.Namespace, *, split: str | None, run_mode: bool) -> OutputSettings:
        """The settings of parsed ``run_error_attribution.py`` arguments.

        Args:
            args: The parsed arguments.
            split: The split the loaded cases belong to (a run folder's own when none was given).
            run_mode: Whether the cases came from a run folder of ``python -m membase``.
        """
        return cls(
            dataset_dir=str(args.dataset_dir),
            split=split,
            exploration_strategy=args.exploration_strategy,
            model=args.model_name,
            run_mode=run_mode,
            seed=args.seed,
            bootstrap_samples=args.bootstrap_samples,
        )


class _Case(Protocol):
    metadata: dict[str, Any]


class FinishedRun(Protocol):
    """What :func:`build_output` needs of a run: one result per case, and the run's costs."""

    results: Sequence[CaseResult]
    costs: RunCosts


def record_graph_path(settings: OutputSettings, case: _Case) -> str:
    """The graph file a case's record names (``graph_path``).

    A run folder's case carries its graph's path; a benchmark case's path is derived from the
    file it came from (the reference read graph metadata that its loader never set, spec §12.9).
    """
    if settings.run_mode:
        return str(case.metadata.get("graph_path"))
    name = case.metadata.get("graph_filename") or Path(case.metadata.get("graph_path", "unknown.json")).name
    return str(Path(settings.dataset_dir) / str(settings.split) / name)


def operation_info(graph: Any, op_id: str) -> dict[str, Any] | None:
    """Name and category of the blamed operation (None when the id is empty or unknown, or no graph)."""
    if not op_id or graph is None:
        return None
    try:
        op = graph.get_operation(op_id)
    except (KeyError, LookupError, AttributeError):
        return None
    return {"op_name": op.op_name, "category": op.category}


def build_record(
    settings: OutputSettings, case: _Case, result: CaseResult, *, secrets: Sequence[str] = (), graph: Any = None
) -> dict[str, Any]:
    """The output record of one case (spec §6.4, extended).

    Only the free text MemTrace writes (failures, the prediction's fields) is redacted; the
    benchmark's own text is copied unchanged. A failed case gets a prediction of empty strings
    with the failure as its reason (the reference layout always has that dict).
    """
    from toolkits._base import redact
    from toolkits.metrics import AttributionRecord

    annotation = copy.deepcopy(case.metadata.get("annotation") or {})
    record = dict(annotation)
    record["graph_path"] = record_graph_path(settings, case)
    failure = redact(result.failure, secrets) if result.failure is not None else None
    if result.prediction is not None and failure is None:
        prediction = {k: redact(str(v), secrets) for k, v in result.prediction.items()}
    else:
        prediction = {"error_type": "", "op_id": "", "reason": failure or "no prediction"}
    record["error_attribution_result"] = prediction
    if not settings.run_mode:
        scoring = AttributionRecord.from_result({**annotation, "error_attribution_result": prediction,
                                                 "attribution_failure": failure})
        record["is_error_type_correct"] = scoring.type_correct
        record["is_op_id_correct"] = scoring.op_correct
    record["attributed_operation"] = operation_info(graph, prediction["op_id"]) if failure is None else None
    record["attribution_failure"] = failure
    record["attribution_attempts"] = result.attempts
    record["attribution_seconds"] = result.elapsed_seconds
    record["attribution_cached"] = result.cached
    record["attribution_usage"] = result.usage
    record["starting_evidence_ids"] = result.evidence_ids
    for name, detail in (getattr(result, "details", None) or {}).items():
        record.setdefault(name, detail)  # never over a field of the benchmark or of the record
    return record


def run_costs(results: Iterable[CaseResult]) -> RunCosts:
    """The costs of a set of finished results, counted as the runner counts a whole run.

    A cached (or resumed) case counts as cached only; an executed one adds its tokens, model
    calls and seconds, and a failure.
    """
    from toolkits.runner import RunCosts

    costs = RunCosts()
    for r in results:
        if r.cached:
            costs.cached_cases += 1
            continue
        costs.executed_cases += 1
        costs.failed_cases += 0 if r.ok else 1
        costs.total_input_tokens += r.usage["input_tokens"]
        costs.total_output_tokens += r.usage["output_tokens"]
        costs.total_model_calls += r.usage["num_calls"]
        costs.total_seconds += r.elapsed_seconds
    return costs


def _run_folder_metrics(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """No gold labels: what was blamed (error types, operation names and categories), and failures."""
    from toolkits.metrics import non_memory_counts, non_memory_kind, prediction_distribution

    predictions = [
        None if r["attribution_failure"] is not None else {
            "error_type": r["error_attribution_result"]["error_type"],
            "op_name": (r.get("attributed_operation") or {}).get("op_name"),
            "op_category": (r.get("attributed_operation") or {}).get("category"),
        }
        for r in records
    ]
    distribution = prediction_distribution(predictions)
    return {
        "total_cases": len(records),
        "failed_cases": distribution["failed_cases"],
        "non_memory_errors": non_memory_counts(non_memory_kind(r) for r in records),
        "prediction_distribution": distribution,
    }


def _benchmark_metrics(
    settings: OutputSettings, cases: Sequence[_Case], records: Sequence[dict[str, Any]], bootstrap_samples: int
) -> dict[str, Any]:
    """Gold-label scores, grouped by each case's ``dataset_source``."""
    from toolkits.metrics import AttributionRecord, attribution_metrics

    scored = [
        AttributionRecord.from_result(r, group=str(c.metadata.get("dataset_source") or "unknown"))
        for c, r in zip(cases, records, strict=True)
    ]
    return attribution_metrics(scored, bootstrap_samples=bootstrap_samples, seed=settings.seed)


def assemble_output(
    settings: OutputSettings,
    cases: Sequence[_Case],
    records: Sequence[dict[str, Any]],
    costs: RunCosts,
    *,
    complete: bool,
    bootstrap_samples: int | None = None,
    extra_metrics: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The output JSON from finished records (called once per run, or with the finished part on interrupt).

    Args:
        settings: The run's identity and scoring settings.
        cases: The cases, in the order of ``records`` (their ``dataset_source`` groups the scores).
        records: One :func:`build_record` record per case.
        costs: The run's costs (``error_attribution_cost`` and ``cost_totals``).
        complete: False for the partial output an interruption leaves.
        bootstrap_samples: Overrides ``settings.bootstrap_samples`` (0 skips the intervals).
        extra_metrics: Metrics of the input (a run folder's judged and skipped counts), placed
            after the prediction distribution; ignored for a MemTraceBench split.

    Returns:
        The output object, keys in the reference's order.
    """
    by_graph = Counter(r["graph_path"] for r in records)
    failures = [
        {"query_id": r.get("query_id"), "graph_path": r["graph_path"], "failure": r["attribution_failure"]}
        for r in records
        if r["attribution_failure"] is not None
    ]
    common = {
        "cases_by_graph": dict(sorted(by_graph.items())),
        "error_attribution_cost": costs.as_reference(),
    }
    totals = {k: v for k, v in costs.to_dict().items() if not k.startswith("average_")}
    if settings.run_mode:
        run = _run_folder_metrics(records)
        distribution = run.pop("prediction_distribution")
        metrics: dict[str, Any] = {**run, **common, "prediction_distribution": distribution, **(extra_metrics or {})}
    else:
        samples = settings.bootstrap_samples if bootstrap_samples is None else bootstrap_samples
        m = _benchmark_metrics(settings, cases, records, samples)
        metrics = {
            "total_cases": m.pop("total_cases"),
            "error_type_prediction_accuracy": m.pop("error_type_prediction_accuracy"),
            "operation_identifier_prediction_accuracy": m.pop("operation_identifier_prediction_accuracy"),
            **common,
            **m,
            "by_dataset_source": m.pop("by_group"),
        }
        metrics.pop("by_group", None)
    metrics["cost_totals"] = totals
    metrics["failures"] = failures
    return {
        "complete": complete,
        "source": "membase_run" if settings.run_mode else "memtracebench",
        "split": settings.split,
        "exploration_strategy": settings.exploration_strategy,
        "model": settings.model,
        "sampled_graph_paths": sorted(by_graph),
        "results": list(records),
        "metrics": metrics,
    }


def build_output(
    settings: OutputSettings,
    cases: Sequence[_Case],
    run: FinishedRun,
    *,
    secrets: Sequence[str] = (),
    complete: bool = True,
    bootstrap_samples: int | None = None,
    graphs: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The output JSON of a whole run: a record per case (:func:`build_record`), then :func:`assemble_output`.

    Raises:
        ValueError: When ``run.results`` (or ``graphs``) and ``cases`` differ in length.
    """
    graph_list = list(graphs) if graphs is not None else [None] * len(cases)
    records = [
        build_record(settings, case, result, secrets=secrets, graph=graph)
        for case, result, graph in zip(cases, run.results, graph_list, strict=True)
    ]
    return assemble_output(settings, cases, records, run.costs, complete=complete, bootstrap_samples=bootstrap_samples)


def write_output(output: Path, payload: dict[str, Any]) -> str | None:
    """Write the output atomically (indented like the reference); the problem as one line, or None."""
    from toolkits._case_cache import atomic_write_json

    try:
        atomic_write_json(output, payload)
    except OSError as exc:
        return f"cannot write {output}: {exc}"
    return None
