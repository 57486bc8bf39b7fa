"""One traced run of a memory layer: construction → search → evaluation, in one graph.

The sessions, node names, classes and op names follow the tracing conventions of the membase
runners (spec-tracer-and-membase §4.5–§4.6), so the graphs read like MemTraceBench graphs;
answer and judge are the deterministic models of :mod:`._models`. A :class:`FaultInjector`
gets hooks around every message, after the final flush, around each retrieval and on each
answer — the places where :mod:`._faults` injects its single fault.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkits.faultbench._models import ExtractiveReader, judge_answer
from toolkits.faultbench.prompts import JUDGE_PROMPT, JUDGE_TEMPLATE_NAME, QA_PROMPT

__all__ = ["FaultInjector", "PipelineRun", "QARecord", "build_context", "run_pipeline"]


def build_context(entries: Sequence[Any]) -> str:
    """The default context builder: numbered memories, formatted content preferred."""
    return "\n\n".join(
        f"### Memory {i}:\n{e.formatted_content or e.content}" for i, e in enumerate(entries, start=1)
    )


_CONTEXT_SOURCE = inspect.getsource(build_context)


class FaultInjector:
    """No-op hooks; subclasses override the ones their fault needs."""

    def on_start(self, layer: Any, graph: Any) -> None:
        """Called once the graph is open, before the first message."""

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        """Wraps `layer.add_message(message)` (index = position in the trajectory)."""
        yield

    def after_message(self, layer: Any, message: Any, index: int) -> None:
        """Called after each message, still inside its construction session."""

    def after_flush(self, layer: Any) -> None:
        """Called after `layer.flush()`, inside the finalization session."""

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any, graph: Any) -> Iterator[None]:
        """Wraps `layer.retrieve(question)` of one question."""
        yield

    def search_order(self, qas: Sequence[Any]) -> list[Any]:
        """The order in which the questions are searched (default: as given)."""
        return list(qas)

    def answer(self, qa: Any, question: str, context: str, reader: ExtractiveReader) -> str:
        """Produce the prediction (default: the reader's answer)."""
        return reader.answer(question, [context])


@dataclass(kw_only=True)
class QARecord:
    """What happened to one question in a run."""

    qa: Any
    query_id: str
    prediction: str
    prediction_id: str
    golden_id: str
    qa_op_id: str
    judge_op_id: str
    score: float
    context: str
    retrieved: list[Any] = field(default_factory=list)


@dataclass(kw_only=True)
class PipelineRun:
    """A finished run: the graph and one record per question."""

    graph: Any
    records: dict[str, QARecord]


def run_pipeline(
    layer: Any,
    trajectory: Any,
    qas: Sequence[Any],
    *,
    injector: FaultInjector | None = None,
    top_k: int = 5,
    reader: ExtractiveReader | None = None,
    graph_metadata: dict[str, Any] | None = None,
) -> PipelineRun:
    """Run `layer` over `trajectory`, then search and answer `qas`, all traced in one graph.

    Args:
        layer: a built `MemBaseLayer`.
        trajectory: a `membase.types.Trajectory` (already cut to the wanted messages).
        qas: the questions to search and answer.
        injector: fault hooks (None = a clean run).
        top_k: retrieval depth.
        reader: the answer model (default `ExtractiveReader()`).
        graph_metadata: extra graph metadata.

    Returns:
        The run (graph + per-question records).
    """
    from smartcomment import comment_graph, comment_session, current_context

    injector = injector or FaultInjector()
    reader = reader or ExtractiveReader()
    metadata = {
        "save_dir": str(layer.config.save_dir),
        "layer_type": layer.layer_type,
        "traj_metadata": dict(trajectory.metadata),
        "dataset_cls": "LoCoMo",
        **(graph_metadata or {}),
    }
    retrieved: dict[str, list[Any]] = {}
    records: dict[str, QARecord] = {}
    with comment_graph(user_id=trajectory.id, project_id=layer.layer_type, strict=True, metadata=metadata) as graph:
        if graph is None:
            raise RuntimeError("faultbench needs smartcomment tracing enabled (smartcomment.enable_tracing())")
        injector.on_start(layer, graph)
        index = 0
        for number, session in enumerate(trajectory.sessions, start=1):
            with comment_session(session_id=session.id, comment=f"It is the {number}th conversational session.",
                                 category="memory_construction", metadata=dict(session.metadata)):
                for message in session.messages:
                    with injector.around_message(layer, message, index):
                        layer.add_message(message.model_copy(deep=True))
                    injector.after_message(layer, message, index)
                    index += 1
        with comment_session(comment="The finalization stage: pending buffers become memory.",
                             category="memory_construction"):
            layer.flush()
            injector.after_flush(layer)

        with comment_session(comment="Each question searches the memory.", category="memory_search",
                             metadata={"top_k": top_k, "strict": True}):
            from smartcomment import comment_variable

            for qa in injector.search_order(qas):
                comment_variable(qa.question, variable_name="query", id_strategy=_const(qa.id),
                                 category="message & query", class_name="query", metadata=dict(qa.metadata))
                with injector.around_retrieve(layer, qa, graph):
                    retrieved[qa.id] = layer.retrieve(qa.question, k=top_k)
                current_context().remove_variable("query")

        with comment_session(comment="Each question is answered from its memories and judged.",
                             category="memory_evaluation",
                             metadata={"qa_model": "faultbench-extractive-reader",
                                       "judge_model": "faultbench-token-judge", "qa_batch_size": 1,
                                       "judge_batch_size": 1, "add_question_timestamp": False}):
            for qa in qas:
                records[qa.id] = _answer_and_judge(qa, retrieved[qa.id], injector, reader)
    return PipelineRun(graph=graph, records=records)


def _const(name: str) -> Any:
    return lambda _value: name


def _answer_and_judge(qa: Any, entries: list[Any], injector: FaultInjector, reader: ExtractiveReader) -> QARecord:
    from smartcomment import comment_link, comment_op, comment_op_scope, comment_variable

    context = build_context(entries)
    prediction = injector.answer(qa, qa.question, context, reader)
    with comment_op_scope(op_name="question-answering", category="evaluation") as qa_op:
        prompt_rv = comment_variable(QA_PROMPT, to_runtime=True, id_strategy=_const("question-answering-prompt"),
                                     category="prompt", metadata={"op_type": "question-answering"})
        context_rv = comment_variable(context, to_runtime=True, class_name="context", category="memory_context",
                                      metadata={"source_code": _CONTEXT_SOURCE})
        memory_inputs = [
            ({"id": e.metadata["trace_id"]}, {"id_strategy": _const(e.metadata["trace_id"]), "identity_only": True})
            for e in entries
        ]
        comment_op(inputs=memory_inputs, outputs=[context_rv], reuse_op=True,
                   comment="The retrieved memories are formatted into the context.")
        query_rv = comment_variable(qa.question, to_runtime=True, id_strategy=_const(qa.id), class_name="query",
                                    category="message & query", metadata=dict(qa.metadata))
        prediction_rv = comment_variable(prediction, to_runtime=True, class_name="prediction",
                                         category="llm_response")
        comment_op(inputs=[query_rv, context_rv, prompt_rv], outputs=[prediction_rv], reuse_op=True,
                   comment="The answer model answers the question from the context.")
    response, score = judge_answer(qa.golden_answers, prediction)
    with comment_op_scope(op_name="llm-judge", category="evaluation") as judge_op:
        golden_rv = comment_variable(list(qa.golden_answers), to_runtime=True, encoding_fn=", ".join,
                                     class_name="golden_answers", category="golden_answers")
        judge_prompt_rv = comment_variable(JUDGE_PROMPT, to_runtime=True, id_strategy=_const(JUDGE_TEMPLATE_NAME),
                                           class_name="judge_prompt", category="prompt",
                                           metadata={"op_type": "llm-judge"})
        response_rv = comment_variable(response, to_runtime=True, class_name="judge_response",
                                       category="llm_response")
        comment_op(inputs=[query_rv, golden_rv, judge_prompt_rv, prediction_rv], outputs=[response_rv],
                   reuse_op=True, comment="The judge compares the answer with the reference.")
        score_rv = comment_variable(score, to_runtime=True, class_name="judge_score", category="variable")
        comment_link(source=response_rv, target=score_rv, category="evaluation",
                     edge_metadata={"source_code": "1.0 if label == 'CORRECT' else 0.0"})
    return QARecord(
        qa=qa,
        query_id=query_rv.full_node_id,
        prediction=prediction,
        prediction_id=prediction_rv.full_node_id,
        golden_id=golden_rv.full_node_id,
        qa_op_id=qa_op.op_id,
        judge_op_id=judge_op.op_id,
        score=score,
        context=context,
        retrieved=list(entries),
    )
