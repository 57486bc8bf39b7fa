"""The closed loop's rounds: iteration folders, resume, and one round of prompt optimization.

Reusable pieces (the parameter loop plugs its own step into them):

* :class:`IterationStore` — ``<dir>/iteration_<k>`` folders. A round is *complete* when its
  folder holds ``memory_system_config.json`` (written last) and ``iteration_summary.json``; a
  rerun resumes after the last complete round. Only names that are exactly ``iteration_<k>``
  count (``iteration_2_old`` does not).
* :func:`run_rounds` — for k = start … n: create the folder, call ``step(RoundContext)``, write
  the summary, then the next bundle (the completion marker).
* :class:`RoundStep` — the protocol of a step; :class:`PromptRoundStep` is the paper's round.

One :class:`PromptRoundStep` round (spec-attribution §7.3, step 4):

1. run the bundle on the round's conversation, traced (:func:`pipeline.run_pipeline`);
2. fill every target that the bundle leaves unset (None) from the graph, so the optimizer sees
   concrete current values (``effective`` bundle);
3. collect the failed questions (``failed_cases.json``);
4. attribute them with :class:`toolkits.runner.MemTraceRunner` (``error_attribution.json``), or,
   with ``disable_memtrace``, make each a ``ResponseError`` on its ``question-answering`` op and
   give every failure to every target;
5. group the attributions by target (``grouped_attributions.json``);
6. optimize each target that got failures (``feedbacks.json``, ``aggregated_feedbacks.json``,
   ``update_results.json``, ``gradient_history.json``);
7. optionally gate each target's update on its own on the validation conversations
   (:class:`ValidationGate`: a stated minimum gain, ties rejected);
8. the next bundle = the round's bundle + accepted updates (the reference starts from the effective
   bundle, which writes every filled default into the config — mem0's fact prompt with the date
   of round 1 among them; ours leaves untouched targets unset).
"""

from __future__ import annotations

import json
import re
import shutil
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from membase.utils.io import atomic_write_json
from smartcomment.runtime.errors import MemTraceError
from toolkits.optimization.bundle import BUNDLE_FILENAME, MemoryConfigBundle
from toolkits.optimization.context_cuts import route_context_cuts
from toolkits.optimization.grouping import AttributionGroups, group_attributions
from toolkits.optimization.optimizer import (
    GradientHistory,
    OptimizationResult,
    OptimizerRunner,
    TargetOutcome,
    TargetTask,
    zero_costs,
)
from toolkits.optimization.pipeline import PipelineSettings, run_pipeline
from toolkits.optimization.records import Attribution, decode_stored_text, strip_run_dates
from toolkits.optimization.targets import TEXTUAL_GRADIENT, Target

__all__ = [
    "ATTRIBUTION_FILENAME",
    "FAILED_CASES_FILENAME",
    "GROUPED_FILENAME",
    "SUMMARY_FILENAME",
    "IterationStore",
    "PromptRoundStep",
    "RoundContext",
    "RoundError",
    "RoundOutput",
    "RoundStep",
    "TargetOptimizer",
    "TextualGradientOptimizer",
    "run_rounds",
]

SUMMARY_FILENAME = "iteration_summary.json"
FAILED_CASES_FILENAME = "failed_cases.json"
ATTRIBUTION_FILENAME = "error_attribution.json"
GROUPED_FILENAME = "grouped_attributions.json"
_ITERATION = re.compile(r"iteration_(\d+)")
MEMORY_SYSTEMS = {"Mem0": "mem0", "EverMemOS": "evermemos", "NaiveRAG": "rag", "Long-Context": "long_context"}
"""Layer type → the memory-system name of the attribution priors."""


class RoundError(MemTraceError, RuntimeError):
    """A round cannot go on (one-line message); the folder stays incomplete and a rerun retries it."""


# -- iteration folders ------------------------------------------------------------------------------


class IterationStore:
    """The ``iteration_<k>`` folders of one optimization directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def folder(self, k: int) -> Path:
        """``<root>/iteration_<k>`` (k ≥ 1).

        Raises:
            ValueError: k < 1.
        """
        if k < 1:
            raise ValueError(f"iteration numbers start at 1, got {k}")
        return self.root / f"iteration_{k}"

    @staticmethod
    def is_complete(folder: Path) -> bool:
        """Both the next bundle and the summary were written, and the summary reads as a JSON object.

        A summary damaged after the fact (truncated, emptied) makes the round incomplete, so a rerun
        runs it again instead of building on a round whose record is lost.
        """
        if not (folder / BUNDLE_FILENAME).is_file():
            return False
        try:
            summary = json.loads((folder / SUMMARY_FILENAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(summary, dict)

    def find_last_n_iterations(
        self, n: int = 1, return_iteration_numbers: bool = False
    ) -> list[Path] | list[tuple[int, Path]] | None:
        """The last ``n`` complete iterations by number (paths, or (number, path) pairs); None if none."""
        if not self.root.is_dir():
            return None
        found = []
        for child in self.root.iterdir():
            match = _ITERATION.fullmatch(child.name)
            if match and child.is_dir() and self.is_complete(child):
                found.append((int(match.group(1)), child))
        if not found:
            return None
        found.sort()
        chosen = found[-n:]
        return chosen if return_iteration_numbers else [p for _, p in chosen]

    def last_complete(self) -> tuple[int, Path] | None:
        """(number, folder) of the last complete iteration, or None."""
        found = self.find_last_n_iterations(1, return_iteration_numbers=True)
        return found[-1] if found else None  # type: ignore[return-value]

    def create(self, k: int) -> Path:
        """A fresh ``iteration_<k>`` folder (an incomplete one left by an interrupted run is wiped)."""
        folder = self.folder(k)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        return folder

    def wipe(self) -> None:
        """Remove every ``iteration_<k>`` folder (``--rerun``)."""
        if self.root.is_dir():
            for child in self.root.iterdir():
                if _ITERATION.fullmatch(child.name) and child.is_dir():
                    shutil.rmtree(child)


# -- the round driver --------------------------------------------------------------------------------


@dataclass(kw_only=True)
class RoundContext:
    """What a step gets for round ``k``."""

    k: int
    folder: Path
    bundle: MemoryConfigBundle
    """The configuration to run this round (the previous round's output)."""
    dataset: Any
    """A ``MemoryDataset`` with this round's conversation(s)."""
    trajectory_indexes: list[int]
    """Their 0-based positions in the LoCoMo file."""


@dataclass(kw_only=True)
class RoundOutput:
    """What a step returns: the next configuration and the round's summary."""

    next_bundle: MemoryConfigBundle
    summary: dict[str, Any]


class RoundStep(Protocol):
    """One round of a loop: run, attribute, optimize; writes its own files into ``ctx.folder``."""

    def __call__(self, ctx: RoundContext) -> RoundOutput:
        """Run one round in ``ctx.folder``; returns the next configuration and the summary."""
        ...


def run_rounds(
    store: IterationStore,
    *,
    bundle: MemoryConfigBundle,
    start: int,
    rounds: Sequence[tuple[Any, list[int]]],
    step: RoundStep,
    show_progress: bool = True,
    on_round_end: Callable[[int, RoundOutput], None] | None = None,
) -> MemoryConfigBundle:
    """Run rounds ``start … len(rounds)`` and return the last bundle.

    Args:
        store: The iteration folders.
        bundle: The configuration of round ``start``.
        start: First round to run (1-based).
        rounds: Per round (1-based position), its dataset and conversation indexes.
        step: The round's work.
        show_progress: A progress bar over the rounds.
        on_round_end: Called after each complete round.
    """
    from tqdm.auto import tqdm

    with tqdm(total=len(rounds), initial=start - 1, desc="optimization rounds", unit="round",
              disable=not show_progress) as bar:
        for k in range(start, len(rounds) + 1):
            dataset, indexes = rounds[k - 1]
            folder = store.create(k)
            started = time.perf_counter()
            output = step(RoundContext(k=k, folder=folder, bundle=bundle, dataset=dataset, trajectory_indexes=indexes))
            summary = {**output.summary, "elapsed_seconds": time.perf_counter() - started}
            atomic_write_json(folder / SUMMARY_FILENAME, summary)
            output.next_bundle.export_memory_config(folder)
            output.next_bundle.save(folder)  # last: marks the round complete
            bundle = output.next_bundle
            bar.update(1)
            if on_round_end is not None:
                on_round_end(k, output)
    return bundle


# -- optimizers behind a common interface -------------------------------------------------------------


class TargetOptimizer(Protocol):
    """Proposes new values for a round's targets; keeps its own state across rounds."""

    def optimize(self, tasks: Sequence[TargetTask], graph: Any, *, seed: int | None, folder: Path) -> OptimizationResult:
        """Return accepted updates (field → value), per-target outcomes and costs."""
        ...

    def save_state(self, folder: Path) -> None:
        """Write the state a resumed run needs into an iteration folder."""
        ...

    def load_state(self, folder: Path) -> None:
        """Read the state saved by :meth:`save_state` (a missing file means a fresh state)."""
        ...


class TextualGradientOptimizer:
    """The prompt optimizer (:class:`OptimizerRunner`) as a :class:`TargetOptimizer`."""

    def __init__(self, runner: OptimizerRunner, *, batch_size: int) -> None:
        self.runner = runner
        self.batch_size = batch_size

    def optimize(self, tasks: Sequence[TargetTask], graph: Any, *, seed: int | None, folder: Path) -> OptimizationResult:
        """Feedback → aggregation → update (see :mod:`toolkits.optimization.optimizer`)."""
        return self.runner.run(list(tasks), graph, batch_size=self.batch_size, seed=seed, save_folder=folder)

    def save_state(self, folder: Path) -> None:
        """``gradient_history.json``."""
        self.runner.history.save(folder)

    def load_state(self, folder: Path) -> None:
        """Reload the gradient history."""
        self.runner.history = GradientHistory.load(folder, self.runner.config.num_gradient_histories)


# -- attribution --------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class AttributionSettings:
    """How failures are attributed."""

    disabled: bool = False
    """The ``--disable-memtrace`` ablation."""
    runner: Any = None
    """A :class:`toolkits.runner.MemTraceRunner` (unused when disabled)."""
    batch_size: int = 4


def _disabled_attributions(cases: Sequence[Any], graph: Any) -> tuple[list[Attribution], list[str]]:
    out, problems = [], []
    for case in cases:
        ops = [op for op in graph.get_operations_by_variable(case.query_full_node_id)
               if op.op_name == "question-answering" and op.category == "evaluation"]
        if not ops:
            problems.append(f"{case.query_full_node_id}: no question-answering operation uses this query")
            continue
        out.append(Attribution(
            error_type="ResponseError", op_id=ops[0].op_id,
            reason=(f"The golden answer is {case.golden_answer}; the response generated by the question-answering "
                    f"step, {case.prediction!r}, is wrong."),
            query_full_node_id=case.query_full_node_id, query=case.query, golden_answer=case.golden_answer,
            prediction=case.prediction, source="disabled",
        ))
    return out, problems


def _attribute(cases: Sequence[Any], graph: Any, settings: AttributionSettings, memory_system: str | None
               ) -> tuple[list[Attribution], list[dict[str, str]], dict[str, Any]]:
    from toolkits.runner import RunCosts

    if not cases:
        return [], [], RunCosts().to_dict()
    if settings.disabled:
        attributions, problems = _disabled_attributions(cases, graph)
        return attributions, [{"query_id": "", "failure": p} for p in problems], RunCosts().to_dict()
    runner = settings.runner
    report = runner.run(list(cases), graph, batch_size=settings.batch_size, use_source_evidence_nodes=True,
                        use_pseudo_source_evidence=False, memory_system=memory_system)
    attributions, failures = [], []
    strategy = runner.config.exploration_strategy
    for case, result in zip(cases, report.results, strict=True):
        if result.prediction is None:
            failures.append({"query_id": case.query_full_node_id, "failure": result.failure or "no prediction"})
            continue
        attributions.append(Attribution(
            **result.prediction, query_full_node_id=case.query_full_node_id, query=case.query,
            golden_answer=case.golden_answer, prediction=case.prediction, source=strategy,
        ))
    return attributions, failures, report.costs.to_dict()


# -- the prompt round ---------------------------------------------------------------------------------


@dataclass(kw_only=True)
class ValidationGate:
    """Accept each target's update on its own: it must raise ``metric`` on ``dataset`` by ``min_improvement``.

    Every proposed update is scored alone (the round's bundle plus that one update) against the
    round's bundle on the validation conversations; an update that lowers the score, leaves it
    unchanged (a tie) or raises it by less than ``min_improvement`` is rejected while another
    target's update of the same round can be kept. The next bundle carries the accepted updates;
    their combination is scored too and recorded (not gated: each part already earned its place).
    """

    dataset: Any
    settings: PipelineSettings
    metric: str = "llm_judge"
    min_improvement: float = 0.0
    """Smallest gain of ``metric`` (absolute, 0-1 scale) an update must show; a tie never passes."""
    _scores: dict[str, float] = field(default_factory=dict)

    def score(self, bundle: MemoryConfigBundle, folder: Path) -> float:
        """The bundle's mean ``metric`` on the validation conversations (cached per bundle)."""
        key = bundle.digest()
        if key not in self._scores:
            result = run_pipeline(bundle, self.dataset, folder, self.settings,
                                  start_idx=0, end_idx=len(self.dataset.trajectories))
            self._scores[key] = float(result.metrics.get(self.metric, 0.0))
        return self._scores[key]

    def decide(self, current: MemoryConfigBundle, updates: dict[str, Any], folder: Path
               ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The updates that pass (field → value) and the record written to ``iteration_summary.json``."""
        from toolkits.optimization.statistics import improves

        before = self.score(current, folder / "current")
        per_target: dict[str, Any] = {}
        accepted: dict[str, Any] = {}
        for name in sorted(updates):
            after = self.score(current.with_updates({name: updates[name]}), folder / f"candidate-{name}")
            passed = improves(before, after, self.min_improvement)
            per_target[name] = {"candidate": after, "gain": after - before, "accepted": passed}
            if passed:
                accepted[name] = updates[name]
        combined = None
        if len(accepted) > 1:
            combined = self.score(current.with_updates(accepted), folder / "candidate-combined")
        record = {
            "metric": self.metric, "min_improvement": self.min_improvement,
            "conversations": [t.id for t in self.dataset.trajectories],
            "current": before,
            "candidate": combined if combined is not None else (
                per_target[next(iter(accepted))]["candidate"] if accepted else before),
            "accepted": bool(accepted), "accepted_fields": sorted(accepted),
            "rejected_fields": sorted(set(updates) - set(accepted)), "per_target": per_target,
        }
        return accepted, record


class PromptRoundStep:
    """One round of attribution-guided prompt optimization (see the module docstring).

    Args:
        targets: The targets that may change (e.g. ``TARGETS.for_layer(backend, kinds=["prompt"])``).
        settings: How the round's conversation is run and scored (tracing must be on).
        attribution: How failures are attributed.
        optimizers: Optimizer name → optimizer; each target goes to ``optimizers[target.optimizer]``.
        seed: Base seed; round k uses ``seed + k``.
        gate: Optional validation gate.
    """

    def __init__(
        self,
        *,
        targets: Sequence[Target],
        settings: PipelineSettings,
        attribution: AttributionSettings,
        optimizers: dict[str, TargetOptimizer],
        seed: int,
        gate: ValidationGate | None = None,
    ) -> None:
        self.targets = list(targets)
        self.settings = settings
        self.attribution = attribution
        self.optimizers = optimizers
        self.seed = seed
        self.gate = gate

    def load_state(self, folder: Path) -> None:
        """Reload every optimizer's state from a complete iteration folder (resume)."""
        for optimizer in self.optimizers.values():
            optimizer.load_state(folder)

    def __call__(self, ctx: RoundContext) -> RoundOutput:
        """Run one round; see the module docstring."""
        from smartcomment.runtime.network import ExecNetwork
        from toolkits.bench_utils import collect_failed_queries

        folder, k = ctx.folder, ctx.k
        result = run_pipeline(ctx.bundle, ctx.dataset, folder, self.settings,
                              start_idx=k - 1, end_idx=k)
        if not result.graph_paths:
            raise RoundError(f"round {k}: the traced run left no graph_evaluation.json under {folder / 'traced_data'}")
        user_id, graph_path = next(iter(result.graph_paths.items()))
        graph = ExecNetwork.from_file(graph_path)
        effective, filled = self._effective_bundle(ctx.bundle, graph)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cases = collect_failed_queries(graph)
        atomic_write_json(folder / FAILED_CASES_FILENAME, [c.model_dump(mode="json") for c in cases])

        attributions, attribution_failures, attribution_cost = _attribute(
            cases, graph, self.attribution, MEMORY_SYSTEMS.get(ctx.bundle.backend)
        )
        atomic_write_json(folder / ATTRIBUTION_FILENAME, [a.model_dump(mode="json") for a in attributions])

        present = [t for t in self.targets if graph.get_versions(t.variable)]
        if self.attribution.disabled:
            groups = _everything_to_everyone(attributions, graph, present)
        else:
            groups = group_attributions(attributions, graph, self.targets)
        grouped = groups.as_json()
        if not self.attribution.disabled:  # a cut answering context is also the budget's task
            cuts = route_context_cuts(groups, attributions, graph, self.targets)
            if cuts:
                grouped = {**groups.as_json(), "context_cuts": cuts}
        atomic_write_json(folder / GROUPED_FILENAME, grouped)

        for optimizer in self.optimizers.values():
            begin_round = getattr(optimizer, "begin_round", None)
            if begin_round is not None:  # parameter searches rerun the round's configuration on its conversation
                begin_round(ctx.bundle, ctx.dataset)
        result_opt, tasks = self._optimize(groups, graph, effective, folder, k)
        for optimizer in self.optimizers.values():
            optimizer.save_state(folder)

        # The next bundle carries what was set before plus what changed now; a target filled from the
        # graph only to show the optimizer its concrete value stays unset (the layer's own default),
        # so a default that is rendered per run (mem0 writes "Today's date is ..." into its fact
        # prompt) is not frozen at round 1's date for every later round and the final evaluation.
        result_opt.updates = {f: strip_run_dates(v) for f, v in result_opt.updates.items()}
        current = ctx.bundle
        candidate = current.with_updates(result_opt.updates) if result_opt.updates else current
        gate_record = None
        kept = dict(result_opt.updates)
        if self.gate is not None and result_opt.updates:
            kept, gate_record = self.gate.decide(current, dict(result_opt.updates), folder / "validation")
            candidate = current.with_updates(kept) if kept else current

        summary = {
            "graph_path": str(graph_path),
            "user_id": user_id,
            "trajectory_indexes": ctx.trajectory_indexes,
            "metrics": {n: v for n, v in result.metrics.items() if n != "mean_over_scored"},
            "metrics_by_question_type": {g: {n: v for n, v in m.items() if n != "mean_over_scored"}
                                         for g, m in result.summary.items() if g != "all"},
            "num_queries": int(result.metrics.get("n", 0)),
            "num_failed_queries": len(cases),
            "collect_warnings": [str(w.message) for w in caught],
            "attribution": "disabled" if self.attribution.disabled else self.attribution.runner.config.exploration_strategy,
            "error_attribution_cost": {k2: v for k2, v in attribution_cost.items() if k2.startswith("average_")},
            "error_attribution_totals": {k2: v for k2, v in attribution_cost.items() if not k2.startswith("average_")},
            "attribution_failures": attribution_failures,
            "num_optimizable_errors": sum(len(t.errors) for t in tasks),
            "num_unoptimizable_errors": len(groups.unoptimizable),
            "optimizable_errors_by_target": {t.target.field: len(t.errors) for t in tasks},
            "filled_from_graph": filled,
            "optimization_cost": result_opt.costs,
            "optimization_failures": result_opt.failures,
            "targets": [o.as_json() for o in result_opt.outcomes],
            "updated_fields": sorted(kept) if candidate is not current else [],
            "validation_gate": gate_record,
        }
        return RoundOutput(next_bundle=candidate, summary=summary)

    def _effective_bundle(self, bundle: MemoryConfigBundle, graph: Any) -> tuple[MemoryConfigBundle, list[str]]:
        """Fill unset targets from the graph's latest recorded values."""
        fills: dict[str, Any] = {}
        for target in self.targets:
            if bundle.get(target.field) is not None:
                continue
            versions = graph.get_versions(target.variable)
            if not versions:
                continue
            raw = max(versions, key=lambda v: v.version).raw_value
            if target.kind == "parameter":  # recorded as JSON; a null stays unset (e.g. NaiveRAG's max_tokens)
                value = _recorded_parameter(raw)
                if value is not None:
                    fills[target.field] = value
                continue
            # the optimizer must not see (and copy) the day this run rendered into a default prompt
            fills[target.field] = strip_run_dates(decode_stored_text(raw))
        if not fills:
            return bundle, []
        try:
            return bundle.with_updates(fills), sorted(fills)
        except (KeyError, ValueError) as exc:
            raise RoundError(f"the values recorded in the graph do not fit the config: {exc}") from None

    def _optimize(
        self, groups: AttributionGroups, graph: Any, effective: MemoryConfigBundle, folder: Path, k: int
    ) -> tuple[OptimizationResult, list[TargetTask]]:
        ids = groups.field_node_ids
        tasks = [
            TargetTask(target=t, node_id=ids[t.field], current_value=effective.get(t.field), errors=groups.by_field[t.field])
            for t in self.targets if groups.by_field.get(t.field) and t.field in ids
        ]
        by_optimizer: dict[str, list[TargetTask]] = {}
        for task in tasks:
            by_optimizer.setdefault(task.target.optimizer, []).append(task)
        # one optimizer registered under several names (the parameter search takes int, float and
        # categorical parameters) gets all its tasks in one call: one study over every parameter
        merged: dict[int, tuple[str, list[TargetTask]]] = {}
        for name, group in by_optimizer.items():
            optimizer = self.optimizers.get(name)
            if optimizer is None:
                warnings.warn(f"no optimizer {name!r} for targets {[t.target.field for t in group]}; skipped",
                              stacklevel=2)
                continue
            merged.setdefault(id(optimizer), (name, []))[1].extend(group)
        updates: dict[str, Any] = {}
        outcomes: list[TargetOutcome] = []
        costs_by_optimizer: dict[str, Any] = {}
        for name, group in merged.values():
            optimizer = self.optimizers[name]
            result = optimizer.optimize(group, graph, seed=self.seed + k, folder=folder)
            updates.update(result.updates)
            outcomes.extend(result.outcomes)
            costs_by_optimizer[name] = result.costs
        if TEXTUAL_GRADIENT not in costs_by_optimizer:
            _write_empty_stage_files(folder)
        if not costs_by_optimizer:
            costs: dict[str, Any] = zero_costs()
        elif len(costs_by_optimizer) == 1:  # the reference layout: stage -> averages
            costs = next(iter(costs_by_optimizer.values()))
        else:
            costs = costs_by_optimizer
        return OptimizationResult(updates=updates, outcomes=outcomes, costs=costs), tasks


def _recorded_parameter(raw: Any) -> Any:
    """A traced parameter's value: its JSON (``encode_parameter_value``), else the stored text read as a literal."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    return decode_stored_text(raw)


def _everything_to_everyone(attributions: list[Attribution], graph: Any, targets: Sequence[Target]) -> AttributionGroups:
    """The ablation's grouping: every target present in the graph receives every attribution."""
    from toolkits.optimization.grouping import Assignment, latest_target_nodes

    latest, missing = latest_target_nodes(graph, targets)
    groups = AttributionGroups(node_ids={nid: f for f, nid in latest.items()}, missing_targets=missing)
    if attributions:
        groups.by_field = {t.field: list(attributions) for t in targets if t.field in latest}
    groups.assignments = [Assignment(index=i, field="*", variable_id=None) for i in range(len(attributions))]
    return groups


def _write_empty_stage_files(folder: Path) -> None:
    from toolkits.optimization.optimizer import (
        AGGREGATED_FEEDBACKS_FILENAME,
        FEEDBACKS_FILENAME,
        UPDATE_RESULTS_FILENAME,
    )

    for name in (FEEDBACKS_FILENAME, AGGREGATED_FEEDBACKS_FILENAME, UPDATE_RESULTS_FILENAME):
        if not (folder / name).exists():
            atomic_write_json(folder / name, {})


def default_optimizers(runner: OptimizerRunner, batch_size: int, parameters: TargetOptimizer | None = None
                       ) -> dict[str, TargetOptimizer]:
    """The optimizer registry of the prompt loop: ``textual_gradient`` → ``runner``; with ``parameters``
    (e.g. :class:`toolkits.optimization.param_tasks.PipelineParameterOptimizer`) the parameter searches too."""
    optimizers: dict[str, TargetOptimizer] = {TEXTUAL_GRADIENT: TextualGradientOptimizer(runner, batch_size=batch_size)}
    if parameters is not None:
        from toolkits.optimization.search import BAYESIAN_TPE, CATEGORICAL_TPE

        optimizers[BAYESIAN_TPE] = parameters
        optimizers[CATEGORICAL_TPE] = parameters
    return optimizers
