"""The ``eval_retrieval_performance.py`` command: its flags, and ``main(argv) -> int``.

Recall@k of pseudo source-evidence retrieval on a MemTraceBench split (spec §10); the scoring is
:func:`toolkits.retrieval_eval.evaluate_retrieval`. The script at the repository root and the
``memtrace-eval-retrieval`` console script run :func:`main`; tests call it in-process.

Exit codes: 0 done; 2 bad arguments or data, or an unreachable embedding endpoint.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

__all__ = ["build_parser", "cli", "main"]

SPLITS = MEMTRACEBENCH_SPLITS


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (reference flags plus ours)."""
    from toolkits._cli import add_retrieval_arguments, positive_int

    p = argparse.ArgumentParser(prog="eval_retrieval_performance.py", description="Recall@k of pseudo source-evidence retrieval on a MemTraceBench split (spec §10).")
    p.add_argument("dataset_dir", help="MemTraceBench folder holding <split>/*.json")
    p.add_argument("split", choices=SPLITS, help="benchmark split (the memory system)")
    p.add_argument("--k", type=positive_int, default=8, help="ranked messages compared with the evidence (default: 8)")
    add_retrieval_arguments(p)
    p.add_argument("--output-path", default=None, help="also write the recall table as JSON")
    return p


def _service_errors() -> tuple[type[BaseException], ...]:
    """Errors of the embedding clients: membase's own and the openai SDK's (when installed)."""
    errors: list[type[BaseException]] = []
    try:
        from membase.exceptions import MemBaseError

        errors.append(MemBaseError)
    except ImportError:  # pragma: no cover - membase ships with memtrace
        pass
    try:
        import openai

        errors.append(openai.OpenAIError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    from membase.utils.flag_rules import check_ignored_flags
    from toolkits._cli import retrieval_ignored_flags

    parser = build_parser()
    args = parser.parse_args(argv)
    check_ignored_flags(parser, argv, args, retrieval_ignored_flags())

    from toolkits._embeddings import make_embedder
    from toolkits.bench_utils import BenchmarkDataMissingError, load_memtracebench
    from toolkits.retrieval import OURS_SETTINGS, REFERENCE_SETTINGS, GraphRetrieverPool
    from toolkits.retrieval_eval import evaluate_retrieval, format_recall_lines

    problem = _path_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        graphs, cases = load_memtracebench(args.dataset_dir, args.split, filter_non_memory_errors=True)
    except (BenchmarkDataMissingError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not any(c.source_evidence_full_node_ids for c in cases):
        print(f"error: no case of split {args.split!r} has annotated source evidence", file=sys.stderr)
        return 2
    base = REFERENCE_SETTINGS if args.retrieval_algorithm == "reference" else OURS_SETTINGS
    settings = replace(base, candidate_multiplier=args.candidate_multiplier)

    def embedder_factory():  # noqa: ANN202 - local closure
        base_url, api_key = args.embedding_base_url, args.embedding_api_key
        if args.embedding_provider == "openai":  # the reference's fallback: the OpenAI environment
            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
            api_key = api_key or os.environ.get("OPENAI_API_KEY")
        return make_embedder(
            args.embedding_provider,
            model_name=args.embedding_model_name,
            base_url=base_url,
            api_key=api_key,
            dimensions=args.embedding_dimensions,
        )

    pool = GraphRetrieverPool(
        retrieval_type=args.retrieval_type,
        embedder_factory=embedder_factory,
        settings=settings,
        embedding_cache_dir=args.embedding_cache_dir,
        embedding_batch_size=args.embedding_batch_size,
    )
    try:
        scored = evaluate_retrieval(graphs, cases, pool, k=args.k, query_type=args.starting_point_query_type)
    except (ValueError, OSError, *_service_errors()) as exc:
        # e.g. the embedding endpoint is down or rejects the key: one line, not a traceback
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        pool.close()
    for line in format_recall_lines(scored["by_group"], args.k):
        print(line)
    if args.output_path:
        try:
            _write_output(args, scored)
        except OSError as exc:
            print(f"error: cannot write --output-path {args.output_path!r}: {exc.strerror or exc} "
                  "(the recall lines above are complete)", file=sys.stderr)
            return 2
    return 0


def _path_problem(args: argparse.Namespace) -> str | None:
    """A dataset path or output path that cannot work, found before any graph is read (None: fine)."""
    if os.path.exists(args.dataset_dir) and not os.path.isdir(args.dataset_dir):
        return f"dataset_dir {args.dataset_dir!r} is a file; pass the MemTraceBench folder holding <split>/*.json"
    if args.output_path:
        out = Path(args.output_path)
        if out.is_dir():
            return f"--output-path {args.output_path!r} is a folder; give a .json file path"
        parent = next((q for q in out.parents if q.exists()), None)
        if parent is not None and not parent.is_dir():
            return f"--output-path {args.output_path!r} cannot be created: {str(parent)!r} is a file, not a folder"
    return None


def _write_output(args: argparse.Namespace, scored: dict) -> None:
    from toolkits._case_cache import atomic_write_json

    atomic_write_json(
        args.output_path,
        {
            "split": args.split,
            "k": args.k,
            "retrieval_type": args.retrieval_type,
            "retrieval_algorithm": args.retrieval_algorithm,
            "starting_point_query_type": args.starting_point_query_type,
            "recall": scored["by_group"],
        },
    )


def cli() -> None:
    """Console-script entry point."""
    sys.exit(main())
