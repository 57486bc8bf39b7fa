"""Faults of the Long-Context and NaiveRAG layers (the fault model is in :mod:`._faults`).

Long-Context (one ``memory-unit``, a new version per message, ``memory_system.memory_update``):

* ``extraction`` — the update that appends the fact message stores a corrupted line;
* ``update`` — a later update trims the buffer up to and including the fact line (``trim``) or
  rewrites the fact line (a text corruption), as an overflowing or summarising buffer would;
* ``retrieval`` — ``memory_system.retrieve`` returns the memory without the fact line
  (``skip``) or as it was before the fact arrived (``stale``).

NaiveRAG (buffered documents in a vector store):

* ``extraction`` at the ``buffer`` (the fact message enters the message buffer corrupted: the
  fact message's own ``memory_system.message_buffer_update``), the ``doc`` (the document cut from
  the buffer is corrupted: the buffer update that emits it) or the ``add`` (the store keeps a
  corrupted document: ``memory_system.add``);
* ``retrieval`` — the search skips the documents that hold the fact (``skip``) or returns the
  most similar other document in their place (``near_duplicate``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from toolkits.evidence_flow import content_tokens
from toolkits.faultbench._faults import Fault, patch_attr

__all__ = ["LongContextFault", "NaiveRAGFault", "nearest"]


def nearest(text: str, candidates: list[Any], key: Any) -> Any | None:
    """The candidate whose text (``key(c)``) shares the most content tokens with ``text`` (Jaccard)."""
    tokens = content_tokens(text)
    best, best_score = None, 0.0
    for candidate in candidates:
        other = content_tokens(key(candidate))
        union = tokens | other
        score = len(tokens & other) / len(union) if union else 0.0
        if score > best_score:
            best, best_score = candidate, score
    return best


class LongContextFault(Fault):
    """Faults of the Long-Context layer."""

    _stale: tuple[list[str], list[int]] | None = None

    @staticmethod
    def make_layer(user_id: str, save_dir: str, faults: list[Fault]) -> Any:
        """Long-Context with a window large enough that nothing is trimmed by itself."""
        from membase.layers import build_layer

        return build_layer("Long-Context", user_id=user_id, save_dir=save_dir, context_window=100_000)

    def _fact_line(self) -> str:
        from membase.layers.long_context import format_message

        return format_message(self.target.fact)

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        error, t = self.spec.error, self.target
        if index == t.fact_index:
            self._stale = (list(layer._buffer), list(layer._buffer_tokens))
        original = layer._buffer_and_get_doc
        if error == "extraction" and index == t.fact_index:

            def corrupt_line(text: str | None = None) -> str | None:
                new = self.corrupt(text) if text is not None else None
                if new is not None:
                    self.fire("memory_system.memory_update",
                              f"the memory update appending {message.id} stored a corrupted line ({self.spec.corruption})")
                return original(new if new is not None else text)

            with patch_attr(layer, "_buffer_and_get_doc", corrupt_line):
                yield
            return
        if error == "update" and not self.fired and index > t.fact_index and index >= self.act_index:

            def edit_buffer(text: str | None = None) -> str | None:
                doc = original(text)
                self._edit(layer, message)
                return doc

            with patch_attr(layer, "_buffer_and_get_doc", edit_buffer):
                yield
            return
        yield

    def _edit(self, layer: Any, message: Any) -> None:
        from membase.utils.tokens import count_tokens

        line = self._fact_line()
        if line not in layer._buffer:
            return
        i = layer._buffer.index(line)
        if self.spec.corruption == "trim":
            del layer._buffer[: i + 1]
            del layer._buffer_tokens[: i + 1]
            note = f"the memory update appending {message.id} trimmed the buffer up to the fact line"
        else:
            new = self.corrupt(line)
            if new is None:
                return
            layer._buffer[i] = new
            layer._buffer_tokens[i] = count_tokens(new, getattr(layer, "_buffer_model", None))
            note = f"the memory update appending {message.id} rewrote the fact line ({self.spec.corruption})"
        self.fire("memory_system.memory_update", note)

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        if self.spec.error != "retrieval" or qa.id != self.target.qa.id:
            yield
            return
        from smartcomment import current_graph

        saved = (list(layer._buffer), list(layer._buffer_tokens))
        if self.spec.corruption == "stale" and self._stale is not None:
            layer._buffer[:], layer._buffer_tokens[:] = self._stale
        else:
            keep = [i for i, line in enumerate(saved[0]) if not self.holds_fact(line)]
            layer._buffer[:] = [saved[0][i] for i in keep]
            layer._buffer_tokens[:] = [saved[1][i] for i in keep]
        changed = layer._buffer != saved[0]
        graph = current_graph()
        strict = graph.strict if graph is not None else None
        if graph is not None:  # the returned snapshot differs from the stored unit: a new version
            graph.strict = False
        try:
            if changed:
                self.fire("memory_system.retrieve", "the retrieval returned the long-context memory "
                          + ("as it was before the fact arrived" if self.spec.corruption == "stale"
                             else "without the fact line"))
            yield
        finally:
            if graph is not None:
                graph.strict = strict
            layer._buffer[:], layer._buffer_tokens[:] = saved


class NaiveRAGFault(Fault):
    """Faults of the NaiveRAG layer."""

    @staticmethod
    def make_layer(user_id: str, save_dir: str, faults: list[Fault]) -> Any:
        """NaiveRAG with deferred 200-token documents, an in-memory store and the fake embedder."""
        from membase.layers import build_layer

        return build_layer("NaiveRAG", user_id=user_id, save_dir=save_dir, deferred=True, max_tokens=200,
                           vector_store="memory", retriever_name_or_path="fake:256", retriever_dim=256)

    def on_start(self, layer: Any) -> None:
        if self.spec.error != "extraction":
            return
        if self.site == "doc":
            feed, flush = layer._buffer_and_get_doc, layer._flush_buffer

            def corrupt_doc(doc: str | None) -> str | None:
                if doc is None or self.fired or not self.holds_fact(doc):
                    return doc
                new = self.corrupt(doc)
                if new is None:
                    return doc
                self.fire("memory_system.message_buffer_update",
                          f"the document cut from the buffer holds a corrupted fact ({self.spec.corruption})")
                return new

            layer._buffer_and_get_doc = lambda text=None: corrupt_doc(feed(text))
            layer._flush_buffer = lambda: corrupt_doc(flush())
        elif self.site == "add":
            store = layer.store
            add = store.add

            def add_corrupted(doc: str, *args: Any, **kwargs: Any) -> Any:
                new = self.corrupt(doc) if not self.fired and self.holds_fact(doc) else None
                if new is not None:
                    self.fire(("memory_system.add", "memory_system.message_buffer_update"),
                              f"the store kept a corrupted copy of the document ({self.spec.corruption})")
                return add(new if new is not None else doc, *args, **kwargs)

            store.add = add_corrupted

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        if self.spec.error == "extraction" and self.site == "buffer" and index == self.target.fact_index:
            original = layer._buffer_and_get_doc

            def corrupt_line(text: str | None = None) -> str | None:
                new = self.corrupt(text) if text is not None else None
                if new is not None:
                    self.fire("memory_system.message_buffer_update",
                              f"{message.id} entered the message buffer corrupted ({self.spec.corruption})")
                return original(new if new is not None else text)

            with patch_attr(layer, "_buffer_and_get_doc", corrupt_line):
                yield
            return
        yield

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        if self.spec.error != "retrieval" or qa.id != self.target.qa.id:
            yield
            return
        store = layer.store
        search = store.search

        def search_without(query: str, k: int, *args: Any, **kwargs: Any) -> list[Any]:
            hits = search(query, k, *args, **kwargs)
            if not any(self.holds_fact(h.content) for h in hits):
                return hits
            if self.spec.corruption == "near_duplicate":
                out = self._near_duplicates(layer, hits)
            else:
                extra = search(query, k + 50, *args, **kwargs)
                out = [h for h in extra if not self.holds_fact(h.content)][:k]
            self.fire("memory_system.retrieve", "the retrieval returned "
                      + ("near-duplicate documents in place of" if self.spec.corruption == "near_duplicate"
                         else "its results without") + " the documents that hold the fact")
            return out

        with patch_attr(store, "search", search_without):
            yield

    def _near_duplicates(self, layer: Any, hits: list[Any]) -> list[Any]:
        from dataclasses import replace

        from membase.layers.rag_store import StoredDocument

        keys = {h.key for h in hits}
        pool = [StoredDocument(key=r["key"], content=r["content"], namespace=r.get("namespace", []),
                               created_at=r.get("created_at", ""), updated_at=r.get("updated_at", ""))
                for r in layer.store.export() if r["key"] not in keys and not self.holds_fact(r["content"])]
        out = []
        for hit in hits:
            if not self.holds_fact(hit.content):
                out.append(hit)
                continue
            twin = nearest(hit.content, pool, key=lambda d: d.content)
            if twin is not None:
                pool.remove(twin)
                out.append(replace(twin, score=hit.score))
        return out
