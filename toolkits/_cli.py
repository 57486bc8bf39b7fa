"""Argument groups shared by the evaluation CLIs (retrieval and embedding flags)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from membase.utils.argtypes import (
    non_negative_float,
    non_negative_int,
    output_folder,
    positive_float,
    positive_int,
)
from membase.utils.flag_rules import IgnoredFlag
from toolkits.retrieval import QUERY_TYPES, RETRIEVAL_TYPES

__all__ = [
    "FAN_OUT_IGNORED_FLAGS",
    "add_fan_out_arguments",
    "add_retrieval_arguments",
    "fan_out_plan",
    "retrieval_ignored_flags",
    "non_negative_float",
    "non_negative_int",
    "positive_float",
    "positive_int",
]


def add_retrieval_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the reference's retrieval/embedding flags plus ours (provider, cache, algorithm)."""
    group = parser.add_argument_group("evidence retrieval")
    group.add_argument("--retrieval-type", choices=RETRIEVAL_TYPES, default="hybrid",
                       help="sparse: BM25; dense: embeddings; hybrid: both fused by reciprocal rank (default)")
    group.add_argument("--starting-point-query-type", choices=QUERY_TYPES, default="query_with_golden_answer",
                       help="the retrieval query: the question with the golden answer (default), alone, or with the "
                       "wrong prediction")
    group.add_argument("--candidate-multiplier", type=positive_int, default=2,
                       help="hybrid: each retriever returns this many times the wanted hits before fusion (default: 2)")
    group.add_argument(
        "--retrieval-algorithm",
        choices=("ours", "reference"),
        default="ours",
        help="ours: Unicode tokenizer with stemming, message content as text, zero-score BM25 hits dropped; "
        "reference: ASCII [a-z0-9_]+ BM25 over the raw JSON value (default: ours)",
    )
    group.add_argument(
        "--embedding-provider",
        choices=("auto", "local", "openai", "hashing"),
        default="auto",
        help="auto: the OpenAI-compatible endpoint when --embedding-base-url is given, else local MiniLM; "
        "hashing: deterministic fake for smoke tests",
    )
    group.add_argument(
        "--embedding-model-name",
        default=None,
        help="embedding model (default: all-MiniLM-L6-v2 locally, text-embedding-3-small on an endpoint)",
    )
    group.add_argument(
        "--embedding-dimensions",
        type=positive_int,
        default=None,
        help="requested embedding dimension on an endpoint, e.g. 2560 for Qwen3-Embedding-4B (default: native)",
    )
    group.add_argument("--embedding-base-url", default=None,
                       help="OpenAI-compatible embedding endpoint, e.g. http://localhost:8008/v1")
    group.add_argument("--embedding-api-key", default=None, help="key of --embedding-base-url")
    group.add_argument("--embedding-batch-size", type=positive_int, default=16, help="texts per embedding request")
    group.add_argument(
        "--embedding-cache-dir", type=output_folder, default=None,
        help="persistent embedding cache (default: memory only, or <cache-dir>/embeddings)",
    )


_EMBEDDING_FLAGS = ("--embedding-provider", "--embedding-model-name", "--embedding-dimensions", "--embedding-base-url",
                    "--embedding-api-key", "--embedding-batch-size", "--embedding-cache-dir")
_RETRIEVAL_FLAGS = ("--retrieval-type", "--starting-point-query-type", "--candidate-multiplier", "--retrieval-algorithm",
                    *_EMBEDDING_FLAGS)


def retrieval_ignored_flags(retrieves: Callable[[argparse.Namespace], bool] | None = None, no_retrieval: str = "", *,
                            warn_without_retrieval: bool = False) -> tuple[IgnoredFlag, ...]:
    """Rules for the flags of :func:`add_retrieval_arguments` (see :mod:`membase.utils.flag_rules`).

    Args:
        retrieves: Whether the parsed arguments retrieve evidence at all (None: always).
        no_retrieval: The mode in which nothing is retrieved, as the message names it.
        warn_without_retrieval: Only warn about retrieval flags given where nothing is retrieved.
    """
    def always(_args: argparse.Namespace) -> bool:
        return True

    does = retrieves or always
    rules = (
        IgnoredFlag(flags=_EMBEDDING_FLAGS, ignored_when=lambda args: does(args) and args.retrieval_type == "sparse",
                    mode="with --retrieval-type sparse", reason="BM25 embeds nothing"),
        IgnoredFlag(flags=("--candidate-multiplier",), ignored_when=lambda args: does(args) and args.retrieval_type != "hybrid",
                    mode=lambda args: f"with --retrieval-type {args.retrieval_type}", reason="it sizes hybrid's fusion"),
    )
    if retrieves is None:
        return rules
    return (IgnoredFlag(flags=_RETRIEVAL_FLAGS, ignored_when=lambda args: not retrieves(args), mode=no_retrieval,
                        reason="no evidence is retrieved", warn_only=warn_without_retrieval), *rules)


FAN_OUT_IGNORED_FLAGS: tuple[IgnoredFlag, ...] = (
    IgnoredFlag(flags=("--ray-address",), ignored_when=lambda args: args.executor != "ray",
                mode="without --executor ray", reason="the cases run on this machine"),
)
"""Rules for the flags of :func:`add_fan_out_arguments`."""


def add_fan_out_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--workers``, ``--executor`` and ``--ray-address`` (cases spread over processes or Ray)."""
    group = parser.add_argument_group("fan-out (docs/fanout.md)")
    group.add_argument(
        "--workers", type=positive_int, default=None,
        help="tasks of --batch-size cases run at the same time in worker processes (default: all cases in this "
        "process); with --executor ray, Ray tasks in flight (default: the cluster's CPUs)",
    )
    group.add_argument("--executor", choices=("local", "ray"), default="local",
                       help="local: this machine; ray: a Ray cluster (pip install 'memtrace-llm[ray]')")
    group.add_argument("--ray-address", default=None,
                       help="Ray cluster to join (auto, ray://host:10001); default: start a local Ray instance")


def fan_out_plan(args: argparse.Namespace):  # noqa: ANN201 - FanOut, imported lazily
    """The :class:`membase.runners._executors.FanOut` of the parsed fan-out flags.

    Raises:
        ValueError: For ``--executor ray`` when Ray is not installed (the message says how to install it).
    """
    import importlib.util

    from membase.runners._executors import FanOut, ray_missing_message

    if args.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise ValueError(ray_missing_message())
    return FanOut(workers=args.workers, executor=args.executor, ray_address=args.ray_address)
