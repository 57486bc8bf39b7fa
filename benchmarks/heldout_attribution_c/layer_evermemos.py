"""The simulated EverMemOS layer (spec-evermemos §7): buffer → boundary → memcell → episode and
event log → agentic two-round retrieval with a reranker."""

from __future__ import annotations

import json
import random

from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable, current_context

from .layers import Fault, _rank, cover
from .tracing import as_json, named, overlap_score, unit_identity

BOUNDARY_TEMPLATE = "Decide whether the new message starts a new topic or episode after the history. Reply JSON {should_end, topic_summary}."
EPISODE_TEMPLATE = "Turn the conversation into a third-person episodic memory with a title; keep every fact, name, number and time."
EPISODE_CUSTOM = "Each episode is a complete story; keep names, times, places and feelings; declarative, not dialogue."
EVENT_LOG_TEMPLATE = "List the atomic facts of the conversation, one meaning unit each, with who said or did what."
SUFFICIENCY_TEMPLATE = "Do the documents completely answer the query? Reply JSON {is_sufficient, reasoning, key_information_found, missing_information}."
MULTI_QUERY_TEMPLATE = "Write 2-3 follow-up queries that would find the missing information. Reply JSON {queries, reasoning}."
HISTORY_LIMIT = 6


class EverMemOSLayer:
    split = "evermemos"
    project = "EverMemOS"
    top_k = 4

    def __init__(self, fault: Fault, rng: random.Random):
        self.fault = fault
        self.rng = rng
        self.buffer: list[dict] = []
        self.buffer_index: list[int] = []
        self.cells: dict[str, dict] = {}  # event id -> last unit value
        self.cell_messages: dict[str, list[int]] = {}
        self.prompts: dict[str, object] = {}
        self.counter = 0

    # -- helpers ------------------------------------------------------------------------------
    def _prompt(self, name: str, text: str, op_type: str):
        if name not in self.prompts:
            self.prompts[name] = comment_variable(text, to_runtime=True, id_strategy=named(name), category="prompt",
                                                  metadata={"op_type": op_type})
        return self.prompts[name]

    def _mutate_buffer(self, inputs, change, meta=None) -> None:
        with comment_op_scope(op_name="memory_system.message_buffer_update", category="update", metadata=meta or {}) as op:
            with comment_mutation(target=self, inputs=inputs, encoding_fn=lambda o: as_json(o.buffer),
                                  id_strategy=named("message-buffer"), category="message_buffer",
                                  mutation_category="update", reuse_op=True) as mut:
                change(op)
        self.buffer_node = mut.result

    def store_texts(self) -> list[str]:
        return [c["subject"] + ": " + c["episode"] for c in self.cells.values()]

    # -- ingestion ----------------------------------------------------------------------------
    def add_message(self, gidx: int, session: int, node, line: str, msg, facts_by_index) -> None:
        f = self.fault
        self.facts_by_index = facts_by_index
        entry = json.loads(node.value)

        def append(op):
            if f.is_("em_buffer_drop") and gidx == f.msg_index:
                f.mark(op.op_id)
                return
            self.buffer.append({"content": entry["content"], "name": entry["name"], "role": entry["role"],
                                "timestamp": entry["timestamp"]})
            self.buffer_index.append(gidx)

        self._mutate_buffer([node], append)
        if len(self.buffer) < 2:
            return
        history, new = self.buffer[:-1], self.buffer[-1:]
        hist_idx = self.buffer_index[:-1]
        new_session = history[-1]["timestamp"] != new[0]["timestamp"]
        should_end = new_session or len(history) >= HISTORY_LIMIT
        template = self._prompt("boundary-detection-prompt-template", BOUNDARY_TEMPLATE, "boundary_detection")
        with comment_op_scope(op_name="evermemos.boundary_detection", category="boundary_detection",
                              metadata={"smart_mask_flag": True, "llm_model": "gpt-4.1-mini"}) as op:
            hist_node = comment_variable(history, to_runtime=True, class_name="history_messages", category="history_messages")
            new_node = comment_variable(new, to_runtime=True, class_name="new_messages", category="new_messages")
            comment_op(inputs=[self.buffer_node], outputs=[hist_node, new_node], category="split_message_buffer", reuse_op=True)
            gap = "a new session started" if new_session else "same conversation, minutes apart"
            gap_node = comment_variable(gap, to_runtime=True, class_name="time_gap", category="time_gap")
            comment_op(inputs=[hist_node, new_node], outputs=[gap_node], reuse_op=True)
            prompt = f"{BOUNDARY_TEMPLATE}\nHistory: {json.dumps(history, ensure_ascii=False)}\nNew: {json.dumps(new, ensure_ascii=False)}\nGap: {gap}"
            prompt_node = comment_variable(prompt, to_runtime=True, class_name="boundary_detection_prompt", category="prompt")
            comment_op(inputs=[hist_node, new_node, gap_node, template], outputs=[prompt_node], reuse_op=True)
            topic = history[0]["content"][:60]
            raw = json.dumps({"should_end": should_end, "topic_summary": topic if should_end else ""})
            raw_node = comment_variable(raw, to_runtime=True, class_name="raw_boundary_detection_response", category="llm_response")
            comment_op(inputs=[prompt_node], outputs=[raw_node], category="boundary_detection", reuse_op=True)
            result = f"BoundaryDetectionResult(should_end={should_end}, should_wait=False, topic_summary={topic if should_end else ''!r})"
            result_node = comment_variable(result, to_runtime=True, class_name="boundary_detection_result",
                                           encoding_fn=lambda v: v, category="llm_response")
            comment_op(inputs=[raw_node], outputs=[result_node], category="boundary_detection", reuse_op=True)
            if not should_end:
                comment_op(inputs=[result_node], outputs=[("NO_SPLIT", {"class_name": "no_split_marker", "category": "marker"})],
                           category="boundary_detection", reuse_op=True)
                return
            cell_msgs, cell_idx = list(history), list(hist_idx)
            if f.is_("em_boundary_drop") and f.msg_index in cell_idx:
                pos = cell_idx.index(f.msg_index)
                del cell_msgs[pos], cell_idx[pos]
                f.mark(op.op_id)
            temp = {"original_data": cell_msgs, "timestamp": history[-1]["timestamp"], "summary": topic}
            temp_node = comment_variable(temp, to_runtime=True, class_name="temporary_variable", encoding_fn=as_json,
                                         category="temporary_variable")
            comment_op(inputs=[self.buffer_node, result_node], outputs=[temp_node], reuse_op=True)
        self._finalize(temp_node, cell_msgs, cell_idx, history[-1]["timestamp"], topic)
        keep = self.buffer[-2:], self.buffer_index[-2:]

        def reset(_op):
            self.buffer[:] = keep[0]
            self.buffer_index[:] = keep[1]

        self._mutate_buffer(None, reset, {"smart_mask_flag": True})

    def _finalize(self, source_node, cell_msgs, cell_idx, timestamp, summary) -> None:
        f = self.fault
        event_id = f"{self.rng.getrandbits(96):024x}"
        with comment_op_scope(op_name="memory_system.finalize_memory_unit", category="initialization") as op:
            if f.is_("em_finalize_cut") and f.msg_index in cell_idx:
                pos = cell_idx.index(f.msg_index)
                cell_msgs = list(cell_msgs)
                cell_msgs[pos] = dict(cell_msgs[pos], content=cell_msgs[pos]["content"][: cell_msgs[pos]["content"].find(f.msg_key)].rstrip() + " ...")
                f.mark(op.op_id)
            unit = {"event_id": event_id, "timestamp": timestamp, "original_data": cell_msgs, "summary": summary,
                    "subject": None, "episode": None, "foresights": None, "event_log": None}
            opts = {"id_strategy": unit_identity("event_id"), "encoding_fn": as_json, "category": "memory_entry"}
            comment_op(inputs=[source_node], outputs=[(unit, opts)], category="initialization", reuse_op=True)
        self._extract(unit, cell_msgs, cell_idx)
        self.cell_messages[event_id] = cell_idx

    def _facts_for(self, cell_msgs, cell_idx) -> list[str]:
        f = self.fault
        facts = []
        for m, i in zip(cell_msgs, cell_idx, strict=False):
            for fact in self.facts_by_index[i]:
                if i == f.msg_index and f.msg_key not in m["content"] and f.fact_key in fact:
                    continue  # the memcell's copy of the message lost the fact
                facts.append(fact)
        return facts

    def _extract(self, unit: dict, cell_msgs, cell_idx) -> None:
        f = self.fault
        opts = {"id_strategy": unit_identity("event_id"), "encoding_fn": as_json, "category": "memory_entry"}
        with comment_op_scope(op_name="memory_system.extract_memory", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini", "foresight_enabled": False, "event_log_enabled": True}) as op:
            facts = self._facts_for(cell_msgs, cell_idx)
            if f.is_("em_episode_swap", "em_episode_partial") and f.msg_index in cell_idx:
                facts = [(f.rewrite_fact(x) if f.fact_key in x else x) for x in facts]
                facts = [x for x in facts if x]
                f.mark(op.op_id)
            names = sorted({m["name"] for m in cell_msgs})
            title = f"{' and '.join(names)} catch up: " + (facts[0] if facts else "a short chat")
            episode = f"On {unit['timestamp'][:10]}, {' and '.join(names)} talked. " + " ".join(x + "." for x in facts)
            custom = self._prompt("episode-extraction-custom-instructions", EPISODE_CUSTOM, "episode_extraction")
            template = self._prompt("episode-extraction-prompt-template", EPISODE_TEMPLATE, "episode_extraction")
            ep_prompt = comment_variable(EPISODE_TEMPLATE + "\n" + json.dumps(cell_msgs, ensure_ascii=False), to_runtime=True,
                                         class_name="episode_extraction_prompt", category="prompt")
            comment_op(inputs=[(unit, opts), custom, template], outputs=[ep_prompt], reuse_op=True)
            raw = json.dumps({"title": title, "content": episode}, ensure_ascii=False)
            raw_node = comment_variable(raw, to_runtime=True, class_name="raw_episode_extraction_response", category="llm_response")
            comment_op(inputs=[ep_prompt], outputs=[raw_node], category="extraction", reuse_op=True)
            ep_node = comment_variable({"subject": title, "summary": episode[:200], "episode": episode}, to_runtime=True,
                                       class_name="episode_memory", encoding_fn=as_json, category="llm_response")
            comment_op(inputs=[raw_node], outputs=[ep_node], category="extraction", reuse_op=True)
            with comment_mutation(target=unit, inputs=[ep_node], mutation_category="mutation", reuse_op=True, **opts):
                unit.update(subject=title, episode=episode, summary=episode[:200] + "...")
            ev_template = self._prompt("event-log-prompt-template", EVENT_LOG_TEMPLATE, "event_log_extraction")
            ev_prompt = comment_variable(EVENT_LOG_TEMPLATE + "\n" + "\n".join(f"{m['name']}: {m['content']}" for m in cell_msgs),
                                         to_runtime=True, class_name="event_extraction_prompt", category="prompt")
            comment_op(inputs=[(unit, opts), ev_template], outputs=[ev_prompt], reuse_op=True)
            ev_raw = comment_variable(json.dumps({"event_log": {"time": unit["timestamp"], "atomic_fact": facts}}, ensure_ascii=False),
                                      to_runtime=True, class_name="raw_event_log_extraction_response", category="llm_response")
            comment_op(inputs=[ev_prompt], outputs=[ev_raw], category="extraction", reuse_op=True)
            ev_node = comment_variable({"atomic_fact": facts}, to_runtime=True, class_name="event_log", encoding_fn=as_json,
                                       category="llm_response")
            comment_op(inputs=[ev_raw], outputs=[ev_node], category="extraction", reuse_op=True)
            with comment_mutation(target=unit, inputs=[ev_node], mutation_category="mutation", reuse_op=True, **opts):
                unit["event_log"] = {"atomic_fact": facts}
            with comment_mutation(target=unit, mutation_category="mutation", reuse_op=True, **opts):
                del unit["original_data"]
        self.cells[unit["event_id"]] = unit

    def flush(self) -> None:
        if not self.buffer:
            return
        self._finalize(self.buffer_node, list(self.buffer), list(self.buffer_index), self.buffer[-1]["timestamp"],
                       "Final conversation segment")

        def clear(_op):
            self.buffer.clear()
            self.buffer_index.clear()

        self._mutate_buffer(None, clear, {"flush": True})

    # -- retrieval ----------------------------------------------------------------------------
    def _list_node(self, cls: str, ranked, fresh: bool):
        self.counter += 1
        items = [dict(self._projected(eid), score=score) for eid, score in ranked]
        ids = ", ".join(eid for eid, _ in ranked)
        if fresh:
            name = f"{ids} | ts={1_700_000_000_000_000_000 + self.counter} | rand={self.rng.getrandbits(32):08x}"
        else:
            name = ", ".join(f"{eid}-{score}" for eid, score in ranked)
        return comment_variable(items, to_runtime=True, class_name=cls, id_strategy=named(name), encoding_fn=as_json,
                                category=cls)

    def _projected(self, eid: str) -> dict:
        c = self.cells[eid]
        return {"event_id": eid, "timestamp": c["timestamp"], "subject": c["subject"], "summary": c["summary"],
                "episode": c["episode"], "event_log": c["event_log"], "foresights": c["foresights"]}

    def _unit_out(self, eid: str):
        return (self.cells[eid], {"id_strategy": unit_identity("event_id"), "encoding_fn": as_json, "category": "memory_entry"})

    def retrieve(self, query_text: str, qid: int, graph, evidence_keys: list[str]) -> list[tuple[str, str]]:
        query = current_context().get_variable("query")
        f = self.fault
        k = self.top_k
        items = [(eid, c["subject"] + " " + c["episode"]) for eid, c in self.cells.items()]
        must = cover(query_text, items, evidence_keys)
        holder = {eid for eid, text in items if f.fact_key in text}
        round1_miss = f.is_("em_round1_miss") and qid == f.qid
        final_cut = f.is_("em_final_truncate") and qid == f.qid
        multi = len(evidence_keys) > 1
        banned = holder if round1_miss else set()
        r1 = _rank(query_text, items, k, cover(query_text, items, evidence_keys, banned), banned)
        sparse = sorted(((eid, overlap_score(query_text, t)) for eid, t in items), key=lambda t: -t[1])
        dense = sorted(((eid, round(overlap_score(query_text, t) * 0.9 + 0.05, 4)) for eid, t in items), key=lambda t: -t[1])
        sufficient = round1_miss or not (multi or final_cut)
        with comment_op_scope(op_name="memory_system.agentic_round1_bundle", category="retrieval",
                              metadata={"round": 1, "retrieval_mode": "agentic", "top_k": k, "sufficiency_check_docs": k,
                                        "use_reranker": True}) as op1:
            s_node = self._list_node("sparse_retrieval_results", sparse, True)
            d_node = self._list_node("dense_retrieval_results", dense, True)
            comment_op(inputs=[query], outputs=[s_node, d_node], reuse_op=True)
            h_node = self._list_node("hybrid_retrieval_results", r1, True)
            comment_op(inputs=[s_node, d_node], outputs=[h_node], reuse_op=True)
            rr_node = self._list_node("reranked_round1_results", r1, False)
            comment_op(inputs=[h_node], outputs=[rr_node], category="retrieval", reuse_op=True)
            check_node = self._list_node("reranked_for_check", r1, False)
            comment_op(inputs=[rr_node], outputs=[check_node], category="retrieval", reuse_op=True)
            docs = "\n\n".join(f"Document {i}:\n  Title: {self.cells[e]['subject']}\n  Content: {self.cells[e]['episode'][:500]}"
                               for i, (e, _) in enumerate(r1, 1))
            docs_node = comment_variable(docs, to_runtime=True, class_name="sufficiency_check_docs_text", category="formatted_documents")
            comment_op(inputs=[check_node], outputs=[docs_node], category="retrieval", reuse_op=True)
            tmpl = self._prompt("sufficiency_check_prompt_template:sufficiency-check-prompt-template", SUFFICIENCY_TEMPLATE, "retrieval")
            prompt_node = comment_variable(f"{SUFFICIENCY_TEMPLATE}\nQuery: {query_text}\n{docs}", to_runtime=True,
                                           class_name="sufficiency_check_prompt", category="prompt")
            comment_op(inputs=[query, docs_node, tmpl], outputs=[prompt_node], reuse_op=True)
            verdict = {"is_sufficient": sufficient,
                       "reasoning": "The documents state the answer." if sufficient else "Part of the answer may be missing.",
                       "key_information_found": [self.cells[e]["subject"] for e, _ in r1[:2]],
                       "missing_information": [] if sufficient else ["other details asked by: " + query_text]}
            raw_node = comment_variable(json.dumps(verdict), to_runtime=True, class_name="raw_sufficiency_check_response",
                                        category="llm_response")
            comment_op(inputs=[prompt_node], outputs=[raw_node], category="retrieval", reuse_op=True)
            res_node = comment_variable(verdict, to_runtime=True, class_name="sufficiency_check_result", encoding_fn=as_json,
                                        category="sufficiency_check_result")
            comment_op(inputs=[raw_node], outputs=[res_node], category="retrieval", reuse_op=True)
            if sufficient:
                for eid, _ in r1:
                    comment_op(inputs=[res_node, rr_node], outputs=[self._unit_out(eid)], reuse_op=True)
        if round1_miss:
            f.mark(op1.op_id)
        if sufficient:
            return [(f"memory-unit-{e}", f"{self.cells[e]['subject']}: {self.cells[e]['episode']}") for e, _ in r1]
        with comment_op_scope(op_name="memory_system.agentic_round2_bundle", category="retrieval",
                              metadata={"round": 2, "retrieval_mode": "agentic", "top_k": k, "multi_query": True}):
            docs2 = comment_variable(docs, to_runtime=True, class_name="multi_query_docs_text", category="formatted_documents")
            comment_op(inputs=[check_node], outputs=[docs2], category="retrieval", reuse_op=True)
            tmpl2 = self._prompt("multi_query_generation_prompt_template:multi-query-generation-prompt-template",
                                 MULTI_QUERY_TEMPLATE, "retrieval")
            p2 = comment_variable(f"{MULTI_QUERY_TEMPLATE}\nQuery: {query_text}", to_runtime=True,
                                  class_name="multi_query_generation_prompt", category="prompt")
            comment_op(inputs=[query, res_node, docs2, tmpl2], outputs=[p2], reuse_op=True)
            queries = [query_text.rstrip("?") + " in detail?", "All the details about: " + query_text.rstrip("?")]
            raw2 = comment_variable(json.dumps({"queries": queries, "reasoning": "broaden"}), to_runtime=True,
                                    class_name="raw_multi_query_generation_response", category="llm_response")
            comment_op(inputs=[p2], outputs=[raw2], category="retrieval", reuse_op=True)
            rq_node = comment_variable(queries, to_runtime=True, id_strategy=named(" | ".join(queries)), class_name="refined_queries",
                                       encoding_fn=as_json, category="refined_queries")
            comment_op(inputs=[raw2], outputs=[rq_node], category="retrieval", reuse_op=True)
            r2_lists = []
            for q in queries:
                q_node = comment_variable(q, to_runtime=True, class_name="refined_query", category="refined_query")
                comment_op(inputs=[rq_node], outputs=[q_node], category="retrieval", reuse_op=True)
                ranked = _rank(q, items, k, must, set())
                sn = self._list_node("sparse_retrieval_results", ranked, True)
                dn = self._list_node("dense_retrieval_results", ranked, True)
                comment_op(inputs=[q_node], outputs=[sn, dn], reuse_op=True)
                hn = self._list_node("hybrid_retrieval_results", ranked, True)
                comment_op(inputs=[sn, dn], outputs=[hn], reuse_op=True)
                r2_lists.append((hn, ranked))
            fused: dict[str, float] = {}
            for _, ranked in r2_lists:
                for rank, (eid, _) in enumerate(ranked, 1):
                    fused[eid] = round(fused.get(eid, 0.0) + 1 / (60 + rank), 6)
            r2 = sorted(fused.items(), key=lambda t: -t[1])[:k]
            r2_node = self._list_node("round2_retrieval_results", r2, False)
            for hn, _ in r2_lists:
                comment_op(inputs=[hn], outputs=[r2_node], category="retrieval", reuse_op=True)
        seen = {e for e, _ in r1}
        combined = (r1 + [(e, s) for e, s in r2 if e not in seen])[: 2 * k]
        with comment_op_scope(op_name="memory_system.agentic_final_rerank", category="retrieval",
                              metadata={"top_k": k, "use_reranker": True}) as op3:
            c_node = self._list_node("combined_retrieval_results", combined, False)
            comment_op(inputs=[rr_node, r2_node], outputs=[c_node], reuse_op=True)
            scored = sorted(((e, round(overlap_score(query_text, self.cells[e]["episode"]) + 0.01, 4)) for e, _ in combined),
                            key=lambda t: -t[1])
            keep = [e for e, _ in scored if e in must][:k]
            if final_cut:
                keep = [e for e in keep if e not in holder]
                f.mark(op3.op_id)
            final = [(e, s) for e, s in scored if e in keep] + [(e, s) for e, s in scored if e not in keep and e not in must]
            if final_cut:
                final = [(e, s) for e, s in final if e not in holder]
            final = final[:k]
            fin_node = self._list_node("final_reranked_results", final, False)
            comment_op(inputs=[c_node], outputs=[fin_node], category="retrieval", reuse_op=True)
            for eid, _ in final:
                comment_op(inputs=[fin_node], outputs=[self._unit_out(eid)], reuse_op=True)
        return [(f"memory-unit-{e}", f"{self.cells[e]['subject']}: {self.cells[e]['episode']}") for e, _ in final]
