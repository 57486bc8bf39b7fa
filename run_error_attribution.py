"""Attribute the failed cases of a MemTraceBench split and score the attributions (spec §6).

Example::

    python run_error_attribution.py data/MemTraceBench evermemos --output-path out/evermemos.json \\
        --model-name gpt-4.1-mini --api-config-path api_config.json --batch-size 4 --cache-dir runs/cache

The output JSON has the reference layout (``split``, ``sampled_graph_paths``, ``results``,
``metrics`` with ETA, OIA, ``cases_by_graph`` and ``error_attribution_cost``) extended with
joint accuracy, per-error-type and per-source breakdowns, the confusion matrix, failure counts,
bootstrap 95 % intervals, and per-case failure records. A case whose attribution fails is
recorded and counted wrong; the run goes on. With ``--cache-dir`` a rerun skips finished cases.

The output file is also written (atomically) as cases finish, with ``"complete": false``, so
an interrupted or crashed run keeps every finished case even without ``--cache-dir``. A failed
case has ``error_attribution_result = {"error_type": "", "op_id": "", "reason": <failure>}`` and
``attribution_failure`` set.

Exit codes: 0 output written; 2 bad arguments, data, or an unwritable output/cache folder;
130 interrupted (the finished cases are in the output file, and in the cache if one is set).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import random
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

__all__ = ["build_parser", "cli", "main"]

SPLITS = MEMTRACEBENCH_SPLITS
STRATEGIES = ("graph_search", "operation_block_search", "long_context", "evidence_flow")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (reference flags of spec §6.1 plus new ones)."""
    from toolkits._cli import add_retrieval_arguments, positive_int

    p = argparse.ArgumentParser(
        prog="run_error_attribution.py",
        description="Attribute MemTraceBench failed cases to their earliest decisive faulty operation.",
    )
    p.add_argument("dataset_dir", help="MemTraceBench folder holding <split>/*.json")
    p.add_argument("split", choices=SPLITS)
    p.add_argument("--output-path", required=True, help="output JSON file (must end in .json)")
    p.add_argument("--sample-size", type=positive_int, default=None, help="number of graphs to sample (default: all)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--batch-size", type=positive_int, default=4, help="cases attributed concurrently")
    p.add_argument("--provide-starting-nodes", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument(
        "--starting-nodes-type", choices=("pseudo_source_evidence", "source_evidence"), default="pseudo_source_evidence"
    )
    p.add_argument("--use-system-prior", action=argparse.BooleanOptionalAction, default=False)
    p.add_argument(
        "--custom-prior", default=None, help="prior knowledge replacing the built-in one (text, or a path to a text file)"
    )
    p.add_argument("--exploration-strategy", default="graph_search", help=f"one of {', '.join(STRATEGIES)} or a registered name")
    p.add_argument("--model-name", default="gpt-4.1-mini")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--max-tokens", type=positive_int, default=None, help="output-token cap per model call")
    p.add_argument("--llama-cpp-compat", action="store_true", help="workarounds for a llama.cpp server endpoint")
    p.add_argument("--max-trace-nodes", type=positive_int, default=16)
    p.add_argument("--max-iters", type=positive_int, default=200)
    p.add_argument("--context-window", type=positive_int, default=272000)
    p.add_argument("--max-context-limit", type=positive_int, default=1000000)
    p.add_argument("--keep-recent", type=int, default=3)
    p.add_argument("--full-log-token-limit", type=positive_int, default=600000)
    add_retrieval_arguments(p)
    p.add_argument("--num-starting-points", type=int, default=None, help="retrieved evidence nodes (default: max_trace_nodes // 2)")
    p.add_argument("--studio-url", default=None, help="accepted for compatibility; Studio forwarding is not implemented")
    p.add_argument("--project", default="memtrace")
    p.add_argument("--api-config-path", default=None, help='JSON {"api_keys": [...], "base_urls": [...]}')
    p.add_argument("--cache-dir", default=None, help="per-case result cache; a rerun skips finished cases")
    p.add_argument("--max-retries", type=int, default=3, help="retries of a case after a transient API failure")
    p.add_argument("--retry-backoff", type=float, default=2.0, help="first retry delay in seconds (doubles)")
    p.add_argument("--case-timeout", type=float, default=None, help="seconds allowed per attempt of one case")
    p.add_argument(
        "--evidence-flow-seed",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="graph_search: start from the no-LLM evidence_flow trail and pass its suspicion as a hint to verify",
    )
    p.add_argument("--bootstrap-samples", type=int, default=1000, help="resamples for 95%% intervals (0: none)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="show a progress bar")
    return p


def _read_text_or_file(value: str | None) -> str | None:
    """The prior text: the file's content when ``value`` names a file, else ``value`` itself.

    Raises:
        ValueError: When ``value`` looks like a path (ends in ``.txt``/``.md`` or contains a
            path separator) but no such file can be read.
    """
    if value is None:
        return None
    path = Path(value)
    looks_like_path = value.strip().lower().endswith((".txt", ".md")) or any(
        sep in value for sep in {"/", "\\", os.sep} if sep
    )
    try:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    except OSError as exc:
        if looks_like_path:
            raise ValueError(f"--custom-prior file {value!r} cannot be read: {exc}") from exc
    if looks_like_path and "\n" not in value:
        raise ValueError(f"--custom-prior {value!r} looks like a path but no such file exists")
    return value


def _sample(graphs: list[Any], cases: list[Any], sample_size: int | None, seed: int) -> tuple[list[Any], list[Any]]:
    """Keep all cases of ``sample_size`` graphs drawn with ``random.Random(seed)`` (reference rule)."""
    if sample_size is None:
        return graphs, cases
    ids: list[str] = []
    for g in graphs:
        if g.graph_id not in ids:
            ids.append(g.graph_id)
    if not 1 <= sample_size <= len(ids):
        raise ValueError(f"--sample-size must be between 1 and the number of graphs ({len(ids)}), got {sample_size}")
    chosen = set(random.Random(seed).sample(ids, sample_size))
    keep = [i for i, g in enumerate(graphs) if g.graph_id in chosen]
    return [graphs[i] for i in keep], [cases[i] for i in keep]


def _graph_path(dataset_dir: str, split: str, case: Any) -> str:
    # Derived from the file the case came from: the reference read graph metadata that the
    # loader never sets (spec §12.9).
    name = case.metadata.get("graph_filename") or Path(case.metadata.get("graph_path", "unknown.json")).name
    return str(Path(dataset_dir) / split / name)


def build_output(
    args: argparse.Namespace,
    cases: Sequence[Any],
    report: Any,
    *,
    secrets: Sequence[str] = (),
    complete: bool = True,
    bootstrap_samples: int | None = None,
) -> dict[str, Any]:
    """The output JSON of spec §6.4, extended (see module docstring).

    Only the free text MemTrace writes (failures, the prediction's fields) is redacted; the
    benchmark's own text is copied unchanged. ``complete`` is False for the checkpoints written
    while the run goes on.
    """
    from toolkits._base import redact
    from toolkits.metrics import AttributionRecord, attribution_metrics

    records: list[dict[str, Any]] = []
    scored: list[AttributionRecord] = []
    for case, result in zip(cases, report.results, strict=True):
        annotation = copy.deepcopy(case.metadata.get("annotation") or {})
        record = dict(annotation)
        record["graph_path"] = _graph_path(args.dataset_dir, args.split, case)
        failure = redact(result.failure, secrets) if result.failure is not None else None
        if result.prediction is not None and failure is None:
            prediction = {k: redact(str(v), secrets) for k, v in result.prediction.items()}
        else:
            # the reference layout always has a dict here; attribution_failure flags the case
            prediction = {"error_type": "", "op_id": "", "reason": failure or "no prediction"}
        record["error_attribution_result"] = prediction
        scoring = AttributionRecord.from_result(
            {**annotation, "error_attribution_result": prediction, "attribution_failure": failure},
            group=str(case.metadata.get("dataset_source") or "unknown"),
        )
        record["is_error_type_correct"] = scoring.type_correct
        record["is_op_id_correct"] = scoring.op_correct
        record["attribution_failure"] = failure
        record["attribution_attempts"] = result.attempts
        record["attribution_seconds"] = result.elapsed_seconds
        record["attribution_cached"] = result.cached
        record["attribution_usage"] = result.usage
        record["starting_evidence_ids"] = result.evidence_ids
        records.append(record)
        scored.append(scoring)
    samples = args.bootstrap_samples if bootstrap_samples is None else bootstrap_samples
    metrics = attribution_metrics(scored, bootstrap_samples=samples, seed=args.seed)
    by_graph = Counter(r["graph_path"] for r in records)
    ordered_metrics: dict[str, Any] = {
        "total_cases": metrics.pop("total_cases"),
        "error_type_prediction_accuracy": metrics.pop("error_type_prediction_accuracy"),
        "operation_identifier_prediction_accuracy": metrics.pop("operation_identifier_prediction_accuracy"),
        "cases_by_graph": dict(sorted(by_graph.items())),
        "error_attribution_cost": report.costs.as_reference(),
        **metrics,
        "by_dataset_source": metrics.pop("by_group"),
        "cost_totals": {k: v for k, v in report.costs.to_dict().items() if not k.startswith("average_")},
        "failures": [
            {"query_id": r.get("query_id"), "graph_path": r["graph_path"], "failure": r["attribution_failure"]}
            for r in records
            if r["attribution_failure"] is not None
        ],
    }
    ordered_metrics.pop("by_group", None)
    return {
        "complete": complete,
        "split": args.split,
        "exploration_strategy": args.exploration_strategy,
        "model": args.model_name,
        "sampled_graph_paths": sorted(by_graph),
        "results": records,
        "metrics": ordered_metrics,
    }


class _PartialReport:
    """The finished cases of a run in progress, shaped like :class:`toolkits.runner.RunReport`."""

    def __init__(self, results: list[Any]) -> None:
        from toolkits.runner import RunCosts

        self.results = results
        self.costs = RunCosts()
        for r in results:
            if r.cached:
                self.costs.cached_cases += 1
                continue
            self.costs.executed_cases += 1
            self.costs.failed_cases += 0 if r.ok else 1
            self.costs.total_input_tokens += r.usage["input_tokens"]
            self.costs.total_output_tokens += r.usage["output_tokens"]
            self.costs.total_model_calls += r.usage["num_calls"]
            self.costs.total_seconds += r.elapsed_seconds


def _probe_folder(folder: Path) -> None:
    """Create ``folder`` and write/remove a probe file in it (raises OSError if impossible)."""
    import tempfile

    folder.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=str(folder))
    os.close(fd)
    os.unlink(probe)


def _config(args: argparse.Namespace) -> Any:
    from toolkits.runner import MemTraceConfig

    return MemTraceConfig(
        model=args.model_name,
        temperature=args.temperature,
        stream=args.stream,
        studio_url=args.studio_url,
        project=args.project,
        api_config_path=args.api_config_path,
        exploration_strategy=args.exploration_strategy,
        context_window=args.context_window,
        max_context_limit=args.max_context_limit,
        full_log_token_limit=args.full_log_token_limit,
        keep_recent=args.keep_recent,
        max_trace_nodes=args.max_trace_nodes,
        max_iters=args.max_iters,
        max_tokens=args.max_tokens,
        llama_cpp_compat=args.llama_cpp_compat,
        embedding_provider=args.embedding_provider,
        embedding_model_name=args.embedding_model_name,
        embedding_dimensions=args.embedding_dimensions,
        embedding_base_url=args.embedding_base_url,
        embedding_api_key=args.embedding_api_key,
        embedding_batch_size=args.embedding_batch_size,
        embedding_cache_dir=args.embedding_cache_dir,
        retrieval_type=args.retrieval_type,
        retrieval_algorithm=args.retrieval_algorithm,
        starting_point_query_type=args.starting_point_query_type,
        num_starting_points=args.num_starting_points,
        candidate_multiplier=args.candidate_multiplier,
        cache_dir=args.cache_dir,
        max_retries=args.max_retries,
        retry_backoff_s=args.retry_backoff,
        case_timeout_s=args.case_timeout,
        evidence_flow_seed=args.evidence_flow_seed,
    )


def main(argv: Sequence[str] | None = None, *, model_factory: Callable[[Any], Any] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).
        model_factory: Builds each case's chat model (tests pass scripted models); default: an
            OpenAI-compatible model from the credential pool.

    Returns:
        The exit code.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.output_path.endswith(".json"):
        parser.error(f"--output-path must end in .json, got {args.output_path!r}")
    if args.studio_url:
        warnings.warn("--studio-url is accepted for compatibility but Studio forwarding is not implemented", stacklevel=1)

    from pydantic import ValidationError

    from toolkits._base import CredentialError
    from toolkits._case_cache import CaseCache, atomic_write_json
    from toolkits.bench_utils import BenchmarkDataMissingError, load_memtracebench
    from toolkits.runner import MemTraceRunner
    from toolkits.strategies import available_strategies

    if args.exploration_strategy not in available_strategies():
        parser.error(
            f"unknown --exploration-strategy {args.exploration_strategy!r}: use one of {', '.join(available_strategies())}"
        )
    try:
        config = _config(args)
    except ValidationError as exc:
        print(f"error: invalid settings: {exc.errors()[0]['loc'][0]}: {exc.errors()[0]['msg']}", file=sys.stderr)
        return 2
    try:
        graphs, cases = load_memtracebench(args.dataset_dir, args.split, filter_non_memory_errors=True)
    except (BenchmarkDataMissingError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not cases:
        print(f"error: split {args.split!r} under {args.dataset_dir} has no memory-error cases", file=sys.stderr)
        return 2
    try:
        graphs, cases = _sample(graphs, cases, args.sample_size, args.seed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    try:
        custom_prior = _read_text_or_file(args.custom_prior)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        _probe_folder(Path(args.output_path).parent)
    except OSError as exc:
        print(f"error: cannot write --output-path {args.output_path!r}: {exc}", file=sys.stderr)
        return 2
    if args.cache_dir:
        try:
            CaseCache(args.cache_dir).check_writable()
        except OSError as exc:
            print(f"error: --cache-dir {args.cache_dir!r} is not writable: {exc}", file=sys.stderr)
            return 2

    runner = MemTraceRunner(config, model_factory=model_factory)

    def secrets() -> list[str]:
        found = list(runner.api_pool.secrets) if runner.api_pool else []
        if args.embedding_api_key:
            found.append(args.embedding_api_key)
        return found

    bar = None
    if args.progress:
        from tqdm import tqdm

        bar = tqdm(total=len(cases), desc=f"attributing {args.split}", unit="case", file=sys.stderr)

    failures = [0]
    finished: dict[int, Any] = {}
    checkpoint_warned = [False]

    def checkpoint() -> None:
        # every finished case reaches the output file, so Ctrl-C or a crash loses none of them
        order = sorted(finished)
        partial = _PartialReport([finished[i] for i in order])
        output = build_output(
            args, [cases[i] for i in order], partial, secrets=secrets(), complete=False, bootstrap_samples=0
        )
        atomic_write_json(args.output_path, output)

    def on_result(result: Any) -> None:
        finished[result.index] = result
        if bar is not None:
            failures[0] += 0 if result.ok else 1
            bar.update(1)
            bar.set_postfix(failed=failures[0], refresh=False)
        try:
            checkpoint()
        except OSError as exc:
            if not checkpoint_warned[0]:
                checkpoint_warned[0] = True
                warnings.warn(f"could not checkpoint results to {args.output_path}: {exc}", stacklevel=1)

    provide = args.provide_starting_nodes
    try:
        report = asyncio.run(
            runner.arun(
                cases,
                graphs,
                batch_size=args.batch_size,
                use_source_evidence_nodes=provide and args.starting_nodes_type == "source_evidence",
                use_pseudo_source_evidence=provide and args.starting_nodes_type == "pseudo_source_evidence",
                memory_system=args.split if args.use_system_prior else None,
                custom_prior_knowledge=custom_prior,
                on_result=on_result,
            )
        )
    except CredentialError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = f"the {len(finished)} finished case(s) are in {args.output_path}"
        if args.cache_dir:
            print(f"interrupted: {kept} and the cache; rerun the same command to resume", file=sys.stderr)
        else:
            print(f"interrupted: {kept} (pass --cache-dir to let a rerun skip finished cases)", file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()

    output = build_output(args, cases, report, secrets=secrets())
    atomic_write_json(args.output_path, output)
    m = output["metrics"]
    print(
        f"{m['total_cases']} cases ({m['failed_cases']} failed): "
        f"ETA={m['error_type_prediction_accuracy']:.4f} OIA={m['operation_identifier_prediction_accuracy']:.4f} "
        f"joint={m['joint_accuracy']:.4f} -> {args.output_path}"
    )
    return 0


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    print(f"warning: {message}", file=sys.stderr)


def cli() -> None:
    """Console-script entry point (warnings print as one line each)."""
    warnings.showwarning = _print_warning
    sys.exit(main())


if __name__ == "__main__":
    cli()
