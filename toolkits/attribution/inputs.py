"""What an attribution run checks and loads before any case runs.

The cases (a MemTraceBench split, or the wrongly answered questions of a ``python -m membase``
run folder), the graph sample, the custom prior, the runner's config, the fan-out plan and
every folder the run will write. Each problem is an :class:`AttributionInputError` whose text
is the one ``error:`` line the command prints (exit 2).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smartcomment.runtime.errors import MemTraceError
from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

if TYPE_CHECKING:
    from toolkits.runner import MemTraceConfig

__all__ = [
    "AttributionInputError",
    "LoadedCases",
    "check_judge_credentials",
    "check_output",
    "config_from_args",
    "load_cases",
    "plan_fan_out",
    "probe_folder",
    "read_prior",
    "sample_graphs",
]


class AttributionInputError(MemTraceError, ValueError):
    """Bad input found before any case runs: printed as one ``error:`` line, exit 2."""


@dataclass(frozen=True, kw_only=True)
class LoadedCases:
    """The cases of a run, their graphs (one per case) and what the input adds to the metrics.

    Attributes:
        graphs: The graph of each case (a graph appears once per case it holds).
        cases: The ``FailedQueryCase`` objects.
        run_mode: True when the input is a run folder of ``python -m membase``.
        split: The split (given, or a run folder's layer split).
        extra_metrics: A run folder's ``judged_failures`` and ``skipped_adversarial`` counts.
    """

    graphs: list[Any]
    cases: list[Any]
    run_mode: bool
    split: str | None
    extra_metrics: dict[str, Any]


def read_prior(value: str | None) -> str | None:
    """The ``--custom-prior`` text: the file's content when ``value`` names a file, else ``value`` itself.

    Raises:
        AttributionInputError: When ``value`` looks like a path (ends in ``.txt``/``.md`` or
            contains a path separator) but no such file can be read.
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
            raise AttributionInputError(f"--custom-prior file {value!r} cannot be read: {exc}") from exc
    if looks_like_path and "\n" not in value:
        raise AttributionInputError(f"--custom-prior {value!r} looks like a path but no such file exists")
    return value


def sample_graphs(
    graphs: list[Any], cases: list[Any], sample_size: int | None, seed: int
) -> tuple[list[Any], list[Any]]:
    """Keep every case of ``sample_size`` graphs drawn with ``random.Random(seed)`` (the reference rule).

    Raises:
        AttributionInputError: When ``sample_size`` is not between 1 and the number of graphs.
    """
    if sample_size is None:
        return graphs, cases
    ids: list[str] = []
    for g in graphs:
        if g.graph_id not in ids:
            ids.append(g.graph_id)
    if not 1 <= sample_size <= len(ids):
        raise AttributionInputError(
            f"--sample-size must be between 1 and the number of graphs ({len(ids)}), got {sample_size}"
        )
    chosen = set(random.Random(seed).sample(ids, sample_size))
    keep = [i for i, g in enumerate(graphs) if g.graph_id in chosen]
    return [graphs[i] for i in keep], [cases[i] for i in keep]


def _load_run_folder(root: Path, split: str | None) -> LoadedCases:
    from toolkits.bench_utils import load_membase_run

    try:
        graphs, cases, info = load_membase_run(root)
    except ValueError as exc:
        raise AttributionInputError(str(exc)) from None
    if not cases:
        raise AttributionInputError(
            f"{root}: no wrongly answered question to attribute ({info['judged_failures']} judged wrong, "
            f"{info['skipped_adversarial']} of them adversarial and skipped)"
        )
    extra = {"judged_failures": info["judged_failures"], "skipped_adversarial": info["skipped_adversarial"]}
    return LoadedCases(graphs=graphs, cases=cases, run_mode=True, split=split or info["split"], extra_metrics=extra)


def load_cases(dataset_dir: str, split: str | None, parser: argparse.ArgumentParser) -> LoadedCases:
    """Load the cases: a MemTraceBench split (its memory-error cases), or a run folder's failures.

    A split folder under ``dataset_dir`` wins over a ``traced_data`` folder beside it.

    Raises:
        AttributionInputError: An unreadable or empty input.
        SystemExit: Through ``parser.error`` when a folder that is no run folder is given
            without a split (a usage error).
    """
    from toolkits.bench_utils import BenchmarkDataMissingError, is_membase_run, load_memtracebench

    root = Path(dataset_dir)
    if root.exists() and not root.is_dir():  # not a folder to download the benchmark into either
        raise AttributionInputError(
            f"dataset_dir {str(root)!r} is a file; give a MemTraceBench folder (<dir>/<split>/*.json) or a run "
            "folder of `python -m membase`"
        )
    benchmark_split = split is not None and (root / split).is_dir()
    if not benchmark_split and is_membase_run(root):
        return _load_run_folder(root, split)
    if split is None:
        parser.error(
            f"{root} is not a run folder of `python -m membase` (no traced_data/<user>/graph_evaluation.json): "
            f"give the MemTraceBench split ({', '.join(MEMTRACEBENCH_SPLITS)})"
        )
    try:
        graphs, cases = load_memtracebench(dataset_dir, split, filter_non_memory_errors=True)
    except (BenchmarkDataMissingError, ValueError) as exc:
        raise AttributionInputError(str(exc)) from None
    if not cases:
        raise AttributionInputError(f"split {split!r} under {dataset_dir} has no memory-error cases")
    return LoadedCases(graphs=graphs, cases=cases, run_mode=False, split=split, extra_metrics={})


def probe_folder(folder: Path) -> None:
    """Create ``folder`` and write/remove a probe file in it (raises OSError if impossible)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=str(folder))
    os.close(fd)
    os.unlink(probe)


def check_output(output: Path, cache_dir: str | None) -> None:
    """Every place the run writes (output, its journal, the case cache) must be writable before any case runs.

    Raises:
        AttributionInputError: Naming the place and why it cannot be written.
    """
    from toolkits._case_cache import CaseCache
    from toolkits._journal import journal_path

    if output.is_dir():
        raise AttributionInputError(f"--output-path {str(output)!r} is a folder; give a .json file path")
    if journal_path(output).is_dir():
        raise AttributionInputError(
            f"{str(journal_path(output))!r} is a folder; it is where the run journals finished cases"
        )
    try:
        probe_folder(output.parent)
    except OSError as exc:
        raise AttributionInputError(f"cannot write --output-path {str(output)!r}: {exc}") from None
    if cache_dir:
        try:
            CaseCache(cache_dir).check_writable()
        except OSError as exc:
            raise AttributionInputError(f"--cache-dir {cache_dir!r} is not writable: {exc}") from None


def config_from_args(args: argparse.Namespace) -> MemTraceConfig:
    """The runner's config from parsed ``run_error_attribution.py`` arguments (every flag that changes a case).

    Raises:
        pydantic.ValidationError: When a value is out of the config's range.
    """
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


def check_judge_credentials(config: MemTraceConfig) -> None:
    """evidence_flow's llm judge calls the run's endpoint: say so before any case runs, not once per case.

    Raises:
        AttributionInputError: When no chat endpoint can be resolved.
    """
    from toolkits._base import CredentialError, resolve_api_pool

    try:
        resolve_api_pool(config)
    except CredentialError as exc:
        raise AttributionInputError(f"--evidence-flow-judge llm needs a chat endpoint: {exc}") from None


def plan_fan_out(args: argparse.Namespace) -> Any:
    """The fan-out flags as a plan; with ``--executor ray`` the cluster is joined here, before anything is written.

    Raises:
        AttributionInputError: Bad fan-out flags, or a Ray cluster that cannot be joined.
    """
    from membase.exceptions import ConfigError
    from membase.runners._executors import ensure_ray
    from toolkits._cli import fan_out_plan

    try:
        plan = fan_out_plan(args)
        if plan.executor == "ray":
            ensure_ray(plan)
    except (ValueError, ConfigError) as exc:
        raise AttributionInputError(str(exc)) from None
    return plan
