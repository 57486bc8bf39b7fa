"""Four simulated memory layers, recorded in each layer's tracing conventions.

The same code runs with and without a fault: a :class:`Fault` only changes the *value* an
operation produces (a dropped message, a rewritten fact, a unit left out of a ranking), and the
layer notes the id of the operation through which the fault ran (``fault.label_op``). No op
name, comment or metadata depends on the fault.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable, current_context

from .tracing import as_json, named, overlap_score, unit_identity, word_count

USER = "user"


@dataclass
class Fault:
    kind: str = "none"
    msg_index: int = -1  # the evidence message whose fact is damaged
    fact_key: str = ""
    msg_key: str = ""
    swap: tuple[str, str, str] | None = None
    vague: str = ""
    at_index: int = -1  # a later message hosting an update / delete / compaction
    qid: int = -1  # the question a retrieval or answer fault targets
    label_op: str | None = None

    def mark(self, op_id: str) -> None:
        """Note the op the fault ran through; when it runs through several (a message kept in two
        overlapping chunks or memcells), the earliest one is the label."""
        if self.label_op is None:
            self.label_op = op_id

    def is_(self, *kinds: str) -> bool:
        return self.kind in kinds

    def rewrite_fact(self, text: str) -> str:
        """The damaged form of a fact: swapped, or a partial summary (``vague``) or nothing."""
        if self.swap and self.kind.endswith("swap"):
            return text.replace(self.swap[0], self.swap[1])
        return self.vague


def _cut_before(text: str, key: str) -> str:
    pos = text.find(key)
    return text if pos < 0 else text[:pos].rstrip() + " ..."


def _rank(query: str, items: list[tuple[str, str]], k: int, must: set[str], banned: set[str]):
    """Top-k item ids by lexical score; ``must`` ids are kept in (the ideal ranker), ``banned`` out."""
    scored = [(overlap_score(query, text), i, key) for i, (key, text) in enumerate(items) if key not in banned]
    scored.sort(key=lambda t: (-t[0], t[1]))
    top = [t for t in scored[:k]]
    missing = [t for t in scored if t[2] in must and t not in top]
    for t in missing:
        for j in range(len(top) - 1, -1, -1):
            if top[j][2] not in must:
                top[j] = t
                break
    top.sort(key=lambda t: (-t[0], t[1]))
    return [(key, score) for score, _, key in top]


def cover(query: str, items: list[tuple[str, str]], keys: list[str], banned: set[str] = frozenset()) -> set[str]:
    """For each key phrase the best-scoring item holding it (what an ideal ranker keeps)."""
    out = set()
    for key in keys:
        holders = [(overlap_score(query, text), i, uid) for i, (uid, text) in enumerate(items) if key in text and uid not in banned]
        if holders:
            out.add(max(holders, key=lambda t: (t[0], -t[1]))[2])
    return out


# ---------------------------------------------------------------------------------------------
class LongContextLayer:
    split = "long_context"
    project = "Long-Context"

    def __init__(self, fault: Fault, context_window: int = 4000):
        self.fault = fault
        self.window = context_window
        self.entries: list[tuple[int, int, str]] = []  # (message index, session, text)
        self.versions: list[int] = []

    def text(self) -> str:
        return "\n".join(t for _, _, t in self.entries)

    def store_texts(self) -> list[str]:
        return [self.text()]

    def add_message(self, gidx: int, session: int, node, line: str, msg, facts_by_index) -> None:
        f = self.fault
        meta = {"context_window": self.window, "message_separator": "\n", "llm_model_for_tokenizer": "gpt-4.1-mini"}
        with comment_op_scope(op_name="memory_system.memory_update", category="update", metadata=meta) as op:
            with comment_mutation(target=self, inputs=[node], encoding_fn=lambda o: o.text(),
                                  id_strategy=named("memory-unit"), category="memory_entry",
                                  mutation_category="update", reuse_op=True, mutation_metadata=meta) as mut:
                if f.is_("lc_append_cut") and gidx == f.msg_index:
                    line = _cut_before(line, f.msg_key)
                    f.mark(op.op_id)
                if f.is_("lc_compaction_swap", "lc_compaction_partial") and gidx == f.at_index:
                    old_session = next(s for i, s, _ in self.entries if i == f.msg_index)
                    summary = []
                    for i, s, _ in self.entries:
                        if s <= old_session:
                            for fact in facts_by_index[i]:
                                if i == f.msg_index and f.fact_key in fact:
                                    fact = f.rewrite_fact(fact)
                                if fact:
                                    summary.append(fact + ".")
                    kept = [e for e in self.entries if e[1] > old_session]
                    self.entries = [(-1, old_session, "Summary of the earlier conversation: " + " ".join(summary))] + kept
                    f.mark(op.op_id)
                if f.is_("lc_overtrim") and gidx == f.at_index:
                    self.entries = [e for e in self.entries if e[0] > f.msg_index]
                    f.mark(op.op_id)
                self.entries.append((gidx, session, line))
                had = any(i == f.msg_index for i, _, _ in self.entries[:-1])
                while sum(word_count(t) for _, _, t in self.entries) > self.window and len(self.entries) > 1:
                    self.entries.pop(0)
                if f.is_("lc_window_overflow") and had and f.label_op is None and \
                        not any(i == f.msg_index for i, _, _ in self.entries):
                    f.mark(op.op_id)
            self.versions.append(mut.result.version)

    def snapshot(self) -> None:
        """Remember the version at a session end (a stale read returns one of these)."""
        self.session_end_versions = getattr(self, "session_end_versions", []) + [self.versions[-1] if self.versions else 1]

    def flush(self) -> None:
        pass

    def retrieve(self, query_text: str, qid: int, graph) -> list[tuple[str, str]]:
        query = current_context().get_variable("query")
        f = self.fault
        text = self.text()
        if f.is_("lc_retrieve_stale") and qid == f.qid:
            node = graph.get_variable(f"memory-unit@{f.at_index}")
            text = node.value
            out = node
        else:
            out = (text, {"encoding_fn": lambda v: v, "id_strategy": named("memory-unit"), "category": "memory_entry"})
        op = comment_op(inputs=[query], outputs=[out], op_name="memory_system.retrieve", category="retrieval",
                        metadata={"top_k": 10})
        if f.is_("lc_retrieve_stale") and qid == f.qid:
            f.mark(op.op_id)
        return [("memory-unit", f"<long_context_memory>\n{text}\n</long_context_memory>")]


# ---------------------------------------------------------------------------------------------
class NaiveRAGLayer:
    split = "rag"
    project = "NaiveRAG"
    max_tokens = 110
    overlap = 1
    top_k = 4

    def __init__(self, fault: Fault, rng: random.Random):
        self.fault = fault
        self.rng = rng
        self.buffer: list[tuple[int, str]] = []
        self.buffer_node = None
        self.units: dict[str, dict] = {}
        self.unit_messages: dict[str, list[int]] = {}
        self.meta = {"deferred": True, "max_tokens": self.max_tokens, "num_overlap_msgs": self.overlap,
                     "message_separator": "\n", "llm_model_for_tokenizer": "gpt-4.1-mini"}

    def _buffer_json(self, _obj) -> str:
        texts = [t for _, t in self.buffer]
        return as_json({"buffer_total_tokens": sum(word_count(t) for t in texts), "message_buffer": texts})

    def store_texts(self) -> list[str]:
        return [u["content"] for u in self.units.values()]

    def _mutate(self, inputs, change) -> None:
        with comment_mutation(target=self, inputs=inputs, encoding_fn=self._buffer_json,
                              id_strategy=named("message-buffer"), category="message_buffer",
                              mutation_category="update", reuse_op=True, mutation_metadata=self.meta) as mut:
            change()
        self.buffer_node = mut.result

    def _emit(self, sources, op_id, final: bool):
        f = self.fault
        entries = list(self.buffer)
        cut = False
        if f.is_("rag_chunk_cut") and any(i == f.msg_index for i, _ in entries) and not final:
            entries = [(i, _cut_before(t, f.msg_key) if i == f.msg_index else t) for i, t in entries]
            cut = True
        if f.is_("rag_flush_drop") and final and any(i == f.msg_index for i, _ in entries):
            entries = [(i, t) for i, t in entries if i != f.msg_index]
            f.mark(op_id)
        doc = "\n".join(t for _, t in entries)
        doc_node = comment_variable(doc, to_runtime=True, class_name="temporary_variable", category="temporary_variable")
        comment_op(inputs=list(sources), outputs=[doc_node], category="extraction", reuse_op=True)
        return doc_node, doc, [i for i, _ in entries], cut

    def add_message(self, gidx: int, session: int, node, line: str, msg, facts_by_index) -> None:
        f = self.fault
        emitted = None
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update", metadata=self.meta) as op:
            total = sum(word_count(t) for _, t in self.buffer)
            if self.buffer and total + word_count(line) > self.max_tokens:
                emitted = self._emit([node, self.buffer_node], op.op_id, final=False)
                keep = self.buffer[-self.overlap:] if self.overlap else []
                if emitted[3]:
                    keep = [e for e in keep if e[0] != f.msg_index]
                    f.mark(op.op_id)
            else:
                keep = None

            def change():
                if keep is not None:
                    self.buffer[:] = keep
                if f.is_("rag_buffer_drop") and gidx == f.msg_index:
                    f.mark(op.op_id)
                    return
                self.buffer.append((gidx, line))

            self._mutate([node], change)
        if emitted:
            self._store(*emitted[:3])

    def _store(self, doc_node, doc: str, indices: list[int]) -> None:
        f = self.fault
        uid = "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}".format(*tuple(self.rng.getrandbits(b) for b in (32, 16, 16, 16, 48)))
        content = doc
        rewrite = f.is_("rag_store_swap") and f.msg_index in indices
        if rewrite:
            content = doc.replace(f.swap[0], f.swap[1])
        unit = {"content": content, "id": uid}
        op = comment_op(inputs=[doc_node], outputs=[(unit, {"id_strategy": unit_identity("id"), "encoding_fn": as_json,
                                                             "category": "memory_entry"})],
                        op_name="memory_system.add", category="update")
        if rewrite:
            f.mark(op.op_id)
        self.units[uid] = unit
        self.unit_messages[uid] = indices

    def flush(self) -> None:
        if not self.buffer:
            return
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update", metadata=self.meta) as op:
            emitted = self._emit([self.buffer_node], op.op_id, final=True)
            self._mutate(None, self.buffer.clear)
        self._store(*emitted[:3])

    def retrieve(self, query_text: str, qid: int, graph, evidence_keys: list[str]) -> list[tuple[str, str]]:
        query = current_context().get_variable("query")
        f = self.fault
        items = [(uid, u["content"]) for uid, u in self.units.items()]
        banned: set[str] = set()
        faulted = f.is_("rag_retrieval_miss", "rag_retrieval_near_dup") and qid == f.qid
        if faulted:
            banned = {uid for uid, text in items if f.msg_key in text}
            if f.is_("rag_retrieval_near_dup"):
                # the best remaining document and its overlapping neighbours, which repeat it
                order = list(self.units)
                best = _rank(query_text, items, 1, set(), banned)[0][0]
                pos = order.index(best)
                near = [u for u in order[max(0, pos - 1):pos + 2] if u not in banned]
                ranked = [(u, overlap_score(query_text, self.units[u]["content"])) for u in near]
                rest = _rank(query_text, items, self.top_k, set(), banned | set(near))
                ranked = (ranked + rest)[: self.top_k]
        must = cover(query_text, items, evidence_keys, banned)
        if not (faulted and f.is_("rag_retrieval_near_dup")):
            ranked = _rank(query_text, items, self.top_k, must, banned)
        out = []
        with comment_op_scope(op_name="memory_system.retrieve", category="retrieval",
                              metadata={"top_k": self.top_k, "embedding_model": "Qwen3-Embedding-4B"}) as op:
            for uid, _ in ranked:
                unit = self.units[uid]
                comment_op(inputs=[query], outputs=[(unit, {"id_strategy": unit_identity("id"), "encoding_fn": as_json,
                                                            "category": "memory_entry"})], reuse_op=True)
                out.append((f"memory-unit-{uid}", unit["content"]))
        if faulted:
            f.mark(op.op_id)
        return out


# ---------------------------------------------------------------------------------------------
EXTRACTION_PROMPT = (
    "You read one chat message and write down the personal facts it states, one short sentence each, "
    "naming people instead of using pronouns. Reply with JSON {\"facts\": [...]}; small talk gives []."
)
DECISION_PROMPT = (
    "You keep a person's memory store tidy. For each new fact decide against the similar stored memories: "
    "ADD a new memory, UPDATE a stored one whose information it refines, DELETE one it contradicts, or NONE "
    "when it is already known. Reply with JSON {\"memory\": [{\"id\", \"text\", \"event\", \"old_memory\"}]}."
)


@dataclass
class _Unit:
    uid: str
    value: dict
    alive: bool = True
    history: list[str] = field(default_factory=list)


class Mem0Layer:
    split = "mem0"
    project = "Mem0"
    top_k = 5

    def __init__(self, fault: Fault, rng: random.Random):
        self.fault = fault
        self.rng = rng
        self.units: dict[str, _Unit] = {}
        self.fact_unit: dict[tuple[int, str], str] = {}
        self.ext_prompt = None
        self.dec_prompt = None

    def store_texts(self) -> list[str]:
        return [u.value["memory"] for u in self.units.values() if u.alive]

    def _new_id(self) -> str:
        return "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}".format(*tuple(self.rng.getrandbits(b) for b in (32, 16, 16, 16, 48)))

    def add_message(self, gidx: int, session: int, node, line: str, msg, facts_by_index) -> None:
        f = self.fault
        if self.ext_prompt is None:
            self.ext_prompt = comment_variable(EXTRACTION_PROMPT, to_runtime=True, id_strategy=named("fact-extraction-system-prompt"),
                                               category="prompt")
            self.dec_prompt = comment_variable(DECISION_PROMPT, to_runtime=True, id_strategy=named("memory-update-decision-prompt"),
                                               category="prompt")
        facts = list(facts_by_index[gidx])
        timestamp = json.loads(node.value)["timestamp"]
        with comment_op_scope(op_name="memory_system.extract_facts", category="extraction") as op:
            if gidx == f.msg_index and f.is_("mem0_extract_drop", "mem0_extract_swap", "mem0_extract_partial"):
                new = []
                for fact in facts:
                    if f.fact_key in fact:
                        fact = "" if f.is_("mem0_extract_drop") else f.rewrite_fact(fact)
                    if fact:
                        new.append(fact)
                facts = new
                f.mark(op.op_id)
            raw = "```json\n" + json.dumps({"facts": facts}, ensure_ascii=False) + "\n```"
            raw_node = comment_variable(raw, to_runtime=True, class_name="raw_fact_extraction_response", category="llm_response")
            comment_op(inputs=[node, self.ext_prompt], outputs=[raw_node], category="extraction", reuse_op=True)
            cleaned = comment_variable(json.dumps({"facts": facts}, ensure_ascii=False), to_runtime=True,
                                       class_name="cleaned_fact_extraction_response", category="llm_response")
            comment_op(inputs=[raw_node], outputs=[cleaned], category="extraction", reuse_op=True)
            facts_node = comment_variable(facts, to_runtime=True, class_name="extracted_facts", encoding_fn=as_json,
                                          category="extracted_facts")
            comment_op(inputs=[cleaned], outputs=[facts_node], category="extraction", reuse_op=True)
        if not facts:
            return
        with comment_op_scope(op_name="memory_system.update_memory_decision", category="update") as op:
            live = [(u.uid, u.value["memory"]) for u in self.units.values() if u.alive]
            similar = _rank(" ".join(facts), live, 5, set(), set())
            target = None
            if gidx == f.at_index and f.is_("mem0_update_overwrite", "mem0_update_degrade", "mem0_delete"):
                target = self.fact_unit[(f.msg_index, f.fact_key)]
                if target not in [s for s, _ in similar]:
                    similar = [(target, 1.0)] + similar[:4]
            existing = [{"id": uid, "text": self.units[uid].value["memory"]} for uid, _ in similar]
            existing_node = comment_variable(existing, to_runtime=True, class_name="existing_memories", encoding_fn=as_json,
                                             category="existing_memories")
            instruction = (DECISION_PROMPT + "\n\nStored memories:\n" + json.dumps(existing, ensure_ascii=False)
                           + "\n\nNew facts:\n" + json.dumps(facts, ensure_ascii=False))
            instr_node = comment_variable(instruction, to_runtime=True, class_name="memory_update_task_instruction", category="prompt")
            comment_op(inputs=[facts_node, existing_node, self.dec_prompt], outputs=[instr_node], category="update", reuse_op=True)
            actions = []
            for fact in facts:
                key_fact = gidx == f.msg_index and f.fact_key in fact
                if key_fact and f.is_("mem0_decision_none"):
                    match = similar[0][0] if similar else ""
                    actions.append({"event": "NONE", "id": match, "text": fact})
                    f.mark(op.op_id)
                    continue
                text = fact
                if key_fact and f.is_("mem0_add_swap"):
                    text = f.rewrite_fact(fact)
                    f.mark(op.op_id)
                actions.append({"event": "ADD", "id": self._new_id(), "text": text, "_fact": fact})
            if target is not None:
                old = self.units[target].value["memory"]
                if f.is_("mem0_delete"):
                    actions.append({"event": "DELETE", "id": target, "text": old})
                else:
                    first = actions.pop(0)
                    new_text = first["text"] if f.is_("mem0_update_overwrite") else \
                        old.replace(f.swap[0], f.swap[1]) if f.swap and f.swap[0] in old else (f.vague or first["text"])
                    if f.is_("mem0_update_degrade") and new_text != first["text"]:
                        new_text = new_text + "; " + first["text"][0].lower() + first["text"][1:]
                    actions.insert(0, {"event": "UPDATE", "id": target, "text": new_text, "old_memory": old,
                                       "_fact": first["_fact"]})
                f.mark(op.op_id)
            public = [{k: v for k, v in a.items() if not k.startswith("_")} for a in actions]
            raw = "```json\n" + json.dumps({"memory": public}, ensure_ascii=False) + "\n```"
            raw_node = comment_variable(raw, to_runtime=True, class_name="raw_memory_update_decision", category="llm_response")
            comment_op(inputs=[instr_node], outputs=[raw_node], category="update", reuse_op=True)
            clean_node = comment_variable(json.dumps({"memory": public}, ensure_ascii=False), to_runtime=True,
                                          class_name="memory_update_decision_with_code_block_removing", category="llm_response")
            comment_op(inputs=[raw_node], outputs=[clean_node], category="update", reuse_op=True)
            for action, pub in zip(actions, public, strict=False):
                act_node = comment_variable(pub, to_runtime=True, class_name="update_action", encoding_fn=as_json,
                                            category="update_action")
                comment_op(inputs=[clean_node], outputs=[act_node], category="update", reuse_op=True)
                if action["event"] == "ADD":
                    value = {"id": action["id"], "memory": action["text"], "timestamp": timestamp}
                    comment_op(inputs=[act_node], outputs=[(value, {"id_strategy": unit_identity("id"), "encoding_fn": as_json,
                                                                     "category": "memory_entry"})],
                               category="update", reuse_op=True)
                    self.units[action["id"]] = _Unit(action["id"], value, history=[action["text"]])
                    self.fact_unit[(gidx, _key_of(action["_fact"], f))] = action["id"]
                elif action["event"] == "UPDATE":
                    unit = self.units[action["id"]]
                    with comment_mutation(target=unit.value, inputs=[act_node], id_strategy=unit_identity("id"),
                                          encoding_fn=as_json, category="memory_entry", mutation_category="llm_response",
                                          reuse_op=True):
                        unit.value["memory"] = action["text"]
                    unit.history.append(action["text"])
                elif action["event"] == "DELETE":
                    unit = self.units[action["id"]]
                    comment_op(inputs=[(unit.value, {"id_strategy": unit_identity("id"), "encoding_fn": as_json,
                                                     "category": "memory_entry"})],
                               outputs=[({"deleted_id": unit.uid}, {"class_name": "delete_marker", "encoding_fn": as_json,
                                                                    "category": "delete_marker"})],
                               category="update", reuse_op=True)
                    unit.alive = False

    def flush(self) -> None:
        pass

    def retrieve(self, query_text: str, qid: int, graph, evidence_keys: list[str]) -> list[tuple[str, str]]:
        query = current_context().get_variable("query")
        f = self.fault
        items = [(u.uid, u.value["memory"]) for u in self.units.values() if u.alive]
        faulted = f.is_("mem0_retrieval_miss") and qid == f.qid
        banned = {uid for uid, text in items if f.fact_key in text} if faulted else set()
        ranked = _rank(query_text, items, self.top_k, cover(query_text, items, evidence_keys, banned), banned)
        out = []
        with comment_op_scope(op_name="memory_system.search_vector_store", category="retrieval",
                              metadata={"embedding_model": "all-MiniLM-L6-v2", "top_k": self.top_k}) as op:
            for uid, _ in ranked:
                unit = self.units[uid]
                comment_op(inputs=[query], outputs=[(unit.value, {"id_strategy": unit_identity("id"), "encoding_fn": as_json,
                                                                  "category": "memory_entry"})], reuse_op=True)
                out.append((f"memory-unit-{uid}", f"Memory: {unit.value['memory']}\nTime: {unit.value['timestamp']}"))
        if faulted:
            f.mark(op.op_id)
        return out


def _key_of(fact: str, f: Fault) -> str:
    return f.fact_key if f.fact_key and f.fact_key in fact else fact
