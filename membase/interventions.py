"""Interventions: run a memory layer through membase's own runners and change what one layer call does.

One mechanism serves two users: ``faultbench`` injects *faults* (the call at op X returns or keeps
something worse) and replay applies *repairs* (the call at op X returns or keeps what it should
have). Either way the layer and the runners record every op themselves; an intervention only
changes what a layer call returns or keeps, through the layer's own code path.

A traced run is construction → search → evaluation with :class:`ConstructionRunner`,
:class:`SearchRunner` and :class:`EvaluationRunner`, handed one live layer (the runners would
otherwise build and reload one per stage). A :class:`CallRecorder` wraps the layer's
``add_message`` / ``flush`` / ``retrieve`` so that an :class:`Intervention` sees every call, and
notes which ops each call created: an op of the graph is found again by the call that made it.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "CallKey",
    "CallRecorder",
    "Intervention",
    "InterventionSet",
    "RunFailed",
    "TracedRun",
    "live_layer",
    "patch_attr",
    "run_traced",
]

CallKey = tuple[Any, ...]
"""``("message", i)`` (i = position of the message in the trajectory), ``("flush",)``,
``("retrieve", qa_id)``, ``("answer", qa_id)``."""


class Intervention:
    """No-op hooks around every layer call of a traced run; subclasses override what they need."""

    current_call: CallKey | None = None

    def begin_call(self, key: CallKey | None) -> None:
        """The run is about to make the call ``key`` on the layer (None: the call ended)."""
        self.current_call = key

    def on_start(self, layer: Any) -> None:
        """Called once, before the first message."""

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        """Wraps ``layer.add_message(message)`` (index = position in the trajectory)."""
        yield

    def after_message(self, layer: Any, message: Any, index: int) -> None:
        """Called after each message."""

    @contextlib.contextmanager
    def around_flush(self, layer: Any) -> Iterator[None]:
        """Wraps ``layer.flush()``."""
        yield

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        """Wraps ``layer.retrieve(question)`` of one question."""
        yield

    def search_order(self, qas: Sequence[Any]) -> list[Any]:
        """The order in which the questions are searched (default: as given)."""
        return list(qas)


class InterventionSet(Intervention):
    """Several interventions in one run; every hook goes to each, in order."""

    def __init__(self, parts: Sequence[Intervention]) -> None:
        self.parts = list(parts)

    def begin_call(self, key: CallKey | None) -> None:
        """Remember the call and pass it to every part."""
        self.current_call = key
        for part in self.parts:
            part.begin_call(key)

    def on_start(self, layer: Any) -> None:
        """Pass the layer to every part's ``on_start``."""
        for part in self.parts:
            part.on_start(layer)

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        """Nest every part's ``around_message`` scope, first part outermost."""
        with contextlib.ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.around_message(layer, message, index))
            yield

    def after_message(self, layer: Any, message: Any, index: int) -> None:
        """Call every part's ``after_message``, in order."""
        for part in self.parts:
            part.after_message(layer, message, index)

    @contextlib.contextmanager
    def around_flush(self, layer: Any) -> Iterator[None]:
        """Nest every part's ``around_flush`` scope, first part outermost."""
        with contextlib.ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.around_flush(layer))
            yield

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        """Nest every part's ``around_retrieve`` scope, first part outermost."""
        with contextlib.ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.around_retrieve(layer, qa))
            yield

    def search_order(self, qas: Sequence[Any]) -> list[Any]:
        """Let each part reorder the questions in turn."""
        ordered = list(qas)
        for part in self.parts:
            ordered = part.search_order(ordered)
        return ordered


def patch_attr(obj: Any, name: str, value: Any) -> contextlib.AbstractContextManager[None]:
    """Shadow ``obj.name`` with ``value`` for the duration of the block."""

    @contextlib.contextmanager
    def scope() -> Iterator[None]:
        original = getattr(obj, name)
        setattr(obj, name, value)
        try:
            yield
        finally:
            setattr(obj, name, original)

    return scope()


class CallRecorder:
    """Wraps the layer's calls: the intervention's hooks around each, and the ops each call created."""

    def __init__(self, layer: Any, intervention: Intervention) -> None:
        self.layer = layer
        self.intervention = intervention
        self.calls: dict[CallKey, list[tuple[str, str | None]]] = {}
        """Ops ``(id, name)`` each call created, in order."""
        self.questions: dict[str, Any] = {}
        """Question text → QA pair (set by the run before the search stage)."""
        self.index = 0
        self._originals: dict[str, Any] = {}

    @contextlib.contextmanager
    def call(self, key: CallKey) -> Iterator[None]:
        """Mark the block as the layer call ``key``: the intervention is told, the new ops are noted."""
        from smartcomment import current_graph

        graph = current_graph()
        before = graph.op_count if graph is not None else 0
        self.intervention.begin_call(key)
        try:
            yield
        finally:
            self.intervention.begin_call(None)
            if graph is not None:
                ops = graph.get_all_operations()[before:]
                self.calls.setdefault(key, []).extend((op.op_id, op.op_name) for op in ops)

    def install(self) -> None:
        """Shadow the layer's methods on the instance (``uninstall`` restores them)."""
        layer, hooks = self.layer, self.intervention
        for name in ("add_message", "flush", "retrieve", "cleanup", "load_memory"):
            self._originals[name] = getattr(layer, name)
        add, flush, retrieve = (self._originals[n] for n in ("add_message", "flush", "retrieve"))

        def add_message(message: Any, **kwargs: Any) -> None:
            index = self.index
            self.index += 1
            with self.call(("message", index)), hooks.around_message(layer, message, index):
                add(message, **kwargs)
            hooks.after_message(layer, message, index)

        def flush_all() -> None:
            with self.call(("flush",)), hooks.around_flush(layer):
                flush()

        def retrieve_one(query: str, k: int = 10, **kwargs: Any) -> Any:
            qa = self.questions.get(query)
            if qa is None:
                return retrieve(query, k, **kwargs)
            with self.call(("retrieve", qa.id)), hooks.around_retrieve(layer, qa):
                return retrieve(query, k, **kwargs)

        layer.add_message = add_message
        layer.flush = flush_all
        layer.retrieve = retrieve_one
        layer.cleanup = lambda: None  # the runners close the layer after each stage; it lives on
        layer.load_memory = lambda user_id=None: True  # the search runner "reloads" the live layer

    def uninstall(self) -> None:
        """Restore the layer's own methods."""
        for name in self._originals:
            vars(self.layer).pop(name, None)


@contextlib.contextmanager
def live_layer(layer: Any) -> Iterator[None]:
    """The runners build their layer with ``build_layer``: hand them the live one instead."""
    import membase.runners.construction as construction
    import membase.runners.search as search

    saved = (construction.build_layer, search.build_layer)
    construction.build_layer = lambda *_a, **_k: layer
    search.build_layer = lambda *_a, **_k: layer
    try:
        yield
    finally:
        construction.build_layer, search.build_layer = saved


@dataclass(kw_only=True)
class TracedRun:
    """A finished run of one trajectory: the exported graph, the evaluation rows, the ops of every call."""

    export: dict[str, Any]
    results: list[dict[str, Any]]
    """The evaluation runner's rows (``qa_pair``, ``prediction``, ``metrics``, ...), in search order."""
    calls: dict[CallKey, list[tuple[str, str | None]]] = field(default_factory=dict)
    layer: Any = None
    """The layer that answered the questions (the reloaded one when the run reloaded)."""


class RunFailed(MemTraceError, RuntimeError):
    """A runner stage failed: the run cannot stand for the system's behaviour."""


def run_traced(
    layer: Any,
    trajectory: Any,
    qas: Sequence[Any],
    *,
    qa_model: Any,
    judge_model: Any,
    intervention: Intervention | None = None,
    top_k: int = 10,
    dataset_type: str = "LoCoMo",
    metrics: Sequence[str] = ("llm_judge",),
    evaluation_options: dict[str, Any] | None = None,
    work_dir: str | Path | None = None,
    on_recorder: Callable[[CallRecorder], None] | None = None,
    stages: Sequence[str] = ("construction", "search", "evaluation"),
    reload: Callable[[], Any] | None = None,
) -> TracedRun:
    """Run ``layer`` over ``trajectory`` and answer ``qas`` with membase's three runners.

    Args:
        layer: a built ``MemBaseLayer`` (it keeps its own ``save_dir``).
        trajectory: a ``membase.types.Trajectory`` (already cut to the wanted messages).
        qas: the questions to search and answer.
        qa_model: the chat model that answers (evaluation runner).
        judge_model: the chat model that judges the answers (evaluation runner).
        intervention: hooks around the layer calls (None = a clean run).
        top_k: retrieval depth.
        dataset_type: the judge prompt's dataset.
        metrics: evaluation metrics.
        evaluation_options: further ``EvaluationRunnerConfig`` fields (batch sizes are forced to 1:
            the answers then come in a fixed order).
        work_dir: folder for the runners' reports and graphs (default: a temporary folder).
        on_recorder: called with the installed recorder (lets a caller see the calls as they happen).
        stages: ``("search", "evaluation")`` skips construction: ``layer`` is already built and
            ``<work_dir>/traces/<trajectory>/graph_construction.json`` holds its construction graph.
        reload: after construction, close the layer and search with ``reload()`` — a new layer on
            the same ``save_dir`` that loads the saved memory — as ``python -m membase run`` does
            (a store reloaded from disk may rank near-ties differently from the live one).
            ``TracedRun.layer`` is then the reloaded layer.

    Raises:
        RunFailed: a runner stage failed.
    """
    from membase.runners.construction import ConstructionRunner, ConstructionRunnerConfig
    from membase.runners.evaluation import EvaluationRunner, EvaluationRunnerConfig
    from membase.runners.search import SearchRunner, SearchRunnerConfig
    from membase.types import MemoryDataset

    hooks = intervention or Intervention()
    ordered = hooks.search_order(qas)
    dataset = MemoryDataset(trajectories=[trajectory], qa_pair_lists=[list(ordered)])
    recorder = CallRecorder(layer, hooks)
    recorder.install()
    recorder.questions = {qa.question: qa for qa in ordered}
    if on_recorder is not None:
        on_recorder(recorder)
    with contextlib.ExitStack() as stack:
        work = Path(work_dir) if work_dir is not None else Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="membase-run-")))
        # The runners wipe <save_dir>/<user> before building; the live layer keeps its own folder.
        save_dir, traced = str(work / "runner"), str(work / "traces")
        try:
            hooks.on_start(layer)
            with live_layer(layer):
                if "construction" in stages:
                    _check(ConstructionRunner(ConstructionRunnerConfig(
                        layer_type=layer.layer_type, save_dir=save_dir, traced_data_save_dir=traced,
                        show_progress=False, rerun=True)).run(dataset), "construction")
            if reload is not None and "construction" in stages:
                recorder = _reloaded(recorder, reload)
                layer = recorder.layer
            with live_layer(layer):
                _check(SearchRunner(SearchRunnerConfig(
                    layer_type=layer.layer_type, save_dir=save_dir, traced_data_save_dir=traced, top_k=top_k,
                    show_progress=False)).run(dataset), "search")
            search = SearchRunner(SearchRunnerConfig(layer_type=layer.layer_type, save_dir=save_dir, top_k=top_k))
            options = {**(evaluation_options or {}), "qa_batch_size": 1, "judge_batch_size": 1}
            evaluation = EvaluationRunner(
                EvaluationRunnerConfig(search_results_path=str(search.results_path), dataset_type=dataset_type,
                                       traced_data_save_dir=traced, metrics=list(metrics), show_progress=False,
                                       **options),
                qa_model=qa_model, judge_model=judge_model)
            _check(evaluation.run(), "evaluation")
            results = json.loads(evaluation.output_path.read_text(encoding="utf-8"))
            export = json.loads((Path(traced) / trajectory.id / "graph_evaluation.json").read_text(encoding="utf-8"))
        finally:
            recorder.uninstall()
    return TracedRun(export=export, results=results, calls=recorder.calls, layer=layer)


def _reloaded(recorder: CallRecorder, reload: Callable[[], Any]) -> CallRecorder:
    """Close the built layer, open the saved memory in a new one, and record its calls in the same book."""
    recorder.uninstall()
    recorder.layer.cleanup()
    layer = reload()
    if not layer.load_memory(layer.config.user_id):
        raise RunFailed("the reloaded layer found no saved memory")
    fresh = CallRecorder(layer, recorder.intervention)
    fresh.calls, fresh.questions, fresh.index = recorder.calls, recorder.questions, recorder.index
    fresh.install()
    return fresh


def _check(report: Any, stage: str) -> None:
    failures = getattr(report, "failures", None) or []
    if failures or getattr(report, "users_failed", None):
        first = failures[0] if failures else report.users_failed
        raise RunFailed(f"the {stage} stage failed: {first}")
