"""Faults of the EverMemOS layer (its pipeline driven by the deterministic fake model).

* ``extraction`` at ``episode`` — the episode, event-log and foresight replies for the memcells
  that hold the fact are corrupted (the first one's ``memory_system.extract_memory`` is the label); ``lose`` at
  ``boundary`` — the memcell closed by the boundary decision leaves the fact message out
  (``evermemos.boundary_detection``); ``lose`` at ``memcell`` — the memcell is complete but the
  memory unit made from it leaves the fact message out (``memory_system.finalize_memory_unit``).
* ``retrieval`` — round one's searches skip the units that hold the fact (``skip``) or return
  the most similar other unit in their place (``near_duplicate``), both recorded in the first
  retrieval op of the question; or both rounds find the unit and the final selection drops it
  (``final_drop``, ``memory_system.agentic_final_rerank``).

EverMemOS never updates or deletes a memory unit, so it has no update or deletion faults.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
from collections.abc import Iterator
from typing import Any

from toolkits.faultbench._faults import Fault, patch_attr
from toolkits.faultbench._layer_faults import nearest

__all__ = ["EverMemOSFault"]

_FENCED = re.compile(r"^```(?:json)?\n(?P<body>.*)\n```$", re.DOTALL)
_EXTRACTION_TAGS = ("episode", "event_log", "foresight")


def _map_strings(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_map_strings(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map_strings(v, fn) for k, v in value.items()}
    return value


class EverMemOSFault(Fault):
    """Faults of EverMemOS."""

    @staticmethod
    def make_layer(user_id: str, save_dir: str, faults: list[Fault]) -> Any:
        """EverMemOS with the fake model (replies passed through ``faults``) and the fake embedder."""
        from membase.clients.fake import FunctionChatModel
        from membase.layers.evermemos import EverMemOSConfig, EverMemOSLayer
        from membase.layers.evermemos.fake import EverMemOSFakeBrain

        brain = EverMemOSFakeBrain()
        config = EverMemOSConfig(user_id=user_id, save_dir=save_dir,
                                 llm_config={"provider": "fake", "model": "evermemos-fake"},
                                 embedding_config={"provider": "fake", "embedding_dims": 256},
                                 boundary_config={"hard_message_limit": 10})

        def reply(messages: list[dict[str, Any]], **kwargs: Any) -> str:
            text = brain(messages, **kwargs)
            for fault in faults:
                if isinstance(fault, EverMemOSFault):
                    text = fault.transform_reply(messages, text)
            return text

        counter = iter(range(1, 1_000_000))
        return EverMemOSLayer(config, chat_model=FunctionChatModel(reply, model="evermemos-fake"),
                              id_factory=lambda: f"{user_id}-event-{next(counter):04d}")

    def _is_fact(self, message: dict[str, Any]) -> bool:
        return message.get("content") == self.target.fact.content

    def _holding_docs(self, docs: list[dict[str, Any]]) -> set[str]:
        return {d["event_id"] for d in docs if any(self._is_fact(m) for m in d.get("original_data") or [])}

    # -- construction -----------------------------------------------------------------------------
    def on_start(self, layer: Any) -> None:
        if self.spec.error != "extraction" or self.site not in ("boundary", "memcell"):
            return
        manager = layer.manager
        process = manager._process_memcell

        def process_without_fact(memcell: Any, source: str) -> Any:
            if self.fired or not any(self._is_fact(m) for m in memcell.original_data):
                return process(memcell, source)
            if self.site == "boundary":
                if source == "flush":  # a flush closes no boundary: nothing to blame there
                    return process(memcell, source)
                memcell.original_data = [m for m in memcell.original_data if not self._is_fact(m)]
                self.fire("evermemos.boundary_detection", "the memcell closed at this boundary left out "
                          f"{self.target.fact.id}")
                return process(memcell, source)
            reduced = copy.copy(memcell)
            reduced.original_data = [m for m in memcell.original_data if not self._is_fact(m)]
            record = process(reduced, source)
            record.memcell = memcell  # the closed memcell itself is complete
            self.fire("memory_system.finalize_memory_unit",
                      f"the memory unit made from the memcell left out {self.target.fact.id}")
            return record

        manager._process_memcell = process_without_fact

    def transform_reply(self, messages: list[dict[str, Any]], reply: str) -> str:
        """Corrupt the extraction replies for the memcell that holds the fact (``episode`` site)."""
        from membase.layers.evermemos.prompts import TASK_TAGS

        if self.spec.error != "extraction" or self.site != "episode":
            return reply
        prompt = str(messages[-1].get("content", ""))
        tags = [TASK_TAGS[k] for k in _EXTRACTION_TAGS if k in TASK_TAGS]
        if not any(prompt.startswith(tag) for tag in tags) or not self.holds_fact(prompt):
            return reply
        # Every memcell that holds the fact (with the smart mask a message can open the next
        # memcell too) is corrupted; the label is the first one's extraction (``fire`` keeps it).
        fenced = _FENCED.match(reply.strip())
        try:
            value = json.loads(fenced.group("body") if fenced else reply)
        except ValueError:
            return reply
        changed = _map_strings(value, lambda s: self.corrupt(s) or s)
        if changed == value:
            return reply
        if isinstance(changed, dict) and isinstance(changed.get("content"), str) and "title" in changed:
            # the fake titles an episode with its first words: a title quoting the fact would keep
            # an uncorrupted copy of it, so the title follows the corrupted content
            changed["title"] = " ".join(changed["content"].split()[:12])
        self.fire("memory_system.extract_memory",
                  f"the episode and event log of the fact's memcell are corrupted ({self.spec.corruption})")
        text = json.dumps(changed)
        return f"```json\n{text}\n```" if fenced else text

    # -- retrieval --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        if self.spec.error != "retrieval" or qa.id != self.target.qa.id:
            yield
            return
        if self.spec.corruption == "final_drop":
            with self._final_drop(layer):
                yield
            return
        index = layer.manager.index
        hidden = self._holding_docs(index.documents)
        if not hidden:
            yield
            return
        pool = [d for d in index.documents if d["event_id"] not in hidden]

        def without(search: Any) -> Any:
            def run(query: str, n: int) -> list[Any]:
                hits = search(query, n + len(hidden))
                if self.spec.corruption != "near_duplicate":
                    return [(d, s) for d, s in hits if d["event_id"] not in hidden][:n]
                seen = {d["event_id"] for d, _ in hits}
                out = []
                for doc, score in hits:
                    if doc["event_id"] not in hidden:
                        out.append((doc, score))
                        continue
                    free = [d for d in pool if d["event_id"] not in seen]
                    twin = nearest(doc.get("episode") or "", free, key=lambda d: d.get("episode") or "")
                    if twin is not None:
                        seen.add(twin["event_id"])
                        out.append((twin, score))
                return out[:n]
            return run

        with patch_attr(index, "bm25_search", without(index.bm25_search)), \
                patch_attr(index, "embedding_search", without(index.embedding_search)):
            self.fire(("memory_system.agentic_round1_bundle", "memory_system.hybrid_retrieval",
                       "memory_system.bm25_retrieval", "memory_system.embedding_retrieval"),
                      "the searches of the question returned "
                      + ("near-duplicate units in place of" if self.spec.corruption == "near_duplicate"
                         else "their results without") + " the units that hold the fact")
            yield

    @contextlib.contextmanager
    def _final_drop(self, layer: Any) -> Iterator[None]:
        import membase.layers.evermemos.manager as manager_module

        search = manager_module.agentic_search

        def drop_at_final(index: Any, llm: Any, query: str, k: int, config: Any) -> Any:
            run = search(index, llm, query, k, config)
            if run.sufficient:
                return run
            held = self._holding_docs([d for d, _ in run.final])
            if held:
                kept = [(d, s) for d, s in run.combined if d["event_id"] not in held][:k]
                run.final = kept
                if run.final_reranked is not None:
                    run.final_reranked = list(kept)
                self.fire("memory_system.agentic_final_rerank",
                          "the final selection dropped the units that hold the fact")
            return run

        with patch_attr(manager_module, "agentic_search", drop_at_final):
            yield
