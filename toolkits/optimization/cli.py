"""The body of ``run_optimization.py``: checks, preflight, the rounds, the final evaluation.

Everything that can be wrong with the inputs is checked before the first round: the config,
the targets, the initial prompts, the dataset, the conversation indexes, credentials and every
endpoint. Each problem ends the run with one ``error:`` line and exit code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

__all__ = ["InputError", "run_from_args"]

METRICS = ("f1", "bleu", "llm_judge")


class InputError(MemTraceError, ValueError):
    """A bad argument, config, dataset or endpoint (printed as one ``error:`` line, exit 2)."""


@dataclass(kw_only=True)
class _Plan:
    initial: Any
    targets: list[Any]
    train: Any
    eval_indexes: list[int]
    eval_dataset: Any
    validation_dataset: Any | None
    settings: Any
    step: Any
    store: Any


def run_from_args(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    *,
    attribution_model_factory: Callable[[Any], Any] | None = None,
    optimizer_model_factory: Callable[[int], Any] | None = None,
    chat_model_factory: Callable[[str, str], Any] | None = None,
) -> int:
    """Run the loop described by parsed arguments; returns the exit code.

    ``chat_model_factory(spec, role)`` (role ``qa`` or ``judge``) replaces the QA and judge models
    built from their specs (``--estimate-cost`` passes counting fakes).
    """
    from membase.exceptions import ConfigError, MemBaseError
    from toolkits.optimization.loop import RoundError
    from toolkits.optimization.pipeline import PipelineError

    try:
        plan = _prepare(args, attribution_model_factory, optimizer_model_factory, chat_model_factory)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return _run(args, plan)
    except KeyboardInterrupt:
        print(f"interrupted: complete rounds are kept in {args.optimization_dir}; rerun the same command to resume",
              file=sys.stderr)
        return 130
    except ConfigError as exc:  # the layer refused its config when it started (e.g. no credentials for it)
        print(f"error: the layer of --config-path {args.config_path!r} cannot start: {exc}", file=sys.stderr)
        return 2
    except (RoundError, PipelineError, MemBaseError) as exc:
        print(f"error: {exc} (complete rounds are kept; rerun to resume)", file=sys.stderr)
        return 1


# -- preparation ----------------------------------------------------------------------------------


def _prepare(args: argparse.Namespace, attribution_model_factory: Any, optimizer_model_factory: Any,
             chat_model_factory: Any = None) -> _Plan:
    from toolkits.optimization.loop import IterationStore

    metrics = tuple(m.strip() for m in args.metrics.split(",") if m.strip())
    unknown = [m for m in metrics if m not in METRICS]
    if unknown or not metrics:
        raise InputError(f"--metrics {args.metrics!r}: choose from {', '.join(METRICS)}")
    if args.validation_gate and "llm_judge" not in metrics:
        raise InputError("--validation-gate compares llm_judge scores: keep llm_judge in --metrics")
    if args.optimizer == "gepa":
        try:
            import gepa  # noqa: F401
        except ImportError:
            raise InputError("--optimizer gepa needs the gepa package: pip install 'memtrace-llm[optim]'") from None
        if "llm_judge" not in metrics:
            raise InputError("--optimizer gepa scores candidates by llm_judge: keep llm_judge in --metrics")
    if not 0.0 <= args.min_improvement <= 1.0:
        raise InputError(f"--min-improvement {args.min_improvement}: give a gain between 0 and 1 (llm_judge scale)")
    initial = _initial_bundle(args)
    targets = _without_unset_answer_parameters(args, initial, _targets(args, initial.backend))
    initial = _apply_initial_prompts(args, initial, targets)
    root = Path(args.optimization_dir)
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"--optimization-dir {args.optimization_dir!r} is not writable: {exc}") from None
    store = IterationStore(root)
    full = _dataset(args)
    if args.sample_size > len(full.trajectories):  # checked here, not when sampling: --rerun has not wiped yet
        raise InputError(f"--sample-size {args.sample_size} exceeds the {len(full.trajectories)} conversations "
                         "of the dataset")
    _check_layout(root, args.sample_size)
    settings = _settings(args, metrics, chat_model_factory)
    step = _step(args, targets, settings, None, attribution_model_factory, optimizer_model_factory, initial)
    _check_index_flags(args, len(full.trajectories))
    # every check passed (endpoints included): only now may --rerun discard earlier results
    if args.rerun:
        _start_over(store, root)
    train = _training(args, root, full)
    validation_indexes, eval_indexes = _held_out(args, full, train.indexes)
    from toolkits.optimization.run_settings import RunSettingsMismatchError, check_run_settings

    try:
        check_run_settings(root, _run_settings(args, initial, targets, settings, validation_indexes),
                           has_results=store.last_complete() is not None or _gepa_started(root))
    except RunSettingsMismatchError as exc:
        raise InputError(str(exc)) from None
    from toolkits.optimization.sampling import select

    validation_dataset = None
    if args.validation_gate:
        from toolkits.optimization.loop import ValidationGate

        validation_dataset = select(full, validation_indexes)
        step.gate = ValidationGate(dataset=validation_dataset, settings=dataclasses.replace(settings, tracing=False),
                                   min_improvement=args.min_improvement)
    return _Plan(initial=initial, targets=targets, train=train, eval_indexes=eval_indexes,
                 eval_dataset=select(full, eval_indexes), validation_dataset=validation_dataset,
                 settings=settings, step=step, store=store)


def _run_settings(args: argparse.Namespace, initial: Any, targets: list[Any], settings: Any,
                  validation_indexes: list[int]) -> dict[str, Any]:
    """What decides a round's result (see :mod:`toolkits.optimization.run_settings`)."""
    from toolkits.optimization.run_settings import configuration_digest
    from toolkits.strategies import get_strategy

    attribution_model = None
    if not args.disable_memtrace and get_strategy(args.attribution_strategy).needs_model:
        attribution_model = args.attribution_model
    return {
        "initial_configuration_sha256": configuration_digest(initial),
        "targets": [t.field for t in targets],
        "top_k": settings.top_k,
        "qa_model": args.qa_model,
        "judge_model": args.judge_model if settings.judge_model is not None else None,
        "metrics": list(settings.metrics),
        "qa_max_tokens": settings.qa_max_tokens,
        "judge_max_tokens": settings.judge_max_tokens,
        "attribution": "disabled" if args.disable_memtrace else args.attribution_strategy,
        "attribution_model": attribution_model,
        "optimizer_model": args.optimizer_model,
        "temperature": args.temperature,
        "num_gradient_histories": args.num_gradient_histories,
        "batch_size_for_summarization": args.batch_size_for_summarization,
        "validation_gate": validation_indexes if args.validation_gate else None,
        "min_improvement": args.min_improvement if args.validation_gate else None,
        "parameter_trials": args.parameter_trials if any(t.kind == "parameter" for t in targets) else None,
        "optimizer": args.optimizer if args.optimizer != "textgrad" else None,
    }


def _check_layout(root: Path, rounds: int) -> None:
    """A stray file or folder where the run writes the other kind would fail mid-run: refuse it now."""
    from toolkits.optimization.final_eval import FINAL_EVALUATION_FILENAME
    from toolkits.optimization.run_settings import RUN_SETTINGS_FILENAME
    from toolkits.optimization.sampling import SAMPLED_DATASET_FILENAME

    for name in [*(f"iteration_{k}" for k in range(1, rounds + 1)), "final_evaluation"]:
        if (root / name).exists() and not (root / name).is_dir():
            raise InputError(f"{str(root / name)!r} is a file, where the run keeps a folder; move it out of "
                             "--optimization-dir")
    for name in (FINAL_EVALUATION_FILENAME, SAMPLED_DATASET_FILENAME, RUN_SETTINGS_FILENAME):
        if (root / name).is_dir():
            raise InputError(f"{str(root / name)!r} is a folder, where the run writes a file; move it out of "
                             "--optimization-dir")


def _initial_bundle(args: argparse.Namespace) -> Any:
    from toolkits.optimization.bundle import BundleError, MemoryConfigBundle, read_json_file

    try:
        return MemoryConfigBundle.from_layer_config(read_json_file(args.config_path, "--config-path"))
    except BundleError as exc:
        raise InputError(f"--config-path {args.config_path!r}: {exc}" if "--config-path" not in str(exc) else str(exc)) from None


TARGET_SETS = ("qa", "memory", "all")
"""``--targets`` shorthands: the answer prompt alone; the memory side (every other prompt and the
layer's parameters, not the answering step's context budget); everything (but a context budget the
config leaves unset: :func:`_without_unset_answer_parameters`). The default (no ``--targets``) is every prompt target, as in the paper."""


def _targets(args: argparse.Namespace, backend: str) -> list[Any]:
    from toolkits.optimization.parameters import is_answer_parameter, parameter_registry

    registry = parameter_registry()
    if args.targets and args.targets.strip() in TARGET_SETS:
        every = registry.for_layer(backend)
        chosen = {
            "qa": [t for t in every if t.field == "question_answering_prompt"],
            "memory": [t for t in every if t.field != "question_answering_prompt" and not is_answer_parameter(t)],
            "all": every,
        }[args.targets.strip()]
        if not chosen:
            raise InputError(f"--targets {args.targets}: the {backend} layer has no such target")
        return chosen
    if args.targets:
        try:
            return registry.select(backend, [n.strip() for n in args.targets.split(",") if n.strip()])
        except KeyError as exc:
            raise InputError(f"--targets: {exc.args[0]}") from None
    targets = registry.for_layer(backend, kinds=("prompt",))
    if not targets:
        raise InputError(f"the {backend} layer has no prompt targets")
    return targets


def _without_unset_answer_parameters(args: argparse.Namespace, initial: Any, targets: list[Any]) -> list[Any]:
    """Leave out the answering-step targets the config leaves unset (``--targets all``); naming one is an error.

    Unset, the context budget means no cut: nothing traced, and a proposed number would start cutting."""
    from toolkits.optimization.parameters import unset_answer_parameters

    unset = unset_answer_parameters(targets, initial)
    if not unset:
        return targets
    if args.targets and args.targets.strip() not in TARGET_SETS:
        raise InputError(f"--targets {', '.join(unset)}: --config-path {args.config_path!r} leaves it unset (no cut); "
                         f"set a starting value there (e.g. \"{unset[0]}\": 2048) to optimize it")
    print(f"note: --targets {args.targets.strip()} leaves out {', '.join(unset)}: --config-path leaves it unset (no cut)",
          file=sys.stderr)
    return [t for t in targets if t.field not in set(unset)]


def _apply_initial_prompts(args: argparse.Namespace, bundle: Any, targets: list[Any]) -> Any:
    if not args.initial_prompts:
        return bundle
    from toolkits.optimization.bundle import BundleError, read_json_file

    try:
        data = read_json_file(args.initial_prompts, "prompt file")
    except BundleError as exc:
        raise InputError(str(exc)) from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise InputError(f"prompt file {args.initial_prompts!r} must hold a JSON object {{target: text}}")
    from toolkits.optimization.targets import TARGETS

    updates = {}
    for name, text in data.items():
        target = next((t for t in TARGETS.for_layer(bundle.backend) if name in (t.field, t.variable)), None)
        if target is None:
            raise InputError(f"prompt file {args.initial_prompts!r}: {name!r} is no target of the {bundle.backend} layer")
        problems = target.problems(text)
        if problems:
            raise InputError(f"prompt file {args.initial_prompts!r}: {name!r} breaks its contract: {'; '.join(problems)}")
        updates[target.field] = text
    try:
        return bundle.with_updates(updates)
    except (BundleError, KeyError) as exc:
        raise InputError(f"prompt file {args.initial_prompts!r}: {exc}") from None


def _dataset(args: argparse.Namespace) -> Any:
    from membase.exceptions import DatasetError
    from toolkits.optimization.sampling import load_full_dataset

    path = Path(args.dataset_path)
    if path.is_dir():
        raise InputError(f"--dataset-path {args.dataset_path!r} is a folder; pass the LoCoMo file locomo10.json")
    if not path.is_file():
        raise InputError(f"--dataset-path {args.dataset_path!r} not found; pass the LoCoMo file locomo10.json")
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"--dataset-path {args.dataset_path!r} is not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise InputError(f"--dataset-path {args.dataset_path!r} cannot be read: {exc.strerror or exc}") from None
    try:
        full = load_full_dataset(path, max_sessions=args.max_sessions, max_questions=args.max_questions)
    except DatasetError as exc:
        raise InputError(f"--dataset-path: {exc}") from None
    if not any(full.qa_pair_lists):
        raise InputError(f"--dataset-path {args.dataset_path!r}: no question left (check --max-sessions/--max-questions)")
    return full


def _gepa_started(root: Path) -> bool:
    """An earlier --optimizer gepa run left state or evaluations here (it resumes from them)."""
    from toolkits.optimization.gepa_backend import resumable_gepa_run  # imports gepa only when it runs

    return resumable_gepa_run(root) is not None


def _start_over(store: Any, root: Path) -> None:
    from toolkits.optimization.final_eval import FINAL_EVALUATION_FILENAME
    from toolkits.optimization.gepa_backend import GEPA_FOLDER, GEPA_SUMMARY_FILENAME

    store.wipe()
    (root / FINAL_EVALUATION_FILENAME).unlink(missing_ok=True)
    (root / GEPA_SUMMARY_FILENAME).unlink(missing_ok=True)
    for folder in ("final_evaluation", GEPA_FOLDER):
        if (root / folder).is_dir():
            shutil.rmtree(root / folder)


def _training(args: argparse.Namespace, root: Path, full: Any) -> Any:
    from toolkits.optimization.sampling import training_sample

    try:
        return training_sample(
            root, full, dataset_path=args.dataset_path, sample_size=args.sample_size, seed=args.seed,
            max_sessions=args.max_sessions, max_questions=args.max_questions, resample=args.rerun,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _check_index_flags(args: argparse.Namespace, n: int) -> None:
    from toolkits.optimization.sampling import parse_indexes

    try:
        if args.validation_trajectories is not None:
            parse_indexes(args.validation_trajectories, n, default=[])
        if args.eval_trajectories.strip().lower() not in ("none", "unsampled"):
            parse_indexes(args.eval_trajectories, n, default=[])
    except ValueError as exc:
        raise InputError(f"conversation indexes: {exc}") from None


def _held_out(args: argparse.Namespace, full: Any, train: list[int]) -> tuple[list[int], list[int]]:
    import warnings

    from toolkits.optimization.sampling import parse_indexes

    n = len(full.trajectories)
    unsampled = [i for i in range(n) if i not in train]
    validation: list[int] = []
    try:
        if args.validation_gate:
            validation = parse_indexes(args.validation_trajectories, n, default=unsampled[:2])
            if len(set(validation)) < 2:
                # one conversation decides by its few questions; the gate needs a second to be worth its cost
                raise InputError(f"--validation-gate needs at least two validation conversations, got {validation}"
                                 + (" (too few unsampled ones left)" if args.validation_trajectories is None else
                                    " (--validation-trajectories)"))
        choice = args.eval_trajectories.strip().lower()
        if choice == "none":
            evaluation: list[int] = []
        elif choice == "unsampled":
            evaluation = [i for i in unsampled if i not in validation]
        else:
            evaluation = parse_indexes(args.eval_trajectories, n, default=[])
    except ValueError as exc:
        raise InputError(f"conversation indexes: {exc}") from None
    overlap = sorted(set(evaluation) & (set(train) | set(validation)))
    if overlap:
        warnings.warn(f"--eval-trajectories {overlap} were also used for training or validation; the "
                      "final evaluation is then not held out", stacklevel=2)
    return validation, evaluation


def _settings(args: argparse.Namespace, metrics: tuple[str, ...], chat_model_factory: Any = None) -> Any:
    from membase.exceptions import ConfigError
    from toolkits.optimization.pipeline import PipelineSettings, chat_model_from_spec

    try:
        options = {"api_config_path": args.api_config_path, "timeout": args.model_timeout,
                   "max_retries": args.model_max_retries, "cache_dir": args.cache_dir}
        if chat_model_factory is not None:
            qa = chat_model_factory(args.qa_model, "qa")
            judge = chat_model_factory(args.judge_model, "judge") if "llm_judge" in metrics else None
        else:
            qa = chat_model_from_spec(args.qa_model, **options)
            judge = chat_model_from_spec(args.judge_model, **options) if "llm_judge" in metrics else None
    except ConfigError as exc:
        raise InputError(f"QA/judge models: {exc}") from None
    return PipelineSettings(
        top_k=args.top_k, qa_model=qa, judge_model=judge, metrics=metrics, qa_batch_size=args.qa_batch_size,
        judge_batch_size=args.judge_batch_size, tracing=True, show_progress=args.progress,
        qa_max_tokens=args.qa_max_tokens, judge_max_tokens=args.judge_max_tokens,
        workers=getattr(args, "workers", 1),
    )


def _pool_endpoints(what: str, pool: Any) -> list[Any]:
    """One endpoint check per credential of ``pool`` (an ``ApiPool``/credential pool)."""
    from toolkits.optimization.preflight import Endpoint

    return [Endpoint(what=what, base_url=pool.credential_for(i).base_url, api_key=pool.credential_for(i).api_key)
            for i in range(pool.size)]


def _attribution(args: argparse.Namespace, attribution_model_factory: Any) -> tuple[Any, list[Any]]:
    """The rounds' attribution settings, and the endpoints its model will call."""
    from pydantic import ValidationError

    from toolkits._base import CredentialError, resolve_api_pool
    from toolkits.optimization.loop import AttributionSettings
    from toolkits.runner import MemTraceConfig, MemTraceRunner
    from toolkits.strategies import available_strategies, get_strategy

    attribution = AttributionSettings(disabled=args.disable_memtrace, batch_size=args.attribution_batch_size)
    if args.disable_memtrace:
        return attribution, []
    if args.attribution_strategy not in available_strategies():
        raise InputError(f"unknown --attribution-strategy {args.attribution_strategy!r}: use one of "
                         f"{', '.join(available_strategies())}")
    if args.attribution_model.startswith("fake:"):
        raise InputError("--attribution-model fake:... is not supported; use --attribution-strategy evidence_flow "
                         "for an attribution without a model")
    try:
        config = MemTraceConfig(
            model=args.attribution_model, exploration_strategy=args.attribution_strategy,
            max_trace_nodes=args.max_trace_nodes, stream=args.stream, temperature=args.temperature,
            context_window=args.context_window, max_iters=args.max_iters, api_config_path=args.api_config_path,
            max_tokens=args.max_tokens, llama_cpp_compat=args.llama_cpp_compat,
        )
    except ValidationError as exc:
        raise InputError(f"attribution settings: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None
    needs_model = get_strategy(args.attribution_strategy).needs_model
    pool = None
    endpoints: list[Any] = []
    if needs_model and attribution_model_factory is None:
        try:
            pool = resolve_api_pool(config)
        except CredentialError as exc:
            raise InputError(f"attribution model: {exc}") from None
        endpoints = _pool_endpoints("--attribution-model", pool)
    attribution.runner = MemTraceRunner(config, model_factory=attribution_model_factory, api_pool=pool)
    return attribution, endpoints


def _optimizer(args: argparse.Namespace, optimizer_model_factory: Any) -> tuple[Any, Any, list[Any]]:
    """The three-stage optimizer's runner, GEPA's reflection model (None unless --optimizer gepa), and the
    endpoints they will call."""
    from pydantic import ValidationError

    from membase.exceptions import ConfigError
    from toolkits._base import CredentialError, resolve_api_pool
    from toolkits.optimization.optimizer import OptimizerConfig, OptimizerRunner
    from toolkits.optimization.optimizer import optimizer_model_factory as from_spec

    endpoints: list[Any] = []
    try:
        opt_config = OptimizerConfig(
            model=args.optimizer_model, temperature=args.temperature, stream=args.stream, api_config_path=args.api_config_path,
            num_gradient_histories=args.num_gradient_histories,
            batch_size_for_summarization=args.batch_size_for_summarization, max_iters=args.optimizer_max_iters,
            max_tokens=args.max_tokens, llama_cpp_compat=args.llama_cpp_compat, max_retries=args.optimizer_max_retries,
            retry_backoff_s=args.retry_backoff, call_timeout_s=args.call_timeout, contract_retries=args.contract_retries,
        )
    except ValidationError as exc:
        raise InputError(f"optimizer settings: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}") from None
    factory = optimizer_model_factory or from_spec(args.optimizer_model)
    reflection = None
    if args.optimizer == "gepa":  # GEPA's reflection model replaces the three-stage optimizer's
        from toolkits.optimization.gepa_backend import reflection_model

        try:
            reflection = reflection_model(args.optimizer_model, api_config_path=args.api_config_path,
                                          timeout=args.call_timeout, max_retries=args.optimizer_max_retries)
        except ConfigError as exc:
            raise InputError(f"optimizer model: {exc}") from None
        credentials = getattr(reflection, "credentials", None)
        if credentials is not None:
            endpoints += _pool_endpoints("--optimizer-model", credentials)
        factory = factory or _no_textgrad_model
    opt_pool = None
    if factory is None:
        try:
            opt_pool = resolve_api_pool(opt_config)
        except CredentialError as exc:
            raise InputError(f"optimizer model: {exc}") from None
        endpoints += _pool_endpoints("--optimizer-model", opt_pool)
    runner = OptimizerRunner(opt_config, model_factory=factory, api_pool=opt_pool, show_progress=args.progress)
    return runner, reflection, endpoints


def _check_endpoints(args: argparse.Namespace, settings: Any, initial: Any, endpoints: list[Any]) -> None:
    """Reach every model endpoint of the run (``endpoints`` plus the QA, judge and layer models) before round 1."""
    from membase.exceptions import ConfigError
    from toolkits.optimization.preflight import (
        EndpointError,
        check_endpoints,
        endpoints_in_config,
        layer_model_endpoints,
    )

    endpoints = list(endpoints)
    for spec, model in (("--qa-model", settings.qa_model), ("--judge-model", settings.judge_model)):
        credentials = getattr(model, "credentials", None)
        if credentials is not None:
            endpoints += _pool_endpoints(spec, credentials)
    try:  # the layer resolves its model's credentials only when round 1 starts: resolve them now
        endpoints += layer_model_endpoints(initial.backend, initial.base_config)
    except ConfigError as exc:
        raise InputError(f"the layer of --config-path {args.config_path!r} cannot start: {exc}") from None
    endpoints += endpoints_in_config(initial.base_config)
    try:
        check_endpoints(endpoints)
    except EndpointError as exc:
        raise InputError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - e.g. real requests switched off in tests
        raise InputError(f"endpoint check failed: {type(exc).__name__}: {exc}") from None


def _step(args: argparse.Namespace, targets: list[Any], settings: Any, gate: Any, attribution_model_factory: Any,
          optimizer_model_factory: Any, initial: Any) -> Any:
    from toolkits.optimization.loop import PromptRoundStep, default_optimizers

    attribution, attribution_endpoints = _attribution(args, attribution_model_factory)
    runner, reflection, optimizer_endpoints = _optimizer(args, optimizer_model_factory)
    _check_endpoints(args, settings, initial, attribution_endpoints + optimizer_endpoints)
    parameters = None
    if any(t.kind == "parameter" for t in targets):
        from toolkits.optimization.param_tasks import PipelineParameterOptimizer

        metric = "llm_judge" if "llm_judge" in settings.metrics else settings.metrics[0]
        parameters = PipelineParameterOptimizer(settings=settings, metric=metric, trials=args.parameter_trials)
    step = PromptRoundStep(
        targets=targets, settings=settings, attribution=attribution,
        optimizers=default_optimizers(runner, args.optimization_batch_size, parameters), seed=args.seed, gate=gate,
    )
    step.reflection = reflection  # type: ignore[attr-defined]  # read by _run_gepa
    return step


def _no_textgrad_model(_call_index: int) -> Any:
    raise RuntimeError("--optimizer gepa runs no three-stage optimizer call")


# -- running --------------------------------------------------------------------------------------


def _run(args: argparse.Namespace, plan: _Plan) -> int:
    from toolkits.optimization.bundle import BundleError, MemoryConfigBundle
    from toolkits.optimization.final_eval import FINAL_EVALUATION_FILENAME, run_final_evaluation
    from toolkits.optimization.loop import run_rounds
    from toolkits.optimization.sampling import select

    store, train = plan.store, plan.train
    bundle, start = plan.initial, 1
    last = None if args.rerun else store.last_complete()
    if last is not None:
        k, folder = last
        try:
            bundle = MemoryConfigBundle.load(folder).restore_secrets(plan.initial)
            plan.step.load_state(folder)
        except (BundleError, ValueError) as exc:
            print(f"error: cannot resume from {folder}: {exc}; fix or delete that folder, or pass --rerun",
                  file=sys.stderr)
            return 2
        start = k + 1
        if start <= args.sample_size:
            print(f"resuming at round {start} of {args.sample_size} (rounds 1-{k} are complete in {store.root})",
                  file=sys.stderr)
    rounds = [(select(train.dataset, [i]), [train.indexes[i]]) for i in range(len(train.indexes))]
    if args.optimizer == "gepa":
        bundle = _run_gepa(args, plan)
    elif start <= len(rounds):
        bundle = run_rounds(store, bundle=bundle, start=start, rounds=rounds, step=plan.step,
                            show_progress=args.progress, on_round_end=_print_round)
    else:
        print(f"all {len(rounds)} rounds are complete in {store.root}", file=sys.stderr)
    if not plan.eval_indexes:
        gepa_summary = Path(args.optimization_dir) / "gepa_summary.json"  # its best_bundle; GEPA makes no rounds
        print(f"optimized configuration: {gepa_summary if args.optimizer == 'gepa' else store.folder(len(rounds))}",
              file=sys.stderr)
        return 0
    output = Path(args.optimization_dir) / FINAL_EVALUATION_FILENAME
    report = run_final_evaluation(
        plan.initial, bundle, plan.eval_dataset, plan.eval_indexes, Path(args.optimization_dir) / "final_evaluation",
        plan.settings, bootstrap_samples=args.bootstrap_samples, seed=args.seed, output_path=output,
    )
    for name, m in report["metrics"].items():
        ci = m["ci95_difference"]
        shown = f" [{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else ""
        print(f"final evaluation {name}: {m['before']:.4f} -> {m['after']:.4f} "
              f"({m['difference']:+.4f}{shown}, {report['num_questions']} questions)")
    print(f"-> {output}")
    return 0


def _run_gepa(args: argparse.Namespace, plan: _Plan) -> Any:
    from toolkits.optimization.gepa_backend import resumable_gepa_run, run_gepa

    reflection = plan.step.reflection
    budget = args.gepa_max_metric_calls or 4 * len(plan.train.indexes)
    reused = None if args.rerun else resumable_gepa_run(Path(args.optimization_dir))
    if reused is not None:
        print(f"resuming GEPA in {Path(args.optimization_dir) / 'gepa'} ({reused} memory-system runs journaled)",
              file=sys.stderr)
    best = run_gepa(initial=plan.initial, targets=plan.targets, dataset=plan.train.dataset, settings=plan.settings,
                    attribution=plan.step.attribution, reflection_lm=reflection, root=Path(args.optimization_dir),
                    max_metric_calls=budget, seed=args.seed)
    changed = [t.field for t in plan.targets if best.get(t.field) != plan.initial.get(t.field)]
    print(f"gepa: best candidate changes {','.join(changed) or 'nothing'} "
          f"(-> {Path(args.optimization_dir) / 'gepa_summary.json'})", file=sys.stderr)
    return best


def _print_round(k: int, output: Any) -> None:
    metrics = output.summary.get("metrics", {})
    shown = " ".join(f"{n}={v:.4f}" for n, v in metrics.items() if isinstance(v, float))
    failures = len(output.summary.get("optimization_failures", []))
    print(f"round {k}: {shown} failed_questions={output.summary.get('num_failed_queries')} "
          f"updated={','.join(output.summary.get('updated_fields', [])) or '-'}"
          + (f" optimizer_failures={failures}" if failures else ""), file=sys.stderr)
