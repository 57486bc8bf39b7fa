"""Fault injection for the EverMemOS layer (with its deterministic fake model).

Extraction degrades the fake model's episode / event-log / foresight replies for the first
memcell that holds the fact message (all inside one ``memory_system.extract_memory`` op). EverMemOS itself
never updates or deletes a memory unit, so update and deletion faults are recorded as explicit
``memory_system.update`` (a mutation of the unit) and ``memory_system.delete`` (unit →
``delete_marker``) ops that edit the manager's index the same way. Retrieval hides the units
holding the fact from both the BM25 and the embedding search of the question.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

from toolkits.evidence_flow._text import memory_text
from toolkits.faultbench._faults import StoreEditFault, degrade, patch_attr, record_delete

__all__ = ["EverMemOSFault"]

_FENCED = re.compile(r"^```(?:json)?\n(?P<body>.*)\n```$", re.DOTALL)
_CONTENT_KEYS = ("episode", "subject", "summary", "event_log", "foresights")


def _degrade_json(value: Any, answer_tokens: frozenset[str]) -> Any:
    if isinstance(value, str):
        return degrade(value, answer_tokens)
    if isinstance(value, list):
        return [_degrade_json(v, answer_tokens) for v in value]
    if isinstance(value, dict):
        return {k: _degrade_json(v, answer_tokens) for k, v in value.items()}
    return value


class _Holder:
    """A stand-in target whose encoding is exactly the stored unit value."""

    def __init__(self, name: str, text: str) -> None:
        self.name, self.text = name, text


def _holder_options(name: str) -> dict[str, Any]:
    return {"id_strategy": lambda _h: name, "encoding_fn": lambda h: h.text, "category": "memory_entry"}


class EverMemOSFault(StoreEditFault):
    """Faults for EverMemOS."""

    _memcell = 0
    _fired_memcell: int | None = None

    @classmethod
    def make_layer(cls, user_id: str, save_dir: str, faults: list[EverMemOSFault]) -> Any:
        """EverMemOS with the fake model (replies passed through ``faults``) and the fake embedder."""
        from membase.clients.fake import FunctionChatModel
        from membase.layers.evermemos import EverMemOSConfig, EverMemOSLayer
        from membase.layers.evermemos.fake import EverMemOSFakeBrain

        brain = EverMemOSFakeBrain()
        config = EverMemOSConfig(user_id=user_id, save_dir=save_dir,
                                 llm_config={"provider": "fake", "model": "evermemos-fake"},
                                 embedding_config={"provider": "fake", "embedding_dims": 64},
                                 boundary_config={"hard_message_limit": 10})

        def reply(messages: list[dict[str, Any]], **kwargs: Any) -> str:
            text = brain(messages, **kwargs)
            for fault in faults:
                text = fault.transform_reply(messages, text)
            return text

        counter = iter(range(1, 1_000_000))
        return EverMemOSLayer(config, chat_model=FunctionChatModel(reply, model="evermemos-fake"),
                              id_factory=lambda: f"{user_id}-event-{next(counter):04d}")

    def transform_reply(self, messages: list[dict[str, Any]], reply: str) -> str:
        """Degrade the extraction replies for the fact's memcell (extraction faults only)."""
        from membase.layers.evermemos.prompts import TASK_TAGS

        if self.kind != "extraction":
            return reply
        prompt = str(messages[-1].get("content", ""))
        if prompt.startswith(TASK_TAGS["episode"]):
            self._memcell += 1  # every memcell's extraction starts with its episode
        tags = [TASK_TAGS[k] for k in ("episode", "event_log", "foresight") if k in TASK_TAGS]
        if not any(prompt.startswith(tag) for tag in tags) or not self.target.carries(prompt):
            return reply
        # One op only: the first memcell holding the fact. With the smart mask the fact message
        # can open the next memcell too; that one stays intact (and the case is then dropped).
        if self._fired_memcell is None:
            self._fired_memcell = self._memcell
        elif self._fired_memcell != self._memcell:
            return reply
        fenced = _FENCED.match(reply.strip())
        try:
            value = json.loads(fenced.group("body") if fenced else reply)
        except ValueError:
            return reply
        degraded = json.dumps(_degrade_json(value, self.target.answer_tokens))
        self.fired = True
        self.note = "the episode/event log extracted for the fact's memcell lost the answer's words"
        return f"```json\n{degraded}\n```" if fenced else degraded

    def find_op(self, view: Any) -> str | None:
        """Extraction: the ``memory_system.extract_memory`` op that read the fact (its prompt)."""
        if self.kind != "extraction":
            return None
        for op_id, op in view.ops.items():
            if op.op_name != "memory_system.extract_memory":
                continue
            for edge in view.op_edges.get(op_id, []):
                source = view.nodes.get(edge.source)
                if source is not None and source.category == "prompt" and self.target.carries(
                        memory_text(source.value, unit=False)):
                    return op_id
        return None

    # -- update / deletion ------------------------------------------------------------------
    def _holding(self, layer: Any) -> list[int]:
        docs = layer.manager.index.documents
        return [i for i, d in enumerate(docs)
                if self.target.carries(memory_text(json.dumps({k: d.get(k) for k in _CONTENT_KEYS})))]

    def _edit(self, layer: Any, holding: list[int]) -> None:
        from smartcomment import current_graph

        graph = current_graph()
        index = layer.manager.index
        units = []
        for i in holding:
            name = f"memory-unit-{index.documents[i]['event_id']}"
            units.append((i, name, graph.get_latest_variable(name).raw_value))
        if self.kind == "deletion":
            self.op_id = record_delete([(_Holder(n, raw), _holder_options(n)) for _, n, raw in units],
                                       comment="Event memory units are deleted from the index.")
            for i in sorted(holding, reverse=True):
                event_id = index.documents[i]["event_id"]
                del index.documents[i], index.corpus[i], index.vectors[i]
                layer.manager.memcells = [m for m in layer.manager.memcells if m.event_id != event_id]
            index._bm25 = None
            self.note = f"{len(units)} event memory unit(s) holding the fact were deleted"
        else:
            self.op_id = self._record_update(layer, units)
            self.note = f"{len(units)} event memory unit(s) holding the fact were rewritten without the answer's words"

    def _record_update(self, layer: Any, units: list[tuple[int, str, str]]) -> str:
        from membase.layers.evermemos.index import bm25_tokenize, doc_bm25_text, doc_vector_texts
        from smartcomment import comment_mutation, comment_op_scope

        index = layer.manager.index
        with comment_op_scope(op_name="memory_system.update", category="update",
                              comment="Event memory units are rewritten.") as op:
            for i, name, raw in units:
                holder = _Holder(name, raw)
                doc = index.documents[i]
                for key in _CONTENT_KEYS:
                    doc[key] = _degrade_json(doc.get(key), self.target.answer_tokens)
                with comment_mutation(target=holder, reuse_op=True, mutation_category="update",
                                      mutation_comment="The unit's content is rewritten.",
                                      **_holder_options(name)):
                    stored = json.loads(raw)
                    for key in _CONTENT_KEYS:
                        if key in stored:
                            stored[key] = doc.get(key)
                    holder.text = json.dumps(stored, ensure_ascii=False, indent=4, sort_keys=True)
                index.corpus[i] = bm25_tokenize(doc_bm25_text(doc))
                texts = doc_vector_texts(doc)
                index.vectors[i] = index.embedder.embed(texts) if texts else []
            index._bm25 = None
        return op.op_id

    # -- retrieval ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any, graph: Any) -> Iterator[None]:
        t = self.target
        if self.kind != "retrieval" or qa.id != t.qa.id:
            yield
            return
        index = layer.manager.index
        hidden = {index.documents[i]["event_id"] for i in self._holding(layer)}
        self.fired = bool(hidden)

        def without(search: Any) -> Any:
            def run(query: str, n: int) -> list[Any]:
                return [(d, s) for d, s in search(query, n + len(hidden)) if d["event_id"] not in hidden][:n]
            return run

        with patch_attr(index, "bm25_search", without(index.bm25_search)), \
                patch_attr(index, "embedding_search", without(index.embedding_search)):
            yield
        self.note = "the retrieval hid the event memory units that hold the fact"
