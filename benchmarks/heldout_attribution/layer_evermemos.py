"""EverMemOS, recorded after spec-evermemos §7: ``message-buffer`` versions, an
``evermemos.boundary_detection`` scope per message (smart mask off), a memcell finalised as
``memory-unit-<event_id>`` v1 with the raw messages, ``memory_system.extract_memory`` writing the
episode (v2), the event log (v3) and dropping ``original_data`` (v4), the buffer reset; retrieval
in hybrid mode or agentic mode (round 1 with a sufficiency check, round 2 with refined queries,
final rerank)."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime

from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable, current_graph
from smartcomment.runtime.variable import RuntimeVariable

from .conversations import Conversation, ConvSession, Message, Question
from .plans import CasePlan
from .recording import Entry, OpLog, json_text, message_node
from .text_tools import fact_key, rank, select

BOUNDARY_TEMPLATE = "Decide whether the new messages end the current episode.\nHistory:\n{history}\n{time_gap}\nNew:\n{new}"
EPISODE_TEMPLATE = "Write a third-person episodic memory of this conversation, keeping every fact, name and date.\n{conversation}"
EPISODE_INSTRUCTIONS = "Each episode is a complete, self-contained story; keep names, times, places and numbers."
EVENT_LOG_TEMPLATE = "List the atomic facts of this episode, one per line.\n{episode}"
SUFFICIENCY_TEMPLATE = "Do these documents fully answer the query? Reply as JSON.\nQuery: {query}\n{documents}"
MULTI_QUERY_TEMPLATE = "Write 2-3 retrieval queries for the missing information.\nQuery: {query}\n{documents}"
MAX_HISTORY = 5


def _buffer_id(_value: object) -> str:
    return "message-buffer"


def _unit_id(value: dict) -> str:
    return f"memory-unit-{value['event_id']}"


def _hashed(prefix: str, text: str) -> str:
    return f"{prefix}:{hashlib.sha1(text.encode()).hexdigest()}"


_UNIT_OPTIONS = {"id_strategy": _unit_id, "encoding_fn": json_text, "category": "memory_entry"}


def _template(text: str, name: str, op_type: str) -> tuple[str, dict]:
    return text, {"id_strategy": lambda _v: name, "category": "prompt", "metadata": {"op_type": op_type}}


class EverMemOSLayer:
    project_id = "EverMemOS"
    top_k = 3

    def __init__(self, conv: Conversation, plan: CasePlan, log: OpLog, rng: random.Random, *, agentic: bool) -> None:
        self.conv, self.plan, self.log, self.rng, self.agentic = conv, plan, log, rng, agentic
        self.buffer: list[tuple[Message, ConvSession]] = []
        self.units: dict[str, dict] = {}
        self.holds: dict[str, set[str]] = {}
        self.answer_fact = fact_key(plan.question, conv.message(plan.target))

    # -- construction ------------------------------------------------------------------------

    def _buffer_json(self) -> str:
        return json_text([self._raw(m, s) for m, s in self.buffer])

    @staticmethod
    def _raw(message: Message, session: ConvSession) -> dict:
        return {"speaker_id": message.speaker, "speaker_name": message.speaker, "content": message.text,
                "timestamp": session.date_time, "role": "user"}

    def _mutate_buffer(self, inputs: list[RuntimeVariable], metadata: dict | None, new: list) -> RuntimeVariable:
        with comment_mutation(target=self, inputs=inputs, id_strategy=_buffer_id,
                              encoding_fn=EverMemOSLayer._buffer_json, category="message_buffer",
                              mutation_name="memory_system.message_buffer_update", mutation_category="update",
                              mutation_metadata=metadata) as mutation:
            self.buffer = new
        return mutation.result

    def add_message(self, message: Message, session: ConvSession) -> None:
        node = message_node(self.conv, message, session, style="evermemos")
        buffer_rv = self._mutate_buffer([node], None, [*self.buffer, (message, session)])
        if len(self.buffer) < 2:
            return
        history, new = self.buffer[:-1], self.buffer[-1]
        should_end = new[1].id != history[-1][1].id or len(history) >= MAX_HISTORY
        members = [(m, s) for m, s in history
                   if not (self.plan.kind.name == "evermemos/memcell_drops_message" and m.id == self.plan.target)]
        with comment_op_scope(op_name="evermemos.boundary_detection", category="boundary_detection",
                              metadata={"smart_mask_flag": False, "llm_model": "gpt-4.1-mini"}) as op:
            history_rv = comment_variable([self._raw(m, s) for m, s in history], to_runtime=True,
                                          class_name="history_messages", category="history_messages")
            new_rv = comment_variable([self._raw(*new)], to_runtime=True, class_name="new_messages",
                                      category="new_messages")
            comment_op(inputs=[buffer_rv], outputs=[new_rv], category="split_message_buffer", reuse_op=True)
            comment_op(inputs=[buffer_rv], outputs=[history_rv], category="split_message_buffer", reuse_op=True)
            gap_rv = comment_variable(self._time_gap(history[-1][1], new[1]), to_runtime=True, class_name="time_gap",
                                      category="time_gap")
            comment_op(inputs=[history_rv, new_rv], outputs=[gap_rv], reuse_op=True)
            shown = "\n".join(f"[{s.date_time}] {m.speaker}: {m.text}" for m, s in history)
            prompt_text = BOUNDARY_TEMPLATE.format(history=shown, time_gap=gap_rv.raw_value,
                                                   new=f"{new[0].speaker}: {new[0].text}")
            prompt_rv = comment_variable(prompt_text, to_runtime=True, class_name="boundary_detection_prompt",
                                         category="prompt")
            comment_op(inputs=[history_rv, new_rv, gap_rv,
                               _template(BOUNDARY_TEMPLATE, "boundary-detection-prompt-template", "boundary_detection")],
                       outputs=[prompt_rv], reuse_op=True)
            topic = self._topic(history) if should_end else ""
            reply = json.dumps({"reasoning": "The new message opens another topic." if should_end else
                                "The new message continues the current topic.", "should_end": should_end,
                                "confidence": 0.8, **({"topic_summary": topic} if should_end else {})})
            raw_rv = comment_variable(reply, to_runtime=True, class_name="raw_boundary_detection_response",
                                      category="llm_response")
            comment_op(inputs=[prompt_rv], outputs=[raw_rv], category="boundary_detection", reuse_op=True)
            result_text = f"BoundaryDetectionResult(should_end={should_end}, topic_summary={topic!r})"
            result_rv = comment_variable(result_text, to_runtime=True, class_name="boundary_detection_result",
                                         id_strategy=lambda v: _hashed("BoundaryDetectionResult", v),
                                         category="llm_response")
            comment_op(inputs=[raw_rv], outputs=[result_rv], category="boundary_detection", reuse_op=True,
                       metadata={"source_code": "BoundaryDetectionResult(**json.loads(response))"})
            if should_end:
                memcell = {"original_data": [self._raw(m, s) for m, s in members],
                           "timestamp": history[-1][1].date_time, "summary": topic}
                memcell_rv = comment_variable(memcell, to_runtime=True, class_name="temporary_variable",
                                              category="temporary_variable", encoding_fn=json_text)
                comment_op(inputs=[buffer_rv, result_rv], outputs=[memcell_rv], reuse_op=True)
                for m, _ in history:
                    self.log.mark("boundary", m.id, op.op_id)
            else:
                comment_op(inputs=[result_rv], outputs=[("NO_SPLIT", {"class_name": "no_split_marker",
                                                                       "category": "marker"})],
                           category="boundary_detection", reuse_op=True)
        if should_end:
            self._finalize(members, memcell_rv, topic)
            self._mutate_buffer([], {"smart_mask_flag": False}, [new])

    @staticmethod
    def _time_gap(before: ConvSession, after: ConvSession) -> str:
        seconds = (datetime.fromisoformat(after.date_time) - datetime.fromisoformat(before.date_time)).total_seconds()
        if seconds < 60:
            return f"Time gap: {int(seconds)} seconds (immediate response)"
        return f"Time gap: {int(seconds // 86400)} days (long gap, likely new conversation)"

    def _topic(self, members: list[tuple[Message, ConvSession]]) -> str:
        facts = [f for m, _ in members for f in m.facts]
        return facts[0] if facts else "Small talk"

    def _episode_facts(self, members: list[tuple[Message, ConvSession]]) -> list[tuple[str, str]]:
        """(fact key, sentence) pairs the episode keeps."""
        kind, q = self.plan.kind.name, self.plan.question
        kept = []
        for m, _ in members:
            for i, fact in enumerate(m.facts):
                key = f"{m.id}#{i}"
                if key == self.answer_fact:
                    replacement = {"evermemos/episode_rewrite": q.rewrite, "evermemos/episode_vague": q.vague}.get(kind)
                    if replacement is not None:
                        kept.append(("", replacement.fact))
                        continue
                    if kind == "evermemos/episode_omit":
                        continue
                kept.append((key, fact))
        return kept

    def _finalize(self, members: list[tuple[Message, ConvSession]], source: RuntimeVariable, summary: str) -> None:
        event_id = f"{self.rng.getrandbits(96):024x}"
        last = members[-1][1] if members else self.buffer[-1][1]
        unit = {"event_id": event_id, "timestamp": last.date_time,
                "original_data": [self._raw(m, s) for m, s in members], "summary": summary,
                "subject": None, "episode": None, "foresights": None, "event_log": None}
        comment_op(inputs=[source], outputs=[(unit, _UNIT_OPTIONS)], op_name="memory_system.finalize_memory_unit",
                   category="initialization", comment="A closed memcell becomes a memory unit.")
        kept = self._episode_facts(members)
        date = datetime.fromisoformat(last.date_time).strftime("%B %d, %Y")
        names = sorted({m.speaker for m, _ in members}) or [self.conv.speaker_a]
        subject = f"{' and '.join(names)} talk on {date}"
        episode = f"On {date}, {' and '.join(names)} talked. " + " ".join(f"{f}." for _, f in kept)
        with comment_op_scope(op_name="memory_system.extract_memory", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini", "foresight_enabled": False,
                                        "event_log_enabled": True}) as op:
            for m, _ in members:
                self.log.mark("extract", m.id, op.op_id)
            conversation = "\n".join(json.dumps(r, ensure_ascii=False) for r in unit["original_data"])
            prompt_rv = comment_variable(EPISODE_TEMPLATE.format(conversation=conversation), to_runtime=True,
                                         class_name="episode_extraction_prompt", category="prompt")
            comment_op(inputs=[(unit, _UNIT_OPTIONS),
                               _template(EPISODE_INSTRUCTIONS, "episode-extraction-custom-instructions",
                                         "episode_extraction"),
                               _template(EPISODE_TEMPLATE, "episode-extraction-prompt-template", "episode_extraction")],
                       outputs=[prompt_rv], reuse_op=True)
            memory = {"subject": subject, "summary": summary or subject, "episode": episode}
            raw_rv = comment_variable(json.dumps(memory, ensure_ascii=False), to_runtime=True,
                                      class_name="raw_episode_extraction_response", category="llm_response")
            comment_op(inputs=[prompt_rv], outputs=[raw_rv], category="extraction", reuse_op=True)
            episode_rv = comment_variable(memory, to_runtime=True, class_name="episode_memory", category="llm_response",
                                          encoding_fn=json_text)
            comment_op(inputs=[raw_rv], outputs=[episode_rv], category="extraction", reuse_op=True,
                       metadata={"source_code": "json.loads(response)"})
            with comment_mutation(target=unit, inputs=[episode_rv], id_strategy=_unit_id, encoding_fn=json_text,
                                  category="memory_entry", mutation_category="mutation", reuse_op=True):
                unit.update(memory)
            log_prompt = comment_variable(EVENT_LOG_TEMPLATE.format(episode=episode), to_runtime=True,
                                          class_name="event_extraction_prompt", category="prompt")
            comment_op(inputs=[(unit, _UNIT_OPTIONS),
                               _template(EVENT_LOG_TEMPLATE, "event-log-prompt-template", "event_log_extraction")],
                       outputs=[log_prompt], reuse_op=True)
            facts = [f"{f} ({date})" for _, f in kept]
            log_raw = comment_variable("\n".join(facts), to_runtime=True, class_name="raw_event_log_extraction_response",
                                       category="llm_response")
            comment_op(inputs=[log_prompt], outputs=[log_raw], category="extraction", reuse_op=True)
            event_log = comment_variable({"atomic_fact": facts}, to_runtime=True, class_name="event_log",
                                         category="llm_response", encoding_fn=json_text)
            comment_op(inputs=[log_raw], outputs=[event_log], category="extraction", reuse_op=True,
                       metadata={"source_code": "{'atomic_fact': response.splitlines()}"})
            with comment_mutation(target=unit, inputs=[event_log], id_strategy=_unit_id, encoding_fn=json_text,
                                  category="memory_entry", mutation_category="mutation", reuse_op=True):
                unit["event_log"] = {"atomic_fact": facts}
            with comment_mutation(target=unit, id_strategy=_unit_id, encoding_fn=json_text, category="memory_entry",
                                  mutation_category="mutation", reuse_op=True):
                del unit["original_data"]
        self.units[event_id] = unit
        self.holds[event_id] = {key for key, _ in kept if key}

    def flush(self) -> None:
        if not self.buffer:
            return
        source = comment_variable(self, to_runtime=True, id_strategy=_buffer_id,
                                  encoding_fn=EverMemOSLayer._buffer_json, category="message_buffer")
        self._finalize(list(self.buffer), source, "Final conversation segment")
        self._mutate_buffer([], {"flush": True}, [])

    # -- retrieval ---------------------------------------------------------------------------

    def _doc(self, event_id: str, score: float) -> dict:
        unit = self.units[event_id]
        return {"event_id": event_id, "timestamp": unit["timestamp"], "subject": unit["subject"],
                "summary": unit["summary"], "episode": unit["episode"], "event_log": unit["event_log"],
                "foresights": unit["foresights"], "score": score}

    def _list_node(self, kind: str, ids: list[str], *, scored: bool = False) -> RuntimeVariable:
        docs = [self._doc(e, round(1.0 / (i + 2), 4)) for i, e in enumerate(ids)]
        if scored:
            name = ", ".join(f"{d['event_id']}-{d['score']}" for d in docs)
        else:
            name = f"{', '.join(ids)} | ts={1_700_000_000_000_000_000 + self.rng.getrandbits(40)} | rand={self.rng.getrandbits(32):08x}"
        return comment_variable(docs, to_runtime=True, class_name=kind, id_strategy=lambda _v: name,
                                category=kind, encoding_fn=json_text)

    def _unit_rv(self, event_id: str) -> RuntimeVariable:
        return current_graph().get_latest_variable(f"memory-unit-{event_id}")

    def retrieve(self, question: Question, query: RuntimeVariable) -> list[Entry]:
        faulted = question.qid == self.plan.question.qid
        fault = self.plan.kind.name.split("/")[1] if faulted else ""
        evidence = {fact_key(question, self.conv.message(mid)) for mid in question.evidence}
        units = [(e, f"{u['subject']} {u['episode']}", self.holds[e]) for e, u in self.units.items()]
        ranked = rank(question.text, [(e, text) for e, text, _ in units])
        if self.agentic:
            chosen = self._agentic(question, query, fault, evidence, units, ranked)
        else:
            chosen = select(question.text, fault, evidence, set(), units, self.top_k)
            self._hybrid(question, query, chosen, ranked)
        return [Entry(trace_id=f"memory-unit-{e}", formatted=f"{self.units[e]['subject']}: {self.units[e]['episode']}")
                for e in chosen]

    def _hybrid(self, question: Question, query: RuntimeVariable, chosen: list[str], ranked: list[str]) -> None:
        order = chosen + [e for e in ranked if e not in chosen]
        with comment_op_scope(op_name="memory_system.hybrid_retrieval", category="retrieval",
                              metadata={"mode": "hybrid_retrieval", "top_k": self.top_k,
                                        "embedding_model": "all-MiniLM-L6-v2", "rrf_k": 60}) as op:
            self.log.mark("retrieve", question.qid, op.op_id)
            sparse = self._list_node("sparse_retrieval_results", order)
            dense = self._list_node("dense_retrieval_results", order[1:] + order[:1] if len(chosen) > 1 else order)
            comment_op(inputs=[query], outputs=[sparse], reuse_op=True, metadata={"bm25_top_n": 10, "emb_top_n": 10})
            comment_op(inputs=[query], outputs=[dense], reuse_op=True, metadata={"bm25_top_n": 10, "emb_top_n": 10})
            for e in chosen:
                comment_op(inputs=[sparse, dense], outputs=[self._unit_rv(e)], reuse_op=True, metadata={"rrf_k": 60})

    def _agentic(self, question: Question, query: RuntimeVariable, fault: str, evidence: set[str],
                 units: list, ranked: list[str]) -> list[str]:
        k = self.top_k
        holders = [e for e in ranked if self.holds[e] & evidence]
        others = [e for e in ranked if e not in holders]
        if fault == "final_rerank_drop":
            round1 = others[:1] + holders[:1] + others[1:k - 1]
        else:
            round1 = (holders + others)[:k]
        check = round1[:1]
        sufficient = bool(set(check) & set(holders))
        with comment_op_scope(op_name="memory_system.agentic_round1_bundle", category="retrieval",
                              metadata={"round": 1, "retrieval_mode": "agentic", "top_k": k,
                                        "sufficiency_check_docs": 1, "use_reranker": True}) as op:
            self.log.mark("retrieve", question.qid, op.op_id)
            sparse = self._list_node("sparse_retrieval_results", ranked)
            dense = self._list_node("dense_retrieval_results", ranked[::-1])
            comment_op(inputs=[query], outputs=[sparse], reuse_op=True)
            comment_op(inputs=[query], outputs=[dense], reuse_op=True)
            hybrid = self._list_node("hybrid_retrieval_results", ranked[:k])
            comment_op(inputs=[sparse, dense], outputs=[hybrid], reuse_op=True)
            r1 = self._list_node("reranked_round1_results", round1, scored=True)
            comment_op(inputs=[hybrid], outputs=[r1], category="retrieval", reuse_op=True)
            for_check = self._list_node("reranked_for_check", check, scored=True)
            comment_op(inputs=[r1], outputs=[for_check], category="retrieval", reuse_op=True)
            docs_text = "\n\n".join(f"Document {i}:\n  Title: {self.units[e]['subject']}\n  Content: "
                                    f"{self.units[e]['episode'][:500]}" for i, e in enumerate(check, 1))
            docs_rv = comment_variable(docs_text, to_runtime=True, class_name="sufficiency_check_docs_text",
                                       category="formatted_documents")
            comment_op(inputs=[for_check], outputs=[docs_rv], category="retrieval", reuse_op=True)
            prompt = comment_variable(SUFFICIENCY_TEMPLATE.format(query=question.text, documents=docs_text),
                                      to_runtime=True, class_name="sufficiency_check_prompt", category="prompt")
            comment_op(inputs=[query, docs_rv, (SUFFICIENCY_TEMPLATE, {
                "class_name": "sufficiency_check_prompt_template",
                "id_strategy": lambda _v: "sufficiency-check-prompt-template", "category": "prompt"})],
                outputs=[prompt], reuse_op=True)
            verdict = {"is_sufficient": sufficient, "reasoning": "Checked the documents against the query.",
                       "missing_information": [] if sufficient else [question.text],
                       "key_information_found": []}
            raw = comment_variable(json.dumps(verdict), to_runtime=True, class_name="raw_sufficiency_check_response",
                                   category="llm_response")
            comment_op(inputs=[prompt], outputs=[raw], category="retrieval", reuse_op=True)
            result = comment_variable(verdict, to_runtime=True, class_name="sufficiency_check_result",
                                      category="sufficiency_check_result", encoding_fn=json_text)
            comment_op(inputs=[raw], outputs=[result], category="retrieval", reuse_op=True)
            if sufficient:
                for e in round1:
                    comment_op(inputs=[result, r1], outputs=[self._unit_rv(e)], reuse_op=True)
                return round1
        round2 = [e for e in ranked if e not in round1][:k]
        with comment_op_scope(op_name="memory_system.agentic_round2_bundle", category="retrieval",
                              metadata={"round": 2, "retrieval_mode": "agentic", "top_k": k, "multi_query": True}):
            docs_rv2 = comment_variable(docs_text, to_runtime=True, class_name="multi_query_docs_text",
                                        category="formatted_documents")
            comment_op(inputs=[for_check], outputs=[docs_rv2], category="retrieval", reuse_op=True)
            prompt2 = comment_variable(MULTI_QUERY_TEMPLATE.format(query=question.text, documents=docs_text),
                                       to_runtime=True, class_name="multi_query_generation_prompt", category="prompt")
            comment_op(inputs=[query, result, docs_rv2, (MULTI_QUERY_TEMPLATE, {
                "class_name": "multi_query_generation_prompt_template",
                "id_strategy": lambda _v: "multi-query-generation-prompt-template", "category": "prompt"})],
                outputs=[prompt2], reuse_op=True)
            queries = [question.text.rstrip("?") + " exactly?", "The answer to: " + question.text]
            raw2 = comment_variable(json.dumps({"queries": queries, "reasoning": "Rephrased."}), to_runtime=True,
                                    class_name="raw_multi_query_generation_response", category="llm_response")
            comment_op(inputs=[prompt2], outputs=[raw2], category="retrieval", reuse_op=True)
            refined = comment_variable(queries, to_runtime=True, class_name="refined_queries",
                                       id_strategy=lambda v: " | ".join(v), category="refined_queries",
                                       encoding_fn=json_text)
            comment_op(inputs=[raw2], outputs=[refined], category="retrieval", reuse_op=True)
            round2_rv = self._list_node("round2_retrieval_results", round2)
            for text in queries:
                one = comment_variable(text, to_runtime=True, class_name="refined_query", category="refined_query")
                comment_op(inputs=[refined], outputs=[one], category="retrieval", reuse_op=True)
                sp = self._list_node("sparse_retrieval_results", round2)
                de = self._list_node("dense_retrieval_results", round2[::-1])
                comment_op(inputs=[one], outputs=[sp], reuse_op=True)
                comment_op(inputs=[one], outputs=[de], reuse_op=True)
                hy = self._list_node("hybrid_retrieval_results", round2)
                comment_op(inputs=[sp, de], outputs=[hy], reuse_op=True)
                comment_op(inputs=[hy], outputs=[round2_rv], category="retrieval", reuse_op=True)
        combined = round1 + [e for e in round2 if e not in round1]
        if fault == "final_rerank_drop":
            final = [e for e in combined if e not in holders][:k]
        else:
            final = [e for e in holders if e in combined] + [e for e in combined if e not in holders]
            final = final[:k]
        with comment_op_scope(op_name="memory_system.agentic_final_rerank", category="retrieval",
                              metadata={"top_k": k, "use_reranker": True}) as op:
            self.log.mark("final_rerank", question.qid, op.op_id)
            combined_rv = self._list_node("combined_retrieval_results", combined, scored=True)
            comment_op(inputs=[r1, round2_rv], outputs=[combined_rv], reuse_op=True)
            final_rv = self._list_node("final_reranked_results", final, scored=True)
            comment_op(inputs=[combined_rv], outputs=[final_rv], category="retrieval", reuse_op=True)
            for e in final:
                comment_op(inputs=[final_rv], outputs=[self._unit_rv(e)], reuse_op=True)
        return final
