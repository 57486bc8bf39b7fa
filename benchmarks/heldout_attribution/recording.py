"""Record one conversation through a simulated memory layer as a smartcomment graph.

The driver follows the runners' conventions (spec-tracer-and-membase §4.5/§4.6): one
``memory_construction`` session per conversation session plus a finalization session, a
``memory_search`` session registering each question as ``query:<qa id>`` while the layer
retrieves, and a ``memory_evaluation`` session with a ``question-answering`` and an
``llm-judge`` op per question. Layers record their own construction and retrieval ops.

Every op a layer records is noted in an :class:`OpLog` under a key naming its stage and subject
(``("extract", message id)``, ``("retrieve", qa id)``, ...), on the same code path whether or
not the run carries a fault; the builder reads the faulted op's id from it afterwards. A
simulated clock makes ``created_at`` strictly increasing (execution order) and reproducible.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol
from unittest import mock

import smartcomment.schema.base as _sc_base
from smartcomment import (
    comment_graph,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    current_context,
)
from smartcomment.runtime.variable import RuntimeVariable

from .conversations import Conversation, ConvSession, Message, Question

__all__ = [
    "Entry",
    "Layer",
    "OpLog",
    "Recorded",
    "json_text",
    "message_node",
    "record_conversation",
    "simulated_clock",
]

QA_TEMPLATE = "Question: $question\nPlease answer the question based on the following memories:\n$context"
JUDGE_TEMPLATE = (
    "Label the answer CORRECT if it states the same fact as the gold answer, else WRONG.\n"
    "Question: $question\nGold answer: $golden_answers\nAnswer: $prediction\n"
    'Reply with JSON: {"label": "CORRECT" | "WRONG"}'
)
CONTEXT_SOURCE = 'def build_context(memories):\n    return "\\n\\n".join(f"### Memory {i}:\\n{m}" for i, m in enumerate(memories, 1))'
SCORE_SOURCE = 'def parse(response):\n    return 1.0 if "correct" in response.lower() else 0.0'


def json_text(value: Any) -> str:
    """The layers' JSON encoding of message and memory nodes."""
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


class _SimulatedTime:
    """Stands in for the ``time`` module inside smartcomment's timestamp helper."""

    def __init__(self, start: float, step: float) -> None:
        self._now = start
        self._step = step

    def time(self) -> float:
        self._now += self._step
        return self._now

    @staticmethod
    def localtime(seconds: float) -> time.struct_time:
        return time.gmtime(seconds)


@contextmanager
def simulated_clock(start: float, step: float = 0.011) -> Iterator[None]:
    """Make every smartcomment timestamp ``step`` seconds later than the previous one."""
    with mock.patch.object(_sc_base, "time", _SimulatedTime(start, step)):
        _sc_base._last_ms = -1
        yield
    _sc_base._last_ms = -1


@dataclass
class OpLog:
    """Op ids by (stage, subject); the first op noted for a key wins."""

    ops: dict[tuple[str, str], str] = field(default_factory=dict)

    def mark(self, stage: str, subject: str, op_id: str) -> None:
        self.ops.setdefault((stage, subject), op_id)


@dataclass(frozen=True)
class Entry:
    """One retrieved memory as the QA context builder sees it."""

    trace_id: str
    formatted: str


class Layer(Protocol):
    project_id: str
    top_k: int

    def add_message(self, message: Message, session: ConvSession) -> None: ...

    def flush(self) -> None: ...

    def retrieve(self, question: Question, query: RuntimeVariable) -> list[Entry]: ...


@dataclass
class Recorded:
    graph: dict[str, Any]
    log: OpLog
    query_ids: dict[str, str]
    prediction_ids: dict[str, str]
    golden_ids: dict[str, str]
    contexts: dict[str, str]
    retrieved: dict[str, list[str]]
    """Trace ids of the memories each question's context was built from."""


def message_node(conv: Conversation, message: Message, session: ConvSession, *, style: str) -> RuntimeVariable:
    """Record a message node the way each layer writes it (§4.6)."""
    if style == "mem0":
        content = f"{message.text}\nBelow is this message's metadata:\nSpeaker Name: {message.speaker}\nSpeaker Role: user\n"
    elif style == "evermemos":
        content = message.text
    else:
        content = f"Speaker {message.speaker} (role: user) says: {message.text}\nTimestamp: {session.date_time}"
    value = {"content": content, "name": message.speaker, "role": "user", "timestamp": session.date_time}
    tag = "speaker_a" if message.speaker == conv.speaker_a else "speaker_b"
    metadata: dict[str, Any] = {"speaker_tag": tag, "dia_id": message.id.split(":", 1)[1],
                                "timestamp": session.date_time}
    if style == "evermemos":
        metadata["speaker"] = message.speaker
    else:
        metadata["speakers"] = [conv.speaker_a, conv.speaker_b]
    return comment_variable(value, to_runtime=True, id_strategy=lambda _v, mid=message.id: mid,
                            encoding_fn=json_text, category="message", metadata=metadata,
                            comment="A message of the conversation, as the memory system received it.")


def line_of(message: Message, session: ConvSession) -> str:
    """The message as Long-Context and NaiveRAG buffer it."""
    return f"Speaker {message.speaker} (role: user) says: {message.text}\nTimestamp: {session.date_time}"


def _query_options(question: Question) -> dict[str, Any]:
    return {"class_name": "query", "id_strategy": lambda _v, qid=question.qid: qid, "category": "message & query"}


def _query_metadata(conv: Conversation, question: Question) -> dict[str, Any]:
    return {"question_type": question.question_type, "category_id": question.category_id,
            "evidence": list(question.evidence), "speaker_names": [conv.speaker_a, conv.speaker_b]}


def _record_answer(question: Question, entries: Sequence[Entry], prediction: str, log: OpLog,
                   prompt: RuntimeVariable) -> tuple[str, str]:
    context = "\n\n".join(f"### Memory {i}:\n{e.formatted}" for i, e in enumerate(entries, 1))
    with comment_op_scope(op_name="question-answering", category="evaluation") as op:
        log.mark("answer", question.qid, op.op_id)
        memories = [({"id": e.trace_id}, {"id_strategy": lambda v: v["id"], "identity_only": True}) for e in entries]
        context_rv = comment_variable(context, to_runtime=True, class_name="context", category="memory_context",
                                      metadata={"source_code": CONTEXT_SOURCE})
        comment_op(inputs=memories, outputs=[context_rv], metadata={"source_code": CONTEXT_SOURCE}, reuse_op=True)
        prediction_rv = comment_variable(prediction, to_runtime=True, class_name="prediction", category="llm_response")
        comment_op(inputs=[(question.text, _query_options(question)), context_rv, prompt], outputs=[prediction_rv],
                   reuse_op=True)
    return prediction_rv.full_node_id, context


def _record_judge(question: Question, prediction: str, correct: bool) -> str:
    judge_text = json.dumps({"label": "CORRECT" if correct else "WRONG"})
    with comment_op_scope(op_name="llm-judge", category="evaluation"):
        golden_rv = comment_variable(list(question.answers), to_runtime=True, class_name="golden_answers",
                                     category="golden_answers", encoding_fn=", ".join)
        judge_prompt = (JUDGE_TEMPLATE, {"id_strategy": lambda _v: "locomo-judge", "class_name": "judge_prompt",
                                         "category": "prompt", "metadata": {"op_type": "llm-judge"}})
        response_rv = comment_variable(judge_text, to_runtime=True, class_name="judge_response", category="llm_response")
        comment_op(inputs=[(question.text, _query_options(question)), golden_rv, judge_prompt,
                           (prediction, {"class_name": "prediction", "category": "llm_response"})],
                   outputs=[response_rv], reuse_op=True)
        comment_op(inputs=[response_rv], outputs=[(1.0 if correct else 0.0, {"class_name": "judge_score"})],
                   category="evaluation", metadata={"source_code": SCORE_SOURCE}, reuse_op=True)
    return golden_rv.full_node_id


def record_conversation(conv: Conversation, layer: Layer, log: OpLog, *, questions: Sequence[Question],
                        predictions: dict[str, str], wrong: set[str], clock_start: float,
                        graph_metadata: dict[str, Any]) -> Recorded:
    """Run ``conv`` through ``layer`` and answer ``questions``; ``wrong`` lists the failed qa ids."""
    query_ids: dict[str, str] = {}
    prediction_ids: dict[str, str] = {}
    golden_ids: dict[str, str] = {}
    contexts: dict[str, str] = {}
    retrieved: dict[str, list[Entry]] = {}
    ordinals = {1: "1st", 2: "2nd", 3: "3rd"}
    with simulated_clock(clock_start):
        with comment_graph(user_id=conv.id, project_id=layer.project_id, strict=True,
                           metadata=graph_metadata) as graph:
            for i, session in enumerate(conv.sessions, 1):
                with comment_session(session_id=session.id, category="memory_construction",
                                     comment=f"It is the {ordinals.get(i, f'{i}th')} conversational session.",
                                     metadata={"session_date_time": session.date_time}):
                    for message in session.messages:
                        layer.add_message(message, session)
            with comment_session(category="memory_construction",
                                 comment="The finalization stage: pending buffers are turned into memories."):
                layer.flush()
            with comment_session(category="memory_search", comment="Memories are searched for each question.",
                                 metadata={"top_k": layer.top_k, "strict": True}):
                for q in questions:
                    query = comment_variable(q.text, to_runtime=True, variable_name="query",
                                             id_strategy=lambda _v, qid=q.qid: qid, category="message & query",
                                             class_name="query", metadata=_query_metadata(conv, q))
                    query_ids[q.qid] = query.full_node_id
                    retrieved[q.qid] = layer.retrieve(q, query)
                    current_context().remove_variable("query")
            with comment_session(category="memory_evaluation", comment="Each question is answered and judged.",
                                 metadata={"qa_model": "gpt-4.1-mini", "judge_model": "gpt-4.1-mini"}):
                prompt = comment_variable(QA_TEMPLATE, to_runtime=True,
                                          id_strategy=lambda _v: "question-answering-prompt",
                                          category="prompt", metadata={"op_type": "question-answering"})
                for q in questions:
                    prediction_ids[q.qid], contexts[q.qid] = _record_answer(q, retrieved[q.qid], predictions[q.qid],
                                                                            log, prompt)
                    golden_ids[q.qid] = _record_judge(q, predictions[q.qid], q.qid not in wrong)
        exported = graph.export_graph()
    return Recorded(graph=exported, log=log, query_ids=query_ids, prediction_ids=prediction_ids,
                    golden_ids=golden_ids, contexts=contexts,
                    retrieved={qid: [e.trace_id for e in entries] for qid, entries in retrieved.items()})
