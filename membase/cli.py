"""`python -m membase construct|search|evaluate|run`: run a memory layer over a dataset slice.

The layer config is a JSON file `{"layer_type": "NaiveRAG", <layer config fields>...}` (the
fields of the layer's config class except `user_id` and `save_dir`). Outputs go under
`--output-dir`: `memory/<user>/` (saved memories, results files, run reports) and
`traced_data/<user>/graph_{construction,search,evaluation}.json`.

Exit codes: 0 success (failed messages/questions are listed in the reports), 2 bad input or an
unreachable model endpoint (one-line message on stderr), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from membase.exceptions import ConfigError, MemBaseError
from membase.utils.argtypes import non_negative_int, positive_float, positive_int
from membase.utils.flag_rules import IgnoredFlag, check_ignored_flags

__all__ = ["cli", "main"]

logger = logging.getLogger("membase")


def _load_layer_config(path: str) -> tuple[str, dict[str, Any]]:
    from membase.layers import CONFIG_MAPPING, build_layer_config

    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"layer config {path!r} not found; pass a JSON file with a layer_type key")
    try:
        data = json.loads(file.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"layer config {path!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(f"layer config {path!r} cannot be read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"layer config {path!r} is not valid JSON ({exc})") from None
    if not isinstance(data, dict) or "layer_type" not in data:
        raise ConfigError(f"layer config {path!r} must be a JSON object with a layer_type key")
    layer_type = data.pop("layer_type")
    if not isinstance(layer_type, str):
        raise ConfigError(
            f"layer config {path!r}: layer_type must be one name such as \"Long-Context\", got {layer_type!r}"
        )
    for key in ("user_id", "save_dir"):
        if key in data:
            raise ConfigError(f"layer config {path!r}: remove {key!r}, the runners set it per user")
    try:
        build_layer_config(layer_type, user_id="config-check", **data)  # fails early on a wrong key
    except ConfigError as exc:
        raise ConfigError(f"layer config {path!r}: {exc}") from None
    _check_json_types(path, layer_type, CONFIG_MAPPING[layer_type], data)
    return layer_type, data


def _check_json_types(path: str, layer_type: str, config_cls: Any, data: dict[str, Any]) -> None:
    """Validate the file's values as strict JSON: no `true` for a number, no `"5"` for an integer."""
    from pydantic import ValidationError

    try:
        config_cls.model_validate_json(json.dumps({**data, "user_id": "config-check"}), strict=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<config>'}: {err['msg']} (got {err.get('input')!r})"
            for err in exc.errors()
        )
        raise ConfigError(f"layer config {path!r}: invalid {layer_type} config: {problems}") from None


def _dataset(args: argparse.Namespace) -> Any:
    """The selected slice of `--dataset`, read once per command; `auto` becomes the detected type."""
    from membase.datasets import load_dataset

    cached = getattr(args, "_loaded_dataset", None)
    if cached is not None:
        return cached
    full = load_dataset(args.dataset_type, args.dataset)
    args.dataset_type = full.name
    _check_question_types(args, full)
    dataset = full.select(args.start_idx, args.end_idx)
    if not dataset.trajectories:
        raise ConfigError(f"the slice --start-idx {args.start_idx} --end-idx {args.end_idx} selects no trajectory "
                          f"of {args.dataset!r} ({len(full.trajectories)} trajectories)")
    if args.sample_size is not None:
        dataset = dataset.sample(size=args.sample_size, seed=args.seed)
    if args.max_messages is not None:
        dataset = dataset.first_messages(args.max_messages)
    args._loaded_dataset = dataset
    return dataset


def _check_question_types(args: argparse.Namespace, dataset: Any) -> None:
    """A `--skip-question-types` name that no question carries is a typo that would skip nothing."""
    wanted = getattr(args, "skip_question_types", None) or []
    known = {str(qa.metadata.get("question_type")) for qas in dataset.qa_pair_lists for qa in qas}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise ConfigError(f"--skip-question-types {', '.join(map(repr, unknown))}: no question of {args.dataset!r} "
                          f"has this type; its types are {', '.join(sorted(known)) or 'none'}")


def _is_online(args: argparse.Namespace) -> bool:
    from membase.datasets import ONLINE_DATASETS

    return _dataset(args).name in ONLINE_DATASETS


def _refuse_online(args: argparse.Namespace, stage: str) -> None:
    if _is_online(args):
        raise ConfigError(f"{args.dataset_type} asks its questions during construction, so there is no separate "
                          f"{stage} stage; use `python -m membase run` (construction, search and evaluation in one pass)")


def _chat_model(spec: str, args: argparse.Namespace) -> Any:
    """A model by its spec (`fake:<reply>`, `py:<module>:<factory>` or an endpoint model name)."""
    from membase.clients.specs import resolve_chat_model

    return resolve_chat_model(spec, api_config=args.api_config, cache_dir=_call_cache(args), timeout=args.timeout,
                              max_retries=args.max_retries)


def _layer_config(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The layer config; a layer's own model calls go through the run's call cache too."""
    from membase.clients.cached import layer_config_with_cache

    layer_type, memory_config = _load_layer_config(args.layer_config)
    cache = _call_cache(args)
    if cache is not None:
        memory_config = layer_config_with_cache(layer_type, memory_config, str(Path(cache) / "layer"))
    return layer_type, memory_config


def _call_cache(args: argparse.Namespace) -> str | None:
    """`--cache-dir`, else `<output-dir>/call_cache` (what makes the run cheap to replay), unless `--no-call-cache`."""
    from membase.replay.manifest import CACHE_FOLDER

    if getattr(args, "no_call_cache", False):
        return None
    return getattr(args, "cache_dir", None) or str(Path(args.output_dir) / CACHE_FOLDER)


def _fan_out(args: argparse.Namespace) -> Any:
    """Where the trajectories run (`--workers`, `--executor`, `--ray-address`)."""
    import importlib.util

    from membase.runners._executors import FanOut, ray_missing_message

    if args.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(ray_missing_message())
    return FanOut(workers=args.workers, executor=args.executor, ray_address=args.ray_address)


def _paths(args: argparse.Namespace) -> tuple[str, str]:
    out = Path(args.output_dir)
    for folder in (out, out / "memory", out / "traced_data"):
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"--output-dir: {str(folder)!r} is a file, where the run keeps a folder")
    cache = _call_cache(args)
    if cache is not None and Path(cache).exists() and not Path(cache).is_dir():
        flag = "--cache-dir" if getattr(args, "cache_dir", None) else "--output-dir"
        raise ConfigError(f"{flag}: {cache!r} is a file, where the run keeps its call cache folder")
    return str(out / "memory"), str(out / "traced_data")


def _construct(args: argparse.Namespace, online: Any = None) -> dict[str, Any]:
    from membase.runners import ConstructionRunner, ConstructionRunnerConfig

    layer_type, memory_config = _layer_config(args)
    save_dir, traced = _paths(args)
    config = ConstructionRunnerConfig(
        layer_type=layer_type, memory_config=memory_config, save_dir=save_dir, traced_data_save_dir=traced,
        tracing=args.tracing, num_workers=args.num_workers, rerun=args.rerun, fail_fast=args.fail_fast,
        show_progress=not args.quiet,
    )
    if _is_online(args):
        return _construct_online(args, config, online)
    runner = ConstructionRunner(config, fan_out=_fan_out(args))
    return runner.run(_dataset(args)).as_dict()


def _construct_online(args: argparse.Namespace, config: Any, online: Any) -> dict[str, Any]:
    """Online questions are asked inside construction, one trajectory after another in this process."""
    from membase.runners.online import OnlineConstructionRunner

    if online is None:
        logger.warning("%s questions are asked only by `run`; `construct` builds the memory and skips them",
                       args.dataset_type)
    return OnlineConstructionRunner(config, online).run(_dataset(args)).as_dict()


def _search_runner(args: argparse.Namespace) -> Any:
    from membase.runners import SearchRunner, SearchRunnerConfig

    layer_type, memory_config = _layer_config(args)
    save_dir, traced = _paths(args)
    return SearchRunner(SearchRunnerConfig(
        layer_type=layer_type, memory_config=memory_config, save_dir=save_dir, traced_data_save_dir=traced,
        top_k=args.top_k, tracing=args.tracing, skip_question_types=args.skip_question_types,
        start_idx=args.start_idx, end_idx=args.end_idx, show_progress=not args.quiet,
    ), fan_out=_fan_out(args))


def _search(args: argparse.Namespace) -> dict[str, Any]:
    _refuse_online(args, "search")
    return _search_runner(args).run(_dataset(args)).as_dict()


def _evaluation_config(args: argparse.Namespace, results: str) -> Any:
    from membase.runners import EvaluationRunnerConfig

    _, traced = _paths(args)
    metrics = args.metrics.split(",") if args.metrics else ["f1", "bleu", "llm_judge"]
    return EvaluationRunnerConfig(
        search_results_path=results, dataset_type=args.dataset_type, traced_data_save_dir=traced,
        tracing=args.tracing, qa_batch_size=args.qa_batch_size, judge_batch_size=args.judge_batch_size,
        metrics=metrics, show_progress=not args.quiet,
    )


def _evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from membase.runners import EvaluationRunner

    if args.search_results is None:
        _refuse_online(args, "evaluation")
    results = args.search_results or str(_search_runner(args).results_path)
    if args.dataset_type == "auto":
        args.dataset_type = _dataset_type_of_results(results)
    config = _evaluation_config(args, results)
    runner = EvaluationRunner(
        config,
        qa_model=_chat_model(args.qa_model, args),
        judge_model=_chat_model(args.judge_model, args) if "llm_judge" in config.metrics else None,
        fan_out=_fan_out(args),
    )
    return runner.run().as_dict()


def _dataset_type_of_results(results: str) -> str:
    """The dataset of a search results file, told by its users' ids (it picks the judge template)."""
    from membase.datasets import dataset_type_of_user

    try:
        user = str(json.loads(Path(results).read_text(encoding="utf-8"))[0]["user_id"])
    except (OSError, ValueError, LookupError, TypeError):
        return "LoCoMo"  # the evaluation runner reports an unreadable or empty file itself
    return dataset_type_of_user(user) or "LoCoMo"


def _run_online(args: argparse.Namespace) -> dict[str, Any]:
    """Construction asks each question where the conversation reaches it (RealMem)."""
    from membase.runners.online import OnlineEvaluator

    search = _search_runner(args)
    config = _evaluation_config(args, str(search.results_path))
    online = OnlineEvaluator(
        dataset=_dataset(args), search=search.config, evaluation=config, qa_model=_chat_model(args.qa_model, args),
        judge_model=_chat_model(args.judge_model, args) if "llm_judge" in config.metrics else None,
    )
    construction = _construct(args, online)
    return {"construction": construction, "search": online.search_report.as_dict(),
            "evaluation": online.evaluation_report.as_dict()}


def _run(args: argparse.Namespace) -> dict[str, Any]:
    if _is_online(args):
        return _run_online(args)
    from membase.runners._executors import shared_workers

    with shared_workers(_fan_out(args)):  # the three stages start their worker processes once
        summary = {"construction": _construct(args), "search": _search(args), "evaluation": _evaluate(args)}
    _write_replay_manifest(args)
    return summary


def _write_replay_manifest(args: argparse.Namespace) -> None:
    """What `run_error_attribution.py --verify replay` and `python -m membase replay` need to run this again."""
    from membase.replay.manifest import RunManifest, write_manifest

    layer_type, memory_config = _load_layer_config(args.layer_config)
    out = Path(args.output_dir)
    results = Path(_search_runner(args).results_path)
    results = results.with_name(f"{results.stem}_evaluation.json")
    cache = _call_cache(args)
    write_manifest(out, RunManifest(
        layer_type=layer_type, memory_config=memory_config, dataset=str(Path(args.dataset).resolve()),
        dataset_type=args.dataset_type, start_idx=args.start_idx, end_idx=args.end_idx,
        sample_size=args.sample_size, seed=args.seed, max_messages=args.max_messages, top_k=args.top_k,
        skip_question_types=list(args.skip_question_types), qa_model=args.qa_model, judge_model=args.judge_model,
        metrics=args.metrics.split(",") if args.metrics else ["f1", "bleu", "llm_judge"],
        api_config=str(Path(args.api_config).resolve()) if args.api_config else None,
        timeout=args.timeout, max_retries=args.max_retries,
        cache_dir=None if cache is None else _relative_to(Path(cache), out),
        results_file=_relative_to(results, out),
    ))


def _relative_to(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path.resolve())


def _replay(args: argparse.Namespace) -> dict[str, Any]:
    """`replay RUN --check`: run the whole run again with no repair; every answer and verdict must repeat."""
    from membase.replay import RunReplayer

    replayer = RunReplayer(args.run_dir, allow_new_calls=not args.offline)
    report = replayer.check(progress=None if args.quiet else lambda line: print(line, file=sys.stderr))
    return {"replay_check": report}


def _add_common(p: argparse.ArgumentParser, *, needs_layer: bool = True) -> None:
    if needs_layer:
        p.add_argument("--layer-config", required=True, help="JSON file: {\"layer_type\": ..., fields...}")
    p.add_argument("--dataset", default="../shared/data/locomo/locomo10.json",
                   help="dataset file (or a folder of RealMem persona files); see docs/datasets.md")
    p.add_argument("--dataset-type", default="auto", metavar="{auto,LoCoMo,LongMemEval,RealMem}",
                   help="format of --dataset; auto (the default) tells it by the file's shape")
    p.add_argument("--start-idx", type=int, default=None, help="first trajectory of the slice (0-based)")
    p.add_argument("--end-idx", type=int, default=None, help="end of the slice (exclusive)")
    p.add_argument("--sample-size", type=int, default=None, help="sample this many trajectories of the slice")
    p.add_argument("--seed", type=int, default=42, help="seed of --sample-size")
    p.add_argument("--max-messages", type=positive_int, default=None,
                   help="cut each trajectory to its first N messages (questions whose evidence lies beyond are dropped)")
    p.add_argument("--output-dir", default="runs/membase", help="root of memories, results and graphs")
    p.add_argument("--tracing", action=argparse.BooleanOptionalAction, default=True,
                   help="record the execution graphs (default: on)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _add_fan_out(p)


def _add_fan_out(p: argparse.ArgumentParser) -> None:
    from membase.runners._executors import EXECUTORS

    p.add_argument("--workers", type=positive_int, default=None,
                   help="trajectories run at the same time in worker processes (default 1: in this process); "
                   "with --executor ray, Ray tasks in flight (default: the cluster's CPUs). Outputs are the "
                   "same as with one worker; see docs/fanout.md")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: this machine; ray: a Ray cluster (pip install 'memtrace-llm[ray]')")
    p.add_argument("--ray-address", default=None,
                   help="Ray cluster to join (auto, ray://host:10001); default: start a local Ray instance")


def _add_search(p: argparse.ArgumentParser) -> None:
    p.add_argument("--top-k", type=positive_int, default=10, help="memories retrieved per question")
    p.add_argument("--skip-question-types", nargs="*", default=[], help="e.g. adversarial")


def _add_construct(p: argparse.ArgumentParser) -> None:
    p.add_argument("--num-workers", type=positive_int, default=1,
                   help="users built at the same time in threads of this process (default: 1)")
    p.add_argument("--rerun", action="store_true", help="rebuild users whose memory is saved")
    p.add_argument("--fail-fast", action="store_true", help="stop a user at its first failing message")


def _add_evaluate(p: argparse.ArgumentParser, *, standalone: bool) -> None:
    if standalone:
        p.add_argument("--search-results", default=None,
                       help="results file of the search stage (default: derived from the other flags)")
    p.add_argument("--qa-model", default="gpt-4.1-mini", help="model name, or fake:<fixed reply>")
    p.add_argument("--judge-model", default="gpt-4.1-mini", help="model name, or fake:<fixed reply>")
    p.add_argument("--api-config", default=None, help='api_config.json {"api_keys": [...], "base_urls": [...]}')
    p.add_argument("--cache-dir", default=None,
                   help="replay identical model calls from this folder (default: <output-dir>/call_cache)")
    p.add_argument("--no-call-cache", action="store_true",
                   help="keep no call cache (a later replay then pays for every call again)")
    p.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per model request")
    p.add_argument("--max-retries", type=non_negative_int, default=3, help="retries of a failing model request")
    p.add_argument("--qa-batch-size", type=positive_int, default=4,
                   help="model calls answering questions at the same time, per user")
    p.add_argument("--judge-batch-size", type=positive_int, default=4,
                   help="model calls judging answers at the same time, per user")
    p.add_argument("--metrics", default=None, help="comma list of f1,bleu,llm_judge")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the CLI."""
    parser = argparse.ArgumentParser(prog="python -m membase", description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("construct", help="build memories and graph_construction.json")
    _add_common(p)
    _add_construct(p)
    p = sub.add_parser("search", help="retrieve memories per question and graph_search.json")
    _add_common(p)
    _add_search(p)
    p = sub.add_parser("evaluate", help="answer, score and graph_evaluation.json")
    _add_common(p)
    _add_search(p)
    _add_evaluate(p, standalone=True)
    p = sub.add_parser("run", help="construct, search and evaluate")
    _add_common(p)
    _add_construct(p)
    _add_search(p)
    _add_evaluate(p, standalone=False)
    p.set_defaults(search_results=None)
    p = sub.add_parser("replay", help="run a run folder again (--check: with no repair every answer must repeat)",
                       description="Re-execute a run of `python -m membase run` from its replay_manifest.json "
                       "through the same runners; calls whose request is unchanged come from the run's call cache. "
                       "Exit 1 when --check finds an answer or verdict that does not repeat.")
    p.add_argument("run_dir", help="the --output-dir of a `python -m membase run`")
    p.add_argument("--check", action="store_true", required=True,
                   help="replay with no repair and compare every prediction and judge label with the run's")
    p.add_argument("--offline", action="store_true",
                   help="make no model request: a call missing from the cache fails its trajectory")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def _check_slice(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject a slice that selects nothing or counts from the end (exits 2 with a usage message)."""
    if args.command == "replay":
        return
    start, end = args.start_idx, args.end_idx
    for flag, value in (("--start-idx", start), ("--end-idx", end)):
        if value is not None and value < 0:
            parser.error(f"{flag} must be >= 0, got {value}")
    if start is not None and end is not None and start >= end:
        parser.error(f"--start-idx ({start}) must be smaller than --end-idx ({end}); the slice would be empty")
    if args.sample_size is not None and args.sample_size < 1:
        parser.error(f"--sample-size must be >= 1, got {args.sample_size}")


def _judged(args: argparse.Namespace) -> bool:
    return not args.metrics or "llm_judge" in args.metrics.split(",")


_IGNORED_FLAGS: tuple[IgnoredFlag, ...] = (
    IgnoredFlag(flags=("--seed",), ignored_when=lambda args: args.command != "replay" and args.sample_size is None,
                mode="without --sample-size", reason="the whole slice runs, nothing is drawn"),
    IgnoredFlag(flags=("--ray-address",), ignored_when=lambda args: args.command != "replay" and args.executor != "ray",
                mode="without --executor ray", reason="the trajectories run on this machine"),
    IgnoredFlag(flags=("--top-k", "--skip-question-types"),
                ignored_when=lambda args: args.command == "evaluate" and args.search_results is not None,
                mode="with --search-results", reason="the given results are evaluated as they are"),
    # a warning: test and benchmark commands keep --judge-model beside --metrics f1 (tests/test_bad_input.py)
    IgnoredFlag(flags=("--judge-model",), ignored_when=lambda args: args.command in ("evaluate", "run") and not _judged(args),
                mode=lambda args: f"with --metrics {args.metrics}", reason="no llm_judge score is asked for",
                warn_only=True),
)
"""Flags that do nothing in the chosen mode (:mod:`membase.utils.flag_rules`)."""

_COMMANDS = {"construct": _construct, "search": _search, "evaluate": _evaluate, "run": _run, "replay": _replay}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    _check_slice(parser, args)
    check_ignored_flags(parser, argv, args, _IGNORED_FLAGS)
    if getattr(args, "no_call_cache", False) and getattr(args, "cache_dir", None):
        parser.error("--no-call-cache and --cache-dir contradict each other: give one of them")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        summary = _COMMANDS[args.command](args)
    except MemBaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; files written so far are complete", file=sys.stderr)
        return 130
    print(json.dumps(_brief(summary), indent=2))
    if "replay_check" in summary and not summary["replay_check"]["reproduced"]:
        return 1
    return 0


def _brief(summary: dict[str, Any]) -> dict[str, Any]:
    if "replay_check" in summary:
        return summary
    if "stage" not in summary:
        return {k: _brief(v) for k, v in summary.items()}
    brief = {
        "stage": summary["stage"], "users_done": len(summary["users_done"]),
        "users_skipped": len(summary["users_skipped"]), "users_failed": summary["users_failed"],
        "items_done": summary["items_done"], "failures": len(summary["failures"]), "outputs": summary["outputs"][:3],
    }
    if summary.get("metrics"):
        brief["metrics"] = {k: {n: _round(v) for n, v in m.items()} for k, m in summary["metrics"].items()}
    return brief


def _round(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    return round(value, 4) if isinstance(value, float) else value


def cli() -> None:
    """Console-script entry point."""
    sys.exit(main())
