"""Four memory systems, emulated with the public smartcomment API the way another team might trace them.

Each emulator follows the tracing conventions of the spec (op names, categories, node classes,
memory-unit identities) with variations of its own: Long-Context can trim in the append op or in
a second update op, NaiveRAG can keep an overlap message and run a consolidation or de-duplication
pass, Mem0 records one action list per decision, EverMemOS runs plain hybrid or agentic retrieval.
The "models" are deterministic (:mod:`.conversation`).

A fault is a *plan* entry that changes what one call produces (a fact list, a buffer copy, a
retrieval list, ...); it goes through the very same recording call as the fault-free behaviour,
so no record tells a faulty op from a sound one. Every emulator notes, in ``roles``, the op id of
each step it performs (``msg:<mid>``, ``trim:<mid>``, ``retrieve``, ``qa``, ...), so a case can
name the op its fault hit by construction.
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import smartcomment.runtime.network as _network_module
import smartcomment.schema.base as _schema_base
from smartcomment import (
    comment_graph,
    comment_link,
    comment_mutation,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
)

from .conversation import Turn, render_turn, sentences, third_person, turn_facts

__all__ = ["EMULATORS", "Clock", "Question", "run_system"]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


def _tokens(text: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9]+", text.lower()) if len(t) > 2}


def _score(query: str, text: str) -> float:
    q = _tokens(query)
    return len(q & _tokens(text)) / (len(q) or 1)


class Clock:
    """A virtual clock for the tracer: records of one step share a millisecond, steps advance it."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def tick(self, ms: int = 3) -> None:
        self.now += timedelta(milliseconds=ms)

    def text(self) -> str:
        return self.now.strftime("%Y-%m-%d %H:%M:%S.") + f"{self.now.microsecond // 1000:03d}"


@contextmanager
def virtual_time(clock: Clock) -> Iterator[None]:
    """Let the tracer stamp records with ``clock`` (real runs spend seconds per LLM call)."""
    saved = (_schema_base.now_timestamp, _network_module.now_timestamp)
    _schema_base.now_timestamp = clock.text
    _network_module.now_timestamp = clock.text
    try:
        yield
    finally:
        _schema_base.now_timestamp, _network_module.now_timestamp = saved


@dataclass
class Question:
    """One evaluated question."""

    qid: str
    question: str
    golden: list[str]
    evidence: list[str]
    prediction: str
    correct: bool
    question_type: str = "single-hop"
    plan: dict[str, Any] = field(default_factory=dict)
    """Retrieval faults for this question only."""


@dataclass
class Entry:
    """A retrieved memory as the evaluation sees it."""

    trace_id: str
    text: str


def _stored(turn: Turn, plan: dict[str, Any]) -> Turn:
    """The message as a faulty step read it (``store_text``: mid → (speaker, text))."""
    override = plan.get("store_text", {}).get(turn.mid)
    if override is None:
        return turn
    speaker, text = override
    return Turn(turn.mid, turn.dia_id, speaker, text, turn.session, turn.session_id, turn.timestamp)


def _ops_of(graph: Any, full_node_id: str) -> str:
    return graph.get_operations_by_variable(full_node_id)[-1].op_id


def _record_message(turn: Turn, content: str, speaker_key: str = "speakers") -> Any:
    value = {"content": content, "name": turn.speaker, "role": "user", "timestamp": turn.timestamp}
    return comment_variable(value, to_runtime=True, id_strategy=lambda _v, mid=turn.mid: mid, encoding_fn=_json,
                            category="message", comment="A message of the conversation, as the memory system got it.",
                            metadata={"dia_id": turn.dia_id, "timestamp": turn.timestamp, speaker_key: turn.speaker})


class _Holder:
    """A mutable object traced by identity (a buffer, the long-context memory)."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items


class Emulator:
    """Shared bookkeeping: the plan, the roles, the units and their source messages."""

    split = ""
    project = ""
    strict = True

    def __init__(self, plan: dict[str, Any], rng: random.Random, clock: Clock) -> None:
        self.plan = plan
        self.rng = rng
        self.clock = clock
        self.roles: dict[str, str] = {}
        self.graph: Any = None

    def uid(self) -> str:
        r = self.rng
        a, b, c, d, e = r.getrandbits(32), r.getrandbits(16), r.getrandbits(12), r.getrandbits(12), r.getrandbits(48)
        return f"{a:08x}-{b:04x}-4{c:03x}-a{d:03x}-{e:012x}"

    def add(self, turn: Turn) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """End of the conversation."""

    def retrieve(self, query: Any, q: Question) -> list[Entry]:
        raise NotImplementedError

    def role(self, key: str, op_id: str) -> None:
        self.roles.setdefault(key, op_id)


def _order_units(units: dict[str, set[str]], texts: dict[str, str], q: Question, k: int) -> list[str]:
    """A working retriever: the units built from the evidence first, then by word overlap; a
    question's plan may hide units (``hide``: the units of these messages) or push others first."""
    hide = set(q.plan.get("hide", []))
    push = list(q.plan.get("push", []))
    keys = [u for u in units if not (units[u] & hide)]
    def rank(u: str) -> tuple[int, int, float]:
        pushed = min((i for i, m in enumerate(push) if m in units[u]), default=len(push))
        wanted = 0 if units[u] & set(q.evidence) else 1
        return (pushed, wanted, -_score(q.question, texts[u]))
    keys.sort(key=rank)
    return keys[:k]


# --------------------------------------------------------------------------- Long-Context
class LongContext(Emulator):
    """One memory unit, a new version per message; old messages trimmed to a word budget."""

    split, project = "long_context", "Long-Context"

    def __init__(self, plan: dict[str, Any], rng: random.Random, clock: Clock) -> None:
        super().__init__(plan, rng, clock)
        self.memory = _Holder([])
        self.window = int(plan.get("window_words", 100_000))
        self.separate_trim = bool(plan.get("separate_trim", False))
        self.versions: list[tuple[Any, list[str]]] = []
        self.strict = not plan.get("non_strict", False)

    def _text(self, holder: _Holder) -> str:
        text = "\n".join(text for _mid, text in holder.items)
        return repr(text) if self.plan.get("repr_memory") else text

    def _words(self) -> int:
        return sum(len(text.split()) for _mid, text in self.memory.items)

    def _trim(self) -> list[str]:
        dropped = []
        while len(self.memory.items) > 1 and self._words() > self.window:
            dropped.append(self.memory.items.pop(0)[0])
        return dropped

    def add(self, turn: Turn) -> None:
        self.clock.tick(5)
        message = _record_message(turn, render_turn(turn))
        stored = render_turn(_stored(turn, self.plan))
        meta = {"context_window": self.window, "message_separator": "\n", "llm_model_for_tokenizer": "gpt-4.1-mini"}
        with comment_mutation(target=self.memory, inputs=[message], id_strategy=lambda _h: "memory-unit",
                              category="memory_entry", encoding_fn=self._text, mutation_name="memory_system.memory_update",
                              mutation_category="update", mutation_metadata=meta) as update:
            self.memory.items.append((turn.mid, stored))
            for old_mid, text in self.plan.get("rewrite", {}).get(turn.mid, {}).items():
                self.memory.items = [(m, text if m == old_mid else t) for m, t in self.memory.items]
            dropped = [] if self.separate_trim else self._trim()
        op_id = _ops_of(self.graph, update.result.full_node_id)
        self.role(f"msg:{turn.mid}", op_id)
        for old_mid in self.plan.get("rewrite", {}).get(turn.mid, {}):
            self.role(f"rewrite:{old_mid}", op_id)
        for mid in dropped:
            self.role(f"trim:{mid}", op_id)
        self.versions.append((update.result, [m for m, _t in self.memory.items]))
        if self.separate_trim and self._words() > self.window:
            self.clock.tick(1)
            with comment_mutation(target=self.memory, id_strategy=lambda _h: "memory-unit", category="memory_entry",
                                  encoding_fn=self._text, mutation_name="memory_system.memory_update",
                                  mutation_category="update", mutation_metadata={**meta, "trimmed": True}) as trim:
                dropped = self._trim()
            trim_op = _ops_of(self.graph, trim.result.full_node_id)
            for mid in dropped:
                self.role(f"trim:{mid}", trim_op)
            self.versions.append((trim.result, [m for m, _t in self.memory.items]))

    def retrieve(self, query: Any, q: Question) -> list[Entry]:
        self.clock.tick(7)
        stale_before = q.plan.get("stale_before")
        if stale_before:
            # a cached snapshot from before the named message was appended
            snapshot = None
            for rv, mids in self.versions:
                if stale_before in mids:
                    break
                snapshot = rv
            text = snapshot.raw_value if snapshot is not None else ""
            if self.plan.get("repr_memory") and text:
                text = ast.literal_eval(text)
            if self.strict:
                output: Any = snapshot
            else:
                output = (text, {"id_strategy": lambda _v: "memory-unit", "category": "memory_entry",
                                 "encoding_fn": repr if self.plan.get("repr_memory") else str})
        else:
            text = "\n".join(t for _mid, t in self.memory.items)
            output = (self.memory, {"id_strategy": lambda _h: "memory-unit", "category": "memory_entry",
                                    "encoding_fn": self._text})
        op = comment_op(inputs=[query], outputs=[output], op_name="memory_system.retrieve", category="retrieval",
                        metadata={"top_k": 10})
        self.role("retrieve", op.op_id)
        return [Entry("memory-unit", f"<long_context_memory>\n{text}\n</long_context_memory>")]


# --------------------------------------------------------------------------- NaiveRAG
class NaiveRAG(Emulator):
    """A deferred message buffer cut into documents by a word budget, one unit per document."""

    split, project = "rag", "NaiveRAG"

    def __init__(self, plan: dict[str, Any], rng: random.Random, clock: Clock) -> None:
        super().__init__(plan, rng, clock)
        self.buffer = _Holder([])
        self.budget = int(plan.get("budget_words", 140))
        self.overlap = int(plan.get("overlap", 0))
        self.units: dict[str, dict[str, Any]] = {}
        self.sources: dict[str, set[str]] = {}
        self.deleted: set[str] = set()

    def _buffer_value(self, holder: _Holder) -> str:
        texts = [t for _m, t in holder.items]
        return _json({"buffer_total_tokens": sum(len(t.split()) for t in texts), "message_buffer": texts})

    def _buffer_words(self) -> int:
        return sum(len(t.split()) for _m, t in self.buffer.items)

    def add(self, turn: Turn) -> None:
        self.clock.tick(5)
        message = _record_message(turn, render_turn(turn))
        stored = render_turn(_stored(turn, self.plan))
        omit = set(self.plan.get("cut_omits", []))
        meta = {"deferred": True, "max_tokens": self.budget, "num_overlap_msgs": self.overlap,
                "message_separator": "\n", "llm_model_for_tokenizer": "gpt-4.1-mini"}
        document = None
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update", metadata=meta) as op:
            previous = comment_variable(self.buffer, to_runtime=True, id_strategy=lambda _h: "message-buffer",
                                        category="message_buffer", encoding_fn=self._buffer_value)
            if self.buffer.items and self._buffer_words() + len(stored.split()) > self.budget:
                cut = [(m, t) for m, t in self.buffer.items if m not in omit]
                document = (cut, "\n".join(t for _m, t in cut))
                emitted = [m for m, _t in self.buffer.items]
            with comment_mutation(target=self.buffer, inputs=[message], reuse_op=True,
                                  id_strategy=lambda _h: "message-buffer", category="message_buffer",
                                  encoding_fn=self._buffer_value, mutation_category="update"):
                if document is not None:
                    self.buffer.items = self.buffer.items[-self.overlap:] if self.overlap else []
                self.buffer.items.append((turn.mid, stored))
            if document is not None:
                doc = comment_variable(document[1], to_runtime=True, class_name="temporary_variable",
                                       category="temporary_variable")
                comment_op(inputs=[message, previous], outputs=[doc], reuse_op=True, category="extraction")
        self.role(f"msg:{turn.mid}", op.op_id)
        if document is not None:
            for mid in emitted:
                self.role(f"cut:{mid}", op.op_id)
            self._add_unit(doc, document[0], document[1])

    def _add_unit(self, doc: Any, parts: list[tuple[str, str]], text: str) -> None:
        self.clock.tick(9)
        mids = [m for m, _t in parts]
        for mid, line in parts:
            if mid in self.plan.get("unit_edit", {}):
                text = text.replace(line, self.plan["unit_edit"][mid])
        unit = {"content": text, "id": self.uid()}
        with comment_op_scope(op_name="memory_system.add", category="update") as op:
            comment_op(inputs=[doc], outputs=[(unit, {"id_strategy": lambda v: f"memory-unit-{v['id']}",
                                                      "category": "memory_entry", "encoding_fn": _json})],
                       reuse_op=True, category="update")
        key = unit["id"]
        self.units[key] = unit
        self.sources[key] = set(mids)
        for mid in mids:
            self.role(f"add:{mid}", op.op_id)

    def _unit_of(self, mid: str) -> str:
        return next(k for k, mids in self.sources.items() if mid in mids and k not in self.deleted)

    def _maintenance(self) -> None:
        """The housekeeping passes this implementation runs once ingestion ends: consolidation of
        similar documents and de-duplication."""
        merge = self.plan.get("consolidate")
        if merge:
            self.clock.tick(11)
            key, other = self._unit_of(merge["unit_of"]), self._unit_of(merge["with"])
            if key == other:
                raise RuntimeError("consolidation needs two different documents")
            unit = self.units[key]
            with comment_op_scope(op_name="memory_system.update", category="update",
                                  metadata={"reason": "consolidate similar documents"}) as op:
                with comment_mutation(target=unit, inputs=[(self.units[other], {
                        "id_strategy": lambda v: f"memory-unit-{v['id']}", "encoding_fn": _json,
                        "category": "memory_entry"})], reuse_op=True,
                        id_strategy=lambda v: f"memory-unit-{v['id']}", category="memory_entry", encoding_fn=_json,
                        mutation_category="update"):
                    line = merge["line"]
                    unit["content"] = unit["content"].replace(merge["old_line"], line) + "\n" + self.units[other]["content"]
            self.sources[key] |= self.sources[other]
            self.role("consolidate", op.op_id)
        dedup = self.plan.get("dedup")
        if dedup:
            self.clock.tick(11)
            key, kept = self._unit_of(dedup["unit_of"]), self._unit_of(dedup["keep"])
            if key == kept:
                raise RuntimeError("de-duplication needs two different documents")
            with comment_op_scope(op_name="memory_system.delete", category="update",
                                  metadata={"reason": "near-duplicate document"}) as op:
                comment_op(inputs=[(self.units[key], {"id_strategy": lambda v: f"memory-unit-{v['id']}",
                                                      "encoding_fn": _json, "category": "memory_entry"}),
                                   (self.units[kept], {"id_strategy": lambda v: f"memory-unit-{v['id']}",
                                                       "encoding_fn": _json, "category": "memory_entry"})],
                           outputs=[("DELETED", {"class_name": "delete_marker", "category": "marker"})],
                           reuse_op=True, category="update")
            self.deleted.add(key)
            self.role("dedup", op.op_id)

    def flush(self) -> None:
        self._flush_buffer()
        self._maintenance()

    def _flush_buffer(self) -> None:
        if not self.buffer.items:
            return
        self.clock.tick(5)
        self.buffer_before_flush = list(self.buffer.items)
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata={"flush": True}) as op:
            previous = comment_variable(self.buffer, to_runtime=True, id_strategy=lambda _h: "message-buffer",
                                        category="message_buffer", encoding_fn=self._buffer_value)
            omit = set(self.plan.get("cut_omits", []))
            parts = [(m, t) for m, t in self.buffer.items if m not in omit]
            text = "\n".join(t for _m, t in parts)
            doc = comment_variable(text, to_runtime=True, class_name="temporary_variable",
                                   category="temporary_variable")
            comment_op(inputs=[previous], outputs=[doc], reuse_op=True, category="extraction")
            with comment_mutation(target=self.buffer, reuse_op=True, id_strategy=lambda _h: "message-buffer",
                                  category="message_buffer", encoding_fn=self._buffer_value,
                                  mutation_category="update"):
                self.buffer.items = []
        for mid, _t in self.buffer_before_flush:
            self.role(f"cut:{mid}", op.op_id)
        self._add_unit(doc, parts, text)

    def retrieve(self, query: Any, q: Question) -> list[Entry]:
        self.clock.tick(13)
        live = {k: v for k, v in self.sources.items() if k not in self.deleted}
        keys = _order_units(live, {k: self.units[k]["content"] for k in live}, q, int(self.plan.get("top_k", 3)))
        with comment_op_scope(op_name="memory_system.retrieve", category="retrieval",
                              metadata={"top_k": 3, "embedding_model": "all-MiniLM-L6-v2"}) as op:
            for key in keys:
                comment_op(inputs=[query], outputs=[(self.units[key], {
                    "id_strategy": lambda v: f"memory-unit-{v['id']}", "category": "memory_entry",
                    "encoding_fn": _json})], reuse_op=True)
        self.role("retrieve", op.op_id)
        return [Entry(f"memory-unit-{k}", self.units[k]["content"]) for k in keys]


# --------------------------------------------------------------------------- Mem0
_FACT_PROMPT = ("You organise personal information. Read the conversation turn and list the facts worth "
                "remembering about the people in it, as JSON {\"facts\": [...]}.")
_UPDATE_PROMPT = ("You manage a memory store. Compare the new facts with the existing memories and answer, for "
                  "each, ADD, UPDATE, DELETE or NONE, as JSON {\"memory\": [...]}.")
_MEM0_SUFFIX = "\nBelow is this message's metadata:\nSpeaker Name: {name}\nSpeaker Role: user\n"


class Mem0(Emulator):
    """Fact extraction per message, then one ADD/UPDATE/DELETE/NONE decision over similar memories."""

    split, project = "mem0", "Mem0"

    def __init__(self, plan: dict[str, Any], rng: random.Random, clock: Clock) -> None:
        super().__init__(plan, rng, clock)
        self.units: dict[str, dict[str, Any]] = {}
        self.sources: dict[str, set[str]] = {}
        self.deleted: set[str] = set()

    @staticmethod
    def _unit_opts() -> dict[str, Any]:
        return {"id_strategy": lambda v: f"memory-unit-{v['id']}", "category": "memory_entry", "encoding_fn": _json}

    def _unit_of(self, mid: str, contains: str | None = None) -> str:
        return next(k for k, mids in self.sources.items() if mid in mids and k not in self.deleted
                    and (contains is None or contains.lower() in self.units[k]["memory"].lower()))

    def add(self, turn: Turn) -> None:
        self.clock.tick(5)
        message = _record_message(turn, turn.text + _MEM0_SUFFIX.format(name=turn.speaker))
        facts = self.plan.get("facts", {}).get(turn.mid)
        if facts is None and turn.mid in self.plan.get("paraphrase", {}):
            facts = [self.plan["paraphrase"][turn.mid]]
        if facts is None:
            facts = turn_facts(turn, named=not self.plan.get("anonymous_facts"))
        self.clock.tick(40)
        with comment_op_scope(op_name="memory_system.extract_facts", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini"}) as op:
            raw = "```json\n" + json.dumps({"facts": facts}, ensure_ascii=False) + "\n```"
            cleaned = json.dumps({"facts": facts}, ensure_ascii=False)
            prompt = (_FACT_PROMPT, {"id_strategy": lambda _v: "fact-extraction-system-prompt", "category": "prompt"})
            raw_rv = comment_variable(raw, to_runtime=True, class_name="raw_fact_extraction_response",
                                      category="llm_response")
            comment_op(inputs=[message, prompt], outputs=[raw_rv], reuse_op=True, category="extraction")
            cleaned_rv = comment_variable(cleaned, to_runtime=True, class_name="cleaned_fact_extraction_response",
                                          category="llm_response")
            comment_op(inputs=[raw_rv], outputs=[cleaned_rv], reuse_op=True, category="extraction")
            facts_rv = comment_variable(facts, to_runtime=True, class_name="extracted_facts",
                                        category="extracted_facts", encoding_fn=_json)
            comment_op(inputs=[cleaned_rv], outputs=[facts_rv], reuse_op=True, category="extraction")
        self.role(f"msg:{turn.mid}", op.op_id)
        if facts or turn.mid in self.plan.get("decisions", {}):
            self._decide(turn, facts, facts_rv)

    def _decide(self, turn: Turn, facts: list[str], facts_rv: Any) -> None:
        self.clock.tick(60)
        live = [k for k in self.units if k not in self.deleted]
        similar = sorted(live, key=lambda k: -max([_score(f, self.units[k]["memory"]) for f in facts] or [0.0]))[:5]
        existing = [{"id": k, "text": self.units[k]["memory"]} for k in similar]
        planned = self.plan.get("decisions", {}).get(turn.mid)
        actions: list[dict[str, Any]] = []
        if planned is None or planned.get("add_facts"):
            actions = [{"id": str(len(self.units) + i), "text": f, "event": "ADD"} for i, f in enumerate(facts)]
        for action in (planned or {}).get("actions", []):
            item = dict(action)
            key = self._unit_of(item.pop("unit_of"), item.pop("contains", None))
            item["id"] = key
            if key not in similar:
                existing.append({"id": key, "text": self.units[key]["memory"]})
            if item["event"] == "UPDATE":
                item["old_memory"] = self.units[key]["memory"]
            item.setdefault("text", self.units[key]["memory"])
            actions.append(item)
        touched: list[str] = []
        with comment_op_scope(op_name="memory_system.update_memory_decision", category="update",
                              metadata={"llm_model": "gpt-4.1-mini"}) as op:
            existing_rv = comment_variable(_json(existing), to_runtime=True, class_name="existing_memories",
                                           category="memory_context", variable_name="existing_memories")
            prompt = (_UPDATE_PROMPT, {"id_strategy": lambda _v: "memory-update-decision-prompt", "category": "prompt"})
            instruction = (f"{_UPDATE_PROMPT}\n\nExisting memories:\n{_json(existing)}\n\nNew facts:\n"
                           f"{json.dumps(facts, ensure_ascii=False)}")
            task = comment_variable(instruction, to_runtime=True, class_name="memory_update_task_instruction",
                                    category="prompt")
            comment_op(inputs=[facts_rv, existing_rv, prompt], outputs=[task], reuse_op=True, category="update")
            raw = "```json\n" + json.dumps({"memory": actions}, ensure_ascii=False) + "\n```"
            raw_rv = comment_variable(raw, to_runtime=True, class_name="raw_memory_update_decision",
                                      category="llm_response")
            comment_op(inputs=[task], outputs=[raw_rv], reuse_op=True, category="update")
            cleaned = comment_variable(json.dumps({"memory": actions}, ensure_ascii=False), to_runtime=True,
                                       class_name="memory_update_decision_with_code_block_removing",
                                       category="llm_response")
            comment_op(inputs=[raw_rv], outputs=[cleaned], reuse_op=True, category="update")
            action_rv = comment_variable(actions, to_runtime=True, class_name="update_action", category="update_action",
                                         encoding_fn=_json)
            comment_op(inputs=[cleaned], outputs=[action_rv], reuse_op=True, category="update")
            for action in actions:
                event = action["event"]
                if event == "ADD":
                    unit = {"id": self.uid(), "memory": action["text"], "timestamp": turn.timestamp}
                    comment_op(inputs=[action_rv], outputs=[(unit, self._unit_opts())], reuse_op=True,
                               category="update")
                    self.units[unit["id"]] = unit
                    self.sources[unit["id"]] = {turn.mid}
                elif event == "UPDATE":
                    unit = self.units[action["id"]]
                    with comment_mutation(target=unit, inputs=[action_rv], reuse_op=True, mutation_category="llm_response",
                                          **self._unit_opts()):
                        unit["memory"] = action["text"]
                        unit["timestamp"] = turn.timestamp
                    touched.extend(f"update:{m}" for m in self.sources[action["id"]])
                    self.sources[action["id"]].add(turn.mid)
                elif event == "DELETE":
                    unit = self.units[action["id"]]
                    comment_op(inputs=[(unit, self._unit_opts())], outputs=[
                        ("DELETE", {"class_name": "delete_marker", "category": "delete_marker"})],
                        reuse_op=True, category="update")
                    self.deleted.add(action["id"])
                    touched.extend(f"delete:{m}" for m in self.sources[action["id"]])
        for key in touched:
            self.role(key, op.op_id)
        self.role(f"decide:{turn.mid}", op.op_id)

    def retrieve(self, query: Any, q: Question) -> list[Entry]:
        self.clock.tick(13)
        live = {k: v for k, v in self.sources.items() if k not in self.deleted}
        keys = _order_units(live, {k: self.units[k]["memory"] for k in live}, q, int(self.plan.get("top_k", 5)))
        with comment_op_scope(op_name="memory_system.search_vector_store", category="retrieval",
                              metadata={"top_k": 5, "embedding_model": "all-MiniLM-L6-v2"}) as op:
            for key in keys:
                comment_op(inputs=[query], outputs=[(self.units[key], self._unit_opts())], reuse_op=True)
        self.role("retrieve", op.op_id)
        return [Entry(f"memory-unit-{k}", f"Memory: {self.units[k]['memory']}\nTime: {self.units[k]['timestamp']}")
                for k in keys]


# --------------------------------------------------------------------------- EverMemOS
class EverMemOS(Emulator):
    """A message buffer cut into memcells at session changes (or a length limit), one episodic unit each."""

    split, project = "evermemos", "EverMemOS"

    def __init__(self, plan: dict[str, Any], rng: random.Random, clock: Clock) -> None:
        super().__init__(plan, rng, clock)
        self.buffer = _Holder([])
        self.max_messages = int(plan.get("max_messages", 7))
        self.units: dict[str, dict[str, Any]] = {}
        self.sources: dict[str, set[str]] = {}
        self.agentic = bool(plan.get("agentic", True))
        self.names: tuple[str, str] = ("", "")

    @staticmethod
    def _buffer_value(holder: _Holder) -> str:
        return _json([entry for _mid, _session, entry in holder.items])

    @staticmethod
    def _unit_opts() -> dict[str, Any]:
        return {"id_strategy": lambda v: f"memory-unit-{v['event_id']}", "category": "memory_entry",
                "encoding_fn": _json}

    def _mutate_buffer(self, inputs: list[Any], change: Any) -> Any:
        with comment_mutation(target=self.buffer, inputs=inputs, reuse_op=True, id_strategy=lambda _h: "message-buffer",
                              category="message_buffer", encoding_fn=self._buffer_value, mutation_category="update") as m:
            change()
        return m.result

    def add(self, turn: Turn) -> None:
        self.clock.tick(5)
        message = _record_message(turn, turn.text, speaker_key="speaker")
        stored = _stored(turn, self.plan)
        entry = {"speaker_id": stored.speaker, "speaker_name": stored.speaker, "role": "user",
                 "content": stored.text, "timestamp": turn.timestamp}
        keep = turn.mid not in self.plan.get("buffer_loses", [])
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update") as op:
            buffer_rv = self._mutate_buffer([message], lambda: self.buffer.items.append(
                (turn.mid, turn.session, entry)) if keep else None)
        self.role(f"msg:{turn.mid}", op.op_id)
        if len(self.buffer.items) < 2:
            return
        self._boundary(turn, buffer_rv)

    def _boundary(self, turn: Turn, buffer_rv: Any) -> None:
        self.clock.tick(50)
        history, new = self.buffer.items[:-1], self.buffer.items[-1:]
        should_end = new[0][1] != history[-1][1] or len(self.buffer.items) > self.max_messages
        lose = set(self.plan.get("memcell_loses", []))
        with comment_op_scope(op_name="evermemos.boundary_detection", category="boundary_detection",
                              metadata={"smart_mask_flag": len(self.buffer.items) > 5, "llm_model": "gpt-4.1-mini"}) as op:
            new_rv = comment_variable([e for _m, _s, e in new], to_runtime=True, class_name="new_messages",
                                      category="new_messages")
            hist_rv = comment_variable([e for _m, _s, e in history], to_runtime=True, class_name="history_messages",
                                       category="history_messages")
            comment_op(inputs=[buffer_rv], outputs=[new_rv, hist_rv], reuse_op=True, category="split_message_buffer")
            gap = "Time gap: 0 seconds (immediate response)" if not should_end else "Time gap: 12 days (long gap, likely new conversation)"
            gap_rv = comment_variable(gap, to_runtime=True, class_name="time_gap", category="time_gap")
            comment_op(inputs=[hist_rv, new_rv], outputs=[gap_rv], reuse_op=True)
            lines = "\n".join(f"[{e['timestamp']}] {e['speaker_name']}: {e['content']}" for _m, _s, e in history)
            prompt = f"Decide whether the new message ends the episode.\nHistory:\n{lines}\nNew:\n{new[0][2]['content']}\n{gap}"
            template = ("Decide whether the new messages end the current episode.",
                        {"id_strategy": lambda _v: "boundary-detection-prompt-template", "category": "prompt",
                         "metadata": {"op_type": "boundary_detection"}})
            prompt_rv = comment_variable(prompt, to_runtime=True, class_name="boundary_detection_prompt",
                                         category="prompt")
            comment_op(inputs=[hist_rv, new_rv, gap_rv, template], outputs=[prompt_rv], reuse_op=True)
            topic = self._topic([e for _m, _s, e in history])
            raw = json.dumps({"reasoning": "topic and time changed" if should_end else "same conversation",
                              "should_end": should_end, "confidence": 0.9,
                              "topic_summary": topic if should_end else ""})
            raw_rv = comment_variable(raw, to_runtime=True, class_name="raw_boundary_detection_response",
                                      category="llm_response")
            comment_op(inputs=[prompt_rv], outputs=[raw_rv], reuse_op=True, category="boundary_detection")
            result = (f"BoundaryDetectionResult(should_end={should_end}, should_wait=True, reasoning="
                      f"{'topic and time changed' if should_end else 'same conversation'!r}, confidence=0.9, "
                      f"topic_summary={topic if should_end else ''!r})")
            result_rv = comment_variable(result, to_runtime=True, class_name="boundary_detection_result",
                                         category="llm_response")
            comment_op(inputs=[raw_rv], outputs=[result_rv], reuse_op=True, category="boundary_detection")
            memcell = None
            if should_end:
                kept = [(m, e) for m, _s, e in history if m not in lose]
                memcell = {"original_data": [e for _m, e in kept], "timestamp": history[-1][2]["timestamp"],
                           "summary": topic}
                cell_rv = comment_variable(memcell, to_runtime=True, class_name="temporary_variable",
                                           category="temporary_variable", encoding_fn=_json)
                comment_op(inputs=[buffer_rv, result_rv], outputs=[cell_rv], reuse_op=True)
            else:
                comment_op(inputs=[result_rv], outputs=[("NO_SPLIT", {"class_name": "no_split_marker",
                                                                     "category": "marker"})],
                           reuse_op=True, category="boundary_detection")
        self.role(f"boundary:{turn.mid}", op.op_id)
        if memcell is None:
            return
        for mid, _s, _e in history:
            self.role(f"cell:{mid}", op.op_id)
        self._finalize(cell_rv, memcell, [m for m, _e in kept], topic, [m for m, _e in kept])
        self.clock.tick(3)
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata={"smart_mask_flag": True}):
            self._mutate_buffer([], lambda: setattr(self.buffer, "items", self.buffer.items[-2:]))

    def _topic(self, entries: list[dict[str, Any]]) -> str:
        for entry in entries:
            words = entry["content"].split()
            if len(words) > 8:
                return " ".join(words[:12]).rstrip(",.!?")
        return "Conversation segment"

    def _finalize(self, cell: Any, memcell: dict[str, Any], mids: list[str], summary: str,
                  mids_all: list[str]) -> None:
        self.clock.tick(4)
        event_id = f"{self.rng.getrandbits(96):024x}"
        unit = {"event_id": event_id, "timestamp": memcell["timestamp"], "original_data": memcell["original_data"],
                "summary": summary, "subject": None, "episode": None, "foresights": None, "event_log": None}
        comment_op(inputs=[cell], outputs=[(unit, self._unit_opts())], op_name="memory_system.finalize_memory_unit",
                   category="initialization")
        self.clock.tick(80)
        entries = memcell["original_data"]
        names = sorted({e["speaker_name"] for e in entries})
        # what the extraction model read: each message, or the faulty reading the plan gives for it
        read = [Turn(m, "", *self.plan.get("episode_edit", {}).get(m, (e["speaker_name"], e["content"])), 0, "", "")
                for m, e in zip(mids_all, entries, strict=True)]
        paraphrase = {m: line for m, line in self.plan.get("paraphrase", {}).items()
                      if m not in self.plan.get("episode_edit", {})}
        written = [w for t in read for w in ([paraphrase[t.mid]] if t.mid in paraphrase else
                                             [third_person(t.speaker, s) for s in sentences(t.text)])]
        facts = [f for t in read for f in ([paraphrase[t.mid]] if t.mid in paraphrase else turn_facts(t))]
        date = datetime.fromisoformat(memcell["timestamp"]).strftime("%B %d, %Y")
        episode = f"On {date}, " + " ".join(written)
        subject = f"{' and '.join(names)} on {date}: {summary}"
        with comment_op_scope(op_name="memory_system.extract_memory", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini", "foresight_enabled": False,
                                        "event_log_enabled": True}) as op:
            instructions = ("Each episode is a complete, independent story; keep names, times and places.",
                            {"id_strategy": lambda _v: "episode-extraction-custom-instructions", "category": "prompt"})
            template = ("Turn the conversation into an episodic memory as JSON {title, content}.",
                        {"id_strategy": lambda _v: "episode-extraction-prompt-template", "category": "prompt",
                         "metadata": {"op_type": "episode_extraction"}})
            prompt = comment_variable("Conversation:\n" + "\n".join(
                f"{{timestamp: {e['timestamp']}, speaker: {e['speaker_name']}, content: {e['content']}}}"
                for e in entries), to_runtime=True, class_name="episode_extraction_prompt", category="prompt")
            comment_op(inputs=[(unit, self._unit_opts()), instructions, template], outputs=[prompt], reuse_op=True)
            raw = comment_variable(json.dumps({"title": subject, "content": episode}, ensure_ascii=False),
                                   to_runtime=True, class_name="raw_episode_extraction_response",
                                   category="llm_response")
            comment_op(inputs=[prompt], outputs=[raw], reuse_op=True, category="extraction")
            memory = comment_variable({"subject": subject, "summary": episode[:200], "episode": episode},
                                      to_runtime=True, class_name="episode_memory", category="llm_response",
                                      encoding_fn=_json)
            comment_op(inputs=[raw], outputs=[memory], reuse_op=True, category="extraction")
            with comment_mutation(target=unit, inputs=[memory], reuse_op=True, **self._unit_opts()):
                unit.update(subject=subject, episode=episode, summary=episode[:200] + "...")
            log_template = ("Write the event log of the conversation as atomic facts.",
                            {"id_strategy": lambda _v: "event-log-prompt-template", "category": "prompt",
                             "metadata": {"op_type": "event_log_extraction"}})
            log_prompt = comment_variable("TIME: " + date + "\n" + "\n".join(
                f"[{e['timestamp']}] {e['speaker_name']}: {e['content']}" for e in entries), to_runtime=True,
                class_name="event_extraction_prompt", category="prompt")
            comment_op(inputs=[(unit, self._unit_opts()), log_template], outputs=[log_prompt], reuse_op=True)
            log_raw = comment_variable(json.dumps({"event_log": {"time": date, "atomic_fact": facts}},
                                                  ensure_ascii=False), to_runtime=True,
                                       class_name="raw_event_log_extraction_response", category="llm_response")
            comment_op(inputs=[log_prompt], outputs=[log_raw], reuse_op=True, category="extraction")
            log = comment_variable({"atomic_fact": facts}, to_runtime=True, class_name="event_log",
                                   category="llm_response", encoding_fn=_json)
            comment_op(inputs=[log_raw], outputs=[log], reuse_op=True, category="extraction")
            with comment_mutation(target=unit, inputs=[log], reuse_op=True, **self._unit_opts()):
                unit["event_log"] = {"time": date, "atomic_fact": facts}
            with comment_mutation(target=unit, reuse_op=True, **self._unit_opts()):
                del unit["original_data"]
        for mid in mids:
            self.role(f"extract:{mid}", op.op_id)
        self.units[event_id] = unit
        self.sources[event_id] = set(mids)

    def flush(self) -> None:
        if not self.buffer.items:
            return
        self.clock.tick(5)
        entries = [e for _m, _s, e in self.buffer.items]
        mids = [m for m, _s, _e in self.buffer.items]
        buffer_rv = comment_variable(self.buffer, to_runtime=True, id_strategy=lambda _h: "message-buffer",
                                     category="message_buffer", encoding_fn=self._buffer_value)
        self._finalize(buffer_rv, {"original_data": entries, "timestamp": entries[-1]["timestamp"]}, mids,
                       "Final conversation segment", mids)
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata={"flush": True}):
            self._mutate_buffer([], lambda: setattr(self.buffer, "items", []))

    # ----------------------------------------------------------------- retrieval
    def _projection(self, key: str, score: float) -> dict[str, Any]:
        unit = self.units[key]
        return {"event_id": key, "timestamp": unit["timestamp"], "subject": unit["subject"],
                "summary": unit["summary"], "episode": unit["episode"],
                "event_log": {"atomic_fact": unit["event_log"]["atomic_fact"]}, "foresights": None, "score": score}

    def _list(self, kind: str, keys: list[str], inputs: list[Any], category: str = "operation") -> Any:
        docs = [self._projection(k, round(1.0 / (60 + i + 1), 6)) for i, k in enumerate(keys)]
        name = f"{', '.join(keys)} | ts={self.rng.getrandbits(40)} | rand={self.rng.getrandbits(32):08x}"
        rv = comment_variable(docs, to_runtime=True, class_name=kind, category=kind, encoding_fn=_json,
                              id_strategy=lambda _v, n=name: n)
        comment_op(inputs=inputs, outputs=[rv], reuse_op=True, category=category)
        return rv

    def _link_units(self, inputs: list[Any], keys: list[str]) -> None:
        for key in keys:
            comment_op(inputs=inputs, outputs=[(self.units[key], self._unit_opts())], reuse_op=True)

    def retrieve(self, query: Any, q: Question) -> list[Entry]:
        self.clock.tick(13)
        texts = {k: f"{u['subject']} {u['episode']} {' '.join(u['event_log']['atomic_fact'])}"
                 for k, u in self.units.items()}
        k = int(self.plan.get("top_k", 3))
        ranked = _order_units(self.sources, texts, q, len(self.units))
        sparse = sorted(ranked, key=lambda u: -_score(q.question, texts[u]))
        if not self.agentic:
            with comment_op_scope(op_name="memory_system.hybrid_retrieval", category="retrieval",
                                  metadata={"mode": "hybrid_retrieval", "top_k": k, "rrf_k": 60}) as op:
                sparse_rv = self._list("sparse_retrieval_results", sparse, [query])
                dense_rv = self._list("dense_retrieval_results", ranked, [query])
                final = ranked[:k]
                self._link_units([sparse_rv, dense_rv], final)
            self.role("retrieve", op.op_id)
            return self._entries(final)
        final_hide = set(q.plan.get("final_hide", []))
        sufficient = not final_hide and not q.plan.get("insufficient")
        with comment_op_scope(op_name="memory_system.agentic_round1_bundle", category="retrieval",
                              metadata={"round": 1, "retrieval_mode": "agentic", "top_k": k,
                                        "sufficiency_check_docs": k, "use_reranker": True}) as op1:
            sparse_rv = self._list("sparse_retrieval_results", sparse, [query])
            dense_rv = self._list("dense_retrieval_results", ranked, [query])
            hybrid_rv = self._list("hybrid_retrieval_results", ranked, [sparse_rv, dense_rv])
            round1 = ranked[:k]
            check_rv = self._list("reranked_for_check", round1, [hybrid_rv], category="retrieval")
            docs = "\n\n".join(f"Document {i + 1}:\n  Title: {self.units[u]['subject']}\n  Content: "
                               f"{self.units[u]['episode'][:500]}" for i, u in enumerate(round1))
            docs_rv = comment_variable(docs, to_runtime=True, class_name="sufficiency_check_docs_text",
                                       category="formatted_documents")
            comment_op(inputs=[check_rv], outputs=[docs_rv], reuse_op=True, category="retrieval")
            template = ("Judge whether the documents answer the query completely.",
                        {"id_strategy": lambda _v: "sufficiency-check-prompt-template",
                         "class_name": "sufficiency_check_prompt_template", "category": "prompt"})
            prompt_rv = comment_variable(f"Query: {q.question}\n\n{docs}", to_runtime=True,
                                         class_name="sufficiency_check_prompt", category="prompt")
            comment_op(inputs=[query, docs_rv, template], outputs=[prompt_rv], reuse_op=True)
            verdict = {"is_sufficient": sufficient, "reasoning": "the documents cover the question" if sufficient
                       else "a detail is missing", "key_information_found": [], "missing_information":
                       [] if sufficient else ["the exact detail asked for"]}
            raw_rv = comment_variable(json.dumps(verdict), to_runtime=True, class_name="raw_sufficiency_check_response",
                                      category="llm_response")
            comment_op(inputs=[prompt_rv], outputs=[raw_rv], reuse_op=True, category="retrieval")
            result_rv = comment_variable(verdict, to_runtime=True, class_name="sufficiency_check_result",
                                         category="sufficiency_check_result", encoding_fn=_json)
            comment_op(inputs=[raw_rv], outputs=[result_rv], reuse_op=True, category="retrieval")
            if sufficient:
                self._link_units([result_rv, hybrid_rv], round1)
        self.role("round1", op1.op_id)
        self.role("retrieve", op1.op_id)
        if sufficient:
            return self._entries(round1)
        with comment_op_scope(op_name="memory_system.agentic_round2_bundle", category="retrieval",
                              metadata={"round": 2, "retrieval_mode": "agentic", "top_k": k, "multi_query": True}) as op2:
            refined = [q.question, f"{q.question.rstrip('?')} in detail"]
            refined_rv = comment_variable(refined, to_runtime=True, class_name="refined_queries",
                                          category="refined_queries", encoding_fn=_json,
                                          id_strategy=lambda v: " | ".join(v))
            comment_op(inputs=[query, result_rv, docs_rv], outputs=[refined_rv], reuse_op=True, category="retrieval")
            round2 = ranked[k:2 * k] + ranked[:k]
            round2_rv = self._list("round2_retrieval_results", round2, [refined_rv], category="retrieval")
        self.role("round2", op2.op_id)
        with comment_op_scope(op_name="memory_system.agentic_final_rerank", category="retrieval",
                              metadata={"top_k": k, "use_reranker": True}) as op3:
            combined = list(dict.fromkeys(round1 + round2))[:2 * k]
            combined_rv = self._list("combined_retrieval_results", combined, [hybrid_rv, round2_rv])
            final = [u for u in combined if not (self.sources[u] & final_hide)][:k]
            final_rv = self._list("final_reranked_results", final, [combined_rv], category="retrieval")
            self._link_units([final_rv], final)
        self.role("final", op3.op_id)
        return self._entries(final)

    def _entries(self, keys: list[str]) -> list[Entry]:
        return [Entry(f"memory-unit-{k}", f"{self.units[k]['subject']}: {self.units[k]['episode']}") for k in keys]


EMULATORS: dict[str, type[Emulator]] = {"long_context": LongContext, "rag": NaiveRAG, "mem0": Mem0,
                                        "evermemos": EverMemOS}

_QA_PROMPT = "Question: $question\nPlease answer the question based on the following memories:\n$context"
_JUDGE_PROMPT = ("Label the answer CORRECT or WRONG against the gold answer; reply as JSON {\"label\": ...}.\n"
                 "Question: $question\nGold answer: $golden_answers\nGenerated answer: $prediction")


def run_system(system: str, turns: list[Turn], speakers: tuple[str, str], questions: list[Question],
               plan: dict[str, Any], *, sample: int, seed: int, filename: str) -> tuple[Any, dict[str, str], dict]:
    """Run one emulated system over a conversation, search and evaluate its questions.

    Returns:
        The graph, the roles (step → op id) and, per question id, the node ids the annotation
        needs (query, golden answers, prediction).
    """
    rng = random.Random(seed)
    clock = Clock(datetime(2026, 3, 2, 9, 0, 0) + timedelta(seconds=seed % 3600))
    emulator = EMULATORS[system](plan, rng, clock)
    nodes: dict[str, dict[str, str]] = {}
    with virtual_time(clock), comment_graph(
        user_id=f"locomo-{sample + 1}", project_id=emulator.project, strict=emulator.strict,
        metadata={"layer_type": emulator.project, "dataset_cls": "LoCoMo", "save_dir": f"memory/locomo-{sample + 1}",
                  "memtracebench_graph_filename": filename, "memtracebench_dataset_source": "LoCoMo"},
    ) as graph:
        emulator.graph = graph
        sessions: dict[str, list[Turn]] = {}
        for turn in turns:
            sessions.setdefault(turn.session_id, []).append(turn)
        for i, (session_id, session_turns) in enumerate(sessions.items(), start=1):
            with comment_session(session_id=session_id, comment=f"It is the {i}th conversational session.",
                                 category="memory_construction"):
                for turn in session_turns:
                    emulator.add(turn)
        clock.tick(20)
        with comment_session(category="memory_construction", comment="Finalization: pending buffers are flushed."):
            emulator.flush()
        clock.tick(500)
        results: list[tuple[Question, list[Entry], Any]] = []
        with comment_session(category="memory_search", comment="Questions are searched against the memory.",
                             metadata={"top_k": 10, "strict": emulator.strict}):
            for q in questions:
                clock.tick(30)
                query = comment_variable(q.question, to_runtime=True, variable_name="query",
                                         id_strategy=lambda _v, qid=q.qid: qid, category="message & query",
                                         class_name="query", metadata={
                                             "question_type": q.question_type, "evidence": q.evidence,
                                             "speaker_names": list(speakers)})
                results.append((q, emulator.retrieve(query, q), query))
                if not q.correct:
                    emulator.roles["retrieve:" + q.qid] = emulator.roles.pop("retrieve")
                    for key in ("round1", "round2", "final"):
                        if key in emulator.roles:
                            emulator.roles[f"{key}:{q.qid}"] = emulator.roles.pop(key)
                else:
                    for key in ("retrieve", "round1", "round2", "final"):
                        emulator.roles.pop(key, None)
        clock.tick(800)
        with comment_session(category="memory_evaluation", comment="Questions are answered and judged.",
                             metadata={"qa_model": "gpt-4.1-mini", "judge_model": "gpt-4.1-mini"}):
            for q, entries, query in results:
                clock.tick(120)
                context = "\n\n".join(f"### Memory {i}:\n{e.text}" for i, e in enumerate(entries, start=1))
                with comment_op_scope(op_name="question-answering", category="evaluation") as qa:
                    context_rv = comment_variable(context, to_runtime=True, class_name="context",
                                                  category="memory_context")
                    comment_op(inputs=[({"id": e.trace_id}, {"id_strategy": lambda v: v["id"], "identity_only": True})
                                       for e in entries], outputs=[context_rv], reuse_op=True,
                               metadata={"source_code": "def build_context(memories): ..."})
                    prompt = (_QA_PROMPT, {"id_strategy": lambda _v: "question-answering-prompt", "category": "prompt",
                                           "metadata": {"op_type": "question-answering"}})
                    prediction = comment_variable(q.prediction, to_runtime=True, class_name="prediction",
                                                  category="llm_response")
                    comment_op(inputs=[query, context_rv, prompt], outputs=[prediction], reuse_op=True)
                clock.tick(90)
                with comment_op_scope(op_name="llm-judge", category="evaluation"):
                    golden = comment_variable(q.golden, to_runtime=True, class_name="golden_answers",
                                              category="golden_answers", encoding_fn=lambda v: ", ".join(v))
                    judge_prompt = comment_variable(_JUDGE_PROMPT, to_runtime=True, class_name="judge_prompt",
                                                    id_strategy=lambda _v: "locomo-judge", category="prompt",
                                                    metadata={"op_type": "llm-judge"})
                    label = "CORRECT" if q.correct else "WRONG"
                    response = comment_variable(json.dumps({"label": label}), to_runtime=True,
                                                class_name="judge_response", category="llm_response")
                    comment_op(inputs=[query, golden, judge_prompt, prediction], outputs=[response], reuse_op=True)
                    comment_link(source=response, target=(1.0 if q.correct else 0.0, {"class_name": "judge_score"}),
                                 category="evaluation", edge_metadata={"source_code": "1.0 if 'correct' in r else 0.0"})
                if not q.correct:
                    emulator.roles["qa:" + q.qid] = qa.op_id
                nodes[q.qid] = {"query_id": query.full_node_id, "golden_answers_id": golden.full_node_id,
                                "prediction_id": prediction.full_node_id}
    return graph, emulator.roles, nodes
