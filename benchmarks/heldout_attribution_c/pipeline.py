"""Run one conversation through one layer (one fault or none) and record the whole graph:
construction sessions, the finalization session, the search session and the evaluation
session with its question-answering and llm-judge ops (spec-tracer-and-membase §4.5–4.6)."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from smartcomment import (
    comment_graph,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    current_context,
)

from .conversations import Conversation, Question
from .layer_evermemos import EverMemOSLayer
from .layers import Fault, LongContextLayer, Mem0Layer, NaiveRAGLayer
from .tracing import as_json, locomo_time, named, virtual_clock

QA_TEMPLATE = "Question: $question\nPlease answer the question based on the following memories:\n$context"
JUDGE_TEMPLATE = "Label the answer CORRECT or WRONG against the gold answer. Reply JSON {\"label\": ...}."
CONTEXT_SOURCE = 'def build_context(memories):\n    return "\\n\\n".join(f"### Memory {i}:\\n{m}" for i, m in enumerate(memories, 1))\n'


@dataclass
class Recording:
    graph: object
    split: str
    store_texts: list[str]
    contexts: dict[int, str]
    predictions: dict[int, str]
    node_ids: dict[int, dict]
    raw_layer: bool  # units hold raw message text (Long-Context, NaiveRAG)


def _layer(split: str, fault: Fault, rng: random.Random, lc_window: int):
    if split == "long_context":
        return LongContextLayer(fault, lc_window)
    if split == "rag":
        return NaiveRAGLayer(fault, rng)
    if split == "mem0":
        return Mem0Layer(fault, rng)
    return EverMemOSLayer(fault, rng)


def evidence_keys(q: Question, raw: bool) -> list[str]:
    return [mk if raw else fk for _, fk, mk in q.keys()]


def predict(q: Question, context: str, raw: bool, fault: Fault) -> str:
    if fault.is_("response") and q.qid == fault.qid:
        return q.wrong
    if all(k in context for k in evidence_keys(q, raw)):
        return "; ".join(q.answers)
    if q.swap and q.swap[1] in context:
        return q.swap_pred
    return q.wrong


def message_id(conv: Conversation, session: int, pos: int) -> str:
    return f"U{conv.index}:D{session}:{pos}"


def record(conv: Conversation, split: str, fault: Fault, seed: int = 0, lc_window: int = 4000) -> Recording:
    rng = random.Random(seed)
    layer = _layer(split, fault, rng, lc_window)
    raw = split in ("long_context", "rag")
    messages = conv.messages()
    facts_by_index = [m.facts for _, _, m in messages]
    ids = [message_id(conv, s, i) for s, i, _ in messages]
    speakers = [conv.speaker_a, conv.speaker_b]
    meta = {"save_dir": f"memory/locomo-{conv.index}", "layer_type": layer.project, "dataset_cls": "LoCoMo",
            "traj_metadata": {"speaker_a": conv.speaker_a, "speaker_b": conv.speaker_b}, "traced_data_save_dir": "traced_data"}
    with virtual_clock(), comment_graph(user_id=f"locomo-{conv.index}", project_id=layer.project, strict=True, metadata=meta) as graph:
        gidx = -1
        for s, (date, msgs) in enumerate(conv.sessions, start=1):
            ts = locomo_time(date)
            with comment_session(session_id=f"locomo-{conv.index}-session-{s}", comment=f"It is the {s}th conversational session.",
                                 category="memory_construction", metadata={"session_summary": "", "session_observation": ""}):
                for pos, m in enumerate(msgs, start=1):
                    gidx += 1
                    if split == "mem0":
                        content = f"{m.text}\nBelow is this message's metadata:\nSpeaker Name: {m.speaker}\nSpeaker Role: user\n"
                    elif split == "evermemos":
                        content = m.text
                    else:
                        content = f"Speaker {m.speaker} (role: user) says: {m.text}\nTimestamp: {ts}"
                    tag = "speaker_a" if m.speaker == conv.speaker_a else "speaker_b"
                    node_meta = {"speaker_tag": tag, "dia_id": f"D{s}:{pos}", "timestamp": ts}
                    node_meta.update({"speaker": m.speaker} if split == "evermemos" else {"speakers": speakers})
                    node = comment_variable({"content": content, "name": m.speaker, "role": "user", "timestamp": ts},
                                            to_runtime=True, id_strategy=named(ids[gidx]), encoding_fn=as_json,
                                            category="message", metadata=node_meta,
                                            comment="A message of the conversation, as the memory system received it.")
                    line = content if raw else m.text
                    layer.add_message(gidx, s, node, line, m, facts_by_index)
        with comment_session(category="memory_construction", comment="The finalization stage: pending buffers are flushed."):
            layer.flush()
        store = layer.store_texts()
        retrieved: dict[int, list[tuple[str, str]]] = {}
        with comment_session(category="memory_search", comment="Retrieve memories for every question.",
                             metadata={"top_k": 10, "strict": True}):
            for q in conv.questions:
                qa_id = f"locomo-qa-{conv.index}-{q.qid}"
                comment_variable(q.question, to_runtime=True, variable_name="query", id_strategy=named(qa_id),
                                 category="message & query", class_name="query",
                                 metadata={"question_type": q.question_type, "category_id": 0,
                                           "evidence": [ids[i] for i, _, _ in q.keys()], "speaker_names": speakers})
                if split == "long_context":
                    retrieved[q.qid] = layer.retrieve(q.question, q.qid, graph)
                else:
                    retrieved[q.qid] = layer.retrieve(q.question, q.qid, graph, evidence_keys(q, raw))
                current_context().remove_variable("query")
        contexts, predictions, node_ids = {}, {}, {}
        with comment_session(category="memory_evaluation", comment="Answer every question from its memories and judge it.",
                             metadata={"qa_model": "gpt-4.1-mini", "judge_model": "gpt-4.1-mini", "qa_batch_size": 4,
                                       "judge_batch_size": 4, "add_question_timestamp": False}):
            qa_prompt = comment_variable(QA_TEMPLATE, to_runtime=True, id_strategy=named("question-answering-prompt"),
                                         category="prompt", metadata={"op_type": "question-answering"})
            judge_prompt = comment_variable(JUDGE_TEMPLATE, to_runtime=True, id_strategy=named("locomo-judge"),
                                            class_name="judge_prompt", category="prompt", metadata={"op_type": "llm-judge"})
            for q in conv.questions:
                qa_id = f"locomo-qa-{conv.index}-{q.qid}"
                mems = retrieved[q.qid]
                context = "\n\n".join(f"### Memory {i}:\n{text}" for i, (_, text) in enumerate(mems, 1))
                prediction = predict(q, context, raw, fault)
                contexts[q.qid], predictions[q.qid] = context, prediction
                correct = prediction == "; ".join(q.answers)
                with comment_op_scope(op_name="question-answering", category="evaluation"):
                    query = comment_variable(q.question, to_runtime=True, id_strategy=named(qa_id), class_name="query",
                                             category="message & query")
                    ctx = comment_variable(context, to_runtime=True, class_name="context", category="memory_context",
                                           metadata={"source_code": CONTEXT_SOURCE})
                    ins = [({"id": tid}, {"id_strategy": (lambda v: v["id"]), "identity_only": True}) for tid, _ in mems]
                    comment_op(inputs=ins, outputs=[ctx], reuse_op=True)
                    pred = comment_variable(prediction, to_runtime=True, class_name="prediction", category="llm_response")
                    comment_op(inputs=[query, ctx, qa_prompt], outputs=[pred], reuse_op=True)
                with comment_op_scope(op_name="llm-judge", category="evaluation"):
                    golden = comment_variable(list(q.answers), to_runtime=True, class_name="golden_answers",
                                              encoding_fn=lambda v: ", ".join(v), category="golden_answers")
                    resp = comment_variable(json.dumps({"label": "CORRECT" if correct else "WRONG"}), to_runtime=True,
                                            class_name="judge_response", category="llm_response")
                    comment_op(inputs=[query, golden, judge_prompt, pred], outputs=[resp], reuse_op=True)
                    score = comment_variable(1.0 if correct else 0.0, to_runtime=True, class_name="judge_score")
                    comment_op(inputs=[resp], outputs=[score], category="evaluation", reuse_op=True)
                node_ids[q.qid] = {"query_id": query.full_node_id, "golden_answers_id": golden.full_node_id,
                                   "prediction_id": pred.full_node_id,
                                   "source_evidence_ids": [f"{ids[i]}@1" for i, _, _ in q.keys()]}
    return Recording(graph, split, store, contexts, predictions, node_ids, raw)
