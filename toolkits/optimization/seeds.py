"""``--seeds``: the whole optimization once per seed, then mean ± sd of the final evaluation.

Each seed runs into ``<dir>/seed_<s>/`` exactly as a single run with ``--seed s`` would (so a
killed multi-seed run resumes seed by seed), and ``<dir>/seeds_summary.json`` gathers every seed's
``final_evaluation.json`` (:func:`toolkits.optimization.statistics.summarize_seeds`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from toolkits.optimization.statistics import summarize_seeds

__all__ = ["SEEDS_SUMMARY_FILENAME", "parse_seeds", "run_over_seeds"]

SEEDS_SUMMARY_FILENAME = "seeds_summary.json"


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2"`` → ``[0, 1, 2]``.

    Raises:
        ValueError: Not a comma list of distinct integers.
    """
    try:
        seeds = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--seeds {text!r}: give a comma list of integers such as 0,1,2") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"--seeds {text!r}: give a comma list of distinct integers such as 0,1,2")
    return seeds


def run_over_seeds(args: argparse.Namespace, run_one: Callable[[argparse.Namespace], int]) -> int:
    """Run ``run_one`` per seed and summarize; returns the first non-zero exit code, else 0."""
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    root = Path(args.optimization_dir)
    reports: dict[int, dict[str, Any]] = {}
    for seed in seeds:
        print(f"seed {seed}: {root / f'seed_{seed}'}", file=sys.stderr)
        one = argparse.Namespace(**{**vars(args), "seed": seed, "seeds": None,
                                    "optimization_dir": str(root / f"seed_{seed}")})
        code = run_one(one)
        if code != 0:
            return code
        report = root / f"seed_{seed}" / "final_evaluation.json"
        if report.is_file():
            reports[seed] = json.loads(report.read_text(encoding="utf-8"))
    if not reports:
        print("no seed wrote a final_evaluation.json (--eval-trajectories none?): nothing to summarize", file=sys.stderr)
        return 0
    summary = summarize_seeds(reports)
    atomic_write_json(root / SEEDS_SUMMARY_FILENAME, summary)
    for name, stats in summary["metrics"].items():
        before, after, diff = stats["before"], stats["after"], stats["difference"]
        print(f"over seeds {','.join(map(str, summary['seeds']))} {name}: {before['mean']:.4f} ± {before['sd']:.4f} -> "
              f"{after['mean']:.4f} ± {after['sd']:.4f} (difference {diff['mean']:+.4f} ± {diff['sd']:.4f})")
    print(f"-> {root / SEEDS_SUMMARY_FILENAME}")
    return 0
