"""Scoring the ``evidence_flow`` attributor on a benchmark directory (ETA / OIA per split)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkits.evidence_flow import attribute_case_evidence_flow

__all__ = ["score_evidence_flow"]


def score_evidence_flow(data_dir: str | Path, splits: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Attribute every case of the given splits with ``evidence_flow`` and score it.

    ETA and OIA follow spec-attribution §6.3 (exact string equality over all cases; an
    ``evidence_absent`` result counts as wrong). Splits missing on disk are skipped.

    Returns:
        ``{split: {"total_cases", "eta", "oia", "by_type": {type: [n, eta_hits, oia_hits]},
        "misses": [(file, gold type, gold op, predicted type, predicted op)]}}``.
    """
    from toolkits.bench_utils import MEMTRACEBENCH_SPLITS, load_memtracebench

    out: dict[str, dict[str, Any]] = {}
    for split in splits or MEMTRACEBENCH_SPLITS:
        if not (Path(data_dir) / split).is_dir():
            continue
        pairs = load_memtracebench(str(data_dir), splits=[split])
        total = eta = oia = 0
        by_type: dict[str, list[int]] = {}
        misses = []
        for graph, case in zip(*pairs, strict=True):
            annotation = case.metadata["annotation"]
            result = attribute_case_evidence_flow(graph, case)
            gold_type, gold_op = annotation["final_error_type"], annotation["final_op_id"]
            type_ok, op_ok = result["error_type"] == gold_type, result["op_id"] == gold_op
            total += 1
            eta += type_ok
            oia += op_ok
            row = by_type.setdefault(gold_type, [0, 0, 0])
            row[0] += 1
            row[1] += type_ok
            row[2] += op_ok
            if not (type_ok and op_ok):
                misses.append((case.metadata.get("graph_filename"), gold_type, gold_op, result["error_type"],
                               result["op_id"]))
        out[split] = {"total_cases": total, "eta": eta / total if total else 0.0,
                      "oia": oia / total if total else 0.0, "by_type": by_type, "misses": misses}
    return out
