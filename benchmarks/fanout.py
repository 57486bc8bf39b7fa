"""Fan-out benchmark: construction of many small LongMemEval-format trajectories in one process,
in worker processes and on a local Ray instance; and peak memory as the trajectory count grows.

    python benchmarks/fanout.py                      # 40 trajectories: 1 worker, 2 workers, Ray
    python benchmarks/fanout.py --layer mem0-fake     # the same with mem0ai's pipeline (offline fakes)
    python benchmarks/fanout.py --rss-counts 50,500  # peak RSS of 50 and 500 trajectories, one process
    python benchmarks/fanout.py --no-ray

Each timed run is `python -m membase construct --layer-config <Long-Context> --dataset <file>` in a
fresh process (interpreter start and imports included, as a user sees it); outputs of every run
are compared with the one-worker run byte for byte after `membase.runners._canonical` replaces
run ids, clock times and the output folder. Peak RSS is the `ru_maxrss` of the one process that
runs the whole construction of N trajectories (workers 1). The questions and sessions are made up
here, in LongMemEval's official JSON shape.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = {
    "long-context": {"layer_type": "Long-Context", "context_window": 4000},
    # the real mem0ai 1.0.5 pipeline with the offline fake LLM and embedder: CPU work per message
    "mem0-fake": {"layer_type": "Mem0", "llm_provider": "fake", "embedder_provider": "fake",
                  "embedding_model_dims": 64},
}
_TOPICS = ("a sourdough starter", "a second-hand cello", "a balcony herb garden", "a night bus route",
           "a rock-climbing gym", "a jigsaw of a lighthouse", "a borrowed tent", "a Portuguese course")


def question(index: int, *, sessions: int = 3, turns: int = 4) -> dict:
    """One LongMemEval-format question with its own small haystack (made-up sentences)."""
    topic = _TOPICS[index % len(_TOPICS)]
    start = datetime(2023, 5, 1, 9, 0) + timedelta(days=index)
    haystack, dates, ids = [], [], []
    for s in range(sessions):
        chat = []
        for t in range(turns):
            if t % 2 == 0:
                chat.append({"role": "user", "content": f"Day {s + 1} with {topic}: step {t} went fine, number {index}.",
                             "has_answer": s == 0 and t == 0})
            else:
                chat.append({"role": "assistant", "content": f"Glad to hear step {t - 1} of {topic} worked."})
        haystack.append(chat)
        dates.append((start + timedelta(days=s)).strftime("%Y/%m/%d (%a) %H:%M"))
        ids.append(f"bench-{index}-session-{s}")
    return {
        "question_id": f"bench{index:04d}", "question_type": "single-session-user",
        "question": f"What did I start on day 1, number {index}?", "answer": topic,
        "question_date": (start + timedelta(days=sessions)).strftime("%Y/%m/%d (%a) %H:%M"),
        "haystack_session_ids": ids, "haystack_dates": dates, "haystack_sessions": haystack,
        "answer_session_ids": [ids[0]],
    }


def write_inputs(folder: Path, count: int, layer_name: str = "long-context") -> tuple[Path, Path]:
    layer = folder / f"{layer_name}.json"
    layer.write_text(json.dumps(LAYERS[layer_name]))
    data = folder / f"longmemeval_{count}.json"
    data.write_text(json.dumps([question(i) for i in range(count)]))
    return layer, data


def construct(layer: Path, data: Path, out: Path, *extra: str) -> float:
    """Seconds of one `python -m membase construct` (a fresh process)."""
    argv = [sys.executable, "-m", "membase", "construct", "--layer-config", str(layer), "--dataset", str(data),
            "--dataset-type", "LongMemEval", "--output-dir", str(out), "--quiet", *extra]
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"construction failed ({' '.join(extra) or 'one worker'}): {done.stderr.strip()[-800:]}")
    summary = json.loads(done.stdout)
    if summary["users_failed"]:
        raise SystemExit(f"users failed: {summary['users_failed']}")
    return seconds


_RSS_PROBE = """
import resource, sys
from membase.cli import main
code = main(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""


def peak_rss_mib(layer: Path, data: Path, out: Path) -> float:
    """Peak RSS (MiB) of one process building every trajectory of `data`."""
    argv = [sys.executable, "-c", _RSS_PROBE, "construct", "--layer-config", str(layer), "--dataset", str(data),
            "--dataset-type", "LongMemEval", "--output-dir", str(out), "--quiet"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"RSS run failed: {done.stderr.strip()[-800:]}")
    return int(done.stdout.strip().splitlines()[-1]) / 1024


def timing(count: int, with_ray: bool, repeats: int, layer_name: str) -> None:
    from membase.runners._canonical import run_differences

    with tempfile.TemporaryDirectory(prefix="fanout-bench-") as tmp:
        folder = Path(tmp)
        layer, data = write_inputs(folder, count, layer_name)
        plans = {"1 worker": [], "2 workers": ["--workers", "2"]}
        if with_ray:
            plans["Ray (local, 2 CPUs)"] = ["--executor", "ray", "--workers", "2"]
        best: dict[str, float] = {}
        for name, extra in plans.items():
            times = []
            for repeat in range(repeats):
                out = folder / f"{name.split()[0]}-{repeat}"
                times.append(construct(layer, data, out, *extra))
                same = run_differences(folder / "1-0", out)
                if same:
                    raise SystemExit(f"{name}: outputs differ from the one-worker run in {same[:5]}")
            best[name] = min(times)
        print(f"construction of {count} LongMemEval-format trajectories, layer {layer_name} (best of {repeats}; "
              "outputs identical to the one-worker run after canonicalisation):")
        for name, seconds in best.items():
            print(f"  {name:<22} {seconds:6.2f} s   ratio to 1 worker {best['1 worker'] / seconds:4.2f}x")


def memory(counts: list[int], layer_name: str) -> None:
    with tempfile.TemporaryDirectory(prefix="fanout-rss-") as tmp:
        folder = Path(tmp)
        print(f"peak RSS of one process building N trajectories, layer {layer_name} (workers 1):")
        for count in counts:
            layer, data = write_inputs(folder, count, layer_name)
            rss = peak_rss_mib(layer, data, folder / f"rss-{count}")
            size = data.stat().st_size / 2**20
            print(f"  N={count:<5} peak RSS {rss:7.1f} MiB   (dataset file {size:5.2f} MiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=40, help="trajectories of the timing runs")
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per plan (the best is kept)")
    parser.add_argument("--ray", action=argparse.BooleanOptionalAction, default=True, help="include Ray")
    parser.add_argument("--layer", choices=sorted(LAYERS), default="long-context", help="memory layer of the runs")
    parser.add_argument("--rss-counts", default=None, help="comma list of trajectory counts for the RSS runs")
    args = parser.parse_args(argv)
    if args.rss_counts:
        memory([int(c) for c in args.rss_counts.split(",")], args.layer)
    else:
        timing(args.count, args.ray, args.repeats, args.layer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
