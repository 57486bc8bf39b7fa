"""Score attribution outputs against a built benchmark: ETA/OIA per split and fault kind, and the misses.

Reads the outputs of ``run_error_attribution.py`` (``{"results": [...]}``) on the splits of a
build folder, matches each result to its case by graph file name (the manifest), and counts a
case right when the attributed error type (ETA) or op id (OIA) equals the label. A case the
build kept but no output attributes counts as missed, never as dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.attribution.build import MANIFEST

__all__ = ["Scored", "attribute", "read_manifest", "score_outputs", "table"]


@dataclass(frozen=True, kw_only=True)
class Scored:
    """One case's outcome."""

    case: dict[str, Any]
    type_right: bool
    op_right: bool
    predicted_type: str | None = None
    predicted_op: str | None = None
    predicted_op_name: str | None = None
    status: str | None = None


def read_manifest(build_dir: str | Path) -> dict[str, Any]:
    """The build's manifest (ValueError naming the file when it is missing or malformed)."""
    path = Path(build_dir) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable build manifest ({exc}); build the benchmark first") from exc
    if not isinstance(manifest, dict) or not isinstance(manifest.get("cases"), list):
        raise ValueError(f"{path}: field 'cases' is missing")
    return manifest


def score_outputs(build_dir: str | Path, outputs: Sequence[str | Path]) -> list[Scored]:
    """Every case of the build with its outcome in ``outputs`` (unattributed cases count wrong)."""
    cases = {Path(c["file"]).name: c for c in read_manifest(build_dir)["cases"]}
    found: dict[str, Scored] = {}
    for output in outputs:
        try:
            results = json.loads(Path(output).read_text(encoding="utf-8"))["results"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{output}: not an attribution output with 'results' ({exc})") from exc
        for record in results:
            case = cases.get(Path(str(record.get("graph_path", ""))).name)
            if case is None:
                continue
            result = record.get("error_attribution_result") or {}
            found[case["file"]] = Scored(
                case=case, type_right=bool(record.get("is_error_type_correct")),
                op_right=bool(record.get("is_op_id_correct")), predicted_type=result.get("error_type"),
                predicted_op=result.get("op_id"),
                predicted_op_name=(record.get("attributed_operation") or {}).get("op_name"),
                status=result.get("status") or (record.get("evidence_flow") or {}).get("status"))
    return [found.get(c["file"]) or Scored(case=c, type_right=False, op_right=False, status="not attributed")
            for c in cases.values()]


def table(scored: Sequence[Scored], key: Callable[[dict[str, Any]], str]) -> list[str]:
    """Lines ``group  cases  ETA  OIA``, one per group and one for all."""
    groups: dict[str, list[Scored]] = {}
    for s in scored:
        groups.setdefault(key(s.case), []).append(s)
    lines = [f"{'group':<34}{'cases':>6}{'ETA':>8}{'OIA':>8}"]
    for name, members in [*sorted(groups.items()), ("all", list(scored))]:
        n = len(members)
        eta = sum(s.type_right for s in members) / n if n else 0.0
        oia = sum(s.op_right for s in members) / n if n else 0.0
        lines.append(f"{name:<34}{n:>6}{eta:>8.3f}{oia:>8.3f}")
    return lines


def misses(scored: Sequence[Scored]) -> list[str]:
    """One line per case with a wrong type or op: label vs attribution."""
    lines = [f"{'case':>5} {'split':<13}{'kind':<26}{'gold':<16}{'attributed':<16}{'op':<4}attributed op / status"]
    for s in scored:
        if s.type_right and s.op_right:
            continue
        c = s.case
        lines.append(f"{c['case']:>5} {c['split']:<13}{c['origin'] or c['kind']:<26}{c['final_error_type']:<16}"
                     f"{s.predicted_type or '-':<16}{'ok' if s.op_right else 'no':<4}"
                     f"{s.predicted_op_name or '-'} / {s.status or '-'}")
    return lines


def attribute(build_dir: str | Path, out_dir: str | Path, extra: Sequence[str] = ()) -> list[Path]:
    """Run ``evidence_flow`` with ``run_error_attribution.py`` on every split of a build; the output paths."""
    import contextlib
    import io

    from toolkits.attribution import cli as run_error_attribution  # the command, not the script

    build, out = Path(build_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for split in sorted({c["split"] for c in read_manifest(build)["cases"]}):
        path = out / f"{split}.json"
        args = [str(build), split, "--exploration-strategy", "evidence_flow", "--output-path", str(path),
                "--no-progress", "--bootstrap-samples", "0", "--no-resume", *extra]
        with contextlib.redirect_stdout(io.StringIO()):
            code = run_error_attribution.main(args)
        if code != 0:
            raise RuntimeError(f"run_error_attribution exited {code} on {build}/{split}")
        paths.append(path)
    return paths
