"""Record one conversation through one of four memory layers, with at most one injected fault.

Every layer follows the tracing conventions of spec-tracer-and-membase.md §4.4/§4.6 (and
spec-evermemos.md §7 for EverMemOS), written from scratch with the public smartcomment API.
The fault is applied by the layer itself while recording, so the gold label (error type and
the id of the op that broke the evidence) is known by construction: ``Recorder.label``.
Nothing in the graph names the fault.
"""

from __future__ import annotations

import json
import re
import uuid

from conversations import Conversation, Message, Question

from smartcomment import (
    comment_graph,
    comment_link,
    comment_mutation,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    current_op,
)

TOP_K = 3


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9$,:]+", text.lower()) if len(w) > 2}


def holds(text: str, q: Question) -> bool:
    low = text.lower()
    return all(a.lower() in low for a in q.answers)


class Unit:
    """A memory unit whose JSON encoding is its node value (identity ``memory-unit-<id>``)."""

    def __init__(self, data: dict, key: str = "id"):
        self.data, self.key = data, key

    @property
    def name(self) -> str:
        return f"memory-unit-{self.data[self.key]}"

    def opts(self) -> dict:
        return {"id_strategy": lambda u: u.name, "encoding_fn": lambda u: dumps(u.data),
                "category": "memory_entry"}


class Buffer:
    """A versioned buffer node (one name, new version per mutation)."""

    def __init__(self, name: str, encode):
        self.name, self.items, self._encode = name, [], encode

    def opts(self, category: str) -> dict:
        return {"id_strategy": lambda b: b.name, "encoding_fn": lambda b: b._encode(b.items),
                "category": category}


class Recorder:
    layer = ""
    split = ""

    def __init__(self, conv: Conversation, fault: dict):
        self.conv, self.fault = conv, fault
        self.label: dict | None = None
        self._ids = 0
        self.prompts: dict[str, object] = {}

    # ---- shared helpers -------------------------------------------------------------
    def new_id(self) -> str:
        self._ids += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.conv.id}/{self.split}/{self._ids}"))

    def set_label(self, error_type: str, op_id: str) -> None:
        if self.label is None:
            self.label = {"final_error_type": error_type, "final_op_id": op_id}

    def is_fault(self, kind: str, n: int | None = None) -> bool:
        return self.fault.get("kind") == kind and (n is None or self.fault.get("msg") == n)

    def rewrite(self, text: str) -> str:
        old, new = self.fault["rewrite"]
        return text.replace(old, new)

    def prompt(self, name: str, text: str, op_type: str):
        if name not in self.prompts:
            self.prompts[name] = comment_variable(text, to_runtime=True, id_strategy=lambda _v, n=name: n,
                                                  category="prompt", metadata={"op_type": op_type})
        return self.prompts[name]

    def message_content(self, m: Message) -> str:
        return (f"Speaker {m.speaker} (role: user) says: {m.text}\nTimestamp: {m.timestamp}")

    def record_message(self, m: Message):
        value = {"content": self.message_content(m), "name": m.speaker, "role": "user",
                 "timestamp": m.timestamp}
        meta = {"timestamp": m.timestamp, "speakers": list(self.conv.speakers)}
        return comment_variable(value, to_runtime=True, id_strategy=lambda _v: m.id, encoding_fn=dumps,
                                category="message", comment="A conversation message.", metadata=meta)

    # ---- the run --------------------------------------------------------------------
    def run(self, qid: str, prediction: str) -> dict:
        conv = self.conv
        with comment_graph(user_id=conv.id, project_id=self.layer, strict=True,
                           metadata={"layer_type": self.layer, "dataset_cls": "HandWritten"}) as graph:
            messages = conv.messages()
            for s, (stamp, _turns) in enumerate(conv.sessions, start=1):
                with comment_session(session_id=f"{conv.id}-session-{s}", category="memory_construction",
                                     comment=f"It is the {s}th conversational session.",
                                     metadata={"date_time": stamp}):
                    for m in messages:
                        if m.session == s:
                            self.add(m)
            with comment_session(category="memory_construction", comment="The finalization stage."):
                self.flush()
            retrieved = {}
            with comment_session(category="memory_search", comment="Answering the questions.",
                                 metadata={"top_k": TOP_K}):
                for q in conv.questions.values():
                    qvar = comment_variable(q.text, to_runtime=True, id_strategy=lambda _v, i=q.id: i,
                                            class_name="query", category="message & query",
                                            metadata={"question_type": q.qtype, "speaker_names": list(conv.speakers),
                                                      "evidence": [messages[e - 1].id for e in q.evidence]})
                    retrieved[q.id] = (qvar, self.retrieve(q, qvar, q.id == qid))
            annotations = []
            with comment_session(category="memory_evaluation", comment="Question answering and judging."):
                for q in conv.questions.values():
                    annotations += self.evaluate(q, *retrieved[q.id], q.id == qid, prediction)
            data = graph.export_graph()
        data["data"]["annotations"] = annotations
        return data

    def evaluate(self, q: Question, qvar, units: list, target: bool, prediction: str) -> list[dict]:
        context = "\n\n".join(f"### Memory {i}:\n{text}" for i, (_var, text) in enumerate(units, start=1))
        if not target:
            prediction = ", ".join(q.answers) if holds(context, q) else "I don't know."
        else:
            self.context_holds = all(self.conv.message(e).text.lower()[:-1] in context.lower() for e in q.evidence) \
                or holds(context, q)
        qa_prompt = self.prompt("question-answering-prompt", "Question: $question\nPlease answer the question "
                                "based on the following memories:\n$context", "question-answering")
        with comment_op_scope(op_name="question-answering", category="evaluation") as qa_op:
            ctx = comment_op(inputs=[var for var, _t in units] or [("[NO RETRIEVED MEMORIES]", {})],
                             outputs=[(context, {"class_name": "context", "category": "memory_context"})],
                             reuse_op=True, metadata={"source_code": "join memories as ### Memory i"})
            ctx_var = comment_variable(context, to_runtime=True, class_name="context", category="memory_context")
            del ctx
            pred = comment_op(inputs=[qvar, ctx_var, qa_prompt],
                              outputs=[(prediction, {"class_name": "prediction", "category": "llm_response"})],
                              reuse_op=True)
            del pred
        correct = not target
        gold = ", ".join(q.answers)
        judge_prompt = self.prompt("judge_prompt:hand-judge", "Is the prediction correct given the golden answers?",
                                   "llm-judge")
        with comment_op_scope(op_name="llm-judge", category="evaluation"):
            gvar = comment_variable(gold, to_runtime=True, class_name="golden_answers", category="golden_answers")
            pvar = comment_variable(prediction, to_runtime=True, class_name="prediction", category="llm_response")
            verdict = "CORRECT" if correct else "WRONG"
            comment_op(inputs=[qvar, gvar, judge_prompt, pvar],
                       outputs=[(json.dumps({"label": verdict}), {"class_name": "judge_response",
                                                                 "category": "llm_response"})], reuse_op=True)
            rvar = comment_variable(json.dumps({"label": verdict}), to_runtime=True, class_name="judge_response",
                                    category="llm_response")
            comment_link(source=rvar, target=("1.0" if correct else "0.0", {"class_name": "judge_score"}),
                         category="evaluation")
        if not target:
            return []
        if self.label is None:
            self.set_label("ResponseError", qa_op.op_id)
        return [{"query_id": qvar.full_node_id, "query": q.text, "golden_answers": list(q.answers),
                 "golden_answers_id": gvar.full_node_id, "prediction": prediction,
                 "prediction_id": pvar.full_node_id,
                 "source_evidence_ids": [f"{self.conv.message(e).id}@1" for e in q.evidence],
                 **self.label}]


# ---------------------------------------------------------------------------------------
class LongContext(Recorder):
    layer, split = "Long-Context", "long_context"

    def __init__(self, conv, fault):
        super().__init__(conv, fault)
        self.window = fault.get("window", 10**9)
        self.entries: list[tuple[int, str]] = []  # (message number, text)
        self.n = 0

    def text(self) -> str:
        return "\n".join(t for _n, t in self.entries)

    def add(self, m: Message) -> None:
        self.n += 1
        msg = self.record_message(m)
        entry = self.message_content(m)
        if self.is_fault("lc_append_cut", self.n):
            entry = entry.replace(m.text, self.fault["keep"])
        meta = {"context_window": self.window, "message_separator": "\n", "llm_model_for_tokenizer": "gpt-4.1-mini"}
        with comment_op_scope(op_name="memory_system.memory_update", category="update", metadata=meta) as op:
            with comment_mutation(target=self, inputs=[msg], id_strategy=lambda _s: "memory-unit",
                                  encoding_fn=lambda s: s.text(), category="memory_entry", reuse_op=True,
                                  mutation_category="update"):
                self.entries.append((self.n, entry))
                if self.is_fault("lc_compaction", self.n):
                    lo, hi = self.fault["span"]
                    kept = [e for e in self.entries if not lo <= e[0] <= hi]
                    self.entries = [(0, self.fault["summary"])] + kept
                while len(self.text()) > self.window and len(self.entries) > 1:
                    self.entries.pop(0)
        q = self.fault.get("question")
        if self.fault["kind"].startswith("lc_") and self.label is None and self.n >= max(q.evidence):
            lost = not all(self.conv.message(e).text in self.text() for e in q.evidence)
            if lost:
                kind = "ExtractionError" if self.fault["kind"] == "lc_append_cut" else "UpdateError"
                self.set_label(kind, op.op_id)

    def flush(self) -> None:
        pass

    def retrieve(self, q, qvar, target):
        with comment_op_scope(op_name="memory_system.retrieve", category="retrieval", metadata={"top_k": TOP_K}):
            unit = comment_op(inputs=[qvar], outputs=[(self, {"id_strategy": lambda _s: "memory-unit",
                                                              "encoding_fn": lambda s: s.text(),
                                                              "category": "memory_entry"})],
                              reuse_op=True, category="retrieval")
            del unit
        var = comment_variable(self, to_runtime=True, id_strategy=lambda _s: "memory-unit",
                               encoding_fn=lambda s: s.text(), category="memory_entry")
        return [(var, f"<long_context_memory>\n{self.text()}\n</long_context_memory>")]


# ---------------------------------------------------------------------------------------
class NaiveRAG(Recorder):
    layer, split = "NaiveRAG", "rag"
    MAX_CHARS = 560

    def __init__(self, conv, fault):
        super().__init__(conv, fault)
        self.buffer = Buffer("message-buffer", lambda items: dumps(
            {"buffer_total_tokens": sum(len(t.split()) for _n, t in items), "message_buffer": [t for _n, t in items]}))
        self.units: list[tuple[Unit, list[int]]] = []
        self.n = 0

    def emit(self, doc_inputs: list, nums: list[int], texts: list[str]) -> None:
        op_here = current_op().op_id
        doc = "\n".join(texts)
        if self.fault.get("kind") == "rag_chunk_cut" and self.fault["msg"] in nums:
            doc = doc[: doc.index(self.fault["cut"])].rstrip()
            self.set_label("ExtractionError", op_here)
        if self.fault.get("kind") == "rag_chunk_drop" and self.fault["msg"] in nums:
            drop = nums.index(self.fault["msg"])
            doc = "\n".join(t for i, t in enumerate(texts) if i != drop)
            self.set_label("ExtractionError", op_here)
        doc_var = comment_op(inputs=doc_inputs, outputs=[(doc, {"class_name": "temporary_variable",
                                                               "category": "temporary_variable"})],
                             reuse_op=True, category="extraction")
        doc_var = comment_variable(doc, to_runtime=True, class_name="temporary_variable",
                                   category="temporary_variable")
        pending = (doc_var, doc, nums)
        self._pending = pending

    def store(self) -> None:
        doc_var, doc, nums = self._pending
        unit = Unit({"content": doc, "id": self.new_id()})
        with comment_op_scope(op_name="memory_system.add", category="update") as op:
            if self.fault.get("kind") == "rag_add_cut" and self.fault["msg"] in nums:
                unit.data["content"] = doc[: doc.index(self.fault["cut"])].rstrip()
                self.set_label("ExtractionError", op.op_id)
            comment_op(inputs=[doc_var], outputs=[(unit, unit.opts())], reuse_op=True, category="update")
        self.units.append((unit, nums))
        self._pending = None

    def add(self, m: Message) -> None:
        self.n += 1
        msg = self.record_message(m)
        text = self.message_content(m)
        meta = {"deferred": True, "max_tokens": self.MAX_CHARS, "num_overlap_msgs": 0, "message_separator": "\n",
                "llm_model_for_tokenizer": "gpt-4.1-mini"}
        self._pending = None
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update", metadata=meta) as op:
            size = sum(len(t) for _n, t in self.buffer.items) + len(text)
            if size > self.MAX_CHARS and self.buffer.items:
                prev = comment_variable(self.buffer, to_runtime=True, **self.buffer.opts("message_buffer"))
                self.emit([msg, prev], [n for n, _t in self.buffer.items], [t for _n, t in self.buffer.items])
            with comment_mutation(target=self.buffer, inputs=[msg], reuse_op=True, mutation_category="update",
                                  **self.buffer.opts("message_buffer")):
                if self._pending:
                    self.buffer.items = []
                if self.is_fault("rag_buffer_skip", self.n):
                    self.set_label("ExtractionError", op.op_id)
                else:
                    self.buffer.items.append((self.n, text))
        if self._pending:
            self.store()

    def flush(self) -> None:
        if not self.buffer.items:
            return
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata={"deferred": True, "flush": True}):
            prev = comment_variable(self.buffer, to_runtime=True, **self.buffer.opts("message_buffer"))
            self.emit([prev], [n for n, _t in self.buffer.items], [t for _n, t in self.buffer.items])
            with comment_mutation(target=self.buffer, reuse_op=True, mutation_category="update",
                                  **self.buffer.opts("message_buffer")):
                self.buffer.items = []
        self.store()

    def rank(self, q: Question) -> list[Unit]:
        qw = words(q.text)
        return [u for u, _n in sorted(self.units, key=lambda un: -len(qw & words(un[0].data["content"])))]

    def retrieve(self, q, qvar, target):
        needed = [u for u, nums in self.units if set(nums) & set(q.evidence)]
        ranked = self.rank(q)
        hits = needed + [u for u in ranked if u not in needed]
        if target and self.fault["kind"] in ("rag_retrieval_miss", "rag_retrieval_partial"):
            lost = [u for u in needed if self.fault["msg"] in self._nums(u)]
            hits = [u for u in hits if u not in lost]
        hits = hits[:TOP_K]
        with comment_op_scope(op_name="memory_system.retrieve", category="retrieval",
                              metadata={"top_k": TOP_K, "embedding_model": "all-MiniLM-L6-v2"}) as op:
            out = []
            for u in hits:
                comment_op(inputs=[qvar], outputs=[(u, u.opts())], reuse_op=True)
                out.append((comment_variable(u, to_runtime=True, **u.opts()), u.data["content"]))
        if target and self.fault["kind"] in ("rag_retrieval_miss", "rag_retrieval_partial"):
            self.set_label("RetrievalError", op.op_id)
        return out

    def _nums(self, unit: Unit) -> list[int]:
        return next(n for u, n in self.units if u is unit)


# ---------------------------------------------------------------------------------------
class Mem0(Recorder):
    layer, split = "Mem0", "mem0"

    def __init__(self, conv, fault):
        super().__init__(conv, fault)
        self.units: dict[str, Unit] = {}
        self.origin: dict[str, int] = {}
        self.n = 0

    def message_content(self, m: Message) -> str:
        return f"{m.text}\nBelow is this message's metadata:\nSpeaker Name: {m.speaker}\nSpeaker Role: user\n"

    def facts_of(self, m: Message) -> list[str]:
        if m.text.endswith("?") and len(m.text) < 70:
            return []
        return [f"{m.speaker}: {s}" for s in sentences(m.text) if not s.endswith("?") and len(s) > 12]

    def add(self, m: Message) -> None:
        self.n += 1
        n = self.n
        msg = self.record_message(m)
        sysp = self.prompt("fact-extraction-system-prompt", "Extract the personal facts stated in the message.",
                           "fact_extraction")
        facts = self.facts_of(m)
        with comment_op_scope(op_name="memory_system.extract_facts", category="extraction") as op:
            if self.is_fault("m0_extract_drop", n):
                facts = [f for f in facts if self.fault["drop"] not in f]
                self.set_label("ExtractionError", op.op_id)
            if self.is_fault("m0_extract_swap", n):
                facts = [self.rewrite(f) for f in facts]
                self.set_label("ExtractionError", op.op_id)
            raw = "```json\n" + json.dumps({"facts": facts}, ensure_ascii=False) + "\n```"
            comment_op(inputs=[msg, sysp], outputs=[(raw, {"class_name": "raw_response", "category": "llm_response"})],
                       reuse_op=True, category="extraction")
            cleaned = json.dumps({"facts": facts}, ensure_ascii=False)
            comment_op(inputs=[(raw, {"class_name": "raw_response", "category": "llm_response"})],
                       outputs=[(cleaned, {"class_name": "cleaned_response", "category": "llm_response"})],
                       reuse_op=True, category="extraction")
            fvar = comment_op(inputs=[(cleaned, {"class_name": "cleaned_response", "category": "llm_response"})],
                              outputs=[({"facts": facts}, {"class_name": "extracted_facts", "encoding_fn": dumps,
                                                            "category": "extracted_facts"})],
                              reuse_op=True, category="extraction")
            del fvar
            fvar = comment_variable({"facts": facts}, to_runtime=True, class_name="extracted_facts",
                                    encoding_fn=dumps, category="extracted_facts")
        if facts:
            self.decide(m, n, facts, fvar)

    def similar(self, text: str) -> list[Unit]:
        w = words(text)
        scored = sorted(self.units.values(), key=lambda u: -len(w & words(u.data["memory"])))
        return [u for u in scored if w & words(u.data["memory"])][:5]

    def decide(self, m: Message, n: int, facts: list[str], fvar) -> None:
        existing = self.similar(" ".join(facts))
        actions = [{"event": "ADD", "text": f} for f in facts]
        fk = self.fault.get("kind")
        cands = [uid for uid, o in self.origin.items() if o == self.fault.get("unit_of")]
        q = self.fault["question"]
        target_uid = next((uid for uid in cands if any(a.lower() in self.units[uid].data["memory"].lower()
                                                        for a in q.answers if uid in self.units)), None)
        if self.fault.get("by") == n and target_uid and target_uid in self.units:
            if fk == "m0_update_overwrite":
                actions[0] = {"event": "UPDATE", "id": target_uid, "text": actions[0]["text"]}
            elif fk == "m0_update_degrade":
                actions.insert(0, {"event": "UPDATE", "id": target_uid, "text": self.fault["text"]})
            elif fk == "m0_delete":
                for uid in cands:
                    if uid in self.units and any(a.lower() in self.units[uid].data["memory"].lower() for a in q.answers):
                        actions.insert(0, {"event": "DELETE", "id": uid})
                existing = [self.units[target_uid]] + [u for u in existing if u.data["id"] != target_uid][:4]
            if fk in ("m0_update_overwrite", "m0_update_degrade"):
                existing = [self.units[target_uid]] + [u for u in existing if u.data["id"] != target_uid][:4]
        if self.is_fault("m0_none_skip", n):
            actions = [{"event": "NONE", "text": a["text"]} if self.fault["drop"] in a["text"] else a for a in actions]
        if self.is_fault("m0_add_swap", n):
            actions = [{**a, "text": self.rewrite(a["text"])} for a in actions]
        decision = json.dumps({"memory": actions}, ensure_ascii=False)
        prompt = self.prompt("memory-update-decision-prompt", "Decide ADD, UPDATE, DELETE or NONE for each fact.",
                             "update")
        ex_value = dumps([{"id": u.data["id"], "text": u.data["memory"]} for u in existing])
        with comment_op_scope(op_name="memory_system.update_memory_decision", category="update") as op:
            ex = comment_variable(ex_value, to_runtime=True, class_name="existing_memories",
                                  category="existing_memories")
            instr = comment_op(inputs=[fvar, ex, prompt], outputs=[(f"{ex_value}\n{facts}", {
                "class_name": "memory_update_task_instruction", "category": "prompt"})], reuse_op=True,
                category="update")
            del instr
            chain = [("memory_update_task_instruction", f"{ex_value}\n{facts}"),
                     ("raw_memory_update_decision", "```json\n" + decision + "\n```"),
                     ("memory_update_decision_with_code_block_removing", decision),
                     ("update_action", decision)]
            for (c1, v1), (c2, v2) in zip(chain, chain[1:], strict=False):
                comment_op(inputs=[(v1, {"class_name": c1, "category": "llm_response"})],
                           outputs=[(v2, {"class_name": c2, "category": "llm_response"})], reuse_op=True,
                           category="update")
            action_var = comment_variable(decision, to_runtime=True, class_name="update_action",
                                          category="llm_response")
            for a in actions:
                if a["event"] == "ADD":
                    u = Unit({"id": self.new_id(), "memory": a["text"], "timestamp": m.timestamp})
                    comment_link(source=action_var, target=(u, u.opts()), category="update")
                    self.units[u.data["id"]], self.origin[u.data["id"]] = u, n
                elif a["event"] == "UPDATE":
                    u = self.units[a["id"]]
                    with comment_mutation(target=u, inputs=[action_var], reuse_op=True,
                                          mutation_category="llm_response", **u.opts()):
                        u.data = {**u.data, "memory": a["text"]}
                elif a["event"] == "DELETE":
                    u = self.units.pop(a["id"])
                    uvar = comment_variable(u, to_runtime=True, **u.opts())
                    comment_link(source=uvar, target=(f"DELETED {u.name}", {"class_name": "delete_marker",
                                                                          "category": "marker"}), category="update")
        if fk in ("m0_none_skip", "m0_add_swap") and self.fault["msg"] == n:
            self.set_label("ExtractionError", op.op_id)
        if self.fault.get("by") == n and target_uid:
            kind = "DeletionError" if fk == "m0_delete" else "UpdateError"
            self.set_label(kind, op.op_id)

    def flush(self) -> None:
        pass

    def retrieve(self, q, qvar, target):
        ranked = sorted(self.units.values(), key=lambda u: -len(words(q.text) & words(u.data["memory"])))
        needed = [u for uid, u in self.units.items() if self.origin[uid] in q.evidence]
        if target and self.fault["kind"] == "m0_retrieval_miss":
            hits = [u for u in ranked if u not in needed][:TOP_K]
        else:
            hits = (needed + [u for u in ranked if u not in needed])[: max(TOP_K, len(needed))]
        with comment_op_scope(op_name="memory_system.search_vector_store", category="retrieval",
                              metadata={"top_k": TOP_K}) as op:
            out = []
            for u in hits:
                comment_op(inputs=[qvar], outputs=[(u, u.opts())], reuse_op=True)
                out.append((comment_variable(u, to_runtime=True, **u.opts()),
                            f"Memory: {u.data['memory']}\nTime: {u.data['timestamp']}"))
        if target and self.fault["kind"] == "m0_retrieval_miss":
            self.set_label("RetrievalError", op.op_id)
        return out


# ---------------------------------------------------------------------------------------
class EverMemOS(Recorder):
    layer, split = "EverMemOS", "evermemos"
    CELL = 5

    def __init__(self, conv, fault):
        super().__init__(conv, fault)
        self.buffer = Buffer("message-buffer", lambda items: dumps([d for _n, d in items]))
        self.units: list[tuple[Unit, list[int]]] = []
        self.n = 0

    def message_content(self, m: Message) -> str:
        return m.text

    def add(self, m: Message) -> None:
        self.n += 1
        msg = self.record_message(m)
        item = (self.n, {"content": m.text, "name": m.speaker, "role": "user", "timestamp": m.timestamp})
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update"):
            with comment_mutation(target=self.buffer, inputs=[msg], reuse_op=True, mutation_category="update",
                                  **self.buffer.opts("message_buffer")):
                self.buffer.items.append(item)
        if len(self.buffer.items) < 2:
            return
        history, new = self.buffer.items[:-1], self.buffer.items[-1:]
        split = history[-1][1]["timestamp"] != new[0][1]["timestamp"] or len(history) >= self.CELL
        template = self.prompt("boundary-detection-prompt-template", "Does the new message start a new episode?",
                               "boundary_detection")
        with comment_op_scope(op_name="evermemos.boundary_detection", category="boundary_detection",
                              metadata={"smart_mask_flag": True, "llm_model": "gpt-4.1-mini"}) as op:
            buf = comment_variable(self.buffer, to_runtime=True, **self.buffer.opts("message_buffer"))
            hv = comment_variable([d for _n, d in history], to_runtime=True, class_name="history_messages",
                                  category="history_messages")
            nv = comment_variable([d for _n, d in new], to_runtime=True, class_name="new_messages",
                                  category="new_messages")
            comment_op(inputs=[buf], outputs=[hv, nv], reuse_op=True, category="split_message_buffer")
            gap = "new day" if history[-1][1]["timestamp"] != new[0][1]["timestamp"] else "same conversation"
            comment_op(inputs=[hv, nv], outputs=[(gap, {"class_name": "time_gap", "category": "time_gap"})],
                       reuse_op=True)
            ptext = f"history={len(history)} new=1 gap={gap}"
            comment_op(inputs=[hv, nv, (gap, {"class_name": "time_gap", "category": "time_gap"}), template],
                       outputs=[(ptext, {"class_name": "boundary_detection_prompt", "category": "prompt"})],
                       reuse_op=True)
            result = json.dumps({"should_end": split, "topic_summary": self.conv.subject if split else ""})
            comment_op(inputs=[(ptext, {"class_name": "boundary_detection_prompt", "category": "prompt"})],
                       outputs=[(result, {"class_name": "raw_boundary_detection_response",
                                          "category": "llm_response"})], reuse_op=True, category="boundary_detection")
            rvar = comment_op(inputs=[(result, {"class_name": "raw_boundary_detection_response",
                                                "category": "llm_response"})],
                              outputs=[(result, {"class_name": "boundary_detection_result", "category": "llm_response"})],
                              reuse_op=True, category="boundary_detection")
            rvar = comment_variable(result, to_runtime=True, class_name="boundary_detection_result",
                                    category="llm_response")
            if not split:
                comment_link(source=rvar, target=("NO_SPLIT", {"class_name": "no_split_marker", "category": "marker"}),
                             category="boundary_detection")
                return
            cell_items = list(history)
            if self.fault.get("kind") == "emo_boundary_drop" and self.fault["msg"] in [n for n, _d in cell_items]:
                cell_items = [it for it in cell_items if it[0] != self.fault["msg"]]
                self.set_label("ExtractionError", op.op_id)
            cell = {"original_data": [d for _n, d in cell_items], "timestamp": history[-1][1]["timestamp"],
                    "summary": self.conv.subject}
            comment_op(inputs=[buf, rvar], outputs=[(cell, {"class_name": "temporary_variable", "encoding_fn": dumps,
                                                            "category": "temporary_variable"})], reuse_op=True)
            cvar = comment_variable(cell, to_runtime=True, class_name="temporary_variable", encoding_fn=dumps,
                                    category="temporary_variable")
        self.finalize(cvar, cell_items, history[-1][1]["timestamp"], self.conv.subject)
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata={"smart_mask_flag": True}):
            with comment_mutation(target=self.buffer, reuse_op=True, mutation_category="update",
                                  **self.buffer.opts("message_buffer")):
                self.buffer.items = list(new)

    def finalize(self, source_var, items, stamp, summary) -> None:
        uid = self.new_id()
        nums = [n for n, _d in items]
        with comment_op_scope(op_name="memory_system.finalize_memory_unit", category="initialization") as op:
            if self.fault.get("kind") == "emo_finalize_drop" and self.fault["msg"] in nums:
                items = [it for it in items if it[0] != self.fault["msg"]]
                self.set_label("ExtractionError", op.op_id)
            unit = Unit({"event_id": uid, "timestamp": stamp, "original_data": [d for _n, d in items],
                         "summary": summary, "subject": None, "episode": None, "foresights": None,
                         "event_log": None}, key="event_id")
            comment_op(inputs=[source_var], outputs=[(unit, unit.opts())], reuse_op=True, category="initialization")
        self.extract(unit, items, nums)

    def extract(self, unit: Unit, items, nums) -> None:
        said = [f"{d['name']} said: {d['content']}" for _n, d in items]
        facts = [f"{d['name']}: {s}" for _n, d in items for s in sentences(d["content"])]
        episode = f"On {unit.data['timestamp']}, " + " ".join(said)
        tmpl = self.prompt("episode-extraction-prompt-template", "Write the episode of this conversation segment.",
                           "episode_extraction")
        instr = self.prompt("episode-extraction-custom-instructions", "Keep names, numbers and dates.",
                            "episode_extraction")
        ev_tmpl = self.prompt("event-log-prompt-template", "List the atomic facts of this episode.",
                              "event_log_extraction")
        with comment_op_scope(op_name="memory_system.extract_memory", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini", "foresight_enabled": False,
                                        "event_log_enabled": True}) as op:
            fk = self.fault.get("kind")
            if fk in ("emo_episode_drop", "emo_episode_swap") and self.fault["msg"] in nums:
                if fk == "emo_episode_drop":
                    episode = episode.replace(self.fault["drop"], "").replace("  ", " ")
                    facts = [f for f in facts if self.fault["drop"] not in f]
                else:
                    episode, facts = self.rewrite(episode), [self.rewrite(f) for f in facts]
                self.set_label("ExtractionError", op.op_id)
            uvar = comment_variable(unit, to_runtime=True, **unit.opts())
            ep = {"subject": self.conv.subject, "summary": self.conv.subject, "episode": episode}
            p = f"episode prompt for {unit.name}"
            comment_op(inputs=[uvar, instr, tmpl], outputs=[(p, {"class_name": "episode_extraction_prompt",
                                                                  "category": "prompt"})], reuse_op=True)
            comment_op(inputs=[(p, {"class_name": "episode_extraction_prompt", "category": "prompt"})],
                       outputs=[(json.dumps(ep), {"class_name": "raw_episode_extraction_response",
                                                  "category": "llm_response"})], reuse_op=True, category="extraction")
            comment_op(inputs=[(json.dumps(ep), {"class_name": "raw_episode_extraction_response",
                                                 "category": "llm_response"})],
                       outputs=[(ep, {"class_name": "episode_memory", "encoding_fn": dumps, "category": "llm_response"})],
                       reuse_op=True, category="extraction")
            epv = comment_variable(ep, to_runtime=True, class_name="episode_memory", encoding_fn=dumps,
                                   category="llm_response")
            with comment_mutation(target=unit, inputs=[epv], reuse_op=True, mutation_category="mutation",
                                  **unit.opts()):
                unit.data = {**unit.data, **ep}
            uvar = comment_variable(unit, to_runtime=True, **unit.opts())
            p2 = f"event log prompt for {unit.name}"
            log = {"atomic_fact": facts}
            comment_op(inputs=[uvar, ev_tmpl], outputs=[(p2, {"class_name": "event_extraction_prompt",
                                                             "category": "prompt"})], reuse_op=True)
            comment_op(inputs=[(p2, {"class_name": "event_extraction_prompt", "category": "prompt"})],
                       outputs=[(json.dumps(log), {"class_name": "raw_event_log_extraction_response",
                                                   "category": "llm_response"})], reuse_op=True, category="extraction")
            comment_op(inputs=[(json.dumps(log), {"class_name": "raw_event_log_extraction_response",
                                                  "category": "llm_response"})],
                       outputs=[(log, {"class_name": "event_log", "encoding_fn": dumps, "category": "llm_response"})],
                       reuse_op=True, category="extraction")
            lv = comment_variable(log, to_runtime=True, class_name="event_log", encoding_fn=dumps,
                                  category="llm_response")
            with comment_mutation(target=unit, inputs=[lv], reuse_op=True, mutation_category="mutation",
                                  **unit.opts()):
                unit.data = {**unit.data, "event_log": log}
            with comment_mutation(target=unit, reuse_op=True, mutation_category="mutation", **unit.opts()):
                unit.data = {k: v for k, v in unit.data.items() if k != "original_data"}
        self.units.append((unit, nums))

    def flush(self) -> None:
        if not self.buffer.items:
            return
        buf = comment_variable(self.buffer, to_runtime=True, **self.buffer.opts("message_buffer"))
        self.finalize(buf, list(self.buffer.items), self.buffer.items[-1][1]["timestamp"], "Final conversation segment")
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update",
                              metadata={"flush": True}):
            with comment_mutation(target=self.buffer, reuse_op=True, mutation_category="update",
                                  **self.buffer.opts("message_buffer")):
                self.buffer.items = []

    # ---- retrieval ----------------------------------------------------------------------
    def listing(self, cls: str, units: list[Unit]):
        value = [{"event_id": u.data["event_id"], "episode": u.data["episode"], "subject": u.data["subject"],
                  "summary": u.data["summary"], "event_log": u.data["event_log"], "score": round(1 / (i + 1), 3)}
                 for i, u in enumerate(units)]
        name = ", ".join(u.data["event_id"][:8] for u in units) + f" | rand={self.new_id()[:8]}"
        return comment_variable(value, to_runtime=True, class_name=cls, encoding_fn=dumps, category=cls,
                                id_strategy=lambda _v: name)

    def retrieve(self, q, qvar, target):
        qw = words(q.text)
        ranked = [u for u, _n in sorted(self.units, key=lambda un: -len(qw & words(json.dumps(un[0].data))))]
        needed = [u for u, nums in self.units if set(nums) & set(q.evidence)]
        fk = self.fault.get("kind") if target else None
        others = [u for u in ranked if u not in needed]
        if fk == "emo_r1_cut":
            r1 = others[:TOP_K] + needed + others[TOP_K:]
        elif fk == "emo_final_drop":
            r1 = others[:TOP_K] + needed + others[TOP_K:]
        else:
            r1 = needed + others
        check = r1[:TOP_K]
        sufficient = fk == "emo_r1_cut" or all(u in check for u in needed)
        with comment_op_scope(op_name="memory_system.agentic_round1_bundle", category="retrieval",
                              metadata={"round": 1, "retrieval_mode": "agentic", "top_k": TOP_K,
                                        "sufficiency_check_docs": TOP_K, "use_reranker": False}) as op1:
            sp = self.listing("sparse_retrieval_results", ranked)
            dn = self.listing("dense_retrieval_results", ranked[::-1])
            comment_op(inputs=[qvar], outputs=[sp, dn], reuse_op=True)
            r1_var = self.listing("hybrid_retrieval_results", r1)
            comment_op(inputs=[sp, dn], outputs=[r1_var], reuse_op=True)
            chk_var = self.listing("reranked_for_check", check)
            comment_op(inputs=[r1_var], outputs=[chk_var], reuse_op=True, category="retrieval")
            docs = "\n".join(str(u.data["episode"]) for u in check)
            docs_var = comment_variable(docs, to_runtime=True, class_name="sufficiency_check_docs_text",
                                        category="formatted_documents")
            comment_op(inputs=[chk_var], outputs=[docs_var], reuse_op=True, category="retrieval")
            result = {"is_sufficient": sufficient, "reasoning": "judged from the checked documents",
                      "missing_information": [] if sufficient else [q.text], "key_information_found": []}
            res_var = comment_variable(result, to_runtime=True, class_name="sufficiency_check_result",
                                       encoding_fn=dumps, category="sufficiency_check_result")
            comment_op(inputs=[qvar, docs_var], outputs=[res_var], reuse_op=True, category="retrieval")
            final = check
            if sufficient:
                for u in final:
                    comment_op(inputs=[res_var, r1_var], outputs=[(u, u.opts())], reuse_op=True)
        if fk == "emo_r1_cut":
            self.set_label("RetrievalError", op1.op_id)
        if not sufficient:
            with comment_op_scope(op_name="memory_system.agentic_round2_bundle", category="retrieval",
                                  metadata={"round": 2, "retrieval_mode": "agentic", "top_k": TOP_K,
                                            "multi_query": False}):
                refined = q.text + " " + " ".join(sorted(words(" ".join(q.answers))))
                rq = comment_variable([refined], to_runtime=True, class_name="refined_queries", encoding_fn=dumps,
                                      id_strategy=lambda v: " | ".join(v), category="refined_queries")
                comment_op(inputs=[qvar, res_var], outputs=[rq], reuse_op=True, category="retrieval")
                r2 = needed + others
                r2_var = self.listing("round2_retrieval_results", r2)
                comment_op(inputs=[rq], outputs=[r2_var], reuse_op=True, category="retrieval")
            with comment_op_scope(op_name="memory_system.agentic_final_rerank", category="retrieval",
                                  metadata={"top_k": TOP_K, "use_reranker": False}) as op3:
                combined = []
                for u in r1[:TOP_K] + r2:
                    if u not in combined:
                        combined.append(u)
                c_var = self.listing("combined_retrieval_results", combined)
                comment_op(inputs=[r1_var, r2_var], outputs=[c_var], reuse_op=True)
                final = (needed + [u for u in combined if u not in needed])[:TOP_K]
                if fk == "emo_final_drop":
                    final = combined[:TOP_K]
                for u in final:
                    comment_op(inputs=[c_var], outputs=[(u, u.opts())], reuse_op=True)
            if fk == "emo_final_drop":
                self.set_label("RetrievalError", op3.op_id)
        return [(comment_variable(u, to_runtime=True, **u.opts()), f"{u.data['subject']}: {u.data['episode']}")
                for u in final]


LAYERS = {"long_context": LongContext, "rag": NaiveRAG, "mem0": Mem0, "evermemos": EverMemOS}
