"""Mem0, recorded after spec-tracer-and-membase §4.6: per message a ``memory_system.extract_facts``
op (message + system prompt → raw response → cleaned → ``extracted_facts``) and, when facts were
found, a ``memory_system.update_memory_decision`` op (facts + existing memories + prompt → task
instruction → raw decision → cleaned → ``update_action`` → ADD / UPDATE (mutation) / DELETE);
search is ``memory_system.search_vector_store``."""

from __future__ import annotations

import json
import random
import uuid

from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable
from smartcomment.runtime.variable import RuntimeVariable

from .conversations import Conversation, ConvSession, Message, Question
from .plans import CasePlan
from .recording import Entry, OpLog, json_text, message_node
from .text_tools import answer_fact_index, fact_key, rank, select

EXTRACTION_PROMPT = (
    "You organise personal information. Extract from the conversation the facts worth remembering about the "
    "speakers: preferences, plans, events with their dates, people and places. Reply as JSON {\"facts\": [...]}."
)
DECISION_PROMPT = (
    "You manage a memory store. Compare the new facts with the existing memories and, for each, choose ADD, "
    "UPDATE (rewrite an existing memory), DELETE (remove a contradicted memory) or NONE. Reply as JSON "
    "{\"memory\": [{\"id\", \"text\", \"event\", \"old_memory\"}]}."
)


def _unit_id(value: dict) -> str:
    return f"memory-unit-{value['id']}"


_UNIT_OPTIONS = {"id_strategy": _unit_id, "encoding_fn": json_text, "category": "memory_entry"}


class Mem0Layer:
    project_id = "Mem0"
    top_k = 3

    def __init__(self, conv: Conversation, plan: CasePlan, log: OpLog, rng: random.Random) -> None:
        self.conv, self.plan, self.log, self.rng = conv, plan, log, rng
        self.units: dict[str, dict] = {}
        self.holds: dict[str, set[str]] = {}
        self.source: dict[tuple[str, int], str] = {}
        q, target = plan.question, conv.message(plan.target)
        self.answer_fact = (plan.target, answer_fact_index(q, target))

    def _facts(self, message: Message) -> list[tuple[int, str]]:
        """(fact index, text) pairs the extractor returns for ``message``."""
        facts = list(enumerate(message.facts))
        if message.id != self.plan.target:
            return facts
        index = self.answer_fact[1]
        kind, q = self.plan.kind.name, self.plan.question
        replacement = {"mem0/extract_rewrite": q.rewrite, "mem0/extract_vague": q.vague}.get(kind)
        if replacement is not None:
            return [(i, replacement.fact if i == index else f) for i, f in facts]
        if kind == "mem0/extract_omit":
            return [(i, f) for i, f in facts if i != index]
        return facts

    def _evidence_unit(self) -> str | None:
        return self.source.get(self.answer_fact)

    def _decide(self, message: Message, facts: list[tuple[int, str]], existing: list[str]) -> list[dict]:
        """The decision's events (ids are store ids)."""
        plan, q = self.plan, self.plan.question
        kind = plan.kind.name
        events: list[dict] = []
        absorbed = False
        evidence_unit = self._evidence_unit()
        for index, fact in facts:
            if kind == "mem0/decision_none" and (message.id, index) == self.answer_fact:
                similar = [uid for uid in existing] or [None]
                events.append({"event": "NONE", "id": similar[0], "text": fact, "fact": index})
                continue
            if message.id == plan.trigger and evidence_unit in self.units and not absorbed:
                change = {"mem0/update_degrade": q.degrade, "mem0/miss_after_update": q.enrich}.get(kind)
                if change is not None:
                    events.append({"event": "UPDATE", "id": evidence_unit, "text": change.text, "fact": index,
                                   "keeps": kind == "mem0/miss_after_update",
                                   "old_memory": self.units[evidence_unit]["memory"]})
                    absorbed = True
                    continue
                if kind == "mem0/delete":
                    events.append({"event": "DELETE", "id": evidence_unit,
                                   "text": self.units[evidence_unit]["memory"]})
                    absorbed = True
            events.append({"event": "ADD", "id": None, "text": fact, "fact": index})
        return events

    def _similar(self, message: Message, facts: list[tuple[int, str]]) -> list[str]:
        text = " ".join(f for _, f in facts)
        ranked = rank(text, [(uid, unit["memory"]) for uid, unit in self.units.items()])[:5]
        evidence_unit = self._evidence_unit()
        if message.id == self.plan.trigger and evidence_unit in self.units and evidence_unit not in ranked:
            ranked = [*ranked[:4], evidence_unit]
        return ranked

    def add_message(self, message: Message, session: ConvSession) -> None:
        node = message_node(self.conv, message, session, style="mem0")
        facts = self._facts(message)
        fact_texts = [f for _, f in facts]
        with comment_op_scope(op_name="memory_system.extract_facts", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini"}) as op:
            self.log.mark("extract", message.id, op.op_id)
            reply = json.dumps({"facts": fact_texts}, ensure_ascii=False)
            raw = comment_variable(f"```json\n{reply}\n```", to_runtime=True, class_name="raw_fact_extraction_response",
                                   category="llm_response")
            prompt = (EXTRACTION_PROMPT, {"id_strategy": lambda _v: "fact-extraction-system-prompt",
                                          "category": "prompt", "metadata": {"op_type": "fact_extraction"}})
            comment_op(inputs=[node, prompt], outputs=[raw], category="extraction", reuse_op=True)
            cleaned = comment_variable(reply, to_runtime=True,
                                       class_name="fact_extraction_response_with_code_block_removing",
                                       category="llm_response")
            comment_op(inputs=[raw], outputs=[cleaned], category="extraction", reuse_op=True)
            extracted = comment_variable(fact_texts, to_runtime=True, class_name="extracted_facts",
                                         category="extracted_facts", encoding_fn=json.dumps)
            comment_op(inputs=[cleaned], outputs=[extracted], category="extraction", reuse_op=True)
        if facts:
            self._update(message, session, facts, extracted)

    def _update(self, message: Message, session: ConvSession, facts: list[tuple[int, str]],
                extracted: RuntimeVariable) -> None:
        existing = self._similar(message, facts)
        events = self._decide(message, facts, existing)
        temp_ids = {uid: str(i) for i, uid in enumerate(existing)}
        with comment_op_scope(op_name="memory_system.update_memory_decision", category="update",
                              metadata={"llm_model": "gpt-4.1-mini"}) as op:
            self.log.mark("decide", message.id, op.op_id)
            old = comment_variable(json.dumps([{"id": temp_ids[u], "text": self.units[u]["memory"]} for u in existing],
                                              ensure_ascii=False), to_runtime=True, class_name="existing_memories",
                                   category="existing_memories")
            prompt = (DECISION_PROMPT, {"id_strategy": lambda _v: "memory-update-decision-prompt",
                                        "category": "prompt", "metadata": {"op_type": "update_memory"}})
            instruction = comment_variable(f"{DECISION_PROMPT}\nExisting memories: {old.raw_value}\nNew facts: "
                                           f"{extracted.raw_value}", to_runtime=True,
                                           class_name="memory_update_task_instruction", category="prompt")
            comment_op(inputs=[extracted, old, prompt], outputs=[instruction], category="update", reuse_op=True)
            shown = [{"id": temp_ids.get(e["id"], str(len(temp_ids) + i)), "text": e["text"], "event": e["event"],
                      **({"old_memory": e["old_memory"]} if "old_memory" in e else {})} for i, e in enumerate(events)]
            reply = json.dumps({"memory": shown}, ensure_ascii=False)
            raw = comment_variable(f"```json\n{reply}\n```", to_runtime=True, class_name="raw_memory_update_decision",
                                   category="llm_response")
            comment_op(inputs=[instruction], outputs=[raw], category="update", reuse_op=True)
            cleaned = comment_variable(reply, to_runtime=True, class_name="memory_update_decision_with_code_block_removing",
                                       category="llm_response")
            comment_op(inputs=[raw], outputs=[cleaned], category="update", reuse_op=True)
            action = comment_variable(shown, to_runtime=True, class_name="update_action", category="update_action",
                                      encoding_fn=json_text)
            comment_op(inputs=[cleaned], outputs=[action], category="update", reuse_op=True)
            for event in events:
                self._apply(event, action, message, session)

    def _apply(self, event: dict, action: RuntimeVariable, message: Message, session: ConvSession) -> None:
        kind = event["event"]
        if kind == "ADD":
            uid = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
            unit = {"id": uid, "memory": event["text"], "timestamp": session.date_time}
            comment_op(inputs=[action], outputs=[(unit, _UNIT_OPTIONS)], category="update", reuse_op=True)
            self.units[uid] = unit
            key = (message.id, event["fact"])
            self.source[key] = uid
            intact = message.facts[event["fact"]] == event["text"]
            self.holds[uid] = {f"{message.id}#{event['fact']}"} if intact else set()
        elif kind == "UPDATE":
            unit = self.units[event["id"]]
            with comment_mutation(target=unit, inputs=[action], id_strategy=_unit_id, encoding_fn=json_text,
                                  category="memory_entry", mutation_category="llm_response", reuse_op=True):
                unit["memory"] = event["text"]
            if not event.get("keeps"):
                self.holds[event["id"]] = set()
        elif kind == "DELETE":
            unit = self.units.pop(event["id"])
            self.holds.pop(event["id"], None)
            comment_op(inputs=[(unit, _UNIT_OPTIONS)], outputs=[("DELETED", {"class_name": "delete_marker",
                                                                              "category": "delete_marker"})],
                       category="update", reuse_op=True)

    def flush(self) -> None:
        """Mem0 processes each message at once; nothing is pending."""

    def retrieve(self, question: Question, query: RuntimeVariable) -> list[Entry]:
        fault = self.plan.kind.name.split("/")[1] if question.qid == self.plan.question.qid else ""
        evidence = {fact_key(question, self.conv.message(mid)) for mid in question.evidence}
        lost = {fact_key(question, self.conv.message(self.plan.target))}
        chosen = select(question.text, fault, evidence, lost,
                        [(uid, unit["memory"], self.holds.get(uid, set())) for uid, unit in self.units.items()],
                        self.top_k)
        with comment_op_scope(op_name="memory_system.search_vector_store", category="retrieval",
                              metadata={"top_k": self.top_k, "embedding_model": "all-MiniLM-L6-v2"}) as op:
            self.log.mark("retrieve", question.qid, op.op_id)
            for uid in chosen:
                comment_op(inputs=[query], outputs=[(self.units[uid], _UNIT_OPTIONS)], reuse_op=True)
        return [Entry(trace_id=f"memory-unit-{uid}",
                      formatted=f"Memory: {self.units[uid]['memory']}\nTime: {self.units[uid]['timestamp']}")
                for uid in chosen]
