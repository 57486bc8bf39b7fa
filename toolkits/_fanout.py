r"""Attribute cases in worker processes or on a Ray cluster, with the runner's reuse rules unchanged.

:func:`attribute_fanned_out` is :meth:`toolkits.runner.MemTraceRunner.arun` spread out. Reuse is
decided here, in the calling process, by the same runner code as a local run: a case whose
stored result (``resume`` entries, then the cache) is valid is reported at once and never sent
out. The other cases go out in tasks of at most ``chunk_size`` cases of one graph; a task runs
them with a fresh runner of the same config (same cache keys, retries, redaction, credential
slot ``case index % pool size``) and sends back their :class:`~toolkits.runner.CaseResult`\ s,
which are handed to ``on_result`` as each task finishes — so the caller's journal grows by one
task's cases at a time, and an interrupted run keeps every finished task.

Graphs travel as their exported JSON (a live graph holds locks) and are imported once per worker
process. A task whose worker dies (killed, out of memory) fails its cases with that reason; the
other tasks finish.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from membase.runners._executors import FanOut, TaskCrash, ensure_ray, fan_out
from toolkits._base import resolve_api_pool
from toolkits.runner import CaseResult, MemTraceConfig, MemTraceRunner, RunCosts, RunReport
from toolkits.strategies import get_strategy

__all__ = ["attribute_fanned_out"]

_WORKER_GRAPHS: dict[str, Any] = {}
"""Graphs imported by this worker process, by content digest (a worker serves many tasks)."""
_WORKER_GRAPHS_KEPT = 4


class _GlobalSlots:
    """A credential pool seen through a task's case indices: local case ``i`` gets the slot of its
    index in the whole run, as in a local run."""

    def __init__(self, pool: Any, indices: Sequence[int]) -> None:
        self._pool = pool
        self._indices = list(indices)

    @property
    def size(self) -> int:
        return self._pool.size

    @property
    def secrets(self) -> tuple[str, ...]:
        return self._pool.secrets

    def credential_for(self, index: int) -> Any:
        return self._pool.credential_for(self._indices[index])


def _worker_graph(digest: str, exported: dict[str, Any]) -> Any:
    graph = _WORKER_GRAPHS.get(digest)
    if graph is None:
        from smartcomment.runtime.network import ExecNetwork

        while len(_WORKER_GRAPHS) >= _WORKER_GRAPHS_KEPT:
            _WORKER_GRAPHS.pop(next(iter(_WORKER_GRAPHS)))
        graph = _WORKER_GRAPHS[digest] = ExecNetwork.import_graph(exported)
    return graph


def _attribute_chunk(
    config: MemTraceConfig,
    model_factory: Callable[[Any], Any] | None,
    api_pool: Any,
    digest: str,
    exported: dict[str, Any],
    cases: list[Any],
    indices: list[int],
    arun_kwargs: dict[str, Any],
) -> list[CaseResult]:
    """One task: attribute ``cases`` (all of one graph) and return their results, global indices."""
    graph = _worker_graph(digest, exported)
    runner = MemTraceRunner(config, model_factory=model_factory,
                            api_pool=_GlobalSlots(api_pool, indices) if api_pool is not None else None)
    runner._graph_digests[id(graph)] = (graph, digest)  # known already: the caller hashed it
    report = asyncio.run(runner.arun(cases, graph, batch_size=len(cases), **arun_kwargs))
    for result in report.results:
        result.index = indices[result.index]
    return report.results


def _costs(results: Sequence[CaseResult]) -> RunCosts:
    costs = RunCosts()
    for result in results:
        if result.cached:
            costs.cached_cases += 1
            continue
        costs.executed_cases += 1
        costs.failed_cases += 0 if result.ok else 1
        costs.total_input_tokens += result.usage["input_tokens"]
        costs.total_output_tokens += result.usage["output_tokens"]
        costs.total_model_calls += result.usage["num_calls"]
        costs.total_seconds += result.elapsed_seconds
    return costs


def _reuse_or_key(runner: MemTraceRunner, index: int, case: Any, graph: Any, kwargs: dict[str, Any],
                  resume: Any) -> tuple[CaseResult | None, str | None]:
    """The stored result of a case (or None) and its cache key, as the runner itself decides."""
    try:
        key = runner.case_key(graph, case, **kwargs)
        return runner._reused_result(index, key, resume), key
    except Exception as exc:  # noqa: BLE001 - a case without a lookup is attributed again, like locally
        warnings.warn(f"case {index}: no cache lookup ({type(exc).__name__}: {exc})", stacklevel=2)
        return None, None


def _chunks(pending: list[int], graphs: Sequence[Any], chunk_size: int) -> list[list[int]]:
    """Pending case indices, grouped by graph (first appearance order), cut into chunks."""
    groups: dict[int, list[int]] = {}
    for index in pending:
        groups.setdefault(id(graphs[index]), []).append(index)
    return [group[i:i + chunk_size] for group in groups.values() for i in range(0, len(group), chunk_size)]


def attribute_fanned_out(
    runner: MemTraceRunner,
    cases: Sequence[Any],
    graphs: Sequence[Any],
    *,
    plan: FanOut,
    chunk_size: int,
    on_result: Callable[[CaseResult], None] | None = None,
    resume: Any = None,
    **arun_kwargs: Any,
) -> RunReport:
    """Attribute every case on ``plan``'s workers; same results and reuse as ``runner.arun``.

    Args:
        runner: The caller's runner (its config, model factory and cache decide everything).
        cases: Cases to attribute.
        graphs: One graph per case.
        plan: Worker processes or a Ray cluster.
        chunk_size: Most cases per task (attributed concurrently inside it).
        on_result: Called with each finished result (reused ones first).
        resume: ``{cache key: entry}`` of an earlier run, as for ``arun``.
        **arun_kwargs: ``use_source_evidence_nodes``, ``use_pseudo_source_evidence``,
            ``memory_system``, ``custom_prior_knowledge``.

    Raises:
        ValueError: For no cases or a graph list of another length.
        CredentialError: If the strategy needs a model and no credentials resolve.
        OSError: If the cache folder cannot be written.
    """
    cases = list(cases)
    if not cases:
        raise ValueError("no failed cases to attribute")
    if len(graphs) != len(cases):
        raise ValueError(f"{len(graphs)} graphs for {len(cases)} cases: give one graph per case")
    config = runner.config
    if runner._cache is not None:
        runner._cache.check_writable()
    if get_strategy(config.exploration_strategy).needs_model and runner._model_factory is None \
            and runner._api_pool is None:
        runner._api_pool = resolve_api_pool(config)  # fails here, before any task, like a local run
    results: dict[int, CaseResult] = {}
    keys: dict[int, str | None] = {}
    pending: list[int] = []
    for index, (case, graph) in enumerate(zip(cases, graphs, strict=True)):
        reused, keys[index] = _reuse_or_key(runner, index, case, graph, arun_kwargs, resume)
        if reused is None:
            pending.append(index)
            continue
        results[index] = reused
        if on_result:
            on_result(reused)
    chunks = _chunks(pending, graphs, chunk_size)
    exported = _exported_graphs(runner, graphs, pending, plan)
    payloads = [(config, runner._model_factory, runner._api_pool, runner.graph_digest(graphs[chunk[0]]),
                 exported[id(graphs[chunk[0]])], [cases[i] for i in chunk], chunk, arun_kwargs)
                for chunk in chunks]
    for task_index, outcome in fan_out(_attribute_chunk, payloads, plan):
        if isinstance(outcome, TaskCrash):
            outcome = [CaseResult(index=i, prediction=None, failure=outcome.error, cache_key=keys[i])
                       for i in chunks[task_index]]
        for result in outcome:
            results[result.index] = result
            if on_result:
                on_result(result)
    ordered = [results[i] for i in range(len(cases))]
    return RunReport(results=ordered, costs=_costs(ordered))


def _exported_graphs(runner: MemTraceRunner, graphs: Sequence[Any], pending: list[int], plan: FanOut
                     ) -> dict[int, Any]:
    """Each graph with pending cases, exported once (put in Ray's object store once for Ray)."""
    exported: dict[int, Any] = {}
    put = ensure_ray(plan).put if plan.executor == "ray" else None
    for index in pending:
        graph = graphs[index]
        if id(graph) not in exported:
            data = graph.export_graph()
            exported[id(graph)] = put(data) if put is not None else data
    return exported
