"""Build the held-out attribution benchmark and score ``evidence_flow`` on it.

    python -m benchmarks.heldout_attribution.run                       # build to runs/heldout_attribution, score 3 modes
    python -m benchmarks.heldout_attribution.run --build-only --out /tmp/heldout
    python -m benchmarks.heldout_attribution.run --modes pseudo --misses

Modes are the attribution CLI's starting-evidence settings: ``pseudo`` (retrieved evidence, the
default), ``annotated`` (``--starting-nodes-type source_evidence``) and ``none``
(``--no-provide-starting-nodes``). Each (split, mode) goes through ``run_error_attribution.main``
exactly as a user would run it; the tables join its output with the manifest.
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

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.heldout_attribution.build import build_benchmark  # noqa: E402
from benchmarks.heldout_attribution.score import misses, table  # noqa: E402

SPLITS = ("long_context", "rag", "mem0", "evermemos")
MODES = {
    "pseudo": [],
    "annotated": ["--starting-nodes-type", "source_evidence"],
    "none": ["--no-provide-starting-nodes"],
}


def _attribute(bench: Path, split: str, mode: str, out_dir: Path) -> list[dict]:
    import run_error_attribution

    output = out_dir / f"evidence_flow_{split}_{mode}.json"
    argv = [str(bench), split, "--exploration-strategy", "evidence_flow", "--output-path", str(output),
            "--no-progress", "--no-resume", "--bootstrap-samples", "0", *MODES[mode]]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = run_error_attribution.main(argv)
    if code != 0:
        raise RuntimeError(f"run_error_attribution {' '.join(argv)} exited with {code}")
    return json.loads(output.read_text(encoding="utf-8"))["results"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/heldout_attribution", help="benchmark + results folder")
    parser.add_argument("--seed", type=int, default=0, help="case order and ids (labels do not depend on it)")
    parser.add_argument("--modes", default="pseudo,annotated,none", help="comma list of pseudo, annotated, none")
    parser.add_argument("--build-only", action="store_true", help="write the benchmark and stop")
    parser.add_argument("--misses", action="store_true", help="print every miss of every mode")
    args = parser.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        print(f"error: unknown mode(s) {unknown}; choose from {', '.join(MODES)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    bench = out / "bench"
    started = time.perf_counter()
    manifest = build_benchmark(bench, args.seed)
    built = time.perf_counter() - started
    print(f"built {len(manifest['cases'])} cases in {built:.1f}s -> {bench}")
    if args.build_only:
        return 0
    runs: dict[str, list[dict]] = {}
    for mode in modes:
        runs[mode] = [rec for split in SPLITS for rec in _attribute(bench, split, mode, out)]
    print(f"attributed in {time.perf_counter() - started - built:.1f}s")
    print()
    print("\n".join(table(manifest, runs, "split")))
    print()
    print("\n".join(table(manifest, runs, "fault_kind")))
    report = {mode: misses(manifest, records) for mode, records in runs.items()}
    (out / "misses.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    if args.misses:
        for mode, rows in report.items():
            print(f"\n## misses, {mode} ({len(rows)})")
            for r in rows:
                print(f"- {r['case_id']} {r['fault_kind']} {r['qid']}: expected {r['expected']}; "
                      f"predicted {r['predicted']} [{r['status']}, {r['confidence']}]")
    print(f"\nmisses -> {out / 'misses.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
