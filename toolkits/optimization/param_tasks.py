"""Parameter tasks inside the prompt loop: attributions on a parameter become an Optuna search.

An attribution whose operation consumes a traced parameter (a Mem0 ``RetrievalError`` on
``memory_system.search_vector_store`` consumes ``parameter:top_k``) is grouped onto that
parameter's target like any prompt target. :class:`PipelineParameterOptimizer` is the
:class:`~toolkits.optimization.loop.TargetOptimizer` of those targets: in the same round as the
prompt updates it runs one seeded Optuna study (:class:`~toolkits.optimization.search.ParameterSearch`)
over every parameter that got attributions, scoring each trial by running the round's
configuration, with the trial's values, on the round's conversation (untraced) and reading the
loop's metric. The best trial is proposed only when it beats the round's configuration by more
than a tie on that conversation; the validation gate, when on, then judges it like any update.

Files in the iteration folder: ``parameter_search.sqlite3`` (the study: a killed round's rerun
continues it) and ``parameter_trials.json`` (the incumbent's score and every trial).

Cost: each trial is one run of the memory system on the round's conversation (construction,
answers and judge calls), so ``trials`` is kept small (default 4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from toolkits.optimization.optimizer import OptimizationResult, TargetOutcome, TargetTask, zero_costs
from toolkits.optimization.pipeline import PipelineSettings, run_pipeline

__all__ = ["PARAMETER_TRIALS_FILENAME", "PipelineParameterOptimizer"]

PARAMETER_TRIALS_FILENAME = "parameter_trials.json"


@dataclass(kw_only=True)
class PipelineParameterOptimizer:
    """Search the attributed parameters of a round on its own conversation (see the module docstring)."""

    settings: PipelineSettings
    """How the round is run and scored (tracing is switched off for trials)."""
    metric: str = "llm_judge"
    trials: int = 4
    """Search trials per round (the incumbent is scored once more)."""
    n_startup_trials: int = 2
    _round: tuple[Any, Any] | None = field(default=None, init=False)
    _scores: dict[str, float] = field(default_factory=dict, init=False)

    def begin_round(self, bundle: Any, dataset: Any) -> None:
        """Remember the round's configuration and conversation (called before :meth:`optimize`)."""
        self._round = (bundle, dataset)
        self._scores = {}

    def optimize(self, tasks: Sequence[TargetTask], graph: Any, *, seed: int | None, folder: Path) -> OptimizationResult:
        """One study over the tasks' parameters; the best trial if it beats the incumbent."""
        from toolkits.optimization.parameters import parameter_spec
        from toolkits.optimization.search import InfeasibleConfig, ParameterSearch
        from toolkits.optimization.statistics import improves

        if self._round is None:
            raise RuntimeError("PipelineParameterOptimizer.begin_round was not called for this round")
        bundle, dataset = self._round
        specs = {t.target.field: parameter_spec(t.target) for t in tasks}
        incumbent = self._score(bundle, dataset, folder / "parameter_trials" / "incumbent")

        def objective(params: dict[str, Any]) -> float:
            try:
                candidate = bundle.with_updates(params)
            except (KeyError, ValueError) as exc:
                raise InfeasibleConfig(f"{type(exc).__name__}: {exc}") from None
            return self._score(candidate, dataset, folder / "parameter_trials" / candidate.digest()[:12])

        search = ParameterSearch(specs, storage_path=folder / "parameter_search.sqlite3", seed=seed or 0,
                                 n_startup_trials=min(self.n_startup_trials, self.trials))
        outcome = search.run(objective, self.trials)
        best = outcome.best
        accepted = best is not None and improves(incumbent, best["value"])
        updates = {name: best["params"][name] for name in specs} if accepted and best else {}
        atomic_write_json(folder / PARAMETER_TRIALS_FILENAME, {
            "metric": self.metric, "parameters": sorted(specs),
            "incumbent": {"params": {n: _current(bundle, n, self.settings.top_k) for n in specs}, "value": incumbent},
            "trials": outcome.trials, "best": best, "proposed": updates,
        })
        outcomes = []
        for task in tasks:
            name = task.target.field
            changed = name in updates and updates[name] != task.current_value
            outcomes.append(TargetOutcome(
                field=name, node_id=task.node_id, status="updated" if changed else "unchanged",
                new_value=updates.get(name) if changed else None,
                feedbacks=[f"{len(task.errors)} attributed failures; best of {len(outcome.trials)} trials "
                           f"{best['value'] if best else None} vs incumbent {incumbent}"],
            ))
        kept = {o.field: o.new_value for o in outcomes if o.status == "updated"}
        return OptimizationResult(updates=kept, outcomes=outcomes, costs=zero_costs())

    def _score(self, bundle: Any, dataset: Any, folder: Path) -> float:
        from dataclasses import replace

        key = bundle.digest()
        if key not in self._scores:
            result = run_pipeline(bundle, dataset, folder, replace(self.settings, tracing=False, show_progress=False),
                                  start_idx=0, end_idx=len(dataset.trajectories))
            self._scores[key] = float(result.metrics.get(self.metric, 0.0))
        return self._scores[key]

    def save_state(self, folder: Path) -> None:
        """Nothing to carry across rounds (each round has its own study)."""

    def load_state(self, folder: Path) -> None:
        """Nothing to reload."""


def _current(bundle: Any, name: str, default_top_k: int) -> Any:
    value = bundle.get(name)
    return default_top_k if value is None and name == "top_k" else value
