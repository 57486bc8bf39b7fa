"""Score attribution outputs against the manifest: ETA/OIA per layer and per fault kind, and every miss."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

__all__ = ["misses", "table"]


def _join(manifest: dict[str, Any], records: Iterable[dict[str, Any]]) -> list[tuple[dict, dict]]:
    by_op = {row["final_op_id"]: row for row in manifest["cases"]}
    return [(by_op[r["final_op_id"]], r) for r in records if r.get("final_op_id") in by_op]


def table(manifest: dict[str, Any], runs: dict[str, list[dict[str, Any]]], key: str) -> list[str]:
    """Rows ``key | n | ETA/OIA per mode`` grouped by a manifest field (``split`` or ``fault_kind``)."""
    modes = list(runs)
    cells: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for mode, records in runs.items():
        for row, rec in _join(manifest, records):
            for group in (row[key], "all"):
                c = cells[group][mode]
                c[0] += 1
                c[1] += bool(rec.get("is_error_type_correct"))
                c[2] += bool(rec.get("is_op_id_correct"))
    header = f"| {key} | n | " + " | ".join(f"{m} ETA / OIA" for m in modes) + " |"
    lines = [header, "|" + "---|" * (2 + len(modes))]
    for group in sorted(cells, key=lambda g: (g == "all", g)):
        n = max(c[0] for c in cells[group].values())
        parts = [f"{c[1] / c[0]:.3f} / {c[2] / c[0]:.3f}" if (c := cells[group][m])[0] else "-" for m in modes]
        lines.append(f"| {group} | {n} | " + " | ".join(parts) + " |")
    return lines


def misses(manifest: dict[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One dict per case whose type or op is wrong."""
    ops = {}
    out = []
    for row, rec in _join(manifest, records):
        if rec.get("is_error_type_correct") and rec.get("is_op_id_correct"):
            continue
        result = rec.get("error_attribution_result") or {}
        attributed = rec.get("attributed_operation") or {}
        flow = rec.get("evidence_flow") or {}
        out.append({
            "case_id": row["case_id"], "fault_kind": row["fault_kind"], "qid": row["qid"],
            "expected": f"{row['error_type']} @ {row['op_name']} ({row['final_op_id'][:11]})",
            "predicted": f"{result.get('error_type') or '-'} @ {attributed.get('op_name') or '-'} "
                         f"({(result.get('op_id') or '-')[:11]})",
            "status": flow.get("status"), "confidence": flow.get("confidence"),
            "reason": " ".join(str(result.get("reason", "")).split())[:400],
        })
    ops.clear()
    return out
