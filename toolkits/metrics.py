"""Scores of error attribution and of evidence retrieval.

Attribution (spec-attribution §6.3): **ETA** (error-type accuracy) and **OIA**
(operation-identifier accuracy) are exact, case-sensitive string matches of the prediction with
the annotation's ``final_error_type`` / ``final_op_id``, divided by *all* cases — a case whose
attribution failed (no answer, API error …) counts as wrong in both, never dropped. Beyond the
reference: joint accuracy (type and op both right), breakdowns per gold error type and per
group (split / dataset source), the confusion matrix of types (failed cases in a ``FAILED``
column), failure counts, and percentile-bootstrap 95 % intervals. A case whose annotation lacks a
gold label is kept and can never be right on that label (its gold row is ``MISSING``).

Without gold labels (a run folder of ``python -m membase``), :func:`prediction_distribution`
summarises what was predicted instead.

Retrieval (§10): :func:`recall_at_k` with micro and macro averaging.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolkits.bench_utils import ERROR_TYPES  # the one definition of the five memory-error types

__all__ = [
    "ERROR_TYPES",
    "FAILED_LABEL",
    "MISSING_LABEL",
    "NON_MEMORY_KINDS",
    "AttributionRecord",
    "attribution_metrics",
    "bootstrap_interval",
    "confusion_matrix",
    "non_memory_counts",
    "non_memory_kind",
    "prediction_distribution",
    "recall_at_k",
    "recall_by_group",
]

FAILED_LABEL = "FAILED"
"""Confusion-matrix column of cases without a prediction."""
MISSING_LABEL = "MISSING"
"""Gold row (and per-type key) of cases whose annotation has no usable ``final_error_type``."""


def _label(value: Any) -> str | None:
    """A gold label as given, or None when it is absent, not a string, or blank."""
    return value if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True, kw_only=True)
class AttributionRecord:
    """One scored case: the gold labels and the prediction (None when attribution failed)."""

    gold_error_type: str | None
    """Annotated ``final_error_type`` (None when the annotation has none)."""
    gold_op_id: str | None
    """Annotated ``final_op_id`` (None when the annotation has none)."""
    predicted_error_type: str | None
    """Predicted type, None for a failed case."""
    predicted_op_id: str | None
    """Predicted op id, None for a failed case."""
    group: str = ""
    """Split or dataset source, for the per-group breakdown."""
    non_memory_error: str | None = None
    """``LLMAsAJudgeError``/``AnnotationError`` when the attributor found the failure is no memory error
    (the case then has no prediction and counts as failed, and is counted under that kind)."""

    @property
    def failed(self) -> bool:
        """True when no prediction was produced."""
        return self.predicted_error_type is None and self.predicted_op_id is None

    @property
    def type_correct(self) -> bool:
        """Exact match of the error type (never true without a gold label)."""
        return (
            self.gold_error_type is not None
            and self.predicted_error_type is not None
            and self.predicted_error_type == self.gold_error_type
        )

    @property
    def op_correct(self) -> bool:
        """Exact match of the operation id (never true without a gold label)."""
        return self.gold_op_id is not None and self.predicted_op_id is not None and self.predicted_op_id == self.gold_op_id

    @property
    def gold_row(self) -> str:
        """The gold type as a table key (``MISSING`` when absent)."""
        return self.gold_error_type if self.gold_error_type is not None else MISSING_LABEL

    @classmethod
    def from_result(cls, result: Mapping[str, Any], *, group: str = "") -> AttributionRecord:
        """Build from an output record (annotation keys + ``error_attribution_result``).

        A record with ``attribution_failure`` set (or no prediction dict) is a failed case. A
        missing or non-string gold label is kept as None (that label is then never correct).
        """
        pred = result.get("error_attribution_result")
        if result.get("attribution_failure") is not None or not isinstance(pred, dict):
            # a failed case keeps a placeholder dict in the output; it is scored as failed
            pred = {}
        return cls(
            gold_error_type=_label(result.get("final_error_type")),
            gold_op_id=_label(result.get("final_op_id")),
            predicted_error_type=pred.get("error_type"),
            predicted_op_id=pred.get("op_id"),
            group=group,
            non_memory_error=non_memory_kind(result),
        )


#: Kinds of failures that are not memory errors (reported by ``evidence_flow``'s triage).
NON_MEMORY_KINDS = ("LLMAsAJudgeError", "AnnotationError")


def non_memory_kind(result: Mapping[str, Any]) -> str | None:
    """The non-memory error kind an output record carries (``evidence_flow.triage.kind``), or None."""
    flow = result.get("evidence_flow")
    triage = flow.get("triage") if isinstance(flow, Mapping) else None
    kind = triage.get("kind") if isinstance(triage, Mapping) else None
    return kind if kind in NON_MEMORY_KINDS else None


def non_memory_counts(kinds: Iterable[str | None]) -> dict[str, int]:
    """Cases per non-memory error kind (every kind listed, zeros included)."""
    counts = dict.fromkeys(NON_MEMORY_KINDS, 0)
    for kind in kinds:
        if kind in counts:
            counts[kind] += 1
    return counts


def bootstrap_interval(
    values: Sequence[float], *, samples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Percentile-bootstrap confidence interval of the mean.

    Args:
        values: Per-case scores (e.g. 0/1 correctness).
        samples: Number of resamples (0 disables the interval).
        seed: Seed of the resampling RNG (intervals are reproducible).
        confidence: Coverage of the interval.

    Returns:
        ``(low, high)``, or None when there are no values or ``samples`` is 0.
    """
    n = len(values)
    if n == 0 or samples <= 0:
        return None
    rng = random.Random(seed)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    tail = (1.0 - confidence) / 2.0
    lo = means[min(samples - 1, max(0, int(tail * samples)))]
    hi = means[min(samples - 1, max(0, int((1.0 - tail) * samples) - 1))]
    return (lo, hi)


def confusion_matrix(records: Iterable[AttributionRecord]) -> dict[str, dict[str, int]]:
    """Counts ``matrix[gold_type][predicted_type]``; failed cases go to the ``FAILED`` column.

    Rows and columns list the five error types first, then any other label that occurs.
    """
    records = list(records)
    labels = list(ERROR_TYPES)
    for r in records:
        for label in (r.gold_row, r.predicted_error_type):
            if label is not None and label not in labels:
                labels.append(label)
    columns = [*labels, FAILED_LABEL]
    matrix = {g: dict.fromkeys(columns, 0) for g in labels}
    for r in records:
        matrix[r.gold_row][r.predicted_error_type if r.predicted_error_type is not None else FAILED_LABEL] += 1
    return matrix


def _summary(records: Sequence[AttributionRecord], *, samples: int, seed: int) -> dict[str, Any]:
    n = len(records)
    eta = [1.0 if r.type_correct else 0.0 for r in records]
    oia = [1.0 if r.op_correct else 0.0 for r in records]
    joint = [1.0 if r.type_correct and r.op_correct else 0.0 for r in records]

    def mean(xs: list[float]) -> float:
        return sum(xs) / n if n else 0.0

    def ci(xs: list[float], offset: int) -> list[float] | None:
        interval = bootstrap_interval(xs, samples=samples, seed=seed + offset)
        return list(interval) if interval is not None else None

    return {
        "total_cases": n,
        "failed_cases": sum(1 for r in records if r.failed),
        "non_memory_errors": non_memory_counts(r.non_memory_error for r in records),
        "error_type_prediction_accuracy": mean(eta),
        "operation_identifier_prediction_accuracy": mean(oia),
        "joint_accuracy": mean(joint),
        "confidence_intervals_95": {
            "error_type_prediction_accuracy": ci(eta, 0),
            "operation_identifier_prediction_accuracy": ci(oia, 1),
            "joint_accuracy": ci(joint, 2),
        },
    }


def attribution_metrics(
    records: Sequence[AttributionRecord], *, bootstrap_samples: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """All attribution metrics of a run.

    Args:
        records: One record per case (failed cases included).
        bootstrap_samples: Resamples for the 95 % intervals (0 = no intervals).
        seed: Bootstrap seed.

    Returns:
        A JSON-ready dict: ``total_cases``, ``failed_cases``,
        ``error_type_prediction_accuracy`` (ETA), ``operation_identifier_prediction_accuracy``
        (OIA), ``joint_accuracy``, ``confidence_intervals_95``, ``by_error_type`` (same keys per
        gold type), ``by_group`` (per split/source), ``confusion_matrix``.
    """
    records = list(records)
    out = _summary(records, samples=bootstrap_samples, seed=seed)
    by_type: dict[str, list[AttributionRecord]] = {}
    by_group: dict[str, list[AttributionRecord]] = {}
    for r in records:
        by_type.setdefault(r.gold_row, []).append(r)
        by_group.setdefault(r.group, []).append(r)
    order = [t for t in ERROR_TYPES if t in by_type] + sorted(t for t in by_type if t not in ERROR_TYPES)
    out["by_error_type"] = {t: _summary(by_type[t], samples=bootstrap_samples, seed=seed) for t in order}
    out["by_group"] = {g: _summary(by_group[g], samples=bootstrap_samples, seed=seed) for g in sorted(by_group)}
    out["confusion_matrix"] = confusion_matrix(records)
    return out


def _ranked(counter: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


def prediction_distribution(predictions: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """What was predicted, for runs without gold labels.

    Args:
        predictions: One item per case: None for a failed case, else a mapping with
            ``error_type`` and optionally ``op_name`` / ``op_category`` of the blamed operation
            (None or missing when the op id is empty or not in the graph).

    Returns:
        ``total_cases``, ``attributed_cases``, ``failed_cases``, ``by_error_type`` (all five types,
        zeros included, then any other label), ``by_operation_name`` and
        ``by_operation_category`` (most blamed first; ``"(none)"`` for predictions without a
        resolvable operation), and ``by_error_type_and_operation_name``.
    """
    by_type: dict[str, int] = dict.fromkeys(ERROR_TYPES, 0)
    by_name: dict[str, int] = {}
    by_category: dict[str, int] = {}
    by_type_name: dict[str, dict[str, int]] = {}
    failed = 0
    for p in predictions:
        if p is None:
            failed += 1
            continue
        etype = str(p.get("error_type"))
        name = str(p.get("op_name") or "(none)")
        category = str(p.get("op_category") or "(none)")
        by_type[etype] = by_type.get(etype, 0) + 1
        by_name[name] = by_name.get(name, 0) + 1
        by_category[category] = by_category.get(category, 0) + 1
        row = by_type_name.setdefault(etype, {})
        row[name] = row.get(name, 0) + 1
    return {
        "total_cases": len(predictions),
        "attributed_cases": len(predictions) - failed,
        "failed_cases": failed,
        "by_error_type": by_type,
        "by_operation_name": _ranked(by_name),
        "by_operation_category": _ranked(by_category),
        "by_error_type_and_operation_name": {t: _ranked(by_type_name[t]) for t in by_type if t in by_type_name},
    }


def recall_at_k(
    references: Sequence[Iterable[str]],
    retrieved: Sequence[Iterable[str]],
    average: Literal["macro", "micro"] = "macro",
) -> float:
    """Recall of reference ids among retrieved ids (sets), averaged over cases.

    ``macro`` = mean over cases with a non-empty reference set of ``|ref ∩ ret| / |ref|``;
    ``micro`` = ``Σ |ref ∩ ret| / Σ |ref|``.

    Raises:
        ValueError: If the lists differ in length, ``average`` is unknown, or no case has a
            reference.
    """
    if len(references) != len(retrieved):
        raise ValueError(f"{len(references)} reference lists but {len(retrieved)} retrieved lists")
    if average not in ("macro", "micro"):
        raise ValueError(f"unknown average {average!r}: use macro or micro")
    hits = 0
    total = 0
    ratios: list[float] = []
    for ref, ret in zip(references, retrieved, strict=True):
        ref_set, ret_set = set(ref), set(ret)
        if not ref_set:
            continue
        found = len(ref_set & ret_set)
        hits += found
        total += len(ref_set)
        ratios.append(found / len(ref_set))
    if not ratios:
        raise ValueError("no case has reference ids: recall is undefined")
    return sum(ratios) / len(ratios) if average == "macro" else hits / total


def recall_by_group(
    groups: Sequence[str], references: Sequence[Iterable[str]], retrieved: Sequence[Iterable[str]]
) -> dict[str, dict[str, float | int]]:
    """Micro and macro recall per group and overall (key ``"overall"``).

    Groups whose cases all lack references are reported with ``None`` recalls.
    """
    refs = [list(r) for r in references]
    rets = [list(r) for r in retrieved]
    out: dict[str, dict[str, Any]] = {}
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)

    def row(idx: list[int]) -> dict[str, Any]:
        r = [refs[i] for i in idx]
        t = [rets[i] for i in idx]
        if not any(r):
            return {"micro": None, "macro": None, "cases": len(idx), "cases_with_references": 0}
        return {
            "micro": recall_at_k(r, t, "micro"),
            "macro": recall_at_k(r, t, "macro"),
            "cases": len(idx),
            "cases_with_references": sum(1 for x in r if x),
        }

    for g in sorted(members):
        out[g] = row(members[g])
    out["overall"] = row(list(range(len(refs))))
    return out
