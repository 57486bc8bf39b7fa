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

from membase.utils.flag_rules import IgnoredFlag, check_ignored_flags
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


def _builtin(args: argparse.Namespace) -> str | None:
    """The built-in strategy of the run, or None for a registered one (which may read any flag)."""
    return args.exploration_strategy if args.exploration_strategy in STRATEGIES else None


def _runs_evidence_flow(args: argparse.Namespace) -> bool:
    return _builtin(args) == "evidence_flow" or (_builtin(args) == "graph_search" and args.evidence_flow_seed)


def _with_strategy(args: argparse.Namespace) -> str:
    return f"with --exploration-strategy {args.exploration_strategy}"


def _ignored_flags() -> tuple[IgnoredFlag, ...]:
    """Flags that do nothing in the chosen mode (:mod:`membase.utils.flag_rules`)."""
    from toolkits._cli import FAN_OUT_IGNORED_FLAGS, retrieval_ignored_flags

    def strategy_in(*names: str) -> Callable[[argparse.Namespace], bool]:
        return lambda args: _builtin(args) in names

    def retrieves(args: argparse.Namespace) -> bool:
        return args.provide_starting_nodes and args.starting_nodes_type == "pseudo_source_evidence"

    no_retrieval = ("without retrieved starting nodes (--no-provide-starting-nodes or --starting-nodes-type "
                    "source_evidence)")
    return (
        IgnoredFlag(flags=("--evidence-flow-seed",), ignored_when=strategy_in(*set(STRATEGIES) - {"graph_search"}),
                    mode=_with_strategy, reason="it seeds the graph_search agent"),
        IgnoredFlag(flags=("--obs-identities",), ignored_when=strategy_in(*set(STRATEGIES) - {"operation_block_search"}),
                    mode=_with_strategy, reason="it is for operation_block_search's flat log"),
        IgnoredFlag(flags=("--full-log-token-limit",), ignored_when=strategy_in(*set(STRATEGIES) - {"long_context"}),
                    mode=_with_strategy, reason="it is the long_context strategy's budget"),
        # warnings, not errors: settings every agent shares, which a loop over the strategies (or over the
        # starting-evidence modes) passes to each run, tests/runner/test_label_independence.py among them
        IgnoredFlag(flags=("--context-window", "--keep-recent"), ignored_when=strategy_in("long_context", "evidence_flow"),
                    mode=_with_strategy, reason="no agent memory is compressed", warn_only=True),
        IgnoredFlag(flags=("--temperature", "--stream", "--max-tokens", "--llama-cpp-compat", "--max-iters",
                           "--max-context-limit", "--use-system-prior", "--custom-prior"),
                    ignored_when=strategy_in("evidence_flow"), mode=_with_strategy, reason="no agent model runs",
                    warn_only=True),
        IgnoredFlag(flags=("--model-name",), ignored_when=lambda args: _builtin(args) == "evidence_flow" and (
                        args.evidence_flow_judge != "llm" or args.evidence_flow_judge_model is not None),
                    mode=lambda args: f"with --exploration-strategy evidence_flow and --evidence-flow-judge "
                    f"{args.evidence_flow_judge}" + (" --evidence-flow-judge-model" if args.evidence_flow_judge_model
                                                      else ""),
                    reason="no model of that name is called", warn_only=True),
        IgnoredFlag(flags=("--evidence-flow-judge", "--evidence-flow-judge-model", "--evidence-flow-triage"),
                    ignored_when=lambda args: _builtin(args) is not None and not _runs_evidence_flow(args),
                    mode=_with_strategy, reason="no evidence_flow trail is followed (it runs with evidence_flow, "
                    "or with graph_search --evidence-flow-seed)"),
        IgnoredFlag(flags=("--evidence-flow-judge-model",),
                    ignored_when=lambda args: _runs_evidence_flow(args) and args.evidence_flow_judge != "llm",
                    mode=lambda args: f"with --evidence-flow-judge {args.evidence_flow_judge}",
                    reason="only the llm judge calls a model"),
        IgnoredFlag(flags=("--starting-nodes-type",), ignored_when=lambda args: not args.provide_starting_nodes,
                    mode="with --no-provide-starting-nodes", reason="no starting node is handed over"),
        IgnoredFlag(flags=("--num-starting-points",), ignored_when=lambda args: not retrieves(args), mode=no_retrieval,
                    reason="no evidence is retrieved", warn_only=True),
        *retrieval_ignored_flags(retrieves, no_retrieval, warn_without_retrieval=True),
        IgnoredFlag(flags=("--seed",), ignored_when=lambda args: args.sample_size is None,
                    mode="without --sample-size", reason="every graph is attributed, none is drawn"),
        *FAN_OUT_IGNORED_FLAGS,
        IgnoredFlag(flags=("--replay-answer-model", "--replay-offline"), ignored_when=lambda args: args.verify != "replay",
                    mode="without --verify replay", reason="nothing is replayed"),
        IgnoredFlag(flags=("--replay-max-candidates",), ignored_when=lambda args: args.replay_search != "earliest",
                    mode="without --replay-search earliest", reason="it bounds the search's repairs"),
        # a warning: the replay tests and docs/replay.md keep the strategy flag beside --from
        IgnoredFlag(flags=("--exploration-strategy", "--model-name", "--sample-size", "--provide-starting-nodes",
                           "--starting-nodes-type", "--evidence-flow-judge", "--use-system-prior", "--custom-prior"),
                    ignored_when=lambda args: args.from_output is not None, mode="with --from",
                    reason="the given output's records are verified as they are; nothing is attributed again",
                    warn_only=True),
    )


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
    check_ignored_flags(parser, argv, args, _ignored_flags())
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
