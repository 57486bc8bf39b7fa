"""Mem0: fact extraction per message, then an ADD/UPDATE/DELETE/NONE decision against similar memories."""

from __future__ import annotations

import json
import uuid
from typing import Any

from benchmarks.heldout_attribution_e.memsys.common import (
    EMBEDDING_MODEL,
    LLM_MODEL,
    Entry,
    Faithful,
    active_query,
    record_message,
)
from benchmarks.heldout_attribution_e.memsys.model import Message
from benchmarks.heldout_attribution_e.memsys.text import cosine, dumps, rank
from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable, current_context

FACT_PROMPT = (
    "You organise personal information. Read the conversation message and list the facts worth "
    "remembering about the people in it: events, plans, preferences, numbers, dates and places. Write "
    "each fact as one short third-person sentence that names who it is about. Reply with JSON: "
    '{"facts": ["..."]}; reply {"facts": []} when the message holds nothing to remember.'
)
DECISION_PROMPT = (
    "You manage a memory store. Compare each new fact with the existing memories and choose an event "
    "per fact: ADD a new memory, UPDATE an existing memory that the fact refines or corrects (keep the "
    "memory's id), DELETE an existing memory that the fact contradicts, or NONE when the fact is already "
    'known. Reply with JSON: {"memory": [{"id": "...", "text": "...", "event": "...", "old_memory": "..."}]}.'
)
_UNIT = {"id_strategy": lambda v: f"memory-unit-{v['id']}", "encoding_fn": dumps, "category": "memory_entry"}
DELETE_MARKER = "DELETED"


def _public(action: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in action.items() if not k.startswith("_")}


class Mem0:
    layer_type = "Mem0"

    def __init__(self, hooks: Faithful, speakers: tuple[str, str], search_limit: int = 5) -> None:
        self.hooks = hooks
        self.speakers = speakers
        self.search_limit = search_limit
        self.units: dict[str, dict[str, str]] = {}

    # ---------------------------------------------------------------- construction
    def add_message(self, msg: Message) -> None:
        node = record_message(msg, "mem0", self.speakers, variable_name="raw_input_1")
        try:
            facts_node, facts = self._extract(msg, node)
            if facts:
                self._decide(msg, facts_node, facts)
        finally:
            current_context().remove_variable("raw_input_1")

    def _extract(self, msg: Message, node: Any) -> tuple[Any, list[str]]:
        with comment_op_scope(op_name="memory_system.extract_facts", category="extraction",
                              metadata={"llm_model": LLM_MODEL}) as op:
            prompt = comment_variable(FACT_PROMPT, to_runtime=True, id_strategy=lambda _v: "fact-extraction-system-prompt",
                                      category="prompt", metadata={"op_type": "fact_extraction"})
            facts = self.hooks.edit("mem0.facts", msg.id, list(msg.turn.facts))
            cleaned = json.dumps({"facts": facts}, ensure_ascii=False)
            raw = comment_variable(f"```json\n{cleaned}\n```", to_runtime=True, class_name="raw_fact_extraction_response",
                                   category="llm_response")
            comment_op(inputs=[node, prompt], outputs=[raw], category="extraction", reuse_op=True)
            clean = comment_variable(cleaned, to_runtime=True, class_name="fact_extraction_response_with_code_block_removing",
                                     category="llm_response")
            comment_op(inputs=[raw], outputs=[clean], category="extraction", reuse_op=True)
            facts_node = comment_variable(facts, to_runtime=True, class_name="extracted_facts", category="extracted_facts",
                                          encoding_fn=dumps)
            comment_op(inputs=[clean], outputs=[facts_node], category="extraction", reuse_op=True)
            self.hooks.bind("mem0.facts", msg.id, op.op_id)
        return facts_node, facts

    def _similar(self, facts: list[str]) -> list[str]:
        found: list[str] = []
        ids = list(self.units)
        for fact in facts:
            scores = [cosine(fact, self.units[i]["memory"]) for i in ids]
            for i in rank(scores)[: self.search_limit]:
                if scores[i] > 0 and ids[i] not in found:
                    found.append(ids[i])
        return found

    def _planned(self, msg: Message, facts: list[str]) -> list[dict[str, Any]]:
        """What the decision model answers for these facts (ADD unless the turn says otherwise)."""
        by_memory = {u["memory"]: uid for uid, u in self.units.items()}
        actions: list[dict[str, Any]] = []
        for fact in facts:
            planned = [d for d in msg.turn.decisions if d[2] == fact]
            if not planned:
                actions.append({"event": "ADD", "text": fact})
                continue
            event, old, _new = planned[0]
            target = by_memory.get(old)
            if event == "UPDATE" and target is not None:
                actions.append({"event": "UPDATE", "text": fact, "old_memory": old, "_uid": target})
            elif event == "DELETE" and target is not None:
                actions.append({"event": "DELETE", "text": old, "_uid": target})
                actions.append({"event": "ADD", "text": fact})
            elif event == "NONE":
                actions.append({"event": "NONE", "text": fact})
            else:
                actions.append({"event": "ADD", "text": fact})
        return actions

    def _decide(self, msg: Message, facts_node: Any, facts: list[str]) -> None:
        with comment_op_scope(op_name="memory_system.update_memory_decision", category="update",
                              metadata={"llm_model": LLM_MODEL}) as op:
            similar = self._similar(facts)
            for action in self._planned(msg, facts):
                if action.get("_uid") and action["_uid"] not in similar:
                    similar.append(action["_uid"])
            snapshot = {uid: self.units[uid]["memory"] for uid in similar}
            proposal = {"actions": self._planned(msg, facts), "memories": snapshot}
            actions = self.hooks.edit("mem0.decide", msg.id, proposal)["actions"]
            temp = {uid: str(i) for i, uid in enumerate(similar)}
            for action in actions:
                if action.get("_uid") is not None:
                    if action["_uid"] not in temp:
                        raise ValueError(f"decision names memory {action['_uid']} that the similarity search did not return")
                    action["id"] = temp[action["_uid"]]
            existing = [{"id": temp[uid], "text": snapshot[uid]} for uid in similar]
            existing_node = comment_variable(existing, to_runtime=True, variable_name="existing_memories",
                                             class_name="existing_memories", category="existing_memories", encoding_fn=dumps)
            prompt = comment_variable(DECISION_PROMPT, to_runtime=True, id_strategy=lambda _v: "memory-update-decision-prompt",
                                      category="prompt", metadata={"op_type": "update"})
            instruction = (f"{DECISION_PROMPT}\n\nExisting memories:\n{dumps(existing)}\n\n"
                           f"New facts:\n{json.dumps(facts, ensure_ascii=False)}")
            task = comment_variable(instruction, to_runtime=True, class_name="memory_update_task_instruction",
                                    category="prompt")
            comment_op(inputs=[facts_node, existing_node, prompt], outputs=[task], category="update", reuse_op=True)
            cleaned = json.dumps({"memory": [_public(a) for a in actions]}, ensure_ascii=False)
            raw = comment_variable(f"```json\n{cleaned}\n```", to_runtime=True, class_name="raw_memory_update_decision",
                                   category="llm_response")
            comment_op(inputs=[task], outputs=[raw], category="update", reuse_op=True)
            clean = comment_variable(cleaned, to_runtime=True, class_name="memory_update_decision_with_code_block_removing",
                                     category="llm_response")
            comment_op(inputs=[raw], outputs=[clean], category="update", reuse_op=True)
            for action in actions:
                node = comment_variable(_public(action), to_runtime=True, class_name="update_action",
                                        category="update_action", encoding_fn=dumps)
                comment_op(inputs=[clean], outputs=[node], category="update", reuse_op=True)
                self._apply(action, node, msg)
            self.hooks.bind("mem0.decide", msg.id, op.op_id)

    def _apply(self, action: dict[str, Any], node: Any, msg: Message) -> None:
        event = action["event"]
        if event == "ADD":
            unit_id = str(uuid.uuid4())
            unit = {"id": unit_id, "memory": action["text"], "timestamp": msg.timestamp}
            comment_op(inputs=[node], outputs=[(unit, dict(_UNIT))], category="update", reuse_op=True)
            self.units[unit_id] = unit
        elif event == "UPDATE":
            unit = self.units[action["_uid"]]
            with comment_mutation(target=unit, inputs=[node], id_strategy=_UNIT["id_strategy"], encoding_fn=dumps,
                                  category="memory_entry", mutation_category="llm_response", reuse_op=True):
                unit["memory"] = action["text"]
        elif event == "DELETE":
            unit = self.units.pop(action["_uid"])
            comment_op(inputs=[(unit, dict(_UNIT))],
                       outputs=[(DELETE_MARKER, {"class_name": "delete_marker", "category": "delete_marker"})],
                       category="update", reuse_op=True)

    # ---------------------------------------------------------------- search
    def flush(self) -> None:
        return None

    def retrieve(self, query: str, k: int) -> list[Entry]:
        query_node = active_query()
        with comment_op_scope(op_name="memory_system.search_vector_store", category="retrieval",
                              metadata={"embedding_model": EMBEDDING_MODEL, "top_k": k}) as op:
            ids = list(self.units)
            order = rank([cosine(query, self.units[i]["memory"]) for i in ids])
            ranking = [(ids[i], self.units[ids[i]]["memory"]) for i in order]
            ranking = self.hooks.edit("retrieve", query_node.name, ranking)
            hits = [uid for uid, _ in ranking[:k]]
            for uid in hits:
                comment_op(inputs=[query_node], outputs=[(self.units[uid], dict(_UNIT))], reuse_op=True)
            self.hooks.bind("retrieve", query_node.name, op.op_id)
        return [
            Entry(self.units[u]["memory"], f"Memory: {self.units[u]['memory']}\nTime: {self.units[u]['timestamp']}",
                  f"memory-unit-{u}")
            for u in hits
        ]

    def store_texts(self) -> list[str]:
        return [u["memory"] for u in self.units.values()]
