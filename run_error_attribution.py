"""Attribute failed questions to their earliest decisive faulty operation, and score the attributions.

Two kinds of input (spec §6, extended):

* a MemTraceBench folder and a split (``<dataset_dir>/<split>/*.json``, annotated cases with gold
  labels): the output has the reference layout (``split``, ``sampled_graph_paths``, ``results``,
  ``metrics`` with ETA, OIA, ``cases_by_graph`` and ``error_attribution_cost``) extended with
  joint accuracy, per-error-type and per-source breakdowns, the confusion matrix, failure counts,
  bootstrap 95 % intervals, and per-case failure records;
* a run folder written by ``python -m membase run … --output-dir DIR`` (its
  ``traced_data/<user>/graph_evaluation.json`` files, no annotations; the split is optional and
  defaults to the layer's): the wrongly answered questions are collected from the graphs' judge
  operations (adversarial ones skipped) and attributed; the output has the same layout without
  gold-label metrics, with a prediction distribution instead (counts per error type, per blamed
  operation name and category, failures).

Example::

    python run_error_attribution.py data/MemTraceBench evermemos --output-path out/evermemos.json \\
        --model-name gpt-4.1-mini --api-config-path api_config.json --batch-size 4 --cache-dir runs/cache
    python run_error_attribution.py runs/lc --exploration-strategy evidence_flow --output-path runs/lc_attr.json

A case whose attribution fails is recorded (``attribution_failure``, and an
``error_attribution_result`` of empty strings with the failure as reason) and counted wrong; the
run goes on. Every finished case is appended at once to a journal beside the output
(``<output>.journal.jsonl``); the output file is written atomically when the run ends or is
interrupted, and the journal is then removed (kept after an interruption or a crash). A rerun of
the same command reuses the journal's finished cases (``--no-resume`` starts afresh); with
``--cache-dir`` finished cases are also reused across outputs.

Exit codes: 0 output written; 1 the output could not be written at the end (the finished cases
are in the journal); 2 bad arguments, data, or an unwritable output/cache folder; 130
interrupted (the finished cases are in the output file and the journal).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import functools
import os
import random
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

__all__ = ["build_output", "build_parser", "build_record", "cli", "main"]

SPLITS = MEMTRACEBENCH_SPLITS
STRATEGIES = ("graph_search", "operation_block_search", "long_context", "evidence_flow")
EXIT_OK, EXIT_WRITE_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


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
    p.add_argument("--temperature", type=non_negative_float, default=1.0)
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--max-tokens", type=positive_int, default=None, help="output-token cap per model call")
    p.add_argument("--llama-cpp-compat", action="store_true", help="workarounds for a llama.cpp server endpoint")
    p.add_argument("--max-trace-nodes", type=positive_int, default=16)
    p.add_argument("--max-iters", type=positive_int, default=200)
    p.add_argument("--context-window", type=positive_int, default=272000)
    p.add_argument("--max-context-limit", type=positive_int, default=1000000)
    p.add_argument("--keep-recent", type=non_negative_int, default=3)
    p.add_argument("--full-log-token-limit", type=positive_int, default=600000)
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
    p.add_argument("--project", default="memtrace")
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
    except (OSError, UnicodeDecodeError) as exc:
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


def _graph_path(args: argparse.Namespace, case: Any) -> str:
    if getattr(args, "run_mode", False):
        return str(case.metadata.get("graph_path"))
    # Derived from the file the case came from: the reference read graph metadata that the
    # loader never sets (spec §12.9).
    name = case.metadata.get("graph_filename") or Path(case.metadata.get("graph_path", "unknown.json")).name
    return str(Path(args.dataset_dir) / args.split / name)


def _operation_info(graph: Any, op_id: str) -> dict[str, Any] | None:
    """Name and category of the blamed operation (None when the id is empty or unknown)."""
    if not op_id or graph is None:
        return None
    try:
        op = graph.get_operation(op_id)
    except (KeyError, LookupError, AttributeError):
        return None
    return {"op_name": op.op_name, "category": op.category}


def build_record(
    args: argparse.Namespace, case: Any, result: Any, *, secrets: Sequence[str] = (), graph: Any = None
) -> dict[str, Any]:
    """The output record of one case (spec §6.4, extended).

    Only the free text MemTrace writes (failures, the prediction's fields) is redacted; the
    benchmark's own text is copied unchanged.
    """
    from toolkits._base import redact
    from toolkits.metrics import AttributionRecord

    annotation = copy.deepcopy(case.metadata.get("annotation") or {})
    record = dict(annotation)
    record["graph_path"] = _graph_path(args, case)
    failure = redact(result.failure, secrets) if result.failure is not None else None
    if result.prediction is not None and failure is None:
        prediction = {k: redact(str(v), secrets) for k, v in result.prediction.items()}
    else:
        # the reference layout always has a dict here; attribution_failure flags the case
        prediction = {"error_type": "", "op_id": "", "reason": failure or "no prediction"}
    record["error_attribution_result"] = prediction
    if not getattr(args, "run_mode", False):
        scoring = AttributionRecord.from_result({**annotation, "error_attribution_result": prediction,
                                                 "attribution_failure": failure})
        record["is_error_type_correct"] = scoring.type_correct
        record["is_op_id_correct"] = scoring.op_correct
    record["attributed_operation"] = _operation_info(graph, prediction["op_id"]) if failure is None else None
    record["attribution_failure"] = failure
    record["attribution_attempts"] = result.attempts
    record["attribution_seconds"] = result.elapsed_seconds
    record["attribution_cached"] = result.cached
    record["attribution_usage"] = result.usage
    record["starting_evidence_ids"] = result.evidence_ids
    for name, detail in (getattr(result, "details", None) or {}).items():
        record.setdefault(name, detail)  # never over a field of the benchmark or of the record
    return record


def _costs_of(results: Sequence[Any]) -> Any:
    """Run costs of a set of finished results (what the runner reports for a whole run)."""
    from toolkits.runner import RunCosts

    costs = RunCosts()
    for r in results:
        if r.cached:
            costs.cached_cases += 1
            continue
        costs.executed_cases += 1
        costs.failed_cases += 0 if r.ok else 1
        costs.total_input_tokens += r.usage["input_tokens"]
        costs.total_output_tokens += r.usage["output_tokens"]
        costs.total_model_calls += r.usage["num_calls"]
        costs.total_seconds += r.elapsed_seconds
    return costs


def _assemble(
    args: argparse.Namespace,
    cases: Sequence[Any],
    records: Sequence[dict[str, Any]],
    costs: Any,
    *,
    complete: bool,
    bootstrap_samples: int | None = None,
    extra_metrics: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The output JSON from finished records (one pass; called once per run, or on interrupt)."""
    from toolkits.metrics import (
        AttributionRecord,
        attribution_metrics,
        non_memory_counts,
        non_memory_kind,
        prediction_distribution,
    )

    by_graph = Counter(r["graph_path"] for r in records)
    failures = [
        {"query_id": r.get("query_id"), "graph_path": r["graph_path"], "failure": r["attribution_failure"]}
        for r in records
        if r["attribution_failure"] is not None
    ]
    common = {
        "cases_by_graph": dict(sorted(by_graph.items())),
        "error_attribution_cost": costs.as_reference(),
    }
    totals = {k: v for k, v in costs.to_dict().items() if not k.startswith("average_")}
    if getattr(args, "run_mode", False):
        predictions = [
            None if r["attribution_failure"] is not None else {
                "error_type": r["error_attribution_result"]["error_type"],
                "op_name": (r.get("attributed_operation") or {}).get("op_name"),
                "op_category": (r.get("attributed_operation") or {}).get("category"),
            }
            for r in records
        ]
        distribution = prediction_distribution(predictions)
        metrics: dict[str, Any] = {
            "total_cases": len(records),
            "failed_cases": distribution["failed_cases"],
            "non_memory_errors": non_memory_counts(non_memory_kind(r) for r in records),
            **common,
            "prediction_distribution": distribution,
            **(extra_metrics or {}),
            "cost_totals": totals,
            "failures": failures,
        }
    else:
        scored = [
            AttributionRecord.from_result(r, group=str(c.metadata.get("dataset_source") or "unknown"))
            for c, r in zip(cases, records, strict=True)
        ]
        samples = args.bootstrap_samples if bootstrap_samples is None else bootstrap_samples
        m = attribution_metrics(scored, bootstrap_samples=samples, seed=args.seed)
        metrics = {
            "total_cases": m.pop("total_cases"),
            "error_type_prediction_accuracy": m.pop("error_type_prediction_accuracy"),
            "operation_identifier_prediction_accuracy": m.pop("operation_identifier_prediction_accuracy"),
            **common,
            **m,
            "by_dataset_source": m.pop("by_group"),
            "cost_totals": totals,
            "failures": failures,
        }
        metrics.pop("by_group", None)
    return {
        "complete": complete,
        "source": "membase_run" if getattr(args, "run_mode", False) else "memtracebench",
        "split": args.split,
        "exploration_strategy": args.exploration_strategy,
        "model": args.model_name,
        "sampled_graph_paths": sorted(by_graph),
        "results": list(records),
        "metrics": metrics,
    }


def build_output(
    args: argparse.Namespace,
    cases: Sequence[Any],
    report: Any,
    *,
    secrets: Sequence[str] = (),
    complete: bool = True,
    bootstrap_samples: int | None = None,
    graphs: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """The output JSON of spec §6.4, extended (see the module docstring), from a whole report."""
    graph_list = list(graphs) if graphs is not None else [None] * len(cases)
    records = [
        build_record(args, case, result, secrets=secrets, graph=graph)
        for case, result, graph in zip(cases, report.results, graph_list, strict=True)
    ]
    return _assemble(args, cases, records, report.costs, complete=complete, bootstrap_samples=bootstrap_samples)


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
        evidence_flow_judge=args.evidence_flow_judge,
        evidence_flow_judge_model=args.evidence_flow_judge_model,
        evidence_flow_triage=args.evidence_flow_triage,
        obs_identities=args.obs_identities,
    )


def _check_judge_credentials(config: Any) -> None:
    """evidence_flow's llm judge calls the run's endpoint: say so before any case runs, not once per case."""
    from toolkits._base import CredentialError, resolve_api_pool

    try:
        resolve_api_pool(config)
    except CredentialError as exc:
        raise _UsageError(f"--evidence-flow-judge llm needs a chat endpoint: {exc}") from None


class _UsageError(Exception):
    """Bad input found before any case runs: printed as one ``error:`` line, exit 2."""


def _load(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """Load the cases (benchmark split or membase run folder); sets ``args.run_mode``/``args.split``."""
    from toolkits.bench_utils import (
        BenchmarkDataMissingError,
        is_membase_run,
        load_membase_run,
        load_memtracebench,
    )

    root = Path(args.dataset_dir)
    if root.exists() and not root.is_dir():  # not a folder to download the benchmark into either
        raise _UsageError(
            f"dataset_dir {str(root)!r} is a file; give a MemTraceBench folder (<dir>/<split>/*.json) or a run "
            "folder of `python -m membase`"
        )
    benchmark_split = args.split is not None and (root / args.split).is_dir()
    args.run_mode = not benchmark_split and is_membase_run(root)
    if args.run_mode:
        try:
            graphs, cases, info = load_membase_run(root)
        except ValueError as exc:
            raise _UsageError(str(exc)) from None
        args.split = args.split or info["split"]
        if not cases:
            raise _UsageError(
                f"{root}: no wrongly answered question to attribute ({info['judged_failures']} judged wrong, "
                f"{info['skipped_adversarial']} of them adversarial and skipped)"
            )
        extra = {"judged_failures": info["judged_failures"], "skipped_adversarial": info["skipped_adversarial"]}
        return graphs, cases, extra
    if args.split is None:
        parser.error(
            f"{root} is not a run folder of `python -m membase` (no traced_data/<user>/graph_evaluation.json): "
            f"give the MemTraceBench split ({', '.join(SPLITS)})"
        )
    try:
        graphs, cases = load_memtracebench(args.dataset_dir, args.split, filter_non_memory_errors=True)
    except (BenchmarkDataMissingError, ValueError) as exc:
        raise _UsageError(str(exc)) from None
    if not cases:
        raise _UsageError(f"split {args.split!r} under {args.dataset_dir} has no memory-error cases")
    return graphs, cases, {}


def _check_output(output: Path, cache_dir: str | None) -> None:
    """Every output location must be writable before any case runs (raises _UsageError)."""
    from toolkits._case_cache import CaseCache
    from toolkits._journal import journal_path

    if output.is_dir():
        raise _UsageError(f"--output-path {str(output)!r} is a folder; give a .json file path")
    if journal_path(output).is_dir():
        raise _UsageError(f"{str(journal_path(output))!r} is a folder; it is where the run journals finished cases")
    try:
        _probe_folder(output.parent)
    except OSError as exc:
        raise _UsageError(f"cannot write --output-path {str(output)!r}: {exc}") from None
    if cache_dir:
        try:
            CaseCache(cache_dir).check_writable()
        except OSError as exc:
            raise _UsageError(f"--cache-dir {cache_dir!r} is not writable: {exc}") from None


def _fan_out_plan(args: argparse.Namespace) -> Any:
    """The fan-out flags; with ``--executor ray`` the cluster is joined here, before anything is written."""
    from membase.exceptions import ConfigError
    from membase.runners._executors import ensure_ray
    from toolkits._cli import fan_out_plan

    try:
        plan = fan_out_plan(args)
        if plan.executor == "ray":
            ensure_ray(plan)
    except (ValueError, ConfigError) as exc:
        raise _UsageError(str(exc)) from None
    return plan


def _attribute(runner: Any, cases: list[Any], graphs: list[Any], plan: Any, *, batch_size: int, **kwargs: Any) -> Any:
    """All cases in this process (asyncio), or in tasks of ``batch_size`` cases on workers or Ray."""
    if plan.inline:
        return asyncio.run(runner.arun(cases, graphs, batch_size=batch_size, **kwargs))
    from toolkits._fanout import attribute_fanned_out

    return attribute_fanned_out(runner, cases, graphs, plan=plan, chunk_size=batch_size, **kwargs)


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
    try:
        return _main(parser, args, model_factory)
    except _UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # before the first case (loading graphs, probing folders): nothing to keep
        print("interrupted before any case was attributed; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED


def _main(parser: argparse.ArgumentParser, args: argparse.Namespace, model_factory: Callable[[Any], Any] | None) -> int:
    if args.studio_url:
        warnings.warn("--studio-url is accepted for compatibility but Studio forwarding is not implemented", stacklevel=1)

    from pydantic import ValidationError

    from toolkits._base import CredentialError
    from toolkits._journal import ResultJournal, journal_path
    from toolkits.runner import MemTraceRunner
    from toolkits.strategies import available_strategies

    if args.exploration_strategy not in available_strategies():
        parser.error(
            f"unknown --exploration-strategy {args.exploration_strategy!r}: use one of {', '.join(available_strategies())}"
        )
    try:
        config = _config(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _UsageError(f"invalid settings: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    if config.exploration_strategy == "evidence_flow" and config.evidence_flow_judge == "llm":
        _check_judge_credentials(config)
    plan = _fan_out_plan(args)
    from toolkits.replay_verify import check_replay_arguments

    problem = check_replay_arguments(args)
    if problem is not None:
        raise _UsageError(problem)
    if args.from_output:
        return _verify_only(args)
    graphs, cases, extra_metrics = _load(args, parser)
    try:
        graphs, cases = _sample(graphs, cases, args.sample_size, args.seed)
        custom_prior = _read_text_or_file(args.custom_prior)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    output = Path(args.output_path)
    inputs = Path(args.dataset_dir) / ("traced_data" if args.run_mode else args.split)
    if output.resolve().is_relative_to(inputs.resolve()):  # it would overwrite a graph, or be read as one
        raise _UsageError(f"--output-path {str(output)!r} is inside the input graphs' folder {str(inputs)!r}; "
                          "write the output elsewhere")
    _check_output(output, args.cache_dir)

    journal = ResultJournal(journal_path(output))
    resume = {}
    if args.resume:
        resume = {item["key"]: item["entry"] for item in journal.read() if isinstance(item.get("entry"), dict)}
    try:
        journal.open(keep_existing=args.resume)
    except OSError as exc:
        raise _UsageError(f"cannot write the journal {str(journal.path)!r}: {exc}") from None

    runner = MemTraceRunner(config, model_factory=model_factory)

    def secrets() -> list[str]:
        found = list(runner.api_pool.secrets) if runner.api_pool else []
        if args.embedding_api_key:
            found.append(args.embedding_api_key)
        return found

    bar = None
    if args.progress:
        from tqdm import tqdm

        bar = tqdm(total=len(cases), desc=f"attributing {args.split or 'run'}", unit="case", file=sys.stderr)

    finished: dict[int, tuple[Any, dict[str, Any]]] = {}
    failures = [0]
    journal_warned = [False]

    def on_result(result: Any) -> None:
        record = build_record(args, cases[result.index], result, secrets=secrets(), graph=graphs[result.index])
        finished[result.index] = (result, record)
        if result.reused_from != "resume":  # a resumed case's line is already in the journal
            try:
                journal.append({"key": result.cache_key, "index": result.index, "entry": result.cache_entry(),
                                "record": record})
            except OSError as exc:
                if not journal_warned[0]:
                    journal_warned[0] = True
                    warnings.warn(f"could not journal finished cases to {journal.path}: {exc}", stacklevel=1)
        if bar is not None:
            failures[0] += 0 if result.ok else 1
            bar.update(1)
            bar.set_postfix(failed=failures[0], refresh=False)

    write = functools.partial(_write_output, output)

    provide = args.provide_starting_nodes
    memory_system = args.split if args.use_system_prior and args.split in SPLITS else None
    try:
        report = _attribute(
            runner,
            cases,
            graphs,
            plan,
            batch_size=args.batch_size,
            use_source_evidence_nodes=provide and args.starting_nodes_type == "source_evidence",
            use_pseudo_source_evidence=provide and args.starting_nodes_type == "pseudo_source_evidence",
            memory_system=memory_system,
            custom_prior_knowledge=custom_prior,
            on_result=on_result,
            resume=resume,
        )
    except CredentialError as exc:
        journal.close()
        raise _UsageError(str(exc)) from None
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
            bar = None
        journal.close()
        order = sorted(finished)
        partial = _assemble(
            args,
            [cases[i] for i in order],
            [finished[i][1] for i in order],
            _costs_of([finished[i][0] for i in order]),
            complete=False,
            bootstrap_samples=0,
            extra_metrics=extra_metrics,
        )
        problem = write(partial)
        where = str(journal.path) if problem else f"{args.output_path} (\"complete\": false)"
        print(
            f"interrupted: {len(finished)} of {len(cases)} case(s) finished and are kept in {where}; "
            "rerun the same command to attribute the rest",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    finally:
        if bar is not None:
            bar.close()
        journal.close()

    try:
        records = [finished[i][1] for i in range(len(cases))]
        output_json = _assemble(args, cases, records, report.costs, complete=True, extra_metrics=extra_metrics)
        problem = write(output_json)
    except KeyboardInterrupt:
        print(f"interrupted while writing the output: all {len(cases)} case(s) are kept in {journal.path}; "
              "rerun the same command to write it", file=sys.stderr)
        return EXIT_INTERRUPTED
    if problem is not None:
        print(f"error: {problem}; the finished cases are kept in {journal.path}: rerun to write it", file=sys.stderr)
        return EXIT_WRITE_FAILED
    if args.verify == "replay":  # the journal stays until the verified output is written
        code = _verify(args, output_json, output, write)
        if code != EXIT_OK:
            return code
    journal.remove()
    m = output_json["metrics"]
    non_memory = ", ".join(f"{k}={n}" for k, n in (m.get("non_memory_errors") or {}).items() if n)
    if non_memory:  # failures that are not memory errors: never blamed on an op, named here
        print(f"not memory errors (candidates, see each record's evidence_flow.triage): {non_memory}")
    if args.run_mode:
        top = ", ".join(f"{t}={n}" for t, n in m["prediction_distribution"]["by_error_type"].items() if n)
        print(f"{m['total_cases']} failed questions ({m['failed_cases']} not attributed): {top or 'none'} -> {args.output_path}")
    else:
        print(
            f"{m['total_cases']} cases ({m['failed_cases']} failed): "
            f"ETA={m['error_type_prediction_accuracy']:.4f} OIA={m['operation_identifier_prediction_accuracy']:.4f} "
            f"joint={m['joint_accuracy']:.4f} -> {args.output_path}"
        )
    return EXIT_OK


def _verify(args: argparse.Namespace, output_json: dict[str, Any], output: Path, write: Callable[..., Any]) -> int:
    """Replay every attributed case with its blamed op repaired; the output gains the verdicts."""
    from toolkits.replay_verify import replay_line, verify_output

    progress = (lambda line: print(line, file=sys.stderr)) if args.progress else None
    try:
        verify_output(args, output_json, output.with_name(output.name + ".replay.jsonl"), progress)
    except KeyboardInterrupt:
        print(f"interrupted: the attribution is in {args.output_path}; finished replays are kept beside it — "
              "rerun the same command to replay the rest", file=sys.stderr)
        return EXIT_INTERRUPTED
    problem = write(output_json)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    print(replay_line(output_json["metrics"]["replay"]))
    return EXIT_OK


def _verify_only(args: argparse.Namespace) -> int:
    """`--verify replay --from OUTPUT.json`: verify an existing output, attribute nothing."""
    from toolkits.replay_verify import read_output

    try:
        output_json = read_output(args.from_output)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    output = Path(args.output_path)
    return _verify(args, output_json, output, functools.partial(_write_output, output))


def _write_output(output: Path, payload: dict[str, Any]) -> str | None:
    """Write the output atomically; the problem as one line, or None."""
    from toolkits._case_cache import atomic_write_json

    try:
        atomic_write_json(output, payload)
    except OSError as exc:
        return f"cannot write {output}: {exc}"
    return None


def cli() -> None:
    """Console-script entry point (warnings print as one line each)."""
    from toolkits._console import run_console

    run_console(main)


if __name__ == "__main__":
    cli()
