"""Held-out benchmark E: faults that keep the words and change the meaning — build it and score ``evidence_flow``.

Builds ``runs/heldout_attribution_e/`` (graphs under ``bench/<split>/``, fault kinds only in
``manifest.json``), then runs ``run_error_attribution.py <bench> <split> --exploration-strategy
evidence_flow`` per split in the default evidence mode, prints ETA (error-type accuracy) and OIA
(operation-identifier accuracy) per split and overall, and writes ``misses.json``: every case whose
type or operation is wrong, with its fault kind, gold and predicted op/type and the faulted text
before/after.

Run (2 CPU cores: about 2 minutes)::

    python benchmarks/heldout_attribution_e/run.py
    python benchmarks/heldout_attribution_e/run.py --out /tmp/hae --skip-build   # rescore a build
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.heldout_attribution_e.build import DEFAULT_OUT, CaseError, build  # noqa: E402
from benchmarks.heldout_attribution_e.memsys.pipeline import SPLITS  # noqa: E402
from membase.utils.io import atomic_write_json  # noqa: E402


def attribute(bench: Path, split: str, output: Path) -> dict[str, Any]:
    """One ``run_error_attribution.py`` run (evidence_flow, default evidence mode); its output JSON."""
    from toolkits.attribution import cli as run_error_attribution  # the command, not the script

    args = [str(bench), split, "--exploration-strategy", "evidence_flow", "--output-path", str(output),
            "--no-progress", "--no-resume"]
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        code = run_error_attribution.main(args)
    if code != 0:
        raise SystemExit(f"run_error_attribution.py {' '.join(args)} exited with {code}:\n{sink.getvalue()}")
    return json.loads(output.read_text(encoding="utf-8"))


def misses(results: list[dict[str, Any]], manifest: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        if r.get("is_error_type_correct") and r.get("is_op_id_correct"):
            continue
        case = manifest[Path(r["graph_path"]).stem]
        predicted = r.get("error_attribution_result") or {}
        op = r.get("attributed_operation") or {}
        out.append({
            "case_id": case["case_id"], "split": case["split"], "fault_kind": case["fault_kind"],
            "stage": case["stage"], "query": case["query"], "golden_answer": case["golden_answer"],
            "prediction": case["prediction"],
            "gold": {"error_type": case["gold_error_type"], "op_id": case["gold_op_id"]},
            "predicted": {"error_type": predicted.get("error_type"), "op_id": predicted.get("op_id"),
                          "op_name": op.get("op_name"), "op_category": op.get("category")},
            "type_correct": bool(r.get("is_error_type_correct")), "op_correct": bool(r.get("is_op_id_correct")),
            "faulted_before": case["faulted_before"], "faulted_after": case["faulted_after"],
            "failure": r.get("attribution_failure"),
        })
    return sorted(out, key=lambda m: (m["fault_kind"], m["case_id"]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    parser.add_argument("--skip-build", action="store_true", help="score the benchmark already in --out")
    parser.add_argument("--splits", nargs="+", choices=SPLITS, default=list(SPLITS))
    args = parser.parse_args(argv)
    out: Path = args.out
    if not args.skip_build:
        started = time.perf_counter()
        try:
            build(out)
        except CaseError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"built {out / 'bench'} in {time.perf_counter() - started:.1f} s")
    manifest_path = out / "manifest.json"
    if not manifest_path.is_file():
        print(f"error: no benchmark at {out} (run without --skip-build first)", file=sys.stderr)
        return 2
    manifest = {c["case_id"]: c for c in json.loads(manifest_path.read_text(encoding="utf-8"))["cases"]}

    rows, all_results = [], []
    for split in args.splits:
        started = time.perf_counter()
        result = attribute(out / "bench", split, out / "results" / f"{split}.json")
        metrics = result["metrics"]
        rows.append((split, metrics["total_cases"], metrics["error_type_prediction_accuracy"],
                     metrics["operation_identifier_prediction_accuracy"], time.perf_counter() - started))
        all_results.extend(result["results"])
    total = len(all_results)
    eta = sum(bool(r.get("is_error_type_correct")) for r in all_results) / total if total else 0.0
    oia = sum(bool(r.get("is_op_id_correct")) for r in all_results) / total if total else 0.0
    print(f"{'split':<14}{'cases':>6}{'ETA':>8}{'OIA':>8}{'seconds':>9}")
    for split, n, s_eta, s_oia, secs in rows:
        print(f"{split:<14}{n:>6}{s_eta:>8.3f}{s_oia:>8.3f}{secs:>9.1f}")
    print(f"{'overall':<14}{total:>6}{eta:>8.3f}{oia:>8.3f}")
    missed = misses(all_results, manifest)
    atomic_write_json(out / "misses.json", {"total_cases": total, "misses": missed})
    print(f"{len(missed)} misses -> {out / 'misses.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
