"""NaiveRAG: a deferred token-budget buffer cut into documents, one memory unit per document."""

from __future__ import annotations

import uuid
from typing import Any

from benchmarks.heldout_attribution_e.memsys.common import (
    EMBEDDING_MODEL,
    Entry,
    Faithful,
    active_query,
    record_message,
)
from benchmarks.heldout_attribution_e.memsys.model import Message
from benchmarks.heldout_attribution_e.memsys.text import cosine, count_tokens, dumps, rank
from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable

SEPARATOR = "\n"
_DOC = {"class_name": "temporary_variable", "category": "temporary_variable"}
_UNIT = {"id_strategy": lambda v: f"memory-unit-{v['id']}", "encoding_fn": dumps, "category": "memory_entry"}


def _buffer_id(_value: Any) -> str:
    return "message-buffer"


class NaiveRAG:
    layer_type = "NaiveRAG"

    def __init__(self, hooks: Faithful, speakers: tuple[str, str], max_tokens: int = 120) -> None:
        self.hooks = hooks
        self.speakers = speakers
        self.max_tokens = max_tokens
        self.buffer: list[tuple[str, str]] = []
        self.units: dict[str, dict[str, str]] = {}
        self._settings = {"deferred": True, "max_tokens": max_tokens, "num_overlap_msgs": 0,
                          "message_separator": SEPARATOR, "llm_model_for_tokenizer": "gpt-4.1-mini"}

    def buffer_value(self) -> str:
        lines = [line for _, line in self.buffer]
        return dumps({"buffer_total_tokens": count_tokens(SEPARATOR.join(lines)), "message_buffer": lines})

    def _buffer_node(self) -> Any:
        return comment_variable(self, to_runtime=True, id_strategy=_buffer_id, encoding_fn=NaiveRAG.buffer_value,
                                category="message_buffer", comment="Messages waiting to become a document.")

    def add_message(self, msg: Message) -> None:
        node = record_message(msg, "buffer", self.speakers)
        line = msg.line()
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata=dict(self._settings)) as op:
            previous = self._buffer_node()
            emitted: list[tuple[str, str]] | None = None
            with comment_mutation(target=self, inputs=[node], id_strategy=_buffer_id, encoding_fn=NaiveRAG.buffer_value,
                                  category="message_buffer", mutation_category="update", reuse_op=True):
                total = count_tokens(SEPARATOR.join(t for _, t in [*self.buffer, (msg.id, line)]))
                if self.buffer and total > self.max_tokens:
                    emitted, self.buffer = list(self.buffer), []
                self.buffer = [*self.buffer, (msg.id, line)]
            if emitted is not None:
                self._emit(emitted, [node, previous], msg.id, op.op_id)

    def flush(self) -> None:
        if not self.buffer:
            return
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata=dict(self._settings)) as op:
            previous = self._buffer_node()
            emitted = list(self.buffer)
            with comment_mutation(target=self, id_strategy=_buffer_id, encoding_fn=NaiveRAG.buffer_value,
                                  category="message_buffer", mutation_category="update", reuse_op=True):
                self.buffer = []
            self._emit(emitted, [previous], "flush", op.op_id)

    def _emit(self, lines: list[tuple[str, str]], sources: list[Any], key: str, buffer_op: str) -> None:
        lines = self.hooks.edit("rag.doc", key, lines)
        doc = SEPARATOR.join(t for _, t in lines)
        comment_op(inputs=sources, outputs=[(doc, dict(_DOC))], category="extraction", reuse_op=True)
        self.hooks.bind("rag.doc", key, buffer_op)
        unit_id = str(uuid.uuid4())
        content = self.hooks.edit("rag.unit", key, doc)
        unit = {"content": content, "id": unit_id}
        add = comment_op(inputs=[(doc, dict(_DOC))], outputs=[(unit, dict(_UNIT))], op_name="memory_system.add",
                         category="update", comment="A document becomes a memory unit in the vector store.")
        self.hooks.bind("rag.unit", key, add.op_id)
        self.units[unit_id] = unit

    def retrieve(self, query: str, k: int) -> list[Entry]:
        query_node = active_query()
        with comment_op_scope(op_name="memory_system.retrieve", category="retrieval",
                              metadata={"top_k": k, "embedding_model": EMBEDDING_MODEL}) as op:
            ids = list(self.units)
            order = rank([cosine(query, self.units[i]["content"]) for i in ids])
            ranking = [(ids[i], self.units[ids[i]]["content"]) for i in order]
            ranking = self.hooks.edit("retrieve", query_node.name, ranking)
            hits = [uid for uid, _ in ranking[:k]]
            for uid in hits:
                comment_op(inputs=[query_node], outputs=[(self.units[uid], dict(_UNIT))], reuse_op=True)
            self.hooks.bind("retrieve", query_node.name, op.op_id)
        return [Entry(self.units[u]["content"], None, f"memory-unit-{u}") for u in hits]

    def store_texts(self) -> list[str]:
        return [u["content"] for u in self.units.values()]
