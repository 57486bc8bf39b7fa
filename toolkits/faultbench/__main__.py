"""CLI: ``python -m toolkits.faultbench {build,score} ...``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from toolkits.faultbench._build import SPLITS, BuildConfig, build_faultbench
from toolkits.faultbench._faults import FAULT_KINDS

DEFAULT_LOCOMO = "../shared/data/locomo/locomo10.json"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m toolkits.faultbench",
                                     description="Build or score a fault-injection benchmark (no API key needed).")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="run the layers over LoCoMo with one injected fault per case")
    build.add_argument("out_dir", help="output folder (<out>/<split>/*.json)")
    build.add_argument("--locomo", default=DEFAULT_LOCOMO, help="path to locomo10.json")
    build.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS))
    build.add_argument("--kinds", nargs="+", default=list(FAULT_KINDS), choices=list(FAULT_KINDS))
    build.add_argument("--cases-per-kind", type=int, default=2)
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--max-messages", type=int, default=60)
    build.add_argument("--max-messages-for", action="append", default=[], metavar="SPLIT=N",
                       help="per-split message limit, e.g. mem0=28 (repeatable)")
    build.add_argument("--top-k", type=int, default=10)
    build.add_argument("--conversations", type=int, nargs="+", default=None,
                       help="1-based LoCoMo sample numbers to draw from (default: all)")
    score = sub.add_parser("score", help="attribute every case with evidence_flow and print ETA/OIA per split")
    score.add_argument("data_dir")
    score.add_argument("--splits", nargs="+", default=None, choices=list(SPLITS))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("membase.datasets.locomo").setLevel(logging.ERROR)
    if args.command == "build":
        if args.cases_per_kind < 1:
            print("error: --cases-per-kind must be at least 1", file=sys.stderr)
            return 2
        by_split = {}
        for item in args.max_messages_for:
            split, _, number = item.partition("=")
            if split not in SPLITS or not number.isdigit():
                print(f"error: --max-messages-for expects SPLIT=N with SPLIT in {list(SPLITS)}, got {item!r}",
                      file=sys.stderr)
                return 2
            by_split[split] = int(number)
        config = BuildConfig(locomo_path=args.locomo, out_dir=args.out_dir, splits=args.splits, kinds=args.kinds,
                             cases_per_kind=args.cases_per_kind, seed=args.seed, max_messages=args.max_messages,
                             max_messages_by_split=by_split, top_k=args.top_k, conversations=args.conversations)
        try:
            report = build_faultbench(config, progress=print)
        except (ValueError, FileNotFoundError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"{len(report.cases)} cases written to {args.out_dir}; dropped candidates: {report.dropped}")
        return 0
    from toolkits.faultbench._score import score_evidence_flow

    results = score_evidence_flow(args.data_dir, args.splits)
    if not results:
        print(f"error: no split folder under {args.data_dir!r}", file=sys.stderr)
        return 2
    print(f"{'split':<14}{'cases':>6}{'ETA':>8}{'OIA':>8}")
    for split, r in results.items():
        print(f"{split:<14}{r['total_cases']:>6}{r['eta']:>8.3f}{r['oia']:>8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
