"""Scoring ``evidence_flow`` on a benchmark folder: ETA / OIA per split and per fault kind."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["score_evidence_flow"]


def _bucket() -> dict[str, Any]:
    return {"cases": 0, "eta_hits": 0, "oia_hits": 0}


def _add(bucket: dict[str, Any], type_ok: bool, op_ok: bool) -> None:
    bucket["cases"] += 1
    bucket["eta_hits"] += type_ok
    bucket["oia_hits"] += op_ok


def _finish(bucket: dict[str, Any]) -> dict[str, Any]:
    n = bucket["cases"]
    return {**bucket, "eta": bucket["eta_hits"] / n if n else 0.0, "oia": bucket["oia_hits"] / n if n else 0.0}


def score_evidence_flow(data_dir: str | Path, splits: Sequence[str] | None = None, *,
                        evidence: str = "annotated", **options: Any) -> dict[str, Any]:
    """Attribute every case with ``evidence_flow`` and score it (ETA, OIA: exact match, spec §6.3).

    Args:
        data_dir: a benchmark folder (``<dir>/<split>/*.json``).
        splits: splits to score (default: every MemTraceBench split present).
        evidence: ``annotated`` (the case's evidence ids) or ``none`` (the golden answer alone
            finds the evidence, as with no starting nodes).
        **options: passed to ``attribute_case_evidence_flow``.

    Returns:
        ``{"splits": {split: {...}}, "kinds": {fault kind: {...}}, "misses": [...]}``; each
        bucket has ``cases, eta, oia`` (an abstention or a missing answer counts as wrong); a
        miss is ``{split, file, kind, gold, predicted, status}``. Cases without a ``fault``
        record count under the kind ``unlabelled``.
    """
    from toolkits.bench_utils import MEMTRACEBENCH_SPLITS, load_memtracebench
    from toolkits.evidence_flow import attribute_case_evidence_flow

    if evidence not in ("annotated", "none"):
        raise ValueError("evidence must be 'annotated' or 'none'")
    per_split: dict[str, dict[str, Any]] = {}
    per_kind: dict[str, dict[str, Any]] = {}
    misses: list[dict[str, Any]] = []
    for split in splits or MEMTRACEBENCH_SPLITS:
        if not (Path(data_dir) / split).is_dir():
            continue
        graphs, cases = load_memtracebench(str(data_dir), splits=[split])
        bucket = per_split.setdefault(split, _bucket())
        for graph, case in zip(graphs, cases, strict=True):
            annotation = case.metadata["annotation"]
            kind = (annotation.get("fault") or {}).get("kind", "unlabelled")
            if evidence == "annotated":
                result = attribute_case_evidence_flow(graph, case, **options)
            else:
                result = attribute_case_evidence_flow(graph, case, None, allow_annotated_fallback=False, **options)
            gold = (annotation.get("final_error_type"), annotation.get("final_op_id"))
            type_ok, op_ok = result["error_type"] == gold[0], result["op_id"] == gold[1]
            _add(bucket, type_ok, op_ok)
            _add(per_kind.setdefault(kind, _bucket()), type_ok, op_ok)
            if not (type_ok and op_ok):
                misses.append({"split": split, "file": case.metadata.get("graph_filename"), "kind": kind,
                               "gold": list(gold), "predicted": [result["error_type"], result["op_id"]],
                               "status": result["status"], "confidence": result.get("confidence")})
    return {"splits": {k: _finish(v) for k, v in per_split.items()},
            "kinds": {k: _finish(v) for k, v in sorted(per_kind.items())}, "misses": misses}
