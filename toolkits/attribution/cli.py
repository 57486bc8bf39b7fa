"""The ``run_error_attribution.py`` command: its flags, and ``main(argv) -> int``.

The script at the repository root and the ``memtrace-attribute`` console script both run
:func:`main`; tests and benchmarks call it in-process (``model_factory`` scripts the models).
What a run does lives in :mod:`toolkits.attribution.session`; the output it writes in
:mod:`toolkits.attribution.output`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from toolkits.attribution.inputs import AttributionInputError
from toolkits.attribution.session import EXIT_INTERRUPTED, EXIT_USAGE, run_attribution
from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

__all__ = ["STRATEGIES", "build_parser", "cli", "main"]

SPLITS = MEMTRACEBENCH_SPLITS
STRATEGIES = ("graph_search", "operation_block_search", "long_context", "evidence_flow")
"""The built-in strategies (more can be registered, see :mod:`toolkits.strategies`)."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (reference flags of spec §6.1 plus new ones)."""
    from toolkits._cli import (
        add_fan_out_arguments,
        add_retrieval_arguments,
        non_negative_float,
        non_negative_int,
        positive_float,
        positive_int,
    )

    p = argparse.ArgumentParser(
        prog="run_error_attribution.py",
        description="Attribute failed questions (a MemTraceBench split, or a `python -m membase` run folder) "
        "to their earliest decisive faulty operation.",
    )
    p.add_argument(
        "dataset_dir",
        help="MemTraceBench folder holding <split>/*.json, or a run folder of `python -m membase` "
        "(holding traced_data/<user>/graph_evaluation.json)",
    )
    p.add_argument(
        "split",
        nargs="?",
        choices=SPLITS,
        default=None,
        help="benchmark split (required for a MemTraceBench folder; for a run folder it defaults to the layer's "
        "and only selects the system prior)",
    )
    p.add_argument("--output-path", required=True, help="output JSON file (must end in .json)")
    p.add_argument("--sample-size", type=positive_int, default=None, help="number of graphs to sample (default: all)")
    p.add_argument("--seed", type=int, default=42, help="seed of the --sample-size draw (default: %(default)s)")
    p.add_argument("--batch-size", type=positive_int, default=4, help="cases attributed concurrently")
    p.add_argument("--provide-starting-nodes", action=argparse.BooleanOptionalAction, default=True,
                   help="hand the agent evidence nodes to start tracing from (default: on)")
    p.add_argument(
        "--starting-nodes-type", choices=("pseudo_source_evidence", "source_evidence"), default="pseudo_source_evidence",
        help="pseudo_source_evidence: messages retrieved for the question (default); source_evidence: the annotated "
        "evidence messages",
    )
    p.add_argument("--use-system-prior", action=argparse.BooleanOptionalAction, default=False,
                   help="add the memory system's built-in description to the agent's prompt (default: off)")
    p.add_argument(
        "--custom-prior", default=None, help="prior knowledge replacing the built-in one (text, or a path to a text file)"
    )
    p.add_argument("--exploration-strategy", default="graph_search", help=f"one of {', '.join(STRATEGIES)} or a registered name")
    p.add_argument("--model-name", default="gpt-4.1-mini", help="chat model of the attribution agent (default: %(default)s)")
    p.add_argument("--temperature", type=non_negative_float, default=1.0, help="sampling temperature (default: %(default)s)")
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True,
                   help="stream the model's replies (default: on)")
    p.add_argument("--max-tokens", type=positive_int, default=None, help="output-token cap per model call")
    p.add_argument("--llama-cpp-compat", action="store_true", help="workarounds for a llama.cpp server endpoint")
    p.add_argument("--max-trace-nodes", type=positive_int, default=16,
                   help="most nodes the graph agent keeps on its frontier (default: %(default)s)")
    p.add_argument("--max-iters", type=positive_int, default=200, help="agent steps per case (default: %(default)s)")
    p.add_argument("--context-window", type=positive_int, default=272000,
                   help="tokens of conversation after which the agent's memory is compressed (default: %(default)s)")
    p.add_argument("--max-context-limit", type=positive_int, default=1000000,
                   help="hard cap in tokens on what compression keeps (graph agent; default: %(default)s)")
    p.add_argument("--keep-recent", type=non_negative_int, default=3,
                   help="latest message groups kept uncompressed (default: %(default)s)")
    p.add_argument("--full-log-token-limit", type=positive_int, default=600000,
                   help="token budget of the whole trace shown by the long_context strategy (default: %(default)s)")
    add_retrieval_arguments(p)
    p.add_argument(
        "--num-starting-points", type=non_negative_int, default=None, help="retrieved evidence nodes (default: max_trace_nodes // 2)"
    )
    p.add_argument(
        "--obs-identities",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="operation_block_search only, ours (not the paper's ablation): show variable ids in the flat log and "
        "each starting evidence's id and the operations touching it in the hint (default: content and time only)",
    )
    p.add_argument("--studio-url", default=None, help="accepted for compatibility; Studio forwarding is not implemented")
    p.add_argument("--project", default="memtrace", help="project name recorded with the run (default: %(default)s)")
    p.add_argument("--api-config-path", default=None, help='JSON {"api_keys": [...], "base_urls": [...]}')
    p.add_argument("--cache-dir", default=None, help="per-case result cache; any run with the same settings reuses finished cases")
    p.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="reuse the finished cases that an interrupted run left in <output>.journal.jsonl (default: on)",
    )
    p.add_argument("--max-retries", type=non_negative_int, default=3, help="retries of a case after a transient API failure")
    p.add_argument("--retry-backoff", type=non_negative_float, default=2.0, help="first retry delay in seconds (doubles)")
    p.add_argument("--case-timeout", type=positive_float, default=None, help="seconds allowed per attempt of one case")
    p.add_argument(
        "--evidence-flow-seed",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="graph_search: start from the no-LLM evidence_flow trail and pass its suspicion as a hint to verify",
    )
    p.add_argument(
        "--evidence-flow-judge",
        choices=("rules", "embedding", "llm"),
        default="rules",
        help="evidence_flow: who decides whether a text still states the fact: word rules (default, no model), "
        "rules with MiniLM's second opinion on paraphrase (the `local` extra), or a chat model on the run's "
        "credentials answering yes/no/contradicts per visited text (--evidence-flow-judge-model)",
    )
    p.add_argument(
        "--evidence-flow-judge-model", default=None, help="chat model of the llm judge (default: --model-name)"
    )
    p.add_argument(
        "--evidence-flow-triage",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="evidence_flow: report failures that are no memory error as such (a prediction stating the golden "
        "answer: LLMAsAJudgeError; a golden answer no message supports: AnnotationError) instead of blaming an op",
    )
    p.add_argument(
        "--bootstrap-samples", type=non_negative_int, default=1000, help="resamples for 95%% intervals (0: none)"
    )
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="show a progress bar")
    add_fan_out_arguments(p)
    from toolkits.replay_verify import add_replay_arguments

    add_replay_arguments(p)
    return p


def _strategy_conflict(args: argparse.Namespace) -> str | None:
    """A flag of one built-in strategy given with another, where it would do nothing (None: no conflict)."""
    strategy = args.exploration_strategy
    if strategy not in STRATEGIES:  # a registered strategy may read any flag
        return None
    if args.evidence_flow_seed and strategy != "graph_search":
        return f"--evidence-flow-seed seeds the graph_search agent; it does nothing with --exploration-strategy {strategy}"
    if args.obs_identities and strategy != "operation_block_search":
        return f"--obs-identities is for operation_block_search; it does nothing with --exploration-strategy {strategy}"
    return None


def main(argv: Sequence[str] | None = None, *, model_factory: Callable[[Any], Any] | None = None) -> int:
    """Run the command.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).
        model_factory: Builds each case's chat model (tests pass scripted models); default: an
            OpenAI-compatible model from the credential pool.

    Returns:
        The exit code: 0 output written; 1 the output could not be written (the finished cases
        are in the journal); 2 bad arguments, data, or an unwritable output/cache folder; 130
        interrupted.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.output_path.endswith(".json"):
        parser.error(f"--output-path must end in .json, got {args.output_path!r}")
    conflict = _strategy_conflict(args)
    if conflict:
        parser.error(conflict)
    if args.api_config_path is not None and not os.path.isfile(args.api_config_path):
        # checked for every strategy: evidence_flow needs no key, but a named file that is missing is a mistake
        what = "is a folder, not a JSON file" if os.path.isdir(args.api_config_path) else "no such file"
        parser.error(f"--api-config-path {args.api_config_path!r}: {what}")
    try:
        return run_attribution(parser, args, model_factory)
    except AttributionInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # before the first case (loading graphs, probing folders): nothing to keep
        print("interrupted before any case was attributed; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED


def cli() -> None:
    """Console-script entry point (warnings print as one line each)."""
    from toolkits._console import run_console

    run_console(main)
