"""``run_optimization.py --objective context_recall``: the parameter loop from the command line.

Checks everything before the first round (config, layer type, dataset, conversation indexes,
Optuna), then runs ``--rounds`` rounds of :class:`~toolkits.optimization.param_loop.ParameterRoundStep`
on the training conversations and writes ``final_evaluation.json`` (held-out context recall
before/after). Exit codes: 0 done, 2 bad input (one ``error:`` line), 1 a round failed, 130
interrupted (complete rounds and the current round's trials are kept; rerun to resume).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from membase.utils.argtypes import non_negative_int, output_folder
from smartcomment.runtime.errors import MemTraceError

__all__ = ["add_arguments", "run_context_recall"]


def add_arguments(parser: argparse.ArgumentParser, positive_int: Any) -> None:
    """The parameter loop's flags (``--objective`` and the ``context_recall`` settings)."""
    group = parser.add_argument_group("parameter loop (--objective context_recall; no LLM)")
    group.add_argument("--objective", choices=("judge", "context_recall"), default="judge",
                       help="judge (default): optimize prompts against the LLM judge; context_recall: search the "
                       "layer's tunable parameters for context recall at a token budget (NaiveRAG, Long-Context)")
    group.add_argument("--context-budget", type=positive_int, default=1000,
                       help="tokens of context handed to the answering step (default: %(default)s)")
    group.add_argument("--rounds", type=positive_int, default=2, help="parameter rounds (default: %(default)s)")
    group.add_argument("--trials-per-round", type=positive_int, default=14,
                       help="search trials per round; each round also scores the incumbent once (default: %(default)s)")
    group.add_argument("--search", choices=("guided", "unguided"), default="guided",
                       help="guided: only the parameters of operations evidence_flow attributes misses to; "
                       "unguided: every parameter of the layer (the ablation)")
    group.add_argument("--train-trajectories", default=None,
                       help="0-based training conversations, e.g. 0,1,2,3,4 (default: --sample-size drawn with --seed)")
    group.add_argument("--upstream-hops", type=non_negative_int, default=2,
                       help="guided search also takes the parameters of the operations up to N steps upstream of an "
                       "attributed one (chunking before retrieval); 0: only the attributed operations' own "
                       "(default: %(default)s)")
    group.add_argument("--max-attributed-cases", type=positive_int, default=100,
                       help="missed questions attributed per round, a seeded sample (default: %(default)s)")
    group.add_argument("--search-cache-dir", type=output_folder, default=None,
                       help="embedding and layer-build cache (default: <optimization-dir>/cache)")


class _InputError(MemTraceError, ValueError):
    pass


def run_context_recall(args: argparse.Namespace) -> int:
    """Run the parameter loop described by parsed ``run_optimization.py`` arguments."""
    from membase.exceptions import MemBaseError
    from toolkits.optimization.loop import RoundError
    from toolkits.optimization.pipeline import PipelineError

    try:
        plan = _prepare(args)
    except _InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return _run(args, plan)
    except KeyboardInterrupt:
        print(f"interrupted: complete rounds and the current round's trials are kept in {args.optimization_dir}; "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    except (RoundError, PipelineError, MemBaseError) as exc:
        print(f"error: {exc} (complete rounds are kept; rerun to resume)", file=sys.stderr)
        return 1
    finally:
        for objective in (plan.get("train_objective"), plan.get("eval_objective")):
            if objective is not None:
                objective.close()


def _judge_only_flags(args: argparse.Namespace) -> list[str]:
    """Flags of the prompt loop that the parameter loop would silently ignore."""
    given = (("--targets", args.targets is not None), ("--optimizer gepa", args.optimizer == "gepa"),
             ("--validation-gate", args.validation_gate), ("--initial-prompts", args.initial_prompts is not None))
    return [flag for flag, on in given if on]


def _prepare(args: argparse.Namespace) -> dict[str, Any]:
    conflicting = _judge_only_flags(args)
    if conflicting:
        raise _InputError(f"{', '.join(conflicting)}: only for --objective judge; --objective context_recall "
                          "searches the layer's parameters (see --search)")
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise _InputError("the parameter loop needs Optuna: pip install 'memtrace-llm[optim]'") from None
    from toolkits.optimization.bundle import BundleError, MemoryConfigBundle, read_json_file
    from toolkits.optimization.objective import RECALL_LAYERS, ContextRecallObjective
    from toolkits.optimization.sampling import parse_indexes, select, training_sample

    try:
        initial = MemoryConfigBundle.from_layer_config(read_json_file(args.config_path, "--config-path"))
    except BundleError as exc:
        raise _InputError(str(exc)) from None
    if initial.backend not in RECALL_LAYERS:
        raise _InputError(f"--objective context_recall scores layers that keep message text ({', '.join(RECALL_LAYERS)}); "
                          f"{args.config_path!r} configures {initial.backend}")
    root = Path(args.optimization_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _InputError(f"--optimization-dir {args.optimization_dir!r} is not writable: {exc}") from None
    full = _dataset(args)
    n = len(full.trajectories)
    try:
        if args.train_trajectories is not None:
            train = parse_indexes(args.train_trajectories, n, default=[])
            if not train:
                raise ValueError("--train-trajectories selects no conversation")
        else:
            train = training_sample(root, full, dataset_path=args.dataset_path, sample_size=args.sample_size,
                                    seed=args.seed, max_sessions=args.max_sessions,
                                    max_questions=args.max_questions, resample=args.rerun).indexes
        choice = args.eval_trajectories.strip().lower()
        if choice == "none":
            held_out: list[int] = []
        elif choice == "unsampled":
            held_out = [i for i in range(n) if i not in train]
        else:
            held_out = parse_indexes(args.eval_trajectories, n, default=[])
    except ValueError as exc:
        raise _InputError(str(exc)) from None
    overlap = sorted(set(train) & set(held_out))
    if overlap:
        raise _InputError(f"conversations {overlap} are both training and held-out; they must be disjoint")
    _check_run_settings(args, root, initial, train)
    cache = Path(args.search_cache_dir) if args.search_cache_dir else root / "cache"
    common = {"budget": args.context_budget, "cache_dir": cache, "show_progress": args.progress}
    try:
        train_objective = ContextRecallObjective(select(full, train), initial.backend, initial.layer_fields(), **common)
        eval_objective = (ContextRecallObjective(select(full, held_out), initial.backend, initial.layer_fields(), **common)
                          if held_out else None)
    except ValueError as exc:
        raise _InputError(str(exc)) from None
    return {"initial": initial, "train": train, "held_out": held_out, "train_objective": train_objective,
            "eval_objective": eval_objective, "root": root, "full": full}


def _check_run_settings(args: argparse.Namespace, root: Path, initial: Any, train: list[int]) -> None:
    """Refuse to continue rounds or trials made with another config or search settings."""
    from toolkits.optimization.loop import IterationStore
    from toolkits.optimization.param_loop import SEARCH_FOLDER
    from toolkits.optimization.run_settings import (
        RunSettingsMismatchError,
        check_run_settings,
        configuration_digest,
    )

    settings = {
        "objective": "context_recall", "initial_configuration_sha256": configuration_digest(initial),
        "train_trajectories": list(train), "context_budget": args.context_budget,
        "trials_per_round": args.trials_per_round, "search": args.search, "top_k": args.top_k, "seed": args.seed,
        "max_attributed_cases": args.max_attributed_cases, "upstream_hops": args.upstream_hops,
    }
    # --rerun discards everything later; a search's trials count as results, even in an incomplete round
    has_results = not args.rerun and (IterationStore(root).last_complete() is not None
                                      or any((root / SEARCH_FOLDER).glob("*")))
    try:
        check_run_settings(root, settings, has_results=has_results)
    except RunSettingsMismatchError as exc:
        raise _InputError(str(exc)) from None


def _dataset(args: argparse.Namespace) -> Any:
    from membase.exceptions import DatasetError
    from toolkits.optimization.sampling import load_full_dataset

    path = Path(args.dataset_path)
    if not path.is_file():
        raise _InputError(f"--dataset-path {args.dataset_path!r} not found; pass the LoCoMo file locomo10.json")
    try:
        return load_full_dataset(path, max_sessions=args.max_sessions, max_questions=args.max_questions)
    except (DatasetError, UnicodeDecodeError, ValueError) as exc:
        raise _InputError(f"--dataset-path {args.dataset_path!r}: {exc}") from None


def _run(args: argparse.Namespace, plan: dict[str, Any]) -> int:
    from toolkits.optimization.bundle import BundleError, MemoryConfigBundle
    from toolkits.optimization.final_eval import FINAL_EVALUATION_FILENAME
    from toolkits.optimization.loop import IterationStore, run_rounds
    from toolkits.optimization.param_loop import (
        SEARCH_FOLDER,
        ParameterRoundStep,
        ParameterSearchSettings,
        context_recall_evaluation,
    )
    from toolkits.optimization.parameters import parameter_registry
    from toolkits.optimization.sampling import select

    root: Path = plan["root"]
    store = IterationStore(root)
    if args.rerun:
        store.wipe()
        shutil.rmtree(root / SEARCH_FOLDER, ignore_errors=True)
        (root / FINAL_EVALUATION_FILENAME).unlink(missing_ok=True)
    settings = ParameterSearchSettings(
        budget=args.context_budget, trials_per_round=args.trials_per_round, guided=args.search == "guided",
        default_top_k=args.top_k, seed=args.seed, show_progress=args.progress,
        max_attributed_cases=args.max_attributed_cases, upstream_hops=args.upstream_hops,
    )
    runner = None
    if settings.guided:
        from toolkits.runner import MemTraceConfig, MemTraceRunner

        runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow"))
    step = ParameterRoundStep(objective=plan["train_objective"], registry=parameter_registry(), settings=settings,
                              search_root=root / SEARCH_FOLDER, attribution_runner=runner)
    initial = plan["initial"]
    bundle, start = initial, 1
    last = None if args.rerun else store.last_complete()
    if last is not None:
        k, folder = last
        try:
            bundle = MemoryConfigBundle.load(folder).restore_secrets(initial)
        except (BundleError, ValueError) as exc:
            print(f"error: cannot resume from {folder}: {exc}; fix or delete that folder, or pass --rerun",
                  file=sys.stderr)
            return 2
        start = k + 1
        if start <= args.rounds:
            print(f"resuming at round {start} of {args.rounds}", file=sys.stderr)
    train_dataset = select(plan["full"], plan["train"])
    rounds = [(train_dataset, list(plan["train"]))] * args.rounds
    if start <= len(rounds):
        bundle = run_rounds(store, bundle=bundle, start=start, rounds=rounds, step=step, show_progress=args.progress,
                            on_round_end=_print_round)
    else:
        print(f"all {len(rounds)} rounds are complete in {root}", file=sys.stderr)
    if plan["eval_objective"] is None:
        print(f"optimized configuration: {store.folder(len(rounds))}", file=sys.stderr)
        return 0
    output = root / FINAL_EVALUATION_FILENAME
    report = context_recall_evaluation(
        plan["eval_objective"], initial, bundle, default_top_k=args.top_k, indexes=plan["held_out"],
        bootstrap_samples=args.bootstrap_samples, seed=args.seed, output_path=output,
    )
    cr = report["context_recall"]
    ci = report["metrics"]["context_recall"]["ci95_difference"]
    shown = f" [{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else ""
    print(f"held-out context recall at {args.context_budget} tokens: micro {cr['before']['micro']:.4f} -> "
          f"{cr['after']['micro']:.4f} ({cr['after']['micro'] - cr['before']['micro']:+.4f}{shown}), macro "
          f"{cr['before']['macro']:.4f} -> {cr['after']['macro']:.4f}, {report['num_questions']} questions")
    print(f"-> {output}")
    return 0


def _print_round(k: int, output: Any) -> None:
    s = output.summary
    best = s.get("best_trial") or {}
    print(f"round {k}: searched {','.join(s.get('searched_parameters', [])) or '-'}; train context recall "
          f"{s['incumbent']['micro']:.4f} -> {s['metrics']['context_recall']:.4f} "
          f"({'accepted ' + str(best.get('params')) if s.get('accepted') else 'kept'})", file=sys.stderr)
