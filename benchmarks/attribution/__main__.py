"""One CLI for the attribution benchmarks kept as data (``benchmarks/attribution/data/*.json``).

    python -m benchmarks.attribution list
    python -m benchmarks.attribution build d OUT [--splits mem0 rag] [--cases 1 2 3]
    python -m benchmarks.attribution score OUT RUN.json ...      # outputs of run_error_attribution.py
    python -m benchmarks.attribution score OUT --attribute RUNS  # run evidence_flow first, then score

``build`` runs every case through the real membase layers with its planned fault, keeps the
cases that counterfactual replay verifies (wrong with the fault, right without it) and writes
the MemTraceBench layout plus ``attribution_manifest.json`` (kept and dropped cases, with the
reason). ``score`` prints ETA/OIA per split and per fault kind and the misses table. A
benchmark is named by its data file's stem (``d``) or given as a path.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from membase.utils.argtypes import output_folder, positive_int
from membase.utils.flag_rules import IgnoredFlag, check_ignored_flags

__all__ = ["DATA_DIR", "main"]

DATA_DIR = Path(__file__).resolve().parent / "data"


def _data_path(name: str) -> Path:
    path = Path(name)
    return path if path.suffix == ".json" or path.exists() else DATA_DIR / f"{name}.json"


def _folder(text: str) -> Path:
    """argparse type: an output folder (a file in its place is a usage error)."""
    return Path(output_folder(text))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.attribution", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the benchmarks kept as data, with their case counts")
    build = commands.add_parser("build", help="build a benchmark's graphs through the real layers, verified")
    build.add_argument("benchmark", help="a data file's stem in benchmarks/attribution/data (e.g. d) or a path")
    build.add_argument("out", type=_folder, help="output folder (MemTraceBench layout + attribution_manifest.json)")
    build.add_argument("--splits", nargs="+", choices=("long_context", "rag", "mem0", "evermemos"),
                       help="only the cases of these memory systems (default: all)")
    build.add_argument("--cases", nargs="+", type=positive_int, help="only these case numbers (1-based, as in the data)")
    build.add_argument("--top-k", type=positive_int, default=10, help="memories retrieved per question (default: 10)")
    build.add_argument("--quiet", action="store_true", help="no line per case")
    build.add_argument("--locomo", type=Path, help="the LoCoMo file that conversations taken by reference read "
                       "(default: ../shared/data/locomo/locomo10.json beside the repository, or $MEMTRACE_SHARED_DIR)")
    score = commands.add_parser("score", help="ETA/OIA and the misses of attribution outputs on a build")
    score.add_argument("build", type=Path, help="a folder written by `build`")
    score.add_argument("outputs", nargs="*", type=Path, help="run_error_attribution.py output files")
    score.add_argument("--attribute", type=_folder, metavar="DIR",
                       help="first run evidence_flow on every split into DIR and score those outputs")
    score.add_argument("--annotated", action="store_true",
                       help="with --attribute: start from the annotated evidence (--starting-nodes-type source_evidence)")
    return parser


_IGNORED_FLAGS: tuple[IgnoredFlag, ...] = (
    IgnoredFlag(flags=("--annotated",), ignored_when=lambda args: args.command == "score" and args.attribute is None,
                mode="without --attribute", reason="it chooses the starting evidence of the evidence_flow run "
                "--attribute DIR makes; the given outputs are scored as they are"),
)
"""Flags that do nothing in the chosen mode (:mod:`membase.utils.flag_rules`)."""


def _list() -> int:
    from benchmarks.attribution.data import BenchmarkError, load_benchmark

    for path in sorted(DATA_DIR.glob("*.json")):
        try:
            bench = load_benchmark(path)
        except BenchmarkError as exc:  # e.g. a benchmark that reads LoCoMo on a machine without it
            print(f"{path.stem:<6}    - cases  not loadable here: {exc}")
            continue
        print(f"{bench.name:<6}{len(bench.cases):>5} cases  {bench.description}")
    return 0


def _check_selection(bench: Any, args: argparse.Namespace) -> None:
    """``--cases``/``--splits`` that select nothing, or name a case the benchmark lacks, are input errors."""
    numbers = {case.number for case in bench.cases}
    unknown = sorted(set(args.cases or ()) - numbers)
    if unknown:
        raise ValueError(f"--cases {' '.join(map(str, unknown))}: benchmark {bench.name} has cases "
                         f"{min(numbers, default=0)}..{max(numbers, default=0)}")
    if not any((args.splits is None or case.split in args.splits) and (args.cases is None or case.number in args.cases)
               for case in bench.cases):
        raise ValueError(f"--splits/--cases select no case of benchmark {bench.name}")


def _build(args: argparse.Namespace) -> int:
    from benchmarks.attribution.build import MANIFEST, build_benchmark
    from benchmarks.attribution.data import load_benchmark

    bench = load_benchmark(_data_path(args.benchmark), locomo=args.locomo)
    _check_selection(bench, args)
    report = build_benchmark(bench, args.out, splits=args.splits, numbers=args.cases, top_k=args.top_k,
                             progress=None if args.quiet else print)
    reasons: dict[str, int] = {}
    for drop in report.dropped:
        reason = drop["reason"].split(":")[0]
        reasons[reason] = reasons.get(reason, 0) + 1
    print(f"{len(report.cases)} cases written to {args.out}, {len(report.dropped)} dropped "
          f"({', '.join(f'{k} {v}' for k, v in sorted(reasons.items())) or 'none'}); see {args.out / MANIFEST}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from benchmarks.attribution.score import attribute, misses, score_outputs, table

    outputs = list(args.outputs)
    if args.attribute is not None:
        flags = ["--starting-nodes-type", "source_evidence"] if args.annotated else []
        outputs += attribute(args.build, args.attribute, flags)
    if not outputs:
        print("error: give attribution output files or --attribute DIR", file=sys.stderr)
        return 2
    scored = score_outputs(args.build, outputs)
    print("\n".join(table(scored, lambda c: c["split"])))
    print()
    print("\n".join(table(scored, lambda c: f"{c['split']} {c['origin'] or c['kind']}")))
    print()
    print("\n".join(misses(scored)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; 0 on success, 2 on bad input (one ``error:`` line)."""
    from benchmarks.attribution.data import BenchmarkError

    parser = _parser()
    args = parser.parse_args(argv)
    check_ignored_flags(parser, argv, args, _IGNORED_FLAGS)
    try:
        if args.command == "list":
            return _list()
        if args.command == "build":
            return _build(args)
        return _score(args)
    except (BenchmarkError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
