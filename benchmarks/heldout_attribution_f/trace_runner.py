"""The membase runner stages for one trajectory: construction sessions, the finalisation session,
the search session and the evaluation session (question answering + LLM judge), all in one graph."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from benchmarks.heldout_attribution_f.conversations import Conversation, Question
from benchmarks.heldout_attribution_f.runtime_env import Hooks, jdump, relocate, reproducible
from benchmarks.heldout_attribution_f.textsim import mentions, states
from benchmarks.heldout_attribution_f.trace_evermemos import EverMemOSLayer
from benchmarks.heldout_attribution_f.trace_lc import LongContextLayer
from benchmarks.heldout_attribution_f.trace_mem0 import Mem0Layer
from benchmarks.heldout_attribution_f.trace_rag import NaiveRAGLayer
from benchmarks.heldout_attribution_f.trace_utils import Entry, link, var
from smartcomment import (
    comment_graph,
    comment_link,
    comment_op_scope,
    comment_session,
    comment_variable,
    current_context,
)

QA_TEMPLATE = "Question: $question\nPlease answer the question based on the following memories:\n$context"
JUDGE_TEMPLATE = (
    "You grade answers to questions about a long conversation. Compare the model's answer with the golden "
    "answer; be generous with wording and format (dates may be written differently) but strict about the facts. "
    "Question: $question\nGolden answer: $golden_answers\nModel answer: $prediction\n"
    "Reply with JSON: {\"reasoning\": \"...\", \"label\": \"CORRECT\" or \"WRONG\"}."
)
CONTEXT_BUILDER_SOURCE = (
    "def default_context_builder(memories):\n"
    "    return \"\\n\\n\".join(\n"
    "        f\"### Memory {i}:\\n{m.formatted_content or m.content}\" for i, m in enumerate(memories, start=1)\n"
    "    )\n"
)
JUDGE_SCORE_SOURCE = "def parse_judge_response(text):\n    return 1.0 if \"correct\" in text.lower() else 0.0\n"
ORDINAL = "It is the {i}th conversational session."

LAYERS = ("long_context", "rag", "mem0", "evermemos")


@dataclass
class Recording:
    export: dict[str, Any]
    hooks: Hooks
    layer: Any
    contexts: dict[int, str] = field(default_factory=dict)
    predictions: dict[int, str] = field(default_factory=dict)
    correct: dict[int, bool] = field(default_factory=dict)
    node_ids: dict[int, dict[str, str]] = field(default_factory=dict)
    store: list[str] = field(default_factory=list)


def answer(conv: Conversation, q: Question, context: str) -> str:
    """The answering model: right when every piece is stated in the context, else its best guess."""
    if all(states(conv, p, context) for p in q.pieces):
        return q.pred
    negations = [p.negation[1] for p in q.pieces if p.negation]
    if q.negated and negations and mentions(negations, context):
        return q.negated
    if q.confused and mentions(q.confusion, context):
        return q.confused
    return q.unknown


def make_layer(kind: str, conv: Conversation, hooks: Hooks, rng: Any, clock: Any, mode: str = "agentic") -> Any:
    if kind == "long_context":
        return LongContextLayer(hooks)
    if kind == "rag":
        return NaiveRAGLayer(hooks, rng)
    if kind == "mem0":
        return Mem0Layer(hooks, rng, clock)
    if kind == "evermemos":
        return EverMemOSLayer(hooks, rng, clock, conv, mode=mode, top_k=2 if mode == "agentic" else 3, check_docs=1)
    raise ValueError(f"unknown layer {kind!r}")


def _message_value(conv: Conversation, kind: str, msg: Any, timestamp: str) -> tuple[dict[str, Any], str]:
    if kind in ("long_context", "rag"):
        content = f"Speaker {msg.speaker} (role: user) says: {msg.text}\nTimestamp: {timestamp}"
    elif kind == "mem0":
        content = f"{msg.text}\nBelow is this message's metadata:\nSpeaker Name: {msg.speaker}\nSpeaker Role: user\n"
    else:
        content = msg.text
    return {"content": content, "name": msg.speaker, "role": "user", "timestamp": timestamp}, content


def record(conv: Conversation, questions: tuple[Question, ...], kind: str, hooks: Hooks, *, seed: int,
           mode: str = "agentic") -> Recording:
    """Trace one trajectory through one layer; the same code runs with and without an edit in ``hooks``."""
    start = datetime(2026, 2, 3, 9, 0, 0) + timedelta(days=conv.sample - 30, minutes=7 * LAYERS.index(kind))
    with reproducible(seed, start) as (clock, rng):
        layer = make_layer(kind, conv, hooks, rng, clock, mode)
        rec = Recording({}, hooks, layer)
        speakers = [conv.speaker_a, conv.speaker_b]
        meta = {"save_dir": f"memory/{layer.layer_type}/{conv.user_id}", "layer_type": layer.layer_type,
                "traj_metadata": {"speaker_a": conv.speaker_a, "speaker_b": conv.speaker_b},
                "traced_data_save_dir": f"traced_data/{layer.layer_type}", "dataset_cls": "LoCoMo"}
        with comment_graph(user_id=conv.user_id, project_id=layer.layer_type, strict=True, metadata=meta) as graph:
            for i, session in enumerate(conv.sessions, start=1):
                with comment_session(session_id=f"{conv.user_id}-session-{i}", comment=ORDINAL.format(i=i),
                                     category="memory_construction", metadata={"date_time": session.date_time}):
                    timestamp = session.when.isoformat()
                    for msg in session.messages:
                        clock.wait(200)
                        value, content = _message_value(conv, kind, msg, timestamp)
                        tag = "speaker_a" if msg.speaker == conv.speaker_a else "speaker_b"
                        metadata = {"speaker_tag": tag, "dia_id": msg.dia, "timestamp": timestamp}
                        metadata.update({"speaker": msg.speaker} if kind == "evermemos" else {"speakers": speakers})
                        name = conv.message_id(msg.dia)
                        register = {"mem0": "raw_input_1", "evermemos": "raw_input"}.get(kind)
                        message_rv = comment_variable(
                            value, to_runtime=True, id_strategy=lambda _v, _n=name: _n, category="message",
                            encoding_fn=jdump, metadata=metadata, variable_name=register,
                            comment="A conversational message passed to the memory layer.")
                        layer.add_message(message_rv, name, content, msg=msg, timestamp=timestamp)
                        if register:
                            current_context().remove_variable(register)
            with comment_session(category="memory_construction",
                                 comment="The finalization stage: pending buffers are turned into memories."):
                layer.flush()
            k = layer.top_k
            retrieved: dict[int, list[Entry]] = {}
            with comment_session(category="memory_search", comment="Memories are retrieved for every question.",
                                 metadata={"top_k": k, "strict": True}):
                for q in questions:
                    clock.wait(300)
                    query_rv = _query(conv, q)
                    retrieved[q.num] = layer.retrieve(query_rv, _qa_id(conv, q), q, k)
                    current_context().remove_variable("query")
            rec.store = layer.store_texts()
            with comment_session(category="memory_evaluation", comment="Questions are answered and judged.",
                                 metadata={"qa_model": "gpt-4.1-mini", "judge_model": "gpt-4.1-mini",
                                           "qa_batch_size": 4, "judge_batch_size": 4,
                                           "add_question_timestamp": False}):
                for q in questions:
                    _evaluate(conv, q, retrieved[q.num], hooks, rec, clock)
        rec.export = relocate(graph.export_graph())
    return rec


def _qa_id(conv: Conversation, q: Question) -> str:
    return f"locomo-qa-{conv.sample}-{q.num}"


def _query(conv: Conversation, q: Question) -> Any:
    metadata = {"question_type": q.qtype, "category_id": q.category_id,
                "evidence": sorted({conv.message_id(p.msg) for p in q.pieces}),
                "speaker_names": [conv.speaker_a, conv.speaker_b]}
    return comment_variable(q.text, to_runtime=True, variable_name="query", id_strategy=lambda _q: _qa_id(conv, q),
                            category="message & query", class_name="query", metadata=metadata)


def _evaluate(conv: Conversation, q: Question, entries: list[Entry], hooks: Hooks, rec: Recording, clock: Any) -> None:
    qa_id = _qa_id(conv, q)
    context = "\n\n".join(f"### Memory {i}:\n{e.shown}" for i, e in enumerate(entries, start=1))
    with comment_op_scope(op_name="question-answering", category="evaluation") as op:
        hooks.mark("answer", qa_id, op.op_id)
        clock.wait(1200)
        prompt = var(QA_TEMPLATE, name="question-answering-prompt", category="prompt",
                     metadata={"op_type": "question-answering"})
        memories = [({"id": e.trace_id}, {"id_strategy": lambda m: m["id"], "identity_only": True}) for e in entries]
        context_rv = comment_variable(context, to_runtime=True, class_name="context", category="memory_context",
                                      metadata={"source_code": CONTEXT_BUILDER_SOURCE})
        link(memories, [context_rv], metadata={"source_code": CONTEXT_BUILDER_SOURCE})
        prediction = hooks("answer", qa_id, answer(conv, q, context), context=context, question=q)
        query_rv = comment_variable(q.text, to_runtime=True, id_strategy=lambda _q: qa_id, class_name="query",
                                    category="message & query")
        prediction_rv = var(prediction, class_name="prediction", category="llm_response")
        link([query_rv, context_rv, prompt], [prediction_rv])
    correct = prediction == q.pred
    with comment_op_scope(op_name="llm-judge", category="evaluation"):
        clock.wait(800)
        judge_prompt = var(JUDGE_TEMPLATE, name="locomo-judge", class_name="judge_prompt", category="prompt",
                           metadata={"op_type": "llm-judge"})
        golden = comment_variable([q.answer], to_runtime=True, class_name="golden_answers", category="golden_answers",
                                  encoding_fn=", ".join)
        verdict = (f"The model answer agrees with the golden answer ({q.answer})." if correct else
                   f"The model answer does not give the golden answer ({q.answer}).")
        response = var(json.dumps({"reasoning": verdict, "label": "CORRECT" if correct else "WRONG"}),
                       class_name="judge_response", category="llm_response")
        link([query_rv, golden, judge_prompt, prediction_rv], [response])
        score = comment_variable(1.0 if correct else 0.0, to_runtime=True, class_name="judge_score")
        comment_link(source=response, target=score, edge_metadata={"source_code": JUDGE_SCORE_SOURCE})
    rec.contexts[q.num] = context
    rec.predictions[q.num] = prediction
    rec.correct[q.num] = correct
    rec.node_ids[q.num] = {"query": query_rv.full_node_id, "golden": golden.full_node_id,
                           "prediction": prediction_rv.full_node_id}

