"""Build held-out benchmark C and score ``evidence_flow`` on it through run_error_attribution.py.

    python -m benchmarks.heldout_attribution_c.run                 # build + 4 splits x 3 evidence modes
    python -m benchmarks.heldout_attribution_c.run --build-only --out /tmp/hc
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

from .build import _write_json, build

SPLITS = ("long_context", "rag", "mem0", "evermemos")
MODES = {
    "retrieved": ["--starting-nodes-type", "pseudo_source_evidence"],
    "annotated": ["--starting-nodes-type", "source_evidence"],
    "none": ["--no-provide-starting-nodes"],
}


def _attribute(bench: Path, split: str, mode: str, out: Path) -> dict:
    from toolkits.attribution import cli as run_error_attribution  # the command, not the script

    path = out / f"{split}_{mode}.json"
    path.unlink(missing_ok=True)
    Path(str(path) + ".journal.jsonl").unlink(missing_ok=True)
    argv = [str(bench), split, "--exploration-strategy", "evidence_flow", "--output-path", str(path),
            "--no-progress", "--no-resume", "--bootstrap-samples", "0", *MODES[mode]]
    with contextlib.redirect_stdout(io.StringIO()):
        rc = run_error_attribution.main(argv)
    if rc != 0:
        raise SystemExit(f"run_error_attribution.py {' '.join(argv)} exited with {rc}")
    return json.loads(path.read_text(encoding="utf-8"))


def _ratio(hits: list[tuple[bool, bool]]) -> str:
    n = len(hits)
    if not n:
        return "-"
    return f"{sum(h[0] for h in hits) / n:.3f} / {sum(h[1] for h in hits) / n:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("runs/heldout_attribution_c"), help="work folder (rebuilt)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = parser.parse_args(argv)
    bench = args.out / "bench"
    if bench.exists():
        shutil.rmtree(bench)
    t0 = time.perf_counter()
    rows = build(bench, args.seed)
    print(f"built {len(rows)} cases into {bench} in {time.perf_counter() - t0:.1f} s")
    if args.build_only:
        return 0
    kind_of = {(r["split"], f"{r['case']}.json"): r["kind"] for r in rows}
    table: dict[tuple[str, str], list] = defaultdict(list)
    by_kind: dict[tuple[str, str], list] = defaultdict(list)
    misses = []
    for mode in args.modes:
        for split in SPLITS:
            t = time.perf_counter()
            result = _attribute(bench, split, mode, args.out)
            for rec in result["results"]:
                kind = kind_of[(split, Path(rec["graph_path"]).name)]
                hit = (bool(rec["is_error_type_correct"]), bool(rec["is_op_id_correct"]))
                table[(split, mode)].append(hit)
                table[("all", mode)].append(hit)
                by_kind[(kind, mode)].append(hit)
                if not all(hit):
                    pred = rec["error_attribution_result"]
                    misses.append({"mode": mode, "split": split, "case": Path(rec["graph_path"]).stem, "kind": kind,
                                   "query": rec["query"], "expected": {"error_type": rec["final_error_type"],
                                                                       "op_id": rec["final_op_id"]},
                                   "predicted": {"error_type": pred.get("error_type"), "op_id": pred.get("op_id"),
                                                 "op": rec.get("attributed_operation")},
                                   "reason": pred.get("reason")})
            print(f"  {mode:9s} {split:12s} {len(result['results']):3d} cases {time.perf_counter() - t:5.1f} s", file=sys.stderr)
    _write_json(args.out / "misses.json", misses)
    print("\nETA / OIA per split and starting-evidence mode")
    print(f"{'split':14s}{'n':>4s}  " + "  ".join(f"{m:>15s}" for m in args.modes))
    for split in (*SPLITS, "all"):
        n = len(table[(split, args.modes[0])])
        print(f"{split:14s}{n:4d}  " + "  ".join(f"{_ratio(table[(split, m)]):>15s}" for m in args.modes))
    print("\nETA / OIA per fault kind")
    print(f"{'kind':24s}{'n':>4s}  " + "  ".join(f"{m:>15s}" for m in args.modes))
    for kind in dict.fromkeys(r["kind"] for r in sorted(rows, key=lambda r: SPLITS.index(r["split"]))):
        n = len(by_kind[(kind, args.modes[0])])
        print(f"{kind:24s}{n:4d}  " + "  ".join(f"{_ratio(by_kind[(kind, m)]):>15s}" for m in args.modes))
    print(f"\n{len(misses)} misses (all modes) in {args.out / 'misses.json'}; total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
