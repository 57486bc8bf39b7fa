"""Held-out fault benchmark F: build it, then score the `evidence_flow` attributor on it.

Three hand-written LoCoMo-shaped conversations (beekeeping allotments, amateur musicians, dog
fostering and kayaking) are traced through Long-Context, NaiveRAG, Mem0 and EverMemOS with the
public smartcomment API, one injected fault per case, labelled by construction and checked against
the clean replay. The benchmark goes to ``<work-dir>/bench/<split>/*.json`` (MemTraceBench layout);
the fault kinds go to ``<work-dir>/manifest.json``, outside it.

Scoring runs ``run_error_attribution.py <bench> <split> --exploration-strategy evidence_flow`` per
split in three evidence modes: ``retrieved`` (the CLI default: starting nodes retrieved from the
messages), ``source_evidence`` (``--starting-nodes-type source_evidence``: the annotated evidence)
and ``none`` (``--no-provide-starting-nodes``). It prints ETA/OIA per split and mode and overall,
and writes ``<work-dir>/misses.json`` and ``<work-dir>/scores.json``.

Run (2 CPU cores: about a minute to build, a few minutes to score)::

    python benchmarks/heldout_attribution_f/run.py                  # build + score
    python benchmarks/heldout_attribution_f/run.py --build-only
    python benchmarks/heldout_attribution_f/run.py --skip-build --modes source_evidence --splits mem0
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

SPLITS = ("long_context", "rag", "mem0", "evermemos")
MODES: dict[str, list[str]] = {
    "retrieved": [],
    "source_evidence": ["--starting-nodes-type", "source_evidence"],
    "none": ["--no-provide-starting-nodes"],
}
DEFAULT_WORK_DIR = ROOT / "runs" / "heldout_attribution_f"


def score_split(bench: Path, split: str, mode: str, out: Path, extra: Sequence[str]) -> dict[str, Any]:
    """One CLI run; returns its output JSON."""
    from toolkits.attribution import cli as run_error_attribution  # the command, not the script

    args = [str(bench), split, "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--no-progress", "--bootstrap-samples", "0", "--no-resume", *MODES[mode], *extra]
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        code = run_error_attribution.main(args)
    if code != 0:
        raise SystemExit(f"run_error_attribution exited {code} on {split} ({mode}): {sink.getvalue()[-400:]}")
    return json.loads(out.read_text(encoding="utf-8"))


def misses(results: list[dict[str, Any]], manifest: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """The wrongly attributed cases of one mode, joined with the manifest by graph file."""
    by_file = {m["file"]: m for m in manifest}
    out = []
    for r in results:
        if r.get("is_error_type_correct") and r.get("is_op_id_correct"):
            continue
        split = Path(r["graph_path"]).parent.name
        entry = by_file.get(f"{split}/{Path(r['graph_path']).name}", {})
        predicted = r.get("error_attribution_result") or {}
        operation = r.get("attributed_operation") or {}
        out.append({
            "mode": mode, "case_id": entry.get("case_id"), "split": split, "fault_kind": entry.get("fault_kind"),
            "gold_error_type": r.get("final_error_type"), "gold_op_id": r.get("final_op_id"),
            "gold_op_name": entry.get("gold_op_name"),
            "predicted_error_type": predicted.get("error_type"), "predicted_op_id": predicted.get("op_id"),
            "predicted_op_name": operation.get("op_name"),
            "type_correct": bool(r.get("is_error_type_correct")), "op_correct": bool(r.get("is_op_id_correct")),
            "faulted_text": entry.get("faulted_text"), "query": r.get("query"),
        })
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'mode':<16}{'split':<14}{'cases':>6}{'ETA':>8}{'OIA':>8}", "-" * 52]
    for r in rows:
        lines.append(f"{r['mode']:<16}{r['split']:<14}{r['cases']:>6}{r['eta']:>8.3f}{r['oia']:>8.3f}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Build and/or score the benchmark; exit 0, or 2 on bad arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", default=str(DEFAULT_WORK_DIR), help="where bench/, manifest and scores go")
    parser.add_argument("--seed", type=int, default=2027, help="builder seed (default: 2027)")
    parser.add_argument("--build-only", action="store_true", help="build the benchmark and stop")
    parser.add_argument("--skip-build", action="store_true", help="score the benchmark already in --work-dir")
    parser.add_argument("--splits", nargs="+", choices=SPLITS, default=list(SPLITS))
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--embedding-provider", default=None,
                        help="passed to the CLI for the retrieved mode (default: the CLI's own default)")
    args = parser.parse_args(argv)
    if args.build_only and args.skip_build:
        parser.error("--build-only and --skip-build exclude each other")
    work = Path(args.work_dir)
    bench = work / "bench"

    if not args.skip_build:
        from benchmarks.heldout_attribution_f.build import build_benchmark

        started = time.perf_counter()
        manifest, builder = build_benchmark(work, seed=args.seed, progress=lambda m: print(m, file=sys.stderr))
        print(f"built {len(manifest)} cases in {time.perf_counter() - started:.1f} s "
              f"({builder.attempts} recordings tried) -> {bench}")
        for split in SPLITS:
            n = sum(1 for m in manifest if m["split"] == split)
            types = sorted({m["gold_error_type"] for m in manifest if m["split"] == split})
            print(f"  {split:<13} {n:>3} cases  {', '.join(types)}")
        if args.build_only:
            return 0
    manifest_path = work / "manifest.json"
    if not manifest_path.is_file():
        print(f"error: no benchmark under {work} (run without --skip-build first)", file=sys.stderr)
        return 2
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))

    extra = ["--embedding-provider", args.embedding_provider] if args.embedding_provider else []
    rows: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    outputs = work / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    for mode in args.modes:
        total = eta = oia = 0
        for split in args.splits:
            started = time.perf_counter()
            data = score_split(bench, split, mode, outputs / f"{mode}_{split}.json", extra)
            results = data["results"]
            n = len(results)
            t = sum(1 for r in results if r.get("is_error_type_correct"))
            o = sum(1 for r in results if r.get("is_op_id_correct"))
            rows.append({"mode": mode, "split": split, "cases": n, "eta": t / n if n else 0.0,
                         "oia": o / n if n else 0.0})
            total, eta, oia = total + n, eta + t, oia + o
            missed += misses(results, manifest, mode)
            print(f"{mode} {split}: {n} cases in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        rows.append({"mode": mode, "split": "overall", "cases": total, "eta": eta / total if total else 0.0,
                     "oia": oia / total if total else 0.0})
    print(table(rows))
    (work / "misses.json").write_text(json.dumps(missed, indent=2, ensure_ascii=False), encoding="utf-8")
    (work / "scores.json").write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(f"misses: {work / 'misses.json'} ({len(missed)} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
