"""NaiveRAG, recorded after spec-tracer-and-membase §4.4 (deferred buffer): messages gather in
``message-buffer``; when the next one would overflow ``max_tokens`` the buffer becomes a document
(``temporary_variable``), stored by ``memory_system.add`` as ``memory-unit-<uuid>``; retrieval
returns the top-k units."""

from __future__ import annotations

import random
import uuid

from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable
from smartcomment.runtime.variable import RuntimeVariable

from .conversations import Conversation, ConvSession, Message, Question
from .plans import CasePlan
from .recording import Entry, OpLog, json_text, line_of, message_node
from .text_tools import answer_part, cut_before_answer, select, words


def _buffer_id(_value: object) -> str:
    return "message-buffer"


def _unit_id(value: dict) -> str:
    return f"memory-unit-{value['id']}"


_UNIT_OPTIONS = {"id_strategy": _unit_id, "encoding_fn": json_text, "category": "memory_entry"}


class NaiveRagLayer:
    project_id = "NaiveRAG"
    top_k = 3
    max_tokens = 70

    def __init__(self, conv: Conversation, plan: CasePlan, log: OpLog, rng: random.Random) -> None:
        self.conv, self.plan, self.log, self.rng = conv, plan, log, rng
        self.buffer: list[tuple[str, str]] = []
        self.units: list[tuple[dict, set[str]]] = []
        self._metadata = {"deferred": True, "max_tokens": self.max_tokens, "num_overlap_msgs": 0,
                          "message_separator": "\n", "llm_model_for_tokenizer": "gpt-4.1-mini"}

    def _buffer_json(self) -> str:
        return json_text({"buffer_total_tokens": sum(len(words(line)) for _, line in self.buffer),
                          "message_buffer": [line for _, line in self.buffer]})

    def _document(self) -> tuple[str, list[str]]:
        """The emitted document and the ids of the messages it holds."""
        kept = [(mid, line) for mid, line in self.buffer
                if not (self.plan.kind.name == "rag/document_cut" and mid == self.plan.target)]
        return "\n".join(line for _, line in kept), [mid for mid, _ in kept]

    def _stored_content(self, document: str, held: list[str]) -> tuple[str, list[str]]:
        plan = self.plan
        if plan.kind.name != "rag/store_truncate" or plan.target not in held:
            return document, held
        target = self.conv.message(plan.target)
        line = line_of(target, self.conv.session_of(plan.target))
        start = document.index(line)
        kept_line = cut_before_answer(line, answer_part(plan.question, target))
        cut_at = start + len(kept_line)
        survivors = []
        for mid in held:
            other = line_of(self.conv.message(mid), self.conv.session_of(mid))
            if document.index(other) + len(other) <= cut_at:
                survivors.append(mid)
        return document[:cut_at], survivors

    def _emit(self, inputs: list[RuntimeVariable], op_id: str) -> tuple[RuntimeVariable, str, list[str]]:
        document, held = self._document()
        doc_rv = comment_variable(document, to_runtime=True, class_name="temporary_variable",
                                  category="temporary_variable")
        comment_op(inputs=inputs, outputs=[doc_rv], category="extraction", reuse_op=True)
        for mid, _ in self.buffer:
            self.log.mark("emit", mid, op_id)
        return doc_rv, document, held

    def _store(self, doc_rv: RuntimeVariable, document: str, held: list[str], ids: list[str]) -> None:
        content, survivors = self._stored_content(document, held)
        unit = {"content": content, "id": str(uuid.UUID(int=self.rng.getrandbits(128), version=4))}
        op = comment_op(inputs=[doc_rv], outputs=[(unit, _UNIT_OPTIONS)], op_name="memory_system.add",
                        category="update", comment="A document is embedded and stored as a memory unit.")
        for mid in ids:
            self.log.mark("store", mid, op.op_id)
        self.units.append((unit, set(survivors)))

    def add_message(self, message: Message, session: ConvSession) -> None:
        node = message_node(self.conv, message, session, style="rag")
        line = line_of(message, session)
        emitted = None
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata=self._metadata) as op:
            self.log.mark("buffer", message.id, op.op_id)
            tokens = sum(len(words(text)) for _, text in self.buffer)
            if self.buffer and tokens + len(words(line)) > self.max_tokens:
                previous = comment_variable(self, to_runtime=True, id_strategy=_buffer_id,
                                            encoding_fn=NaiveRagLayer._buffer_json, category="message_buffer")
                ids = [mid for mid, _ in self.buffer]
                emitted = (*self._emit([node, previous], op.op_id), ids)
            with comment_mutation(target=self, inputs=[node], id_strategy=_buffer_id,
                                  encoding_fn=NaiveRagLayer._buffer_json, category="message_buffer",
                                  mutation_category="update", reuse_op=True):
                if emitted:
                    self.buffer = []
                self.buffer.append((message.id, line))
        if emitted:
            self._store(*emitted)

    def flush(self) -> None:
        if not self.buffer:
            return
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata={**self._metadata, "flush": True}) as op:
            previous = comment_variable(self, to_runtime=True, id_strategy=_buffer_id,
                                        encoding_fn=NaiveRagLayer._buffer_json, category="message_buffer")
            ids = [mid for mid, _ in self.buffer]
            emitted = (*self._emit([previous], op.op_id), ids)
            with comment_mutation(target=self, id_strategy=_buffer_id, encoding_fn=NaiveRagLayer._buffer_json,
                                  category="message_buffer", mutation_category="update", reuse_op=True):
                self.buffer = []
        self._store(*emitted)

    def retrieve(self, question: Question, query: RuntimeVariable) -> list[Entry]:
        fault = self.plan.kind.name.split("/")[1] if question.qid == self.plan.question.qid else ""
        by_id = {unit["id"]: unit for unit, _ in self.units}
        chosen = select(question.text, fault, set(question.evidence), {self.plan.target},
                        [(unit["id"], unit["content"], held) for unit, held in self.units], self.top_k)
        with comment_op_scope(op_name="memory_system.retrieve", category="retrieval",
                              metadata={"top_k": self.top_k, "embedding_model": "huggingface:all-MiniLM-L6-v2"}) as op:
            self.log.mark("retrieve", question.qid, op.op_id)
            for unit_id in chosen:
                comment_op(inputs=[query], outputs=[(by_id[unit_id], _UNIT_OPTIONS)], reuse_op=True)
        return [Entry(trace_id=f"memory-unit-{uid}", formatted=by_id[uid]["content"]) for uid in chosen]
