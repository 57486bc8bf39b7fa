"""NaiveRAG: a deferred token buffer emits documents; each document becomes one memory unit;
retrieval returns the top-k units by similarity to the question."""

from __future__ import annotations

import uuid
from typing import Any

from benchmarks.heldout_attribution_f.runtime_env import Hooks, jdump
from benchmarks.heldout_attribution_f.textsim import BM25, count_tokens, rank, trigram_cosine
from benchmarks.heldout_attribution_f.trace_utils import Entry, link, var
from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable


class _Buffer:
    def __init__(self) -> None:
        self.entries: list[str] = []

    def encode(self, separator: str) -> str:
        return jdump({"buffer_total_tokens": count_tokens(separator.join(self.entries)),
                      "message_buffer": list(self.entries)})


def similarity_ranking(query: str, texts: list[str]) -> list[int]:
    """Embedding stand-in: character-trigram cosine blended with normalised BM25."""
    if not texts:
        return []
    lexical = BM25(texts).scores(query)
    top = max(lexical) or 1.0
    scores = [0.5 * trigram_cosine(query, t) + 0.5 * (s / top) for t, s in zip(texts, lexical, strict=True)]
    return rank(scores)


class NaiveRAGLayer:
    layer_type = "NaiveRAG"
    split = "rag"
    top_k = 3

    def __init__(self, hooks: Hooks, rng: Any, max_tokens: int = 200, separator: str = "\n") -> None:
        self.hooks = hooks
        self.rng = rng
        self.max_tokens = max_tokens
        self.separator = separator
        self.buffer = _Buffer()
        self.units: list[dict[str, str]] = []
        self.emitted: list[tuple[str, list[str]]] = []
        """(key, buffered message texts) of every document, for planning."""

    @property
    def config(self) -> dict[str, Any]:
        return {"max_tokens": self.max_tokens, "num_overlap_msgs": 0, "message_separator": self.separator,
                "deferred": True, "llm_model": "gpt-4.1-mini",
                "retriever_name_or_path": "huggingface:all-MiniLM-L6-v2", "retriever_dim": 384}

    @property
    def _op_metadata(self) -> dict[str, Any]:
        return {"deferred": True, "max_tokens": self.max_tokens, "num_overlap_msgs": 0,
                "message_separator": self.separator, "llm_model_for_tokenizer": "gpt-4.1-mini"}

    def _snapshot(self) -> Any:
        return comment_variable(self.buffer, to_runtime=True, id_strategy=lambda _b: "message-buffer",
                                encoding_fn=lambda b: b.encode(self.separator), category="message_buffer",
                                comment="The message buffer waiting to become a document.")

    def _mutate(self, inputs: list[Any]) -> comment_mutation:
        return comment_mutation(
            target=self.buffer, inputs=inputs, id_strategy=lambda _b: "message-buffer",
            encoding_fn=lambda b: b.encode(self.separator), category="message_buffer",
            mutation_category="update", reuse_op=True,
        )

    def _store(self, key: str, document_rv: Any, text: str) -> None:
        content = self.hooks("store", key, text)
        unit = {"content": content, "id": _uuid(self.rng)}
        op = comment_op(
            inputs=[document_rv],
            outputs=[(unit, {"id_strategy": lambda u: f"memory-unit-{u['id']}", "encoding_fn": jdump,
                             "category": "memory_entry"})],
            op_name="memory_system.add", category="update",
        )
        self.hooks.mark("store", key, op.op_id)
        self.units.append(unit)

    def add_message(self, message_rv: Any, msg_id: str, content: str, **_: Any) -> None:
        before = self._snapshot()
        document = None
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata=self._op_metadata) as op:
            self.hooks.mark("buffer", msg_id, op.op_id)
            with self._mutate([message_rv]):
                pending = self.separator.join(self.buffer.entries + [content])
                if self.buffer.entries and count_tokens(pending) > self.max_tokens:
                    self.emitted.append((msg_id, list(self.buffer.entries)))
                    text = self.hooks("emit", msg_id, self.separator.join(self.buffer.entries),
                                      entries=list(self.buffer.entries))
                    document = var(text, class_name="temporary_variable", category="temporary_variable")
                    link([message_rv, before], [document], category="extraction")
                    self.buffer.entries = []
                self.buffer.entries = self.hooks("append", msg_id, self.buffer.entries + [content],
                                                 before=list(self.buffer.entries), content=content)
        if document is not None:
            self._store(msg_id, document, text)

    def flush(self) -> None:
        if not self.buffer.entries:
            return
        before = self._snapshot()
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata=self._op_metadata) as op:
            self.hooks.mark("buffer", "flush", op.op_id)
            self.emitted.append(("flush", list(self.buffer.entries)))
            text = self.hooks("emit", "flush", self.separator.join(self.buffer.entries),
                              entries=list(self.buffer.entries))
            document = var(text, class_name="temporary_variable", category="temporary_variable")
            comment_op(inputs=[before], outputs=[document], op_name="memory_system.finalize_memory_unit",
                       reuse_op=True, category="extraction")
            with self._mutate([]):
                self.buffer.entries = []
        self._store("flush", document, text)

    def retrieve(self, query_rv: Any, qa_id: str, question: Any, k: int) -> list[Entry]:
        with comment_op_scope(op_name="memory_system.retrieve", category="retrieval",
                              metadata={"top_k": k, "embedding_model": "huggingface:all-MiniLM-L6-v2"}) as op:
            self.hooks.mark("retrieve", qa_id, op.op_id)
            ranking = similarity_ranking(question.text, [u["content"] for u in self.units])
            hits = self.hooks("retrieve", qa_id, ranking[:k], ranking=ranking,
                              texts=[u["content"] for u in self.units])
            for i in hits:
                link([query_rv], [(self.units[i], {"id_strategy": lambda u: f"memory-unit-{u['id']}",
                                                   "encoding_fn": jdump, "category": "memory_entry"})])
        return [Entry(f"memory-unit-{self.units[i]['id']}", self.units[i]["content"]) for i in hits]

    def store_texts(self) -> list[str]:
        return [u["content"] for u in self.units]

    def hit_text(self, i: int) -> str:
        return self.units[i]["content"]


def _uuid(rng: Any) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))
