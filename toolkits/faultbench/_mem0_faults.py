"""Faults of the Mem0 layer (real mem0ai 1.0.5 driven by the deterministic fake model).

Construction faults act through the fake model's replies, so they enter the graph through
mem0's own ops:

* ``extraction`` at ``facts`` — the facts extracted from the fact message are corrupted
  (``memory_system.extract_facts``); at ``decision`` — the fact message's own update decision
  ADDs a corrupted memory, or leaves the new fact out (``omit``)
  (``memory_system.update_memory_decision``);
* ``update`` — a later decision that is shown a memory holding the fact UPDATEs it with a
  corrupted text, or with a wrong merge of it and another memory shown (``merge``);
* ``deletion`` — a later decision DELETEs every memory holding the fact it is shown;
* ``retrieval`` — the search skips the memories that hold the fact (``skip``) or returns the
  most similar other memory in their place (``near_duplicate``).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from toolkits.faultbench._corrupt import merge_texts
from toolkits.faultbench._faults import Fault, patch_attr
from toolkits.faultbench._layer_faults import nearest

__all__ = ["Mem0Fault"]

_FENCED = re.compile(r"```(?:json)?\n(?P<body>.*)\n```", re.DOTALL)


class Mem0Fault(Fault):
    """Faults of Mem0."""

    _index = -1

    @staticmethod
    def make_layer(user_id: str, save_dir: str, faults: list[Fault], *,
                   memories: Mapping[str, Sequence[str]] | None = None) -> Any:
        """Mem0 with the fake model (its replies passed through ``faults``), the fake embedder, in-memory qdrant.

        ``memories`` maps a message's content to the facts the fake extracts from it instead of its
        sentences (the rewordings a real memory LLM would write; see ``Mem0FakeBrain``).
        """
        from membase.clients.fake import FunctionChatModel
        from membase.layers.mem0 import Mem0Config, Mem0Layer
        from membase.layers.mem0_fake import Mem0FakeBrain
        from toolkits.faultbench.prompts import MEM0_FACT_EXTRACTION_PROMPT, MEM0_UPDATE_MEMORY_PROMPT

        # More facts per message and fewer merges than the fake's defaults: the clean run should keep
        # most facts, so that the faults, not the fake, decide which answers fail.
        brain = Mem0FakeBrain(max_facts=6, update_threshold=0.8, memories=memories)
        config = Mem0Config(user_id=user_id, save_dir=save_dir, llm_provider="fake", llm_model="mem0-fake",
                            embedder_provider="fake", embedding_model_dims=256, qdrant_path=":memory:",
                            custom_fact_extraction_prompt=MEM0_FACT_EXTRACTION_PROMPT,
                            custom_update_memory_prompt=MEM0_UPDATE_MEMORY_PROMPT)

        def reply(messages: list[dict[str, Any]], **kwargs: Any) -> str:
            text = brain(messages, **kwargs)
            for fault in faults:
                if isinstance(fault, Mem0Fault):
                    text = fault.transform_reply(brain, messages, text)
            return text

        return Mem0Layer(config, chat_model=FunctionChatModel(reply, model="mem0-fake"))

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        self._index = index
        yield

    # -- construction -----------------------------------------------------------------------------
    def transform_reply(self, brain: Any, messages: list[dict[str, Any]], reply: str) -> str:
        """Rewrite the fake model's ``reply`` when this fault acts on this request."""
        if self.fired or self.spec.error not in ("extraction", "update", "deletion"):
            return reply
        if messages and messages[0].get("role") == "system":
            if self.spec.error == "extraction" and self.site == "facts" and self._index == self.target.fact_index:
                return self._corrupt_facts(reply)
            return reply
        prompt = str(messages[-1].get("content", ""))
        if self.spec.error == "extraction":
            if self.site == "decision" and self._index == self.target.fact_index:
                return self._corrupt_add(reply)
            return reply
        if self._index <= self.target.fact_index or self._index < self.act_index:
            return reply
        return self._change_holders(brain, prompt, reply)

    def _corrupt_facts(self, reply: str) -> str:
        match = _FENCED.search(reply)
        facts = json.loads(match.group("body") if match else reply).get("facts", [])
        changed = [self.corrupt(f) or f for f in facts]
        if changed == facts:
            return reply
        self.fire("memory_system.extract_facts",
                  f"the facts extracted from {self.target.fact.id} are corrupted ({self.spec.corruption})")
        return "```json\n" + json.dumps({"facts": changed}) + "\n```"

    def _corrupt_add(self, reply: str) -> str:
        actions = json.loads(reply).get("memory", [])
        out, changed = [], False
        for action in actions:
            if action.get("event") == "ADD" and self.holds_fact(action.get("text", "")):
                if self.spec.corruption == "omit":
                    changed = True
                    continue
                new = self.corrupt(action["text"])
                if new is not None:
                    action = {**action, "text": new}
                    changed = True
            out.append(action)
        if not changed:
            return reply
        what = "left the new fact out" if self.spec.corruption == "omit" else (
            f"added a corrupted memory ({self.spec.corruption})")
        self.fire("memory_system.update_memory_decision", f"the update decision for {self.target.fact.id} {what}")
        return json.dumps({"memory": out})

    def _change_holders(self, brain: Any, prompt: str, reply: str) -> str:
        old, _ = brain._parse_decision_prompt(prompt)
        holding = [m for m in old if self.holds_fact(m["text"])]
        if not holding:
            return reply
        others = [m for m in old if not self.holds_fact(m["text"])]
        ids = {m["id"] for m in holding}
        actions = [a for a in json.loads(reply).get("memory", []) if a.get("id") not in ids]
        for memory in holding:
            if self.spec.error == "deletion":
                actions.append({"id": memory["id"], "text": memory["text"], "event": "DELETE"})
                continue
            if self.spec.corruption == "merge":
                partner = nearest(memory["text"], others, key=lambda m: m["text"])
                new = merge_texts(memory["text"], partner["text"], self.target.answer_tokens) if partner else None
            else:
                new = self.corrupt(memory["text"])
            if new is None:
                return reply
            actions.append({"id": memory["id"], "text": new, "event": "UPDATE", "old_memory": memory["text"]})
        verb = "DELETE" if self.spec.error == "deletion" else f"UPDATE ({self.spec.corruption})"
        self.fire("memory_system.update_memory_decision",
                  f"a later update decision emitted {verb} for {len(holding)} memory unit(s) holding the fact")
        return json.dumps({"memory": actions})

    # -- retrieval ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        if self.spec.error != "retrieval" or qa.id != self.target.qa.id:
            yield
            return
        memory = layer.memory
        search = memory.search

        def search_without(query: str, *args: Any, limit: int = 100, **kwargs: Any) -> dict[str, Any]:
            found = search(query, *args, limit=limit, **kwargs)
            hits = found.get("results", [])
            if not any(self.holds_fact(h.get("memory", "")) for h in hits):
                return found
            if self.spec.corruption == "near_duplicate":
                seen = {h["id"] for h in hits}
                pool = [m for m in layer.get_all() if m["id"] not in seen and not self.holds_fact(m.get("memory", ""))]
                kept = []
                for hit in hits:
                    if not self.holds_fact(hit.get("memory", "")):
                        kept.append(hit)
                        continue
                    twin = nearest(hit.get("memory", ""), pool, key=lambda m: m.get("memory", ""))
                    if twin is not None:
                        pool.remove(twin)
                        kept.append({**twin, "score": hit.get("score")})
            else:
                more = search(query, *args, limit=limit + 50, **kwargs).get("results", [])
                kept = [h for h in more if not self.holds_fact(h.get("memory", ""))][:limit]
            self.fire("memory_system.search_vector_store", "the search returned "
                      + ("near-duplicate memories in place of" if self.spec.corruption == "near_duplicate"
                         else "its results without") + " the memories that hold the fact")
            return {**found, "results": kept}

        with patch_attr(memory, "search", search_without):
            yield
