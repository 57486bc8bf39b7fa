"""Optimizers by variable kind, and the seeded, resumable parameter search.

The registry maps the kind of an optimizable variable to the optimizer that proposes its values:

=============  ====================  ===============================================================
kind           optimizer             what it is
=============  ====================  ===============================================================
``prompt``     ``textual_gradient``  :class:`toolkits.optimization.optimizer.OptimizerRunner` (LLM)
``int``        ``bayesian_tpe``      Bayesian optimization: Optuna's TPE over the bounded range
``float``      ``bayesian_tpe``      idem (log scale when the parameter says so)
``categorical``  ``categorical_tpe``  categorical search: TPE's per-choice densities (a bandit-like
                                     allocation that favours choices that scored well)
=============  ====================  ===============================================================

The numeric and categorical optimizers each contribute a distribution to **one** Optuna study
over the searched parameters (TPE handles mixed spaces), run by :class:`ParameterSearch`:

* seeded: trial ``n`` is asked with a ``TPESampler`` seeded by ``(seed, n)``, so the next trial
  depends only on the history, never on how many processes it took to get there;
* resumable: the study lives in an SQLite file (Optuna RDB storage); a rerun continues it, and
  a trial interrupted during its evaluation is evaluated again with the same parameters;
* a proposal the layer cannot run (e.g. ``deferred`` without ``max_tokens``) is recorded as a
  failed trial and counts as an evaluation.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from membase.layers.parameters import PARAMETER_CLASS, TunableParameter
from smartcomment.runtime.errors import MemTraceError
from toolkits.optimization.targets import TEXTUAL_GRADIENT

__all__ = [
    "BAYESIAN_TPE",
    "CATEGORICAL_TPE",
    "OPTIMIZERS",
    "InfeasibleConfig",
    "ParameterSearch",
    "SearchMethod",
    "SearchOutcome",
    "SearchSpaceMismatch",
    "optimizer_for",
    "optimizer_name_for_kind",
    "variable_kind",
]

BAYESIAN_TPE = "bayesian_tpe"
CATEGORICAL_TPE = "categorical_tpe"
_KIND_TO_OPTIMIZER = {"prompt": TEXTUAL_GRADIENT, "int": BAYESIAN_TPE, "float": BAYESIAN_TPE, "categorical": CATEGORICAL_TPE}


class InfeasibleConfig(MemTraceError, ValueError):
    """The objective cannot run a proposed configuration (the trial fails and the search goes on)."""


class SearchSpaceMismatch(MemTraceError, ValueError):
    """A stored study was made for another search space or seed (one-line message)."""


@dataclass(frozen=True)
class SearchMethod:
    """One optimizer of the registry."""

    name: str
    kinds: tuple[str, ...]
    description: str

    def distribution(self, spec: TunableParameter) -> Any:
        """The Optuna distribution of ``spec`` (parameter optimizers only).

        Raises:
            TypeError: A prompt optimizer, or a parameter of another kind.
        """
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if spec.kind not in self.kinds or self.name == TEXTUAL_GRADIENT:
            raise TypeError(f"optimizer {self.name!r} does not search {spec.kind} parameters")
        if spec.kind == "categorical":
            return CategoricalDistribution(list(spec.choices))
        if spec.kind == "int":
            return IntDistribution(int(spec.low), int(spec.high), log=spec.log)  # type: ignore[arg-type]
        return FloatDistribution(float(spec.low), float(spec.high), log=spec.log)  # type: ignore[arg-type]


OPTIMIZERS: dict[str, SearchMethod] = {
    TEXTUAL_GRADIENT: SearchMethod(
        TEXTUAL_GRADIENT, ("prompt",),
        "LLM feedback -> aggregation -> rewrite (toolkits.optimization.optimizer.OptimizerRunner)",
    ),
    BAYESIAN_TPE: SearchMethod(BAYESIAN_TPE, ("int", "float"), "Bayesian optimization (Optuna TPE) over a bounded range"),
    CATEGORICAL_TPE: SearchMethod(CATEGORICAL_TPE, ("categorical",), "categorical search (Optuna TPE over the choices)"),
}


def optimizer_name_for_kind(kind: str) -> str:
    """The registry name of the optimizer for a variable kind.

    Raises:
        KeyError: An unknown kind.
    """
    try:
        return _KIND_TO_OPTIMIZER[kind]
    except KeyError:
        raise KeyError(f"no optimizer for variable kind {kind!r}; known kinds: {', '.join(_KIND_TO_OPTIMIZER)}") from None


def variable_kind(variable: Any) -> str:
    """The optimization kind of a traced variable: a parameter node's ``metadata.kind``, or
    ``prompt`` for a prompt variable (category ``prompt``).

    Raises:
        ValueError: The variable is neither a parameter nor a prompt.
    """
    metadata = getattr(variable, "metadata", None) or {}
    if getattr(variable, "class_name", None) == PARAMETER_CLASS and metadata.get("kind") in _KIND_TO_OPTIMIZER:
        return str(metadata["kind"])
    if getattr(variable, "category", None) == "prompt":
        return "prompt"
    raise ValueError(f"variable {getattr(variable, 'full_node_id', variable)!r} is neither a tunable parameter nor a prompt")


def optimizer_for(item: Any) -> SearchMethod:
    """The optimizer of a kind name, a :class:`~toolkits.optimization.targets.Target`, a
    :class:`TunableParameter` or a traced variable (dispatch by kind)."""
    if isinstance(item, str):
        kind = item
    elif isinstance(item, TunableParameter):
        kind = item.kind
    elif hasattr(item, "optimizer") and hasattr(item, "field"):  # a Target names its optimizer
        return OPTIMIZERS[item.optimizer]
    else:
        kind = variable_kind(item)
    return OPTIMIZERS[optimizer_name_for_kind(kind)]


# -- the search --------------------------------------------------------------------------------


@dataclass
class SearchOutcome:
    """The trials of a search (complete and failed), in order."""

    trials: list[dict[str, Any]] = field(default_factory=list)
    """``{number, params, value, state, seconds, error?}`` per trial."""

    @property
    def complete(self) -> list[dict[str, Any]]:
        """Trials with a value."""
        return [t for t in self.trials if t["state"] == "COMPLETE"]

    @property
    def best(self) -> dict[str, Any] | None:
        """The complete trial with the highest value (the earliest on ties)."""
        done = self.complete
        return max(done, key=lambda t: (t["value"], -t["number"])) if done else None


class ParameterSearch:
    """A seeded, resumable Optuna study over a set of parameters (maximizes the objective).

    Args:
        parameters: the searched parameters (name -> spec); their optimizers come from the
            registry (:func:`optimizer_for`).
        storage_path: SQLite file of the study (None: in memory, not resumable).
        seed: base seed.
        study_name: name of the study in the file.
        n_startup_trials: random trials before TPE models the history (part of the study's
            identity, like the space and the seed).
        warm_start: ``(params, value)`` points already scored (the incumbent), added to a new
            study as finished trials that are not counted as its trials (:meth:`_add_warm_start`).
    """

    def __init__(
        self,
        parameters: Mapping[str, TunableParameter],
        *,
        storage_path: str | Path | None = None,
        seed: int = 0,
        study_name: str = "parameter_search",
        n_startup_trials: int = 8,
        warm_start: Sequence[tuple[Mapping[str, Any], float]] = (),
    ) -> None:
        if not parameters:
            raise ValueError("a parameter search needs at least one parameter")
        self.parameters = dict(parameters)
        self.distributions = {name: optimizer_for(spec).distribution(spec) for name, spec in self.parameters.items()}
        self.storage_path = Path(storage_path) if storage_path is not None else None
        self.seed = seed
        self.study_name = study_name
        self.n_startup_trials = n_startup_trials
        self.warm_start = [(dict(params), float(value)) for params, value in warm_start]
        self._study: Any = None

    # -- study ------------------------------------------------------------------------------------
    def _space_identity(self) -> str:
        from optuna.distributions import distribution_to_json

        space = {n: distribution_to_json(d) for n, d in sorted(self.distributions.items())}
        return json.dumps({"seed": self.seed, "n_startup_trials": self.n_startup_trials, "space": space}, sort_keys=True)

    def study(self) -> Any:
        """The Optuna study (created, or loaded from the storage file).

        Raises:
            SearchSpaceMismatch: The stored study searched another space or used another seed.
        """
        if self._study is not None:
            return self._study
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        storage = None
        if self.storage_path is not None:
            self.storage_path.parent.mkdir(parents=True, exist_ok=True)
            storage = optuna.storages.RDBStorage(f"sqlite:///{self.storage_path.resolve()}")
        study = optuna.create_study(study_name=self.study_name, storage=storage, direction="maximize",
                                    load_if_exists=True, sampler=self._sampler(0))
        identity = self._space_identity()
        stored = study.user_attrs.get("space")
        if stored is None:
            study.set_user_attr("space", identity)
            self._add_warm_start(study)
        elif stored != identity:
            raise SearchSpaceMismatch(
                f"the study in {str(self.storage_path)!r} searched another space, seed or startup count; remove the file or "
                "use another folder"
            )
        self._study = study
        return study

    def _add_warm_start(self, study: Any) -> None:
        """Points already scored elsewhere (the incumbent) go into a new study as finished trials.

        TPE then models them from the first trial: a stage that starts from a good point searches
        around it instead of sampling blind. They are marked ``warm_start``, are not counted as
        the search's trials and never become its best. A parameter whose value lies outside its
        distribution (``max_tokens`` null) is left out of that trial.
        """
        from optuna.trial import create_trial

        for params, value in self.warm_start:
            inside = {n: v for n, v in params.items()
                      if n in self.distributions and self.parameters[n].contains(v)}
            if not inside:
                continue
            study.add_trial(create_trial(params=inside, distributions={n: self.distributions[n] for n in inside},
                                         value=value, user_attrs={"warm_start": True}))

    def _sampler(self, number: int) -> Any:
        import optuna

        seed = (self.seed * 1_000_003 + number) % (2**32)
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=self.n_startup_trials)

    def trials(self) -> SearchOutcome:
        """The stored trials (running ones excluded)."""
        from optuna.trial import TrialState

        outcome = SearchOutcome()
        for t in self.study().get_trials(deepcopy=False):
            if t.state == TrialState.RUNNING or t.state == TrialState.WAITING or t.user_attrs.get("warm_start"):
                continue
            entry: dict[str, Any] = {
                "number": t.number, "params": dict(t.params), "state": t.state.name,
                "value": t.value if t.state == TrialState.COMPLETE else None,
                "seconds": float(t.user_attrs.get("seconds", 0.0)),
            }
            if "error" in t.user_attrs:
                entry["error"] = t.user_attrs["error"]
            for key, value in t.user_attrs.items():
                if key not in ("seconds", "error"):
                    entry[key] = value
            outcome.trials.append(entry)
        return outcome

    # -- running ----------------------------------------------------------------------------------
    def run(
        self,
        objective: Callable[[dict[str, Any]], float | tuple[float, dict[str, Any]]],
        n_trials: int,
        *,
        on_trial: Callable[[dict[str, Any]], None] | None = None,
        show_progress: bool = False,
        stop: Callable[[SearchOutcome], bool] | None = None,
    ) -> SearchOutcome:
        """Run the study until it holds ``n_trials`` finished trials.

        Args:
            objective: ``fn(params) -> value`` or ``(value, extra)`` where ``extra`` (JSON) is
                stored with the trial; raise :class:`InfeasibleConfig` for a configuration that
                cannot run.
            n_trials: finished trials wanted in total (earlier runs' trials count).
            on_trial: called with each newly finished trial's entry.
            show_progress: a progress bar over the trials.
            stop: called with the finished trials before each new one; True ends the search
                early (a resumed search asks it too, so it stops where the first run did).
        """
        from optuna.trial import TrialState
        from tqdm.auto import tqdm

        study = self.study()

        def finished_trials() -> list[Any]:
            return [t for t in study.get_trials(deepcopy=False)
                    if t.state in (TrialState.COMPLETE, TrialState.FAIL) and not t.user_attrs.get("warm_start")]

        finished = finished_trials()
        with tqdm(total=n_trials, initial=min(len(finished), n_trials), desc="parameter search", unit="trial",
                  disable=not show_progress) as bar:
            # A trial interrupted during its evaluation is evaluated again with its stored parameters.
            for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                if len(finished) >= n_trials:
                    break
                self._evaluate(study, t.number, dict(t.params), objective, on_trial)
                finished.append(t)
                bar.update(1)
            while True:
                if len(finished_trials()) >= n_trials or (stop is not None and stop(self.trials())):
                    break
                number = len(study.get_trials(deepcopy=False))
                study.sampler = self._sampler(number)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    trial = study.ask(self.distributions)
                self._evaluate(study, trial.number, dict(trial.params), objective, on_trial)
                bar.update(1)
        return self.trials()

    def _evaluate(self, study: Any, number: int, params: dict[str, Any], objective: Callable[..., Any],
                  on_trial: Callable[[dict[str, Any]], None] | None) -> None:
        from optuna.trial import TrialState

        started = time.perf_counter()
        entry: dict[str, Any] = {"number": number, "params": params}
        try:
            result = objective(params)
        except InfeasibleConfig as exc:
            seconds = time.perf_counter() - started
            study._storage.set_trial_user_attr(self._trial_id(study, number), "error", str(exc))
            study._storage.set_trial_user_attr(self._trial_id(study, number), "seconds", seconds)
            study.tell(number, state=TrialState.FAIL)
            entry.update(state="FAIL", value=None, seconds=seconds, error=str(exc))
        else:
            value, extra = result if isinstance(result, tuple) else (result, {})
            seconds = time.perf_counter() - started
            trial_id = self._trial_id(study, number)
            study._storage.set_trial_user_attr(trial_id, "seconds", seconds)
            for key, item in (extra or {}).items():
                study._storage.set_trial_user_attr(trial_id, key, item)
            study.tell(number, float(value))
            entry.update(state="COMPLETE", value=float(value), seconds=seconds, **(extra or {}))
        if on_trial is not None:
            on_trial(entry)

    @staticmethod
    def _trial_id(study: Any, number: int) -> int:
        return study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)
