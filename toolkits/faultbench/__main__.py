"""CLI: ``python -m toolkits.faultbench {build,score} ...``."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from toolkits.faultbench._catalog import SPLITS
from toolkits.faultbench._faults import ERROR_KINDS

DEFAULT_LOCOMO = "../shared/data/locomo/locomo10.json"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m toolkits.faultbench",
        description="Build a fault-injection benchmark in the MemTraceBench layout, or score evidence_flow on "
                    "one (no API key, no GPU).")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="run the layers over a dataset (LoCoMo by default) with one injected fault "
                                         "per case")
    build.add_argument("out_dir", help="output folder (<out>/<split>/*.json)")
    build.add_argument("--locomo", "--dataset", dest="locomo", default=DEFAULT_LOCOMO,
                       help="dataset file: locomo10.json (default), a LongMemEval file or a RealMem persona file")
    build.add_argument("--dataset-type", default="auto", metavar="{auto,LoCoMo,LongMemEval,RealMem}",
                       help="format of the dataset file; auto (the default) tells it by its shape")
    build.add_argument("--splits", nargs="+", default=list(SPLITS), choices=list(SPLITS),
                       help="memory systems to build (default: all)")
    build.add_argument("--kinds", nargs="+", default=list(ERROR_KINDS), choices=list(ERROR_KINDS),
                       help="error kinds to build (each with every corruption its layer supports)")
    build.add_argument("--cases-per-kind", type=int, default=1,
                       help="cases per split and fault kind (<error kind>/<corruption>)")
    build.add_argument("--seed", type=int, default=0, help="seed of the case choice (default: %(default)s)")
    build.add_argument("--max-messages", type=int, default=40, help="messages kept per conversation")
    build.add_argument("--max-messages-for", action="append", default=[], metavar="SPLIT=N",
                       help="per-split message limit, e.g. mem0=30 (repeatable)")
    build.add_argument("--max-group", type=int, default=6, help="most cases sharing one graph")
    build.add_argument("--windows", type=int, default=2,
                       help="message windows taken from each conversation (its densest in target questions)")
    build.add_argument("--max-mb-for", action="append", default=[], metavar="SPLIT=MB",
                       help="size budget of a split: no graph is started when one more of its average size would "
                            "exceed it (repeatable)")
    build.add_argument("--top-k", type=int, default=10, help="memories retrieved per question (default: %(default)s)")
    build.add_argument("--conversations", type=int, nargs="+", default=None,
                       help="1-based trajectory numbers to draw from (LoCoMo samples; default: all)")
    score = sub.add_parser("score", help="attribute every case with evidence_flow; ETA/OIA per split and fault kind")
    score.add_argument("data_dir", help="a folder written by build (<split>/*.json)")
    score.add_argument("--splits", nargs="+", default=None, choices=list(SPLITS),
                       help="score only these splits (default: every split folder found)")
    score.add_argument("--evidence", choices=("annotated", "none"), default="annotated",
                       help="annotated evidence ids, or none (the golden answer finds the evidence)")
    score.add_argument("--misses", action="store_true", help="list every case evidence_flow gets wrong")
    return parser


def _table(title: str, rows: dict[str, dict]) -> None:
    print(f"{title:<28}{'cases':>6}{'ETA':>8}{'OIA':>8}")
    for name, r in rows.items():
        print(f"{name:<28}{r['cases']:>6}{r['eta']:>8.3f}{r['oia']:>8.3f}")


def _messages_by_split(items: list[str]) -> dict[str, int]:
    by_split = {}
    for item in items:
        split, _, number = item.partition("=")
        if split not in SPLITS or not number.isdigit():
            raise ValueError(f"--max-messages-for expects SPLIT=N with SPLIT in {list(SPLITS)}, got {item!r}")
        by_split[split] = int(number)
    return by_split


def _bytes_by_split(items: list[str]) -> dict[str, int]:
    budgets = {}
    for item in items:
        split, _, number = item.partition("=")
        try:
            megabytes = float(number)
        except ValueError:
            megabytes = -1.0
        if split not in SPLITS or megabytes <= 0:
            raise ValueError(f"--max-mb-for expects SPLIT=MB with SPLIT in {list(SPLITS)} and MB > 0, got {item!r}")
        budgets[split] = int(megabytes * 1_000_000)
    return budgets


def _check_build_numbers(args: argparse.Namespace) -> str | None:
    if (args.cases_per_kind < 1 or args.max_group < 1 or args.windows < 1 or args.top_k < 1
            or args.max_messages < 2):
        return ("--cases-per-kind, --max-group, --windows and --top-k must be at least 1, --max-messages at "
                "least 2")
    if args.conversations and min(args.conversations) < 1:
        return f"--conversations takes 1-based LoCoMo sample numbers, got {min(args.conversations)}"
    return None


def _build(args: argparse.Namespace) -> int:
    from toolkits.faultbench._build import BuildConfig, build_faultbench

    problem = _check_build_numbers(args)
    if problem is None:
        try:
            by_split = _messages_by_split(args.max_messages_for)
            budgets = _bytes_by_split(args.max_mb_for)
        except ValueError as exc:
            problem = str(exc)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    config = BuildConfig(locomo_path=args.locomo, dataset_type=args.dataset_type, out_dir=args.out_dir,
                         splits=args.splits, kinds=args.kinds,
                         cases_per_kind=args.cases_per_kind, seed=args.seed, max_messages=args.max_messages,
                         max_messages_by_split=by_split, max_group=args.max_group,
                         windows_per_conversation=args.windows, max_bytes_by_split=budgets, top_k=args.top_k,
                         conversations=args.conversations)
    try:
        report = build_faultbench(config, progress=print)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # the loader's DatasetError and friends: one line, no traceback
        if type(exc).__name__ in ("DatasetError", "ConfigError"):
            print(f"error: {exc}", file=sys.stderr)
            return 2
        raise
    print(f"{len(report.cases)} cases written to {args.out_dir}; dropped candidates: {report.dropped}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from toolkits.faultbench._score import score_evidence_flow

    try:
        result = score_evidence_flow(args.data_dir, args.splits, evidence=args.evidence)
    except (ValueError, OSError) as exc:  # a graph file that is not JSON, not UTF-8 or not a graph
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not result["splits"]:
        print(f"error: no split folder under {args.data_dir!r}", file=sys.stderr)
        return 2
    if not any(row["cases"] for row in result["splits"].values()):
        print(f"error: no case to score under {args.data_dir!r}: its graphs hold no annotated memory error "
              "(final_error_type and final_op_id)", file=sys.stderr)
        return 2
    _table("split", result["splits"])
    print()
    _table("fault kind", result["kinds"])
    if args.misses:
        print()
        for miss in result["misses"]:
            print(f"{miss['split']}/{miss['file']} {miss['kind']}: gold {miss['gold']} predicted "
                  f"{miss['predicted']} ({miss['status']}, confidence {miss['confidence']})")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    return _build(args) if args.command == "build" else _score(args)


if __name__ == "__main__":
    sys.exit(main())
