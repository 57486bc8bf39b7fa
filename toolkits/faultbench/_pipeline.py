"""One traced run of a memory layer with fault hooks, on membase's intervention API.

The run is :func:`membase.interventions.run_traced`: construction, search and evaluation by
membase's own runners, so every op of the graph is recorded by membase's code, never by this
package. The answer model and the judge are the deterministic models of :mod:`._models` served as
chat models. A :class:`FaultInjector` is a membase :class:`~membase.interventions.Intervention`
(hooks around every message, the final flush and every retrieval) plus the answer; the run notes
which ops each call created, so that a fault's label is the op recorded while the fault acted,
found by construction rather than by reading text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from membase.interventions import CallKey, Intervention, RunFailed, run_traced
from toolkits.faultbench._models import (
    NO_ANSWER,
    ExtractiveReader,
    judge_answer,
    reply_text,
    split_judge_prompt,
    split_qa_prompt,
)

__all__ = ["CallKey", "FaultInjector", "PipelineRun", "QARecord", "run_pipeline"]


class FaultInjector(Intervention):
    """No-op hooks; faults override the ones they need (membase's intervention hooks plus the answer)."""

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
    injector = injector or FaultInjector()
    reader = reader or ExtractiveReader()
    ordered = injector.search_order(qas)
    by_question = {qa.question.strip(): qa for qa in ordered}
    try:
        run = run_traced(layer, trajectory, ordered, intervention=injector, top_k=top_k,
                         qa_model=_qa_model(injector, reader, by_question), judge_model=_judge_model(by_question))
    except RunFailed as exc:
        raise RuntimeError(f"faultbench run failed: {exc}") from exc
    export, results = run.export, run.results
    if graph_metadata:
        export["metadata"].update(graph_metadata)
    records = {}
    for row in results:
        qa_id = row["qa_pair"]["id"]
        qa = next(q for q in ordered if q.id == qa_id)
        score = float(row.get("metrics", {}).get("llm_judge", {}).get("value", 0.0))
        records[qa_id] = QARecord(qa=qa, prediction=row.get("prediction") or NO_ANSWER, score=score)
    return PipelineRun(export=export, records=records, calls=run.calls)

