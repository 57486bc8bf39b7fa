"""Fault injection for the Mem0 layer (real mem0ai 1.0.5 with the deterministic fake model).

Construction faults act through the fake model's replies, so they enter the graph through
mem0's own ops: extraction drops the answer's words from the facts extracted from the fact
message (``memory_system.extract_facts``); update and deletion add an UPDATE (degraded text) or
a DELETE event for every similar memory holding the fact to a later update decision
(``memory_system.update_memory_decision``).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

from toolkits.faultbench._faults import Fault, degrade, patch_attr

__all__ = ["Mem0Fault"]

_FENCED = re.compile(r"```(?:json)?\n(?P<body>.*)\n```", re.DOTALL)


class Mem0Fault(Fault):
    """Faults for Mem0."""

    current_index = -1

    @classmethod
    def make_layer(cls, user_id: str, save_dir: str, faults: list[Mem0Fault]) -> Any:
        """Mem0 with the fake model (its replies passed through ``faults``), fake embedder, in-memory qdrant."""
        from membase.clients.fake import FunctionChatModel
        from membase.layers.mem0 import Mem0Config, Mem0Layer
        from membase.layers.mem0_fake import Mem0FakeBrain
        from toolkits.faultbench.prompts import MEM0_FACT_EXTRACTION_PROMPT, MEM0_UPDATE_MEMORY_PROMPT

        brain = Mem0FakeBrain()
        config = Mem0Config(user_id=user_id, save_dir=save_dir, llm_provider="fake", llm_model="mem0-fake",
                            embedder_provider="fake", embedding_model_dims=64, qdrant_path=":memory:",
                            custom_fact_extraction_prompt=MEM0_FACT_EXTRACTION_PROMPT,
                            custom_update_memory_prompt=MEM0_UPDATE_MEMORY_PROMPT)

        def reply(messages: list[dict[str, Any]], **kwargs: Any) -> str:
            text = brain(messages, **kwargs)
            for fault in faults:
                text = fault.transform_reply(brain, messages, text)
            return text

        return Mem0Layer(config, chat_model=FunctionChatModel(reply, model="mem0-fake"))

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        self.current_index = index
        yield

    def transform_reply(self, brain: Any, messages: list[dict[str, Any]], reply: str) -> str:
        """Rewrite the fake model's ``reply`` when this fault acts on this request."""
        prompt = str(messages[-1].get("content", ""))
        t = self.target
        if messages and messages[0].get("role") == "system":
            if self.kind == "extraction" and not self.fired and t.fact_message.content in prompt:
                match = _FENCED.search(reply)
                facts = json.loads(match.group("body") if match else reply).get("facts", [])
                degraded = [degrade(f, t.answer_tokens) if t.carries(f) else f for f in facts]
                if degraded != facts:
                    self.fired = True
                    self.note = f"the facts extracted from {t.fact_message.id} lost the answer's words"
                    return "```json\n" + json.dumps({"facts": degraded}) + "\n```"
            return reply
        # The first later decision that is shown a unit holding the fact (mem0 only shows similar
        # units, so waiting for a drawn message would often never fire).
        if self.kind not in ("update", "deletion") or self.fired or self.current_index <= t.fact_index:
            return reply
        old, _ = brain._parse_decision_prompt(prompt)
        holding = [m for m in old if t.carries(m["text"])]
        if not holding:
            return reply
        ids = {m["id"] for m in holding}
        actions = [a for a in json.loads(reply).get("memory", []) if a.get("id") not in ids]
        for m in holding:
            if self.kind == "update":
                actions.append({"id": m["id"], "text": degrade(m["text"], t.answer_tokens), "event": "UPDATE",
                                "old_memory": m["text"]})
            else:
                actions.append({"id": m["id"], "text": m["text"], "event": "DELETE"})
        self.fired = True
        self.note = f"a later update decision emitted {self.kind.upper()} for {len(holding)} memory unit(s) holding the fact"
        return json.dumps({"memory": actions})

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any, graph: Any) -> Iterator[None]:
        t = self.target
        if self.kind != "retrieval" or qa.id != t.qa.id:
            yield
            return
        memory = layer.memory
        search = memory.search

        def search_without(query: str, *args: Any, limit: int = 100, **kwargs: Any) -> dict[str, Any]:
            found = search(query, *args, limit=limit + 50, **kwargs)
            hits = found.get("results", [])
            kept = [h for h in hits if not t.carries(h.get("memory", ""))]
            self.fired = self.fired or len(kept) < len(hits)
            return {**found, "results": kept[:limit]}

        with patch_attr(memory, "search", search_without):
            yield
        self.note = "the retrieval skipped the memory units that hold the fact"
