"""The ``run_optimization.py`` command: its flags, and ``main(argv) -> int``.

Attribution-guided prompt optimization of a memory system on LoCoMo (spec-attribution §7.3): one
round per sampled conversation, then the held-out evaluation. What a run does is in
:func:`toolkits.optimization.cli.run_from_args` (and, per flag, the cost estimate, the seed loop
and the parameter objective). The script at the repository root and the ``memtrace-optimize``
console script run :func:`main`; tests and benchmarks call it in-process with scripted models.

Exit codes: 0 done; 2 bad arguments, config, dataset or an unreachable endpoint (one line on
stderr, before any round starts); 130 interrupted (complete rounds are kept; rerun to resume).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from membase.utils.flag_rules import IgnoredFlag, check_ignored_flags

__all__ = ["build_parser", "cli", "main"]


def _positive_int(text: str) -> int:
    from toolkits._cli import positive_int

    return positive_int(text)


def _positive_float(text: str) -> float:
    from toolkits._cli import positive_float

    return positive_float(text)


def _non_negative_float(text: str) -> float:
    from toolkits._cli import non_negative_float

    return non_negative_float(text)


def _output_folder(text: str) -> str:
    from membase.utils.argtypes import output_folder

    return output_folder(text)


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: the reference's flags and defaults (spec §7.3) plus ours."""
    p = argparse.ArgumentParser(
        prog="run_optimization.py",
        description="Optimize a memory system's prompts from error attributions, one LoCoMo conversation per round.",
    )
    ref = p.add_argument_group("reference flags")
    ref.add_argument("--config-path", required=True,
                     help="initial layer config (JSON: a `python -m membase` layer config; no layer_type = Mem0)")
    ref.add_argument("--dataset-path", required=True, help="raw LoCoMo file (locomo10.json)")
    ref.add_argument("--optimization-dir", default="auto_optimization", help="output folder (default: %(default)s)")
    ref.add_argument("--seed", type=int, default=42, help="seed of the conversation sample and feedback shuffles")
    ref.add_argument("--sample-size", type=_positive_int, default=3,
                     help="conversations sampled for training = number of rounds (default: %(default)s)")
    ref.add_argument("--top-k", type=_positive_int, default=10, help="memories retrieved per question")
    ref.add_argument("--api-config-path", default=None,
                     help='JSON {"api_keys": [...], "base_urls": [...]} (default: OPENAI_BASE_URL / OPENAI_API_KEY)')
    ref.add_argument("--qa-model", default="gpt-4.1-mini", help="answering model, fake:<fixed reply> or py:<module>:<factory>")
    ref.add_argument("--judge-model", default="gpt-4.1-mini", help="judge model, fake:<fixed reply> or py:<module>:<factory>")
    ref.add_argument("--attribution-model", default="gpt-4.1", help="model of the attribution agent")
    ref.add_argument("--disable-memtrace", action="store_true",
                     help="ablation: no attribution; every failure goes to every target as a ResponseError")
    ref.add_argument("--optimizer-model", default="gpt-4.1",
                     help="optimizer model, or fake:<reply> (a JSON object valid for every stage, or plain text)")
    ref.add_argument("--qa-batch-size", type=_positive_int, default=4, help="questions answered at the same time")
    ref.add_argument("--judge-batch-size", type=_positive_int, default=4, help="answers judged at the same time")
    ref.add_argument("--attribution-batch-size", type=_positive_int, default=4, help="cases attributed at the same time")
    ref.add_argument("--optimization-batch-size", type=_positive_int, default=4, help="concurrent optimizer calls")
    ref.add_argument("--num-gradient-histories", type=_non_negative_int, default=1,
                     help="past (value, feedback) pairs shown to the optimizer per target")
    ref.add_argument("--batch-size-for-summarization", type=_positive_int, default=4,
                     help="feedbacks merged per aggregation call")
    ref.add_argument("--max-trace-nodes", type=_positive_int, default=16,
                     help="most nodes the graph attribution agent keeps on its frontier")
    ref.add_argument("--max-iters", type=_positive_int, default=200, help="attribution agent iterations per case")
    ref.add_argument("--context-window", type=_positive_int, default=272000,
                     help="tokens after which the attribution agent's memory is compressed")
    ref.add_argument("--rerun", action="store_true",
                     help="start over: ignore complete rounds and re-sample the conversations")

    ours = p.add_argument_group("beyond the reference")
    ours.add_argument("--attribution-strategy", default="graph_search",
                      help="graph_search (default, the paper), operation_block_search, long_context, or "
                      "evidence_flow (no attribution LLM)")
    ours.add_argument("--targets", default=None,
                      help="qa (the answer prompt only), memory (every other prompt and the layer's parameters, e.g. "
                      "top_k), all (answer_context_budget only when --config-path sets it), or a comma list of targets (bundle fields or graph variable names); default: all "
                      "prompt targets of the layer, as in the paper")
    ours.add_argument("--parameter-trials", type=_positive_int, default=4,
                      help="Optuna trials per round for parameter targets (each reruns the round's conversation; "
                      "default: %(default)s)")
    ours.add_argument("--initial-prompts", default=None,
                      help="JSON file {target field or variable: text} overriding the config's starting prompts")
    ours.add_argument("--eval-trajectories", default="unsampled",
                      help="held-out conversations for final_evaluation.json: 'unsampled' (default: every LoCoMo "
                      "conversation not sampled for training), 'none', or 0-based indexes like 3,4,5")
    ours.add_argument("--validation-gate", action="store_true",
                      help="gate each target's update on its own: keep it only if it raises llm_judge on the "
                      "validation conversations by at least --min-improvement (a tie is rejected)")
    ours.add_argument("--validation-trajectories", default=None,
                      help="0-based conversation indexes of the gate, at least two (default: the first two "
                      "unsampled ones, which the default evaluation set then leaves out)")
    ours.add_argument("--min-improvement", type=float, default=0.0,
                      help="smallest llm_judge gain (0-1 scale) the gate accepts; ties never pass (default: %(default)s)")
    ours.add_argument("--optimizer", choices=("textgrad", "gepa"), default="textgrad",
                      help="textgrad (default): the paper's three-stage optimizer, one round per training conversation; "
                      "gepa: GEPA's Pareto pool, minibatch acceptance and merge over the configuration, with "
                      "MemTrace attributions as its reflective dataset")
    ours.add_argument("--gepa-max-metric-calls", type=_positive_int, default=None,
                      help="GEPA's budget in conversation evaluations (default: 4 x --sample-size)")
    ours.add_argument("--estimate-cost", action="store_true",
                      help="do not call any model: dry-run the planned command with counting fakes (offline layer) "
                      "and write <dir>/cost_estimate.json with the calls and tiktoken-counted tokens per model")
    ours.add_argument("--seeds", default=None,
                      help="comma list of seeds: run the whole optimization once per seed into <dir>/seed_<s>/ and "
                      "write <dir>/seeds_summary.json (mean and sd of before, after and difference)")
    ours.add_argument("--workers", type=_positive_int, default=1,
                      help="conversations built, searched and answered at the same time in worker processes, in "
                      "every run of several conversations (final evaluation, validation gate, GEPA minibatches); "
                      "outputs are the same as with 1 (default: %(default)s; see docs/optimization.md)")
    ours.add_argument("--max-sessions", type=_positive_int, default=None,
                      help="cut every conversation to its first N sessions (questions whose evidence lies later are "
                      "dropped); for cheap runs")
    ours.add_argument("--max-questions", type=_positive_int, default=None,
                      help="keep at most N questions per conversation (after --max-sessions)")
    ours.add_argument("--metrics", default="f1,bleu,llm_judge", help="evaluation metrics (comma list)")
    ours.add_argument("--temperature", type=_non_negative_float, default=1.0, help="temperature of the attribution and optimizer models")
    ours.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True,
                      help="stream the attribution and optimizer model replies")
    ours.add_argument("--optimizer-max-retries", type=_non_negative_int, default=2,
                      help="retries of a failing optimizer call (exponential backoff)")
    ours.add_argument("--retry-backoff", type=_non_negative_float, default=2.0, help="first retry delay in seconds (doubles)")
    ours.add_argument("--contract-retries", type=_non_negative_int, default=2,
                      help="new update attempts after a proposal breaks its prompt contract")
    ours.add_argument("--call-timeout", type=_positive_float, default=600.0, help="seconds allowed per optimizer call")
    ours.add_argument("--optimizer-max-iters", type=_positive_int, default=3,
                      help="reasoning steps per optimizer call before the structured answer is forced")
    ours.add_argument("--max-tokens", type=_positive_int, default=None,
                      help="output-token cap per attribution/optimizer call")
    ours.add_argument("--llama-cpp-compat", action="store_true", help="workarounds for a llama.cpp server endpoint")
    ours.add_argument("--model-timeout", type=_positive_float, default=120.0, help="seconds per QA/judge request")
    ours.add_argument("--model-max-retries", type=_non_negative_int, default=3,
                      help="retries of a failing QA/judge request (exponential backoff)")
    ours.add_argument("--qa-max-tokens", type=_positive_int, default=256, help="output-token cap of an answer")
    ours.add_argument("--judge-max-tokens", type=_positive_int, default=64, help="output-token cap of a verdict")
    ours.add_argument("--cache-dir", type=_output_folder, default=None,
                      help="replay identical QA/judge calls from this folder")
    ours.add_argument("--bootstrap-samples", type=_non_negative_int, default=1000,
                      help="resamples of the before/after difference's 95%% interval (0: none)")
    ours.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="progress bars")
    from toolkits.optimization.param_cli import add_arguments

    add_arguments(p, _positive_int)
    return p


_PARAMETER_LOOP_FLAGS = ("--context-budget", "--rounds", "--trials-per-round", "--search", "--train-trajectories",
                         "--upstream-hops", "--max-attributed-cases", "--search-cache-dir")
# the prompt loop's flags that the parameter loop never reads (--targets, --optimizer, --validation-gate and
# --initial-prompts are refused by toolkits.optimization.param_cli with their own message)
_PROMPT_LOOP_FLAGS = ("--qa-model", "--judge-model", "--attribution-model", "--disable-memtrace", "--optimizer-model",
                      "--qa-batch-size", "--judge-batch-size", "--attribution-batch-size", "--optimization-batch-size",
                      "--num-gradient-histories", "--batch-size-for-summarization", "--max-trace-nodes", "--max-iters",
                      "--context-window", "--api-config-path", "--attribution-strategy", "--parameter-trials",
                      "--validation-trajectories", "--min-improvement", "--gepa-max-metric-calls", "--metrics",
                      "--temperature", "--stream", "--optimizer-max-retries", "--retry-backoff", "--contract-retries",
                      "--call-timeout", "--optimizer-max-iters", "--max-tokens", "--llama-cpp-compat", "--model-timeout",
                      "--model-max-retries", "--qa-max-tokens", "--judge-max-tokens", "--cache-dir", "--workers")
_AGENT_FLAGS = ("--attribution-model", "--max-trace-nodes", "--max-iters", "--context-window")


def _judge(args: argparse.Namespace) -> bool:
    return args.objective == "judge"


_IGNORED_FLAGS: tuple[IgnoredFlag, ...] = (
    IgnoredFlag(flags=_PARAMETER_LOOP_FLAGS, ignored_when=_judge, mode="with --objective judge (the default)",
                reason="the parameter loop (--objective context_recall) reads them"),
    IgnoredFlag(flags=_PROMPT_LOOP_FLAGS, ignored_when=lambda args: not _judge(args), mode="with --objective context_recall",
                reason="the parameter loop calls no model and scores context recall"),
    IgnoredFlag(flags=("--sample-size",), ignored_when=lambda args: not _judge(args) and args.train_trajectories is not None,
                mode="with --train-trajectories", reason="the training conversations are named, none is drawn"),
    # a warning: the ablation is the same command plus --disable-memtrace (tests/optimization/test_unset_answer_budget.py)
    IgnoredFlag(flags=(*_AGENT_FLAGS, "--attribution-strategy", "--attribution-batch-size"),
                ignored_when=lambda args: _judge(args) and args.disable_memtrace, mode="with --disable-memtrace",
                reason="nothing is attributed", warn_only=True),
    # --max-trace-nodes still sizes evidence_flow's retrieved starting evidence (half of it)
    IgnoredFlag(flags=("--attribution-model", "--max-iters", "--context-window"),
                ignored_when=lambda args: _judge(args) and args.attribution_strategy == "evidence_flow",
                mode="with --attribution-strategy evidence_flow", reason="no attribution agent runs"),
    IgnoredFlag(flags=("--validation-trajectories", "--min-improvement"),
                ignored_when=lambda args: _judge(args) and not args.validation_gate, mode="without --validation-gate",
                reason="no update is gated"),
    IgnoredFlag(flags=("--gepa-max-metric-calls",), ignored_when=lambda args: _judge(args) and args.optimizer != "gepa",
                mode=lambda args: f"with --optimizer {args.optimizer}", reason="it is GEPA's budget"),
    IgnoredFlag(flags=("--seeds",), ignored_when=lambda args: args.estimate_cost, mode="with --estimate-cost",
                reason="the estimate is of one run; multiply it by the number of seeds"),
    IgnoredFlag(flags=("--seed",), ignored_when=lambda args: args.seeds is not None and not args.estimate_cost,
                mode="with --seeds", reason="each run takes its seed from the list"),
)
"""Flags that do nothing in the chosen mode (:mod:`membase.utils.flag_rules`)."""


def main(
    argv: Sequence[str] | None = None,
    *,
    attribution_model_factory: Callable[[Any], Any] | None = None,
    optimizer_model_factory: Callable[[int], Any] | None = None,
) -> int:
    """Run the CLI.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).
        attribution_model_factory: Builds each attribution case's chat model (tests pass scripted
            models); default: an OpenAI-compatible model on the case's credential slot.
        optimizer_model_factory: ``fn(call_index) -> agentscope chat model`` for the optimizer
            (tests); default: ``--optimizer-model`` (a fake or an OpenAI-compatible model).

    Returns:
        The exit code.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    check_ignored_flags(parser, argv, args, _IGNORED_FLAGS)

    def run_one(one: argparse.Namespace, **factories: Any) -> int:
        if one.objective == "context_recall":
            from toolkits.optimization.param_cli import run_context_recall

            return run_context_recall(one)
        from toolkits.optimization.cli import run_from_args

        factories.setdefault("optimizer_model_factory", optimizer_model_factory)
        return run_from_args(parser, one, attribution_model_factory=attribution_model_factory, **factories)

    if args.estimate_cost:
        if args.objective == "context_recall":
            print("error: --estimate-cost counts model calls; --objective context_recall makes none", file=sys.stderr)
            return 2
        from toolkits.optimization.cost_estimate import estimate_cost

        args.workers = 1  # the counting fakes count the calls made in this process
        return estimate_cost(args, run_one)
    if args.seeds is not None:  # an empty list is an error of run_over_seeds, not a run without seeds
        from toolkits.optimization.seeds import run_over_seeds

        return run_over_seeds(args, run_one)
    return run_one(args)


def cli() -> None:
    """Console-script entry point (warnings print as one line each)."""
    from toolkits._console import run_console

    run_console(main)

