"""Attribution at scale: does the time per case stay flat as the number of cases grows?

``run_error_attribution.py`` with the no-LLM ``evidence_flow`` strategy over synthetic
benchmarks of growing size. Each benchmark is built in a temporary folder from one split of
``examples/faultbench``: every graph file is kept once and its annotations are repeated until the
split holds the requested number of cases, so graph loading stays fixed and what grows is the
per-case work the CLI does — attribution, the progress bar, and writing every finished case to
disk (the journal beside the output) so that an interrupted run loses nothing.

If the CLI's per-case bookkeeping were linear in the number of finished cases (rebuilding the
whole output after each case, as it once did), the time per case would grow with the run; the
``per case`` column and the ratio of the largest to the smallest run show whether it does.

Run (2 CPU cores: about 2 minutes for the default sizes)::

    python benchmarks/attribution_scale.py                       # 250, 500, 1000, 2000 cases
    python benchmarks/attribution_scale.py --sizes 300 1200 --split rag --json-out /tmp/scale.json
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_SOURCE = ROOT / "examples" / "faultbench"


def build_benchmark(source: Path, split: str, cases: int, target: Path) -> int:
    """Write ``target/<split>/*.json``: the source split with its annotations repeated.

    Annotations are dealt round-robin over the files (each file's own annotations, cycled) until
    ``cases`` annotations exist in total. Returns the number of cases written.
    """
    files = sorted((source / split).glob("*.json"))
    if not files:
        raise SystemExit(f"no graph files under {source / split}")
    raw = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    pools = [list(r["data"].get("annotations") or []) for r in raw]
    if not any(pools):
        raise SystemExit(f"{source / split} has no annotations to repeat")
    chosen: list[list[dict[str, Any]]] = [[] for _ in raw]
    written, turn = 0, 0
    while written < cases:
        i = turn % len(raw)
        pool = pools[i]
        if pool:
            chosen[i].append(pool[len(chosen[i]) % len(pool)])
            written += 1
        turn += 1
    out = target / split
    out.mkdir(parents=True, exist_ok=True)
    for f, data, kept in zip(files, raw, chosen, strict=True):
        data = dict(data)
        data["data"] = {**data["data"], "annotations": kept}
        (out / f.name).write_text(json.dumps(data), encoding="utf-8")
    return written


def time_run(bench_dir: Path, split: str, output: Path) -> dict[str, Any]:
    """Run the CLI once (evidence_flow, annotated evidence, no bootstrap) and time it."""
    from toolkits.attribution import cli as attribution_cli

    args = [
        str(bench_dir), split, "--output-path", str(output), "--exploration-strategy", "evidence_flow",
        "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0",
    ]
    sink = io.StringIO()
    started = time.perf_counter()
    cpu = time.process_time()
    with contextlib.redirect_stdout(sink):
        code = attribution_cli.main(args)
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu
    if code != 0:
        raise SystemExit(f"run_error_attribution exited {code}")
    data = json.loads(output.read_text(encoding="utf-8"))
    m = data["metrics"]
    return {
        "cases": m["total_cases"],
        "failed_cases": m["failed_cases"],
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "attribution_seconds": m["cost_totals"]["total_seconds"],
        "output_bytes": output.stat().st_size,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Build the benchmarks, time the CLI on each, print a table; exit 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000], help="cases per run")
    parser.add_argument("--split", default="mem0", help="faultbench split to replicate (default: mem0)")
    parser.add_argument("--source", default=str(DEFAULT_SOURCE), help="MemTraceBench-layout folder to replicate")
    parser.add_argument("--work-dir", default=None, help="where benchmarks and outputs go (default: a temp folder)")
    parser.add_argument("--json-out", default=None, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    if any(n < 1 for n in args.sizes):
        parser.error("--sizes must be >= 1")

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="attribution-scale-") as tmp:
        work = Path(args.work_dir or tmp)
        for n in args.sizes:
            bench = work / f"bench-{n}"
            build_benchmark(Path(args.source), args.split, n, bench)
            row = time_run(bench, args.split, work / f"out-{n}.json")
            row["per_case_ms"] = 1000.0 * row["wall_seconds"] / row["cases"]
            rows.append(row)
            print(f"{n} cases: {row['wall_seconds']:.1f} s", file=sys.stderr)

    print(f"split={args.split} python={platform.python_version()} machine={platform.machine()} cpus={os.cpu_count()}")
    print("| cases | wall s | cpu s | per case ms | output MB |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['cases']} | {r['wall_seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['per_case_ms']:.1f} | "
            f"{r['output_bytes'] / 1e6:.1f} |"
        )
    first, last = rows[0], rows[-1]
    print(
        f"per-case time ratio, {last['cases']} vs {first['cases']} cases: "
        f"{last['per_case_ms'] / first['per_case_ms']:.2f} (1.0 = linear total time)"
    )
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
