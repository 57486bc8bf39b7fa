"""One traced run of a memory layer through membase's own runners, with fault hooks.

Construction, search and evaluation are membase's :class:`ConstructionRunner`,
:class:`SearchRunner` and :class:`EvaluationRunner`, run in a scratch folder, so every session,
op, node and edge of the graph is recorded by membase's code (the layers and the runners) —
never by this package. The runners are handed the live layer (they would otherwise build one
from its config), the answer model and the judge are the deterministic models of
:mod:`._models` served as chat models.

A :class:`FaultInjector` gets hooks around every message, the final flush, every retrieval and
every answer. The run also records which ops each call created, so that a fault's label is the
op recorded while the fault acted, found by construction rather than by reading text.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkits.faultbench._models import (
    NO_ANSWER,
    ExtractiveReader,
    judge_answer,
    reply_text,
    split_judge_prompt,
    split_qa_prompt,
)

__all__ = ["CallKey", "FaultInjector", "PipelineRun", "QARecord", "run_pipeline"]

CallKey = tuple[Any, ...]
"""``("message", i)``, ``("flush",)``, ``("retrieve", qa_id)``."""


class FaultInjector:
    """No-op hooks; faults override the ones they need."""

    current_call: CallKey | None = None

    def begin_call(self, key: CallKey | None) -> None:
        """The pipeline is about to make the call ``key`` on the layer (None: the call ended)."""
        self.current_call = key

    def on_start(self, layer: Any) -> None:
        """Called once, before the first message."""

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        """Wraps ``layer.add_message(message)`` (index = position in the conversation)."""
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

    def answer(self, qa: Any, question: str, memories: str, reader: ExtractiveReader) -> str:
        """Produce the prediction (default: the reader's answer)."""
        return reader.answer(question, memories)


@dataclass(kw_only=True)
class QARecord:
    """What happened to one question in a run."""

    qa: Any
    prediction: str
    score: float


@dataclass(kw_only=True)
class PipelineRun:
    """A finished run: the exported graph, one record per question, the ops of every call."""

    export: dict[str, Any]
    records: dict[str, QARecord]
    calls: dict[CallKey, list[tuple[str, str | None]]] = field(default_factory=dict)
    """Ops (id, name) each layer call created, in order."""


class _Recorder:
    """Wraps the layer's methods: fault hooks around each call, and the ops each call created."""

    def __init__(self, layer: Any, injector: FaultInjector) -> None:
        self.layer = layer
        self.injector = injector
        self.calls: dict[CallKey, list[tuple[str, str | None]]] = {}
        self.index = 0
        self._originals: dict[str, Any] = {}

    @contextlib.contextmanager
    def _call(self, key: CallKey) -> Iterator[None]:
        from smartcomment import current_graph

        graph = current_graph()
        before = graph.op_count if graph is not None else 0
        self.injector.begin_call(key)
        try:
            yield
        finally:
            self.injector.begin_call(None)
            if graph is not None:
                ops = graph.get_all_operations()[before:]
                self.calls.setdefault(key, []).extend((op.op_id, op.op_name) for op in ops)

    def install(self) -> None:
        layer, injector = self.layer, self.injector
        for name in ("add_message", "flush", "retrieve", "cleanup", "load_memory"):
            self._originals[name] = getattr(layer, name)
        add, flush, retrieve = (self._originals[n] for n in ("add_message", "flush", "retrieve"))

        def add_message(message: Any, **kwargs: Any) -> None:
            index = self.index
            self.index += 1
            with self._call(("message", index)), injector.around_message(layer, message, index):
                add(message, **kwargs)
            injector.after_message(layer, message, index)

        def flush_all() -> None:
            with self._call(("flush",)), injector.around_flush(layer):
                flush()

        def retrieve_one(query: str, k: int = 10, **kwargs: Any) -> Any:
            qa = self.questions.get(query)
            if qa is None:
                return retrieve(query, k, **kwargs)
            with self._call(("retrieve", qa.id)), injector.around_retrieve(layer, qa):
                return retrieve(query, k, **kwargs)

        layer.add_message = add_message
        layer.flush = flush_all
        layer.retrieve = retrieve_one
        layer.cleanup = lambda: None  # the runners close the layer after each stage; it lives on
        layer.load_memory = lambda user_id=None: True  # the search runner "reloads" the live layer
        self.questions: dict[str, Any] = {}

    def uninstall(self) -> None:
        for name in self._originals:
            vars(self.layer).pop(name, None)


def _qa_model(injector: FaultInjector, reader: ExtractiveReader, by_question: dict[str, Any]) -> Any:
    from membase.clients.fake import FunctionChatModel

    def reply(messages: list[dict[str, Any]], **_kwargs: Any) -> str:
        question, memories = split_qa_prompt(reply_text(messages))
        qa = by_question.get(question)
        if qa is None:
            return reader.answer(question, memories)
        return injector.answer(qa, question, memories, reader)

    return FunctionChatModel(reply, model="extractive-reader")


def _judge_model(by_question: dict[str, Any]) -> Any:
    from membase.clients.fake import FunctionChatModel

    def reply(messages: list[dict[str, Any]], **_kwargs: Any) -> str:
        question, reference, prediction = split_judge_prompt(reply_text(messages))
        qa = by_question.get(question)
        golden = list(qa.golden_answers) if qa is not None else [reference]
        return judge_answer(golden, prediction)[0]

    return FunctionChatModel(reply, model="token-judge")


@contextlib.contextmanager
def _runner_builds(layer: Any) -> Iterator[None]:
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


def run_pipeline(
    layer: Any,
    trajectory: Any,
    qas: Sequence[Any],
    *,
    injector: FaultInjector | None = None,
    top_k: int = 10,
    reader: ExtractiveReader | None = None,
    graph_metadata: dict[str, Any] | None = None,
) -> PipelineRun:
    """Run ``layer`` over ``trajectory`` and answer ``qas`` with membase's three runners.

    Args:
        layer: a built ``MemBaseLayer`` (it keeps its own ``save_dir``).
        trajectory: a ``membase.types.Trajectory`` (already cut to the wanted messages).
        qas: the questions to search and answer.
        injector: fault hooks (None = a clean run).
        top_k: retrieval depth.
        reader: the answer model (default ``ExtractiveReader()``).
        graph_metadata: graph metadata to set on the exported graph (replaces run-local paths).

    Returns:
        The run: exported graph, per-question records, ops per call.

    Raises:
        RuntimeError: a runner failed (the run is unusable as a benchmark case).
    """
    from membase.runners.construction import ConstructionRunner, ConstructionRunnerConfig
    from membase.runners.evaluation import EvaluationRunner, EvaluationRunnerConfig
    from membase.runners.search import SearchRunner, SearchRunnerConfig
    from membase.types import MemoryDataset

    injector = injector or FaultInjector()
    reader = reader or ExtractiveReader()
    ordered = injector.search_order(qas)
    dataset = MemoryDataset(trajectories=[trajectory], qa_pair_lists=[list(ordered)])
    by_question = {qa.question.strip(): qa for qa in ordered}
    recorder = _Recorder(layer, injector)
    recorder.install()
    recorder.questions = {qa.question: qa for qa in ordered}
    with tempfile.TemporaryDirectory(prefix="faultbench-run-") as work:
        # The runners keep their reports under save_dir and wipe <save_dir>/<user> before building;
        # the live layer keeps its own folder.
        save_dir, traced = str(Path(work) / "runner"), str(Path(work) / "traces")
        try:
            injector.on_start(layer)
            with _runner_builds(layer):
                report = ConstructionRunner(ConstructionRunnerConfig(
                    layer_type=layer.layer_type, save_dir=save_dir, traced_data_save_dir=traced,
                    show_progress=False, rerun=True)).run(dataset)
                _check(report, "construction")
                report = SearchRunner(SearchRunnerConfig(
                    layer_type=layer.layer_type, save_dir=save_dir, traced_data_save_dir=traced, top_k=top_k,
                    show_progress=False)).run(dataset)
                _check(report, "search")
            search = SearchRunner(SearchRunnerConfig(layer_type=layer.layer_type, save_dir=save_dir, top_k=top_k))
            evaluation = EvaluationRunner(
                EvaluationRunnerConfig(search_results_path=str(search.results_path), dataset_type="LoCoMo",
                                       traced_data_save_dir=traced, metrics=["llm_judge"], qa_batch_size=1,
                                       judge_batch_size=1, show_progress=False),
                qa_model=_qa_model(injector, reader, by_question), judge_model=_judge_model(by_question))
            report = evaluation.run()
            _check(report, "evaluation")
            results = json.loads(evaluation.output_path.read_text(encoding="utf-8"))
            export = json.loads((Path(traced) / trajectory.id / "graph_evaluation.json").read_text(encoding="utf-8"))
        finally:
            recorder.uninstall()
    if graph_metadata:
        export["metadata"].update(graph_metadata)
    records = {}
    for row in results:
        qa_id = row["qa_pair"]["id"]
        qa = next(q for q in ordered if q.id == qa_id)
        score = float(row.get("metrics", {}).get("llm_judge", {}).get("value", 0.0))
        records[qa_id] = QARecord(qa=qa, prediction=row.get("prediction") or NO_ANSWER, score=score)
    return PipelineRun(export=export, records=records, calls=recorder.calls)


def _check(report: Any, stage: str) -> None:
    failures = getattr(report, "failures", None) or []
    if failures or getattr(report, "users_failed", None):
        first = failures[0] if failures else report.users_failed
        raise RuntimeError(f"faultbench {stage} run failed: {first}")
