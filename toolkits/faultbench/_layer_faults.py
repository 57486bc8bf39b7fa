"""Fault injection for each memory layer (the fault model is documented in :mod:`._faults`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from toolkits.faultbench._faults import Fault, StoreEditFault, degrade, patch_attr, record_delete

__all__ = ["LongContextFault", "NaiveRAGFault"]


class LongContextFault(Fault):
    """Faults for the Long-Context layer (one `memory-unit`, a new version per message)."""

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        t = self.target
        original = layer._buffer_and_get_doc
        if self.kind == "extraction" and index == t.fact_index:

            def drop_fact(text: str | None = None) -> str | None:
                return original(None if text is None else degrade(text, t.answer_tokens))

            with patch_attr(layer, "_buffer_and_get_doc", drop_fact):
                yield
            self.fired = True
            self.note = f"the memory update ingesting {message.id} stored it without the answer's words"
            return
        if self.kind == "update" and not self.fired and index >= t.act_index:

            def degrade_buffer(text: str | None = None) -> str | None:
                doc = original(text)
                for i, line in enumerate(layer._buffer):
                    if t.carries(line):
                        layer._buffer[i] = degrade(line, t.answer_tokens)
                        self.fired = True
                return doc

            with patch_attr(layer, "_buffer_and_get_doc", degrade_buffer):
                yield
            if self.fired:
                self.note = f"the memory update ingesting {message.id} degraded the buffered fact"
                self.fault_message = message.id
            return
        yield

    def after_message(self, layer: Any, message: Any, index: int) -> None:
        t = self.target
        if self.kind != "deletion" or self.fired or index < t.act_index:
            return
        if not any(t.carries(line) for line in layer._buffer):
            return
        from membase.layers.long_context import MEMORY_UNIT
        from smartcomment import comment_mutation

        before = layer.buffer_text
        self.op_id = record_delete(
            [(before, {"id_strategy": lambda _t: MEMORY_UNIT, "encoding_fn": lambda v: v,
                       "category": "memory_entry"})],
            comment="The long-context memory is deleted.",
        )
        # The emptied buffer becomes the next version, so that later updates start from it.
        with comment_mutation(target=layer, id_strategy=lambda _layer: MEMORY_UNIT,
                              encoding_fn=lambda lay: lay.buffer_text, category="memory_entry",
                              mutation_name="memory_system.memory_update", mutation_category="update",
                              mutation_comment="The memory restarts empty after the deletion."):
            layer._buffer.clear()
            layer._buffer_tokens.clear()
        self.fired = True
        self.note = f"the whole long-context memory was deleted after {message.id}"

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any, graph: Any) -> Iterator[None]:
        t = self.target
        if self.kind != "retrieval" or qa.id != t.qa.id:
            yield
            return
        saved = (list(layer._buffer), list(layer._buffer_tokens))
        keep = [i for i, line in enumerate(layer._buffer) if not t.carries(line)]
        layer._buffer[:] = [saved[0][i] for i in keep]
        layer._buffer_tokens[:] = [saved[1][i] for i in keep]
        strict = graph.strict
        # The filtered snapshot differs from the stored memory-unit: record it as a new version.
        graph.strict = False
        try:
            yield
        finally:
            graph.strict = strict
            layer._buffer[:], layer._buffer_tokens[:] = saved
        self.fired = len(keep) < len(saved[0])
        self.note = "the retrieval returned the long-context memory without the fact message"


def _unit(doc: Any) -> tuple[dict[str, str], dict[str, Any]]:
    from membase.layers.tracing import memory_unit_options

    return {"content": doc.content, "id": doc.key}, memory_unit_options()


class NaiveRAGFault(StoreEditFault):
    """Faults for NaiveRAG (buffered documents in a vector store)."""

    def on_start(self, layer: Any, graph: Any) -> None:
        if self.kind != "extraction":
            return
        t = self.target
        feed, flush = layer._buffer_and_get_doc, layer._flush_buffer

        def corrupt(doc: str | None) -> str | None:
            if doc is None or self.fired or not t.carries(doc):
                return doc
            self.fired = True
            self.corrupted_doc = "\n".join(
                degrade(line, t.answer_tokens) if t.carries(line) else line for line in doc.split("\n")
            )
            self.note = "the document cut from the buffer lost the fact message's answer words"
            return self.corrupted_doc

        layer._buffer_and_get_doc = lambda text=None: corrupt(feed(text))
        layer._flush_buffer = lambda: corrupt(flush())

    def _holding(self, layer: Any) -> list[Any]:
        return [d for d in _all_docs(layer) if self.target.carries(d.content)]

    def _edit(self, layer: Any, docs: list[Any]) -> None:
        if self.kind == "deletion":
            self.op_id = record_delete([_unit(d) for d in docs], comment="Documents are deleted from the store.")
            for d in docs:
                layer.store.delete(d.key)
            self.note = f"{len(docs)} document(s) holding the fact were deleted"
        else:
            self.op_id = _record_update(layer, docs, self.target.answer_tokens)
            self.note = f"{len(docs)} document(s) holding the fact were rewritten without the answer's words"

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any, graph: Any) -> Iterator[None]:
        t = self.target
        if self.kind != "retrieval" or qa.id != t.qa.id:
            yield
            return
        store = layer.store
        search = store.search

        def search_without(query: str, k: int) -> list[Any]:
            hits = search(query, k + 50)
            kept = [h for h in hits if not t.carries(h.content)]
            self.fired = self.fired or len(kept) < len(hits)
            return kept[:k]

        with patch_attr(store, "search", search_without):
            yield
        self.note = "the retrieval skipped the documents that hold the fact"


def _all_docs(layer: Any) -> list[Any]:
    from membase.layers.rag_store import StoredDocument

    return [StoredDocument(key=r["key"], content=r["content"], namespace=r.get("namespace", []),
                           created_at=r.get("created_at", ""), updated_at=r.get("updated_at", ""))
            for r in layer.store.export()]


def _record_update(layer: Any, docs: list[Any], answer_tokens: frozenset[str]) -> str:
    from membase.layers.tracing import json_encode, memory_unit_identity
    from smartcomment import comment_mutation, comment_op_scope

    with comment_op_scope(op_name="memory_system.update", category="update",
                          comment="Stored documents are rewritten.") as op:
        for doc in docs:
            unit = {"content": doc.content, "id": doc.key}
            with comment_mutation(target=unit, id_strategy=memory_unit_identity, encoding_fn=json_encode,
                                  category="memory_entry", mutation_category="update", reuse_op=True,
                                  mutation_comment="The document content is rewritten."):
                unit["content"] = degrade(doc.content, answer_tokens)
            layer.store.update(doc.key, unit["content"])
    return op.op_id
