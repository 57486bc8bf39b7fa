"""Measure the improvement: the initial and the final bundle on held-out conversations.

Both bundles run with the same :class:`~toolkits.optimization.pipeline.PipelineSettings` (QA and
judge models, batch sizes, top-k, metrics) on the same conversations, untraced. The questions
are paired by id; for every metric ``final_evaluation.json`` reports the mean before and after,
the mean difference and a paired percentile-bootstrap 95 % interval of that difference that
resamples *conversations* (``ci95_difference``; questions of one conversation share a memory and are
not independent draws); the question-level interval (``ci95_difference_by_question``), narrower and
optimistic, is kept beside it for comparison. Every question's outcome is listed
(``fixed``, ``broken``, ``still_correct``, ``still_wrong`` by the judge when it is a metric).

Each bundle's run is kept under ``<dir>/final_evaluation/{initial,final}/`` with an
``outcomes.json`` naming the bundle digest, conversations and settings; a rerun with the same
inputs reuses it instead of paying again. Identical bundles are evaluated once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from toolkits.metrics import bootstrap_interval
from toolkits.optimization.bundle import MemoryConfigBundle
from toolkits.optimization.pipeline import PipelineSettings, per_question, run_pipeline
from toolkits.optimization.statistics import conversation_bootstrap_interval

__all__ = ["FINAL_EVALUATION_FILENAME", "compare_runs", "run_final_evaluation"]

FINAL_EVALUATION_FILENAME = "final_evaluation.json"
_OUTCOMES = "outcomes.json"


def _identity(bundle: MemoryConfigBundle, indexes: Sequence[int], settings: PipelineSettings) -> dict[str, Any]:
    return {"bundle_digest": bundle.digest(), "trajectory_indexes": list(indexes), "settings": settings.describe()}


def _evaluate(bundle: MemoryConfigBundle, dataset: Any, indexes: Sequence[int], folder: Path,
              settings: PipelineSettings) -> list[dict[str, Any]]:
    identity = _identity(bundle, indexes, settings)
    saved = folder / _OUTCOMES
    if saved.is_file():
        try:
            data = json.loads(saved.read_text(encoding="utf-8"))
            if data.get("identity") == identity:
                return list(data["outputs"])
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError):
            pass  # unreadable, or not the object this writes: evaluate again
    result = run_pipeline(bundle, dataset, folder, settings, start_idx=0, end_idx=len(dataset.trajectories))
    atomic_write_json(saved, {"identity": identity, "summary": result.summary, "outputs": result.outputs})
    return result.outputs


def _outcome(before: float, after: float) -> str:
    if before >= 1.0:
        return "still_correct" if after >= 1.0 else "broken"
    return "fixed" if after >= 1.0 else "still_wrong"


def compare_runs(
    before_outputs: Sequence[dict[str, Any]],
    after_outputs: Sequence[dict[str, Any]],
    metrics: Sequence[str],
    *,
    bootstrap_samples: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Paired before/after comparison of two evaluation outputs (see the module docstring)."""
    before = per_question(before_outputs, metrics)
    after = per_question(after_outputs, metrics)
    ids = [q for q in before if q in after]
    unpaired = sorted(set(before) ^ set(after))
    report: dict[str, Any] = {"num_questions": len(ids), "unpaired_questions": unpaired, "metrics": {}}
    for name in metrics:
        b = [before[q][name] for q in ids]
        a = [after[q][name] for q in ids]
        diffs = [y - x for x, y in zip(b, a, strict=True)]
        n = max(1, len(ids))
        by_conversation: dict[str, list[float]] = {}
        for q, d in zip(ids, diffs, strict=True):
            by_conversation.setdefault(str(before[q]["user_id"]), []).append(d)
        interval = conversation_bootstrap_interval(by_conversation, samples=bootstrap_samples, seed=seed)
        by_question = bootstrap_interval(diffs, samples=bootstrap_samples, seed=seed)
        report["metrics"][name] = {
            "before": sum(b) / n,
            "after": sum(a) / n,
            "difference": sum(diffs) / n,
            # absolute points above; relative to the starting score here (papers report either)
            "relative_difference": (sum(diffs) / sum(b)) if sum(b) else None,
            "ci95_difference": list(interval) if interval is not None else None,
            "ci95_difference_by_question": list(by_question) if by_question is not None else None,
            "num_conversations": len(by_conversation),
        }
    groups: dict[str, list[str]] = {}
    for q in ids:
        groups.setdefault(str(before[q]["question_type"]), []).append(q)
    report["by_question_type"] = {
        group: {"n": len(qs), **{name: {"before": sum(before[q][name] for q in qs) / len(qs),
                                        "after": sum(after[q][name] for q in qs) / len(qs)} for name in metrics}}
        for group, qs in sorted(groups.items())
    }
    judge = "llm_judge" if "llm_judge" in metrics else None
    counts = {"fixed": 0, "broken": 0, "still_correct": 0, "still_wrong": 0}
    questions = []
    for q in ids:
        x, y = before[q], after[q]
        record = {
            "qa_id": q, "user_id": x["user_id"], "question": x["question"], "golden_answers": x["golden_answers"],
            "question_type": x["question_type"],
            "before": {"prediction": x["prediction"], "error": x["error"], **{m: x[m] for m in metrics}},
            "after": {"prediction": y["prediction"], "error": y["error"], **{m: y[m] for m in metrics}},
        }
        if judge is not None:
            record["outcome"] = _outcome(x[judge], y[judge])
            counts[record["outcome"]] += 1
        questions.append(record)
    if judge is not None:
        report["outcome_counts"] = counts
    report["bootstrap"] = {
        "samples": bootstrap_samples, "seed": seed, "confidence": 0.95,
        "method": "paired percentile bootstrap of the mean per-question difference (after - before), resampling "
                  "conversations (ci95_difference) or questions (ci95_difference_by_question)",
        "unit": "conversation",
    }
    report["questions"] = questions
    return report


def run_final_evaluation(
    initial: MemoryConfigBundle,
    final: MemoryConfigBundle,
    dataset: Any,
    indexes: Sequence[int],
    folder: str | Path,
    settings: PipelineSettings,
    *,
    bootstrap_samples: int = 1000,
    seed: int = 0,
    output_path: str | Path | None = None,
) -> dict[str, Any]:
    """Evaluate both bundles on ``dataset`` and write ``final_evaluation.json``.

    Args:
        initial: The starting configuration.
        final: The optimized configuration.
        dataset: Held-out conversations (``MemoryDataset``).
        indexes: Their 0-based LoCoMo positions (recorded).
        folder: Where the two runs go (``<folder>/initial``, ``<folder>/final``).
        settings: Shared evaluation settings (tracing is switched off).
        bootstrap_samples: Resamples of the 95 % interval (0: none).
        seed: Seed of the resampling.
        output_path: Where the report goes (default ``<folder>/../final_evaluation.json``).

    Returns:
        The report.
    """
    folder = Path(folder)
    settings = replace(settings, tracing=False)
    before = _evaluate(initial, dataset, indexes, folder / "initial", settings)
    identical = initial.digest() == final.digest()
    after = before if identical else _evaluate(final, dataset, indexes, folder / "final", settings)
    report = {
        "trajectory_indexes": list(indexes),
        "trajectories": [t.id for t in dataset.trajectories],
        "settings": settings.describe(),
        "identical_bundles": identical,
        "initial_bundle": initial.to_json_dict(),
        "final_bundle": final.to_json_dict(),
        **compare_runs(before, after, settings.metrics, bootstrap_samples=bootstrap_samples, seed=seed),
    }
    atomic_write_json(Path(output_path) if output_path else folder.parent / FINAL_EVALUATION_FILENAME, report)
    return report
