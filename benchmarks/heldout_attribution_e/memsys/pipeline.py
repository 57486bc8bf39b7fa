"""Run one dialogue through one layer with tracing on: construction, search, answering, judging.

The three stages follow the MemBase runners (spec-tracer-and-membase §4.5): one construction session
per dialogue session plus a finalisation session, a ``memory_search`` session that registers each
question as the ``query`` variable, and a ``memory_evaluation`` session with a ``question-answering``
and an ``llm-judge`` operation per question. The answering and judging models are deterministic
readers (``model.match_claims``), so the same dialogue always yields the same graph.
"""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.heldout_attribution_e.memsys.common import LLM_MODEL, Entry, Faithful
from benchmarks.heldout_attribution_e.memsys.evermemos import EverMemOS
from benchmarks.heldout_attribution_e.memsys.long_context import LongContext
from benchmarks.heldout_attribution_e.memsys.mem0 import Mem0
from benchmarks.heldout_attribution_e.memsys.model import (
    Dialogue,
    Question,
    match_claims,
    messages,
    normalise_answer,
)
from benchmarks.heldout_attribution_e.memsys.naive_rag import NaiveRAG
from smartcomment import (
    comment_graph,
    comment_link,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    current_context,
)

SPLITS = ("long_context", "rag", "mem0", "evermemos")
TOP_K = {"long_context": 1, "rag": 3, "mem0": 5, "evermemos": 3}
QA_TEMPLATE = "Question: $question\nPlease answer the question based on the following memories:\n$context"
JUDGE_TEMPLATE = (
    "Label the answer CORRECT if it gives the same information as the gold answer and WRONG otherwise.\n"
    'Question: $question\nGold answer: $golden_answers\nAnswer: $prediction\nReply with JSON: {"label": "CORRECT"|"WRONG"}'
)
CONTEXT_SOURCE = "'\\n\\n'.join(f'### Memory {i}:\\n{m.formatted_content or m.content}' for i, m in enumerate(memories, 1))"
JUDGE_PARSE_SOURCE = "score = 1.0 if 'correct' in json.loads(response)['label'].lower() else 0.0"
NO_ANSWER = "The memories do not say."
SOURCE_DIR = Path(__file__).resolve().parent


@dataclass
class Recording:
    graph: dict[str, Any]
    predictions: dict[str, str]
    contexts: dict[str, str]
    node_ids: dict[str, dict[str, str]]
    """Per question: ``query``, ``prediction``, ``golden_answers`` node ids."""
    store_history: list[tuple[str, list[str]]] = field(default_factory=list)
    """After each message (and after the flush): the message id and the texts in the memory store."""


@contextlib.contextmanager
def seeded_ids(seed: int) -> Iterator[random.Random]:
    """Make the tracer's and the layers' random ids reproducible for the duration of one recording."""
    rng = random.Random(seed)
    original = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]
    try:
        yield rng
    finally:
        uuid.uuid4 = original  # type: ignore[assignment]


def _layer(split: str, hooks: Faithful, dialogue: Dialogue, rng: random.Random) -> Any:
    if split == "long_context":
        return LongContext(hooks, dialogue.speakers)
    if split == "rag":
        return NaiveRAG(hooks, dialogue.speakers)
    if split == "mem0":
        return Mem0(hooks, dialogue.speakers)
    if split == "evermemos":
        return EverMemOS(hooks, dialogue.speakers, rng)
    raise ValueError(f"unknown split {split!r}")


def answer(question: Question, context: str) -> str:
    return match_claims(question.claims, context) or NO_ANSWER


def is_correct(question: Question, prediction: str) -> bool:
    return normalise_answer(prediction) == normalise_answer(question.answer)


def question_metadata(dialogue: Dialogue, q: Question) -> dict[str, Any]:
    category_ids = {"multi-hop": 1, "temporal": 2, "open-domain": 3, "single-hop": 4}
    return {"question_type": q.category, "category_id": category_ids[q.category],
            "evidence": [f"U{dialogue.index}:{e}" for e in q.evidence], "speaker_names": list(dialogue.speakers)}


def qa_id(dialogue: Dialogue, q: Question) -> str:
    return f"{dialogue.user_id}-qa-{dialogue.questions.index(q) + 1}"


def record(dialogue: Dialogue, split: str, hooks: Faithful | None = None, *, seed: int = 0,
           graph_id: str | None = None) -> Recording:
    """Trace ``dialogue`` through the layer of ``split``; ``hooks`` (default: none) may alter its decisions."""
    hooks = hooks or Faithful()
    k = TOP_K[split]
    with seeded_ids(seed) as rng:
        layer = _layer(split, hooks, dialogue, rng)
        metadata = {"save_dir": f"memory/{layer.layer_type}/{dialogue.user_id}", "layer_type": layer.layer_type,
                    "traj_metadata": {"speaker_a": dialogue.speakers[0], "speaker_b": dialogue.speakers[1]},
                    "traced_data_save_dir": "traced_data", "dataset_cls": "LoCoMo"}
        history: list[tuple[str, list[str]]] = []
        with comment_graph(graph_id=graph_id or f"graph-{uuid.uuid4().hex}", user_id=dialogue.user_id,
                           project_id=layer.layer_type, strict=True, metadata=metadata) as graph:
            for i, session_messages in enumerate(messages(dialogue), 1):
                with comment_session(session_id=f"{dialogue.user_id}-session-{i}", category="memory_construction",
                                     comment=f"It is the {i}th conversational session.",
                                     metadata={"date_time": dialogue.sessions[i - 1].date_time}):
                    for msg in session_messages:
                        layer.add_message(msg)
                        history.append((msg.id, layer.store_texts()))
            with comment_session(category="memory_construction",
                                 comment="The finalization stage: content still buffered becomes memory."):
                layer.flush()
                history.append(("flush", layer.store_texts()))
            retrieved = _search(dialogue, layer, k)
            predictions, contexts, node_ids = _evaluate(dialogue, retrieved, hooks)
        exported = graph.export_graph()
    _relative_sources(exported)
    return Recording(exported, predictions, contexts, node_ids, history)


def _search(dialogue: Dialogue, layer: Any, k: int) -> dict[str, list[Entry]]:
    retrieved = {}
    with comment_session(category="memory_search", comment="The memory search stage: each question retrieves memories.",
                         metadata={"top_k": k, "strict": True}):
        for q in dialogue.questions:
            qid = qa_id(dialogue, q)
            comment_variable(q.question, variable_name="query", id_strategy=lambda _v, i=qid: i,
                             category="message & query", class_name="query", metadata=question_metadata(dialogue, q))
            retrieved[qid] = layer.retrieve(q.question, k)
            current_context().remove_variable("query")
    return retrieved


def _evaluate(dialogue: Dialogue, retrieved: dict[str, list[Entry]], hooks: Faithful):
    predictions: dict[str, str] = {}
    contexts: dict[str, str] = {}
    node_ids: dict[str, dict[str, str]] = {}
    with comment_session(category="memory_evaluation", comment="The evaluation stage: answer each question, then judge it.",
                         metadata={"qa_model": LLM_MODEL, "judge_model": LLM_MODEL, "qa_batch_size": 4,
                                   "judge_batch_size": 4, "add_question_timestamp": False}):
        for q in dialogue.questions:
            qid = qa_id(dialogue, q)
            entries = retrieved[qid]
            with comment_op_scope(op_name="question-answering", category="evaluation") as op:
                prompt = comment_variable(QA_TEMPLATE, to_runtime=True, id_strategy=lambda _v: "question-answering-prompt",
                                          category="prompt", metadata={"op_type": "question-answering"})
                context = "\n\n".join(f"### Memory {i}:\n{e.formatted or e.content}" for i, e in enumerate(entries, 1))
                context_item = (context, {"class_name": "context", "category": "memory_context"})
                comment_op(inputs=[({"id": e.trace_id}, {"id_strategy": lambda v: v["id"], "identity_only": True})
                                   for e in entries],
                           outputs=[context_item], metadata={"source_code": CONTEXT_SOURCE}, reuse_op=True)
                prediction = answer(q, hooks.edit("qa.read", qid, context))
                query_item = (q.question, {"class_name": "query", "id_strategy": lambda _v, i=qid: i,
                                           "category": "message & query"})
                prediction_node = comment_variable(prediction, to_runtime=True, class_name="prediction",
                                                   category="llm_response")
                comment_op(inputs=[query_item, context_item, prompt], outputs=[prediction_node], reuse_op=True)
                hooks.bind("qa.read", qid, op.op_id)
            predictions[qid] = prediction
            contexts[qid] = context
            node_ids[qid] = {"prediction": prediction_node.full_node_id}
        for q in dialogue.questions:
            qid = qa_id(dialogue, q)
            with comment_op_scope(op_name="llm-judge", category="evaluation"):
                query = comment_variable(q.question, to_runtime=True, class_name="query", id_strategy=lambda _v, i=qid: i,
                                         category="message & query")
                golden = comment_variable([q.answer], to_runtime=True, class_name="golden_answers",
                                          category="golden_answers", encoding_fn=lambda v: ", ".join(v))
                judge_prompt = comment_variable(JUDGE_TEMPLATE, to_runtime=True, id_strategy=lambda _v: "locomo-judge",
                                                class_name="judge_prompt", category="prompt",
                                                metadata={"op_type": "llm-judge"})
                correct = is_correct(q, predictions[qid])
                verdict = '{"label": "CORRECT"}' if correct else '{"label": "WRONG"}'
                response = comment_variable(verdict, to_runtime=True, class_name="judge_response", category="llm_response")
                prediction_node = comment_variable(predictions[qid], to_runtime=True, class_name="prediction",
                                                   category="llm_response")
                comment_op(inputs=[query, golden, judge_prompt, prediction_node], outputs=[response], reuse_op=True)
                score = comment_variable(1.0 if correct else 0.0, to_runtime=True, class_name="judge_score")
                comment_link(source=response, target=score, edge_metadata={"source_code": JUDGE_PARSE_SOURCE})
            node_ids[qid].update(query=query.full_node_id, golden_answers=golden.full_node_id)
    return predictions, contexts, node_ids


def _relative_sources(exported: dict[str, Any]) -> None:
    """Record source locations relative to the simulated system's folder (``memsys/<module>.py``)."""
    prefix = str(SOURCE_DIR) + "/"
    for records in exported["data"].values():
        for record_ in records:
            name = record_.get("filename")
            if isinstance(name, str) and name.startswith(prefix):
                record_["filename"] = "memsys/" + name[len(prefix):]
                record_["trigger_point"] = f"{record_['filename']}:{record_['lineno']}"
