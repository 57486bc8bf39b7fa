"""Build the fourth held-out attribution benchmark and score evidence_flow on it (3 evidence modes).

    python benchmarks/heldout_attribution_d/run.py [--out runs/heldout_attribution_d]
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from build import build  # noqa: E402

SPLITS = ["long_context", "rag", "mem0", "evermemos"]
MODES = {"retrieved": [], "source_evidence": ["--starting-nodes-type", "source_evidence"],
         "no_start": ["--no-provide-starting-nodes"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "runs" / "heldout_attribution_d"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    bench = out / "bench"
    bench.mkdir(parents=True)
    manifest = {m["file"].split("/")[1]: m for m in build(bench)}
    print(f"built {len(manifest)} cases", flush=True)
    rows, misses = [], []
    for mode, flags in MODES.items():
        for split in SPLITS:
            res_path = out / f"{mode}_{split}.json"
            subprocess.run([sys.executable, str(ROOT / "run_error_attribution.py"), str(bench), split,
                            "--exploration-strategy", "evidence_flow", "--output-path", str(res_path),
                            "--no-progress", *flags], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
            for r in json.loads(res_path.read_text())["results"]:
                m = manifest[Path(r["graph_path"]).name]
                pred = r["error_attribution_result"]
                row = {"mode": mode, "split": split, "kind": m["kind"], "file": m["file"],
                       "eta": bool(r["is_error_type_correct"]), "oia": bool(r["is_op_id_correct"])}
                rows.append(row)
                if not (row["eta"] and row["oia"]):
                    misses.append({**row, "gold_type": m["final_error_type"], "gold_op": m["final_op_id"],
                                   "pred_type": pred.get("error_type"), "pred_op": pred.get("op_id"),
                                   "pred_op_name": (r.get("attributed_operation") or {}).get("op_name"),
                                   "status": (r.get("evidence_flow") or {}).get("status")})
    for key in ("mode", "split", "kind"):
        groups = collections.defaultdict(list)
        for row in rows:
            groups[(row["mode"], row[key]) if key != "mode" else (row["mode"],)].append(row)
        print(f"\n== by {key} ==")
        for g, rs in sorted(groups.items()):
            eta = sum(r["eta"] for r in rs) / len(rs)
            oia = sum(r["oia"] for r in rs) / len(rs)
            print(f"{' / '.join(g):40s} n={len(rs):3d} ETA={eta:.3f} OIA={oia:.3f}")
    (out / "misses.json").write_text(json.dumps(misses, indent=1))
    print(f"\n{len(misses)} misses -> {out / 'misses.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
