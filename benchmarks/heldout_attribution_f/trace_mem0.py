"""Mem0: per message an LLM extracts facts, then an LLM decides ADD / UPDATE / DELETE / NONE
against the most similar stored memories; retrieval searches the store with the raw question."""

from __future__ import annotations

import json
import uuid
from typing import Any

from benchmarks.heldout_attribution_f.conversations import Msg
from benchmarks.heldout_attribution_f.runtime_env import Hooks, SimClock, jdump
from benchmarks.heldout_attribution_f.trace_rag import similarity_ranking
from benchmarks.heldout_attribution_f.trace_utils import Entry, link, var
from smartcomment import comment_mutation, comment_op_scope

FACT_PROMPT = (
    "You organise personal information. Read the conversation message and write down every durable fact it "
    "states about the people in it: events, plans, dates, numbers, places, preferences and relationships. Write "
    "each fact as one short sentence in the third person with the person's name, turning relative dates into "
    "absolute ones using the message timestamp. Reply with JSON: {\"facts\": [\"...\"]}. Reply with an empty "
    "list when the message holds nothing worth remembering."
)

UPDATE_PROMPT = (
    "You manage a memory store. You get the stored memories most similar to some new facts, each with an id. "
    "For every new fact decide one event: ADD it as a new memory, UPDATE a stored memory that it refines or "
    "corrects (keep the id, give the new text), DELETE a stored memory it contradicts, or NONE when it is "
    "already stored. Leave unrelated memories with NONE. Reply with JSON: {\"memory\": [{\"id\": \"...\", "
    "\"text\": \"...\", \"event\": \"ADD|UPDATE|DELETE|NONE\", \"old_memory\": \"...\"}]}."
)

UNIT = {"id_strategy": lambda u: f"memory-unit-{u['id']}", "encoding_fn": jdump, "category": "memory_entry"}


def fence(text: str) -> str:
    return f"```json\n{text}\n```"


class Mem0Layer:
    layer_type = "Mem0"
    split = "mem0"
    top_k = 10

    def __init__(self, hooks: Hooks, rng: Any, clock: SimClock) -> None:
        self.hooks = hooks
        self.rng = rng
        self.clock = clock
        self.units: dict[str, dict[str, str]] = {}
        self.deleted: set[str] = set()
        self.unit_of_fact: dict[str, str] = {}
        self.history: list[tuple[str, list[str]]] = []
        """(message id, unit ids shown to the decision) per decision, for planning."""

    @property
    def config(self) -> dict[str, Any]:
        return {"llm_provider": "openai", "llm_model": "gpt-4.1-mini", "embedder_provider": "huggingface",
                "embedding_model": "all-MiniLM-L6-v2", "embedding_model_dims": 384}

    def live(self) -> list[str]:
        return [u for u in self.units if u not in self.deleted]

    def _similar(self, text: str, limit: int = 5) -> list[str]:
        ids = self.live()
        order = similarity_ranking(text, [self.units[u]["memory"] for u in ids])
        return [ids[i] for i in order[:limit]]

    def add_message(self, message_rv: Any, msg_id: str, content: str, msg: Msg, timestamp: str) -> None:
        with comment_op_scope(op_name="memory_system.extract_facts", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini"}) as op:
            self.hooks.mark("extract", msg_id, op.op_id)
            self.clock.wait(900)
            facts = self.hooks("extract", msg_id, [(f.key, f.text) for f in msg.facts], msg=msg)
            prompt = var(FACT_PROMPT, name="fact-extraction-system-prompt", category="prompt",
                         metadata={"op_type": "fact_extraction"})
            answer = json.dumps({"facts": [t for _, t in facts]}, ensure_ascii=False)
            raw = var(fence(answer), class_name="raw_fact_extraction_response", category="llm_response")
            link([message_rv, prompt], [raw], "extraction")
            cleaned = var(answer, class_name="fact_extraction_response_with_code_block_removing",
                          category="llm_response")
            link([raw], [cleaned], "extraction")
            extracted = var([t for _, t in facts], class_name="extracted_facts", category="extracted_facts",
                            as_json=True)
            link([cleaned], [extracted], "extraction")
        if facts:
            self._decide(msg_id, msg, facts, extracted, timestamp)

    def _decide(self, msg_id: str, msg: Msg, facts: list[tuple[str, str]], extracted: Any, timestamp: str) -> None:
        shown: list[str] = []
        for _, text in facts:
            for u in self._similar(text):
                if u not in shown:
                    shown.append(u)
        by_key = {f.key: f for f in msg.facts}
        for key, _ in facts:
            fact = by_key.get(key)
            for target in (fact.replaces, fact.retires) if fact else ():
                unit = self.unit_of_fact.get(target or "")
                if unit and unit not in self.deleted and unit not in shown:
                    shown.append(unit)
        self.history.append((msg_id, list(shown)))
        existing = [{"id": str(i), "text": self.units[u]["memory"]} for i, u in enumerate(shown)]
        actions: list[dict[str, Any]] = []
        for key, text in facts:
            fact = by_key.get(key)
            target = self.unit_of_fact.get(fact.replaces or "") if fact else None
            if target in shown:
                actions.append({"event": "UPDATE", "unit": target, "text": text, "fact": key})
            else:
                actions.append({"event": "ADD", "text": text, "fact": key})
            retired = self.unit_of_fact.get(fact.retires or "") if fact else None
            if retired in shown:
                actions.append({"event": "DELETE", "unit": retired, "text": self.units[retired]["memory"]})
        actions = [dict(a) for a in self.hooks("decide", msg_id, actions, shown=list(shown), layer=self)]
        added = 0
        for action in actions:
            if action["event"] == "ADD":
                action["id"] = str(len(shown) + added)
                added += 1
            else:
                action["id"] = str(shown.index(action["unit"]))

        with comment_op_scope(op_name="memory_system.update_memory_decision", category="update",
                              metadata={"llm_model": "gpt-4.1-mini"}) as op:
            self.hooks.mark("decide", msg_id, op.op_id)
            self.clock.wait(1400)
            existing_rv = var(existing, class_name="existing_memories", category="existing_memories", as_json=True)
            prompt = var(UPDATE_PROMPT, name="memory-update-decision-prompt", category="prompt",
                         metadata={"op_type": "update_memory_decision"})
            instruction = var(
                f"{UPDATE_PROMPT}\n\nStored memories:\n{json.dumps(existing, ensure_ascii=False)}\n\nNew facts:\n"
                f"{json.dumps([t for _, t in facts], ensure_ascii=False)}",
                class_name="memory_update_task_instruction", category="prompt")
            link([extracted, existing_rv, prompt], [instruction], "update")
            answer = json.dumps({"memory": self._render(actions, shown)}, ensure_ascii=False)
            raw = var(fence(answer), class_name="raw_memory_update_decision", category="llm_response")
            link([instruction], [raw], "update")
            cleaned = var(answer, class_name="memory_update_decision_with_code_block_removing",
                          category="llm_response")
            link([raw], [cleaned], "update")
            for action in actions:
                if action["event"] == "NONE":
                    continue
                action_rv = var(self._public(action, shown), class_name="update_action", category="update_action",
                                as_json=True)
                link([cleaned], [action_rv], "update")
                self._apply(action, action_rv, timestamp)

    def _render(self, actions: list[dict[str, Any]], shown: list[str]) -> list[dict[str, Any]]:
        touched = {a.get("unit") for a in actions}
        out = [self._public(a, shown) for a in actions]
        out += [{"id": str(i), "text": self.units[u]["memory"], "event": "NONE"}
                for i, u in enumerate(shown) if u not in touched]
        return out

    def _public(self, action: dict[str, Any], shown: list[str]) -> dict[str, Any]:
        public = {"id": action["id"], "text": action["text"], "event": action["event"]}
        if action["event"] == "UPDATE":
            public["old_memory"] = self.units[action["unit"]]["memory"]
        return public

    def _apply(self, action: dict[str, Any], action_rv: Any, timestamp: str) -> None:
        if action["event"] == "ADD":
            unit = {"id": str(uuid.UUID(int=self.rng.getrandbits(128), version=4)), "memory": action["text"],
                    "timestamp": timestamp}
            link([action_rv], [(unit, UNIT)], "update")
            self.units[unit["id"]] = unit
            if action.get("fact"):
                self.unit_of_fact[action["fact"]] = unit["id"]
        elif action["event"] == "UPDATE":
            unit = self.units[action["unit"]]
            with comment_mutation(target=unit, inputs=[action_rv], mutation_category="llm_response", reuse_op=True,
                                  **UNIT):
                unit["memory"] = action["text"]
                unit["timestamp"] = timestamp
            if action.get("fact"):
                self.unit_of_fact[action["fact"]] = unit["id"]
        elif action["event"] == "DELETE":
            unit = self.units[action["unit"]]
            marker = var("DELETED", class_name="delete_marker", category="delete_marker")
            link([(unit, UNIT)], [marker], "update")
            self.deleted.add(unit["id"])

    def flush(self) -> None:
        return None

    def retrieve(self, query_rv: Any, qa_id: str, question: Any, k: int) -> list[Entry]:
        with comment_op_scope(op_name="memory_system.search_vector_store", category="retrieval",
                              metadata={"embedding_model": "all-MiniLM-L6-v2", "top_k": k}) as op:
            self.hooks.mark("retrieve", qa_id, op.op_id)
            ids = self.live()
            ranking = similarity_ranking(question.text, [self.units[u]["memory"] for u in ids])
            hits = self.hooks("retrieve", qa_id, ranking[:k], ranking=ranking,
                              texts=[self.units[u]["memory"] for u in ids])
            link([query_rv], [(self.units[ids[i]], UNIT) for i in hits])
        out = []
        for i in hits:
            u = self.units[ids[i]]
            out.append(Entry(f"memory-unit-{u['id']}", u["memory"], f"Memory: {u['memory']}\nTime: {u['timestamp']}"))
        return out

    def store_texts(self) -> list[str]:
        return [self.units[u]["memory"] for u in self.live()]

    def hit_text(self, i: int) -> str:
        return self.units[self.live()[i]]["memory"]
