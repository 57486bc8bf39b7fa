"""Replay speed and cost: what a counterfactual replay pays against a full re-run of the run.

    python benchmarks/replay_cost.py                 # 2 LoCoMo conversations, 80 messages each, 50 cases
    python benchmarks/replay_cost.py --quick         # 40 messages, 20 cases (about a minute on an idle machine)
    python benchmarks/replay_cost.py --work-dir /tmp/replay_cost --json-out /tmp/replay_cost.json

Steps, all in one process after the run (ratios are measured in the same invocation):

1. ``python -m membase run`` (a fresh process) of real mem0ai 1.0.5 with the offline fake LLM and
   embedder on the first two LoCoMo conversations cut to ``--max-messages``, answered by
   faultbench's extractive reader and judged by its token judge (every model deterministic);
2. evidence_flow attribution of the failed questions (``toolkits.attribution.cli.main``);
3. the calls of a full re-run: every trajectory replayed with no repair against an empty call
   cache, under a :class:`~membase.clients.usage.CallMeter`; and the determinism check against the
   run's own cache (zero new calls expected);
4. ``--verify replay --replay-search earliest`` (``toolkits.replay_verify.verify_records``) over the
   first ``--cases`` attributed cases, at most ``--max-candidates`` repairs per case: per case the
   new calls of its blamed-op replay (``record["replay"]["new_calls"]``), grouped by the stage of
   the repaired op; the wall time, the metered calls and the replays (from the search's journal)
   after every case, so the time per case and per replay can be read as the case count grows.

Prints Markdown tables (and writes them with ``--markdown-out``); ``uptime`` before and after
says how busy the machine was.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
MEM0_FAKE = {"layer_type": "Mem0", "llm_provider": "fake", "embedder_provider": "fake", "embedding_model_dims": 64}
QA_MODEL = "py:toolkits.faultbench:reader_model"
JUDGE_MODEL = "py:toolkits.faultbench:token_judge_model"
STAGES = ("extraction", "update", "deletion", "retrieval", "response")


def uptime() -> str:
    """The machine's load line (``uptime``), or the load averages when the command is missing."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


# -- 1. the run -------------------------------------------------------------------------------------
def make_run(work: Path, dataset: Path, max_messages: int) -> tuple[Path, float]:
    """A 2-conversation Mem0 run folder of ``python -m membase run``; returns (folder, seconds)."""
    layer = work / "mem0_fake.json"
    layer.write_text(json.dumps(MEM0_FAKE))
    run_dir = work / "run"
    argv = [sys.executable, "-m", "membase", "run", "--layer-config", str(layer), "--dataset", str(dataset),
            "--dataset-type", "LoCoMo", "--end-idx", "2", "--max-messages", str(max_messages),
            "--output-dir", str(run_dir), "--qa-model", QA_MODEL, "--judge-model", JUDGE_MODEL,
            "--metrics", "llm_judge", "--quiet"]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"error: the run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return run_dir, seconds


# -- 2. attribution ---------------------------------------------------------------------------------
def attribute(run_dir: Path, work: Path) -> tuple[list[dict[str, Any]], float]:
    """evidence_flow records of the run's failed questions, and the seconds it took."""
    from toolkits.attribution import cli as attribution_cli

    out = work / "evidence_flow.json"
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):  # its summary line would go into the printed table
        code = attribution_cli.main([str(run_dir), "--output-path", str(out), "--exploration-strategy",
                                       "evidence_flow", "--no-progress", "--no-resume"])
    seconds = time.perf_counter() - started
    if code != 0:
        raise SystemExit(f"error: run_error_attribution exited {code}")
    return json.loads(out.read_text(encoding="utf-8"))["results"], seconds


# -- 3. a full re-run and the determinism check ----------------------------------------------------
def full_rerun(run_dir: Path, work: Path) -> dict[str, Any]:
    """Every trajectory replayed with no repair: against an empty cache (all calls paid) and the run's cache."""
    from membase.replay import RunReplayer, read_manifest

    empty = work / "empty_cache"
    manifest = dataclasses.replace(read_manifest(run_dir), cache_dir=str(empty))
    started = time.perf_counter()
    with RunReplayer(run_dir, manifest=manifest) as replayer:
        per_trajectory = {t: replayer.baseline(t).new_calls for t in replayer.trajectory_ids()}
        cold = replayer.check()  # baselines are kept: this only collects them
    cold_seconds = time.perf_counter() - started
    started = time.perf_counter()
    with RunReplayer(run_dir) as replayer:
        warm = replayer.check()
    warm_seconds = time.perf_counter() - started
    cache = Path(run_dir) / "call_cache"
    return {
        "calls_per_trajectory": per_trajectory,
        "calls": sum(per_trajectory.values()),
        "cold_seconds": round(cold_seconds, 2),
        "cold_answers_reproduced": not cold["mismatches"] and not cold["graph_divergences"],
        "cache_entries": sum(1 for p in cache.rglob("*.json") if p.is_file()),
        "check": {k: warm[k] for k in ("reproduced", "trajectories", "questions", "new_calls")},
        "check_seconds": round(warm_seconds, 2),
    }


# -- 4. verification and the earliest-rescue search -------------------------------------------------
QUERY_TIME = ("retrieval", "response")


class JournalTail:
    """The replays ``verify_records`` journaled since the last read (stage, seconds), read incrementally."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0

    def new(self) -> list[tuple[str, float]]:
        if not self.path.is_file():
            return []
        with self.path.open("r", encoding="utf-8") as handle:
            handle.seek(self.offset)
            lines = handle.readlines()
            self.offset = handle.tell()
        out = []
        for line in lines:
            outcome = json.loads(line)["outcome"]
            out.append((str(outcome.get("stage")), float(outcome.get("seconds", 0.0))))
        return out


def search(run_dir: Path, records: list[dict[str, Any]], work: Path,
           max_candidates: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``verify_records(search="earliest")``; returns the records and, after each case, the elapsed seconds,
    the metered calls and the replays (stage, seconds) that case ran."""
    from membase.clients.usage import CallMeter
    from toolkits.replay_verify import verify_records

    journal = work / "search_journal.jsonl"
    journal.unlink(missing_ok=True)
    tail = JournalTail(journal)
    timeline: list[dict[str, Any]] = []
    started = time.perf_counter()
    with CallMeter() as meter:
        def progress(_line: str) -> None:
            timeline.append({"n": len(timeline) + 1, "seconds": time.perf_counter() - started, "calls": meter.calls,
                             "replays": tail.new()})

        verify_records(run_dir, records, search="earliest", progress=progress, journal_path=journal,
                       max_candidates=max_candidates)
    return records, timeline


# -- tables -------------------------------------------------------------------------------------------
def _stage_of(record: dict[str, Any]) -> str | None:
    replay = record.get("replay") or {}
    return replay.get("stage")


def stage_rows(records: list[dict[str, Any]], rerun: dict[str, Any]) -> list[dict[str, Any]]:
    """Per stage of the blamed op: cases, new calls per case and their ratio to a full re-run."""
    from toolkits.replay_verify import trajectory_of

    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        stage = _stage_of(record)
        if stage is not None:
            groups[stage].append(record)
    rows = []
    for stage in [s for s in STAGES if s in groups]:
        cases = groups[stage]
        calls = [int(r["replay"].get("new_calls", 0)) for r in cases]
        traj_calls = [rerun["calls_per_trajectory"].get(trajectory_of(r), 0) for r in cases]
        ratios = [c / t for c, t in zip(calls, traj_calls, strict=True) if t]
        rows.append({
            "stage": stage, "cases": len(cases),
            "applied": sum(bool(r["replay"].get("applied")) for r in cases),
            "replayed": sum(r["replay"].get("status") == "replayed" for r in cases),
            "rescued": sum(bool(r["replay"].get("rescued")) for r in cases),
            "mean_calls": sum(calls) / len(calls), "max_calls": max(calls),
            "ratio_trajectory": sum(ratios) / len(ratios) if ratios else None,
            "ratio_run": (sum(calls) / len(calls)) / rerun["calls"] if rerun["calls"] else None,
            "mean_seconds": sum(float(r["replay"].get("seconds", 0.0)) for r in cases) / len(cases),
        })
    return rows


def growth_rows(timeline: list[dict[str, Any]], step: int, trajectories: list[str]) -> list[dict[str, Any]]:
    """Cumulative seconds and calls at every ``step`` cases, and the per-case cost of each block.

    ``trajectories`` (the trajectory of each case, in order) marks the blocks holding a
    trajectory's first case: that case also pays the trajectory's unrepaired baseline replay.
    """
    firsts = {i + 1 for i, t in enumerate(trajectories) if t not in trajectories[:i]}
    rows, last_s, last_calls, last_n = [], 0.0, 0, 0
    replays: list[tuple[str, float]] = []
    for point in timeline:
        n, seconds, calls = point["n"], point["seconds"], point["calls"]
        replays += point["replays"]
        if n % step == 0 or n == len(timeline):
            block = n - last_n
            query = [s for stage, s in replays if stage in QUERY_TIME]
            construction = [s for stage, s in replays if stage not in QUERY_TIME]
            rows.append({"cases": n, "seconds": seconds, "calls": calls,
                         "baselines": sum(last_n < f <= n for f in firsts),
                         "query_replays": len(query), "construction_replays": len(construction),
                         "query_s": sum(query) / len(query) if query else None,
                         "construction_s": sum(construction) / len(construction) if construction else None,
                         "outside_replays_s": (seconds - last_s) - sum(query) - sum(construction),
                         "block_s_per_case": (seconds - last_s) / block, "block_calls_per_case": (calls - last_calls) / block,
                         "s_per_case": seconds / n})
            last_s, last_calls, last_n, replays = seconds, calls, n, []
    return rows


def case_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The measured fields of one verified case (JSON output)."""
    replay = record.get("replay") or {}
    label = record.get("counterfactual_label") or {}
    return {"query_id": record.get("query_id"), "graph": Path(str(record.get("graph_path", ""))).parent.name,
            "blamed": (record.get("error_attribution_result") or {}).get("error_type"),
            **{k: replay.get(k) for k in ("status", "stage", "applied", "rescued", "new_calls", "tokens", "seconds")},
            "label": label.get("error_type"), "candidates": label.get("candidates"), "searched": label.get("searched")}


def _sec(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f} s"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables."""
    run, rerun = report["run"], report["rerun"]
    lines = [
        f"Machine: {report['cpus']} CPUs; `uptime` before: `{report['uptime_before']}`; after: `{report['uptime_after']}`",
        "",
        "| run | value |", "|---|---|",
        f"| slice | LoCoMo conversations 1-2, first {run['max_messages']} messages each |",
        f"| `python -m membase run` (real mem0ai, fake LLM/embedder, faultbench reader + token judge) | {run['seconds']:.1f} s |",
        f"| failed questions attributed by evidence_flow | {run['failed']} in {run['attribution_seconds']:.1f} s |",
        f"| call cache entries (distinct requests) | {rerun['cache_entries']} |",
        f"| full re-run, empty cache: calls (per trajectory) | {rerun['calls']} "
        f"({', '.join(f'{k}: {v}' for k, v in rerun['calls_per_trajectory'].items())}) in {rerun['cold_seconds']:.1f} s; "
        f"answers reproduced: {rerun['cold_answers_reproduced']} |",
        f"| unrepaired replay with the run's cache (`--check`) | {rerun['check']['new_calls']} new calls, "
        f"reproduced: {rerun['check']['reproduced']}, {rerun['check']['questions']} questions in {rerun['check_seconds']:.1f} s |",
        "",
        "New calls of one case replay (the blamed op repaired) against a full re-run:",
        "",
        "| stage of the repaired op | cases | repair applied | rescued | mean new calls | max | "
        "mean / trajectory re-run | mean / run re-run | mean s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["stages"]:
        lines.append(f"| {r['stage']} | {r['cases']} | {r['applied']} | {r['rescued']} | {r['mean_calls']:.2f} | "
                     f"{r['max_calls']} | {_pct(r['ratio_trajectory'])} | {_pct(r['ratio_run'])} | {r['mean_seconds']:.2f} |")
    lines += [
        "",
        "*mean / trajectory re-run*: the mean over cases of (the case's new calls / the calls of a full re-run of its "
        "trajectory); *mean / run re-run*: the mean new calls over the calls of re-running the whole run. A response "
        "check answers the same context again with the answer model uncached: a `py:` or `fake:` model is not metered "
        "there (only calls through the call cache or `ChatClient` are), so that row shows 0 although each check made "
        "one answer call.",
    ]
    s = report["search"]
    lines += [
        "",
        f"`--verify replay --replay-search earliest --replay-max-candidates {report['max_candidates']}` over "
        f"{s['cases']} cases: {s['seconds']:.1f} s, {s['calls']} new calls "
        f"({s['labelled']} cases labelled by a rescuing repair, {s['searched']} candidate replays).",
        "",
        "| cases | cumulative s | s per case (cumulative) | s per case in this block | cumulative calls | "
        "calls per case in this block | query-time replays in block (mean s) | construction replays in block (mean s) | "
        "block s outside replays | trajectory baselines in block |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for g in report["growth"]:
        lines.append(f"| {g['cases']} | {g['seconds']:.1f} | {g['s_per_case']:.2f} | {g['block_s_per_case']:.2f} | "
                     f"{g['calls']} | {g['block_calls_per_case']:.2f} | {g['query_replays']} ({_sec(g['query_s'])}) | "
                     f"{g['construction_replays']} ({_sec(g['construction_s'])}) | {g['outside_replays_s']:.1f} | "
                     f"{g['baselines']} |")
    lines += ["", "A query-time replay (retrieval, response) answers one question again on the trajectory's "
              "kept baseline layer; a construction replay (extraction, update, deletion) re-runs the trajectory's "
              "construction with the repair. *Block s outside replays*: the block's wall time minus its replays' own "
              "seconds (candidate search, baselines, bookkeeping)."]
    lines += ["", f"A trajectory's baseline (its unrepaired replay, built once and kept for query-time repairs) is paid "
              f"by its first case; all baselines of the run together took {rerun['check_seconds']:.1f} s in the "
              "`--check` row above."]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Replay cost against a full re-run, and --replay-search earliest scaling "
                                "(Mem0 with offline fakes on 2 LoCoMo conversations).")
    p.add_argument("--dataset", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo JSON file (default: shared data)")
    p.add_argument("--max-messages", type=int, default=80, help="messages per conversation (default 80)")
    p.add_argument("--cases", type=int, default=50, help="attributed cases to verify and search (default 50)")
    p.add_argument("--max-candidates", type=int, default=2,
                   help="candidate ops repaired per case by the search (default 2 keeps the default run near 10 "
                   "minutes on a busy 2-core machine; the CLI's --replay-max-candidates default is 12)")
    p.add_argument("--step", type=int, default=10, help="report the search's timing every N cases (default 10)")
    p.add_argument("--quick", action="store_true", help="40 messages, 20 cases, steps of 5")
    p.add_argument("--work-dir", type=Path, default=None, help="keep the run here (default: a temporary folder)")
    p.add_argument("--json-out", type=Path, default=None, help="also write the measurements as JSON")
    p.add_argument("--markdown-out", type=Path, default=None, help="also write the tables to this file")
    args = p.parse_args(argv)
    if args.quick:
        args.max_messages, args.cases, args.step = 40, 20, 5
    if not args.dataset.is_file():
        p.error(f"--dataset {str(args.dataset)!r}: no such file")
    if min(args.max_messages, args.cases, args.step, args.max_candidates) < 1:
        p.error("--max-messages, --cases, --max-candidates and --step must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    from toolkits.replay_verify import trajectory_of

    args = parse_args(argv)
    before = uptime()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="replay-cost-"))
    work.mkdir(parents=True, exist_ok=True)
    if (work / "run").exists():
        raise SystemExit(f"error: {str(work / 'run')!r} exists; pass an empty --work-dir")
    run_dir, run_seconds = make_run(work, args.dataset, args.max_messages)
    print(f"run: {run_seconds:.1f}s", file=sys.stderr)
    records, attribution_seconds = attribute(run_dir, work)
    print(f"attribution: {len(records)} cases in {attribution_seconds:.1f}s", file=sys.stderr)
    rerun = full_rerun(run_dir, work)
    print(f"full re-run: {rerun['calls']} calls in {rerun['cold_seconds']}s", file=sys.stderr)
    cases = [r for r in records if r.get("error_attribution_result")][: args.cases]
    started = time.perf_counter()
    cases, timeline = search(run_dir, cases, work, args.max_candidates)
    seconds = time.perf_counter() - started
    labels = [r.get("counterfactual_label") or {} for r in cases]
    report = {
        "cpus": os.cpu_count(), "max_candidates": args.max_candidates, "uptime_before": before, "uptime_after": uptime(),
        "run": {"max_messages": args.max_messages, "seconds": run_seconds, "failed": len(records),
                "attribution_seconds": attribution_seconds},
        "rerun": rerun,
        "stages": stage_rows(cases, rerun),
        "search": {"cases": len(cases), "seconds": seconds, "calls": timeline[-1]["calls"] if timeline else 0,
                   "labelled": sum(bool(label.get("op_id")) for label in labels),
                   "searched": sum(int(label.get("searched", 0)) for label in labels)},
        "growth": growth_rows(timeline, args.step, [trajectory_of(r) for r in cases]),
        "cases": [case_summary(r) for r in cases],
    }
    table = markdown(report)
    print(table)
    if args.markdown_out:
        args.markdown_out.write_text(table + "\n", encoding="utf-8")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
