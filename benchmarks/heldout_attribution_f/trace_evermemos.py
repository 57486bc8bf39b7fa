"""EverMemOS: a running buffer closed into memcells by an LLM boundary judge; each memcell becomes
an event memory (episode + event log); retrieval is hybrid BM25/embedding with RRF, optionally
agentic (sufficiency check, multi-query second round, reranked merge)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from benchmarks.heldout_attribution_f.conversations import Conversation, Msg
from benchmarks.heldout_attribution_f.runtime_env import Hooks, SimClock, jdump
from benchmarks.heldout_attribution_f.textsim import BM25, rank, rrf, states, tokens, trigram_cosine
from benchmarks.heldout_attribution_f.trace_utils import Entry, link, var
from smartcomment import comment_mutation, comment_op, comment_op_scope, comment_variable

BOUNDARY_TEMPLATE = (
    "You decide where episodes of a conversation end. Given the conversation history, the time gap and the "
    "newest messages, say whether the newest messages start something new: a new substantive topic, a new "
    "purpose, or a long pause. Greetings and small talk do not count; keep related content together and aim "
    "for episodes of a few meaningful exchanges.\n\nHistory:\n{history}\n\n{time_gap}\n\nNew messages:\n{new}\n\n"
    "Reply with JSON: {{\"reasoning\": str, \"should_end\": bool, \"confidence\": float, \"topic_summary\": str}}"
)
EPISODE_INSTRUCTIONS = (
    "Write each episode as a complete, self-contained account. Keep every name, time, place, number and feeling; "
    "use declarative sentences, not dialogue; make the key facts easy to find."
)
EPISODE_TEMPLATE = (
    "Turn the conversation below into an episodic memory in the third person. Treat {time} as the episode time, "
    "keep relative times and add the absolute date, keep every fact, number and place, and use names instead of "
    "pronouns. {instructions}\n\nConversation:\n{conversation}\n\nReply with JSON: {{\"title\": str, \"content\": str}}"
)
EVENT_LOG_TEMPLATE = (
    "List the atomic facts of this conversation for retrieval: one self-contained statement per fact, in the "
    "third person, saying who did or said what, with explicit dates (resolve relative dates against {time}).\n\n"
    "Conversation:\n{conversation}\n\nReply with JSON: {{\"event_log\": {{\"time\": str, \"atomic_fact\": [str]}}}}"
)
SUFFICIENCY_TEMPLATE = (
    "Do the documents below completely answer the query? Break temporal questions into the dates they need and "
    "check that each is stated. List the key facts you found and what is still missing.\n\nQuery: {query}\n\n"
    "Documents:\n{documents}\n\nReply with JSON: {{\"is_sufficient\": bool, \"reasoning\": str, "
    "\"key_information_found\": [str], \"missing_information\": [str]}}"
)
MULTI_QUERY_TEMPLATE = (
    "The documents did not fully answer the query. Write two or three search queries that could find the "
    "missing information in a long conversation: first a question, then a statement the answer would contain.\n\n"
    "Query: {query}\nFound: {found}\nMissing: {missing}\n\nDocuments:\n{documents}\n\n"
    "Reply with JSON: {{\"queries\": [str], \"reasoning\": str}}"
)
PARSER_SOURCE = "def parse_json_reply(text):\n    start, end = text.find('{'), text.rfind('}')\n    return json.loads(text[start:end + 1])\n"
DOCS_SOURCE = "def format_documents(docs):\n    return '\\n\\n'.join(f'Document {i}:\\n  Title: {d[\"subject\"]}\\n  Content: {d[\"episode\"][:500]}' for i, d in enumerate(docs, 1))\n"


@dataclass
class BoundaryDetectionResult:
    should_end: bool
    should_wait: bool
    reasoning: str
    confidence: float
    topic_summary: str


@dataclass
class Item:
    """One buffered message: what the buffer stores, plus what an extractor would read from it."""

    entry: dict[str, str]
    facts: list[str]
    msg: Msg


class _Buffer:
    def __init__(self) -> None:
        self.items: list[Item] = []

    def encode(self) -> str:
        return jdump([i.entry for i in self.items])


BUFFER = {"id_strategy": lambda _b: "message-buffer", "encoding_fn": _Buffer.encode, "category": "message_buffer"}
UNIT = {"id_strategy": lambda u: f"memory-unit-{u['event_id']}", "encoding_fn": jdump, "category": "memory_entry"}
PROJECTED = ("event_id", "timestamp", "summary", "subject", "episode", "foresights", "event_log")


def _gap_text(a: str, b: str) -> str:
    seconds = (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()
    if seconds < 0:
        return "Time gap: the new message is older than the history (out of order)."
    if seconds < 60:
        return f"Time gap: {int(seconds)} seconds (immediate response)"
    if seconds < 3600:
        return f"Time gap: {int(seconds // 60)} minutes (recent conversation)"
    if seconds < 86400:
        return f"Time gap: {int(seconds // 3600)} hours (same day, but significant pause)"
    return f"Time gap: {int(seconds // 86400)} days (long gap, likely new conversation)"


def _lines(items: list[Item]) -> str:
    return "\n".join(f"[{i.entry['timestamp'].replace('T', ' ')}] {i.entry['speaker_name']}: {i.entry['content']}"
                     for i in items)


class EverMemOSLayer:
    layer_type = "EverMemOS"
    split = "evermemos"

    def __init__(self, hooks: Hooks, rng: Any, clock: SimClock, conv: Conversation, mode: str = "agentic",
                 top_k: int = 3, check_docs: int = 2) -> None:
        self.hooks = hooks
        self.rng = rng
        self.clock = clock
        self.conv = conv
        self.mode = mode
        self.top_k = top_k
        self.check_docs = check_docs
        self.buffer = _Buffer()
        self.units: list[dict[str, Any]] = []
        self.cells: list[tuple[str, list[str]]] = []
        """(key, dia ids) of every memcell as finalised, for planning."""

    @property
    def config(self) -> dict[str, Any]:
        return {
            "llm_config": {"provider": "openai", "model": "gpt-4.1-mini", "temperature": 0.3},
            "embedding_config": {"provider": "vllm", "model": "Qwen3-Embedding-4B", "embedding_dims": 2560},
            "boundary_config": {"hard_token_limit": 8192, "hard_message_limit": 50, "use_smart_mask": True,
                                "smart_mask_threshold": 5},
            "retrieval_config": {"retrieval_mode": self.mode, "bm25_top_n": 50, "emb_top_n": 50, "rrf_k": 60,
                                 "final_top_k": 20, "use_reranker": True, "use_multi_query": True,
                                 "sufficiency_check_docs": self.check_docs},
            "extraction_config": {"enable_foresight": False, "enable_event_log": True},
        }

    # ------------------------------------------------------------------ construction
    def add_message(self, message_rv: Any, msg_id: str, content: str, msg: Msg, timestamp: str) -> None:
        entry = {"speaker_id": msg.speaker, "speaker_name": msg.speaker, "content": msg.text, "timestamp": timestamp,
                 "role": "user"}
        with comment_mutation(target=self.buffer, inputs=[message_rv], mutation_name="memory_system.message_buffer_update",
                              mutation_category="update", **BUFFER) as mutation:
            self.buffer.items.append(Item(entry, [f.text for f in msg.facts], msg))
        buffer_rv = mutation.result
        if len(self.buffer.items) < 2:
            return
        items = self.buffer.items
        smart = len(items) > 5
        history, new = items[:-1], items[-1:]
        shown = history[:-1] if smart else history
        gap = _gap_text(shown[-1].entry["timestamp"], new[0].entry["timestamp"])
        long_gap = "long gap" in gap
        should_end = msg.new_episode or long_gap
        with comment_op_scope(op_name="evermemos.boundary_detection", category="boundary_detection",
                              metadata={"smart_mask_flag": smart, "llm_model": "gpt-4.1-mini"}) as op:
            self.hooks.mark("boundary", msg_id, op.op_id)
            self.clock.wait(700)
            new_rv = var([i.entry for i in new], class_name="new_messages", category="new_messages")
            hist_rv = var([i.entry for i in history], class_name="history_messages", category="history_messages")
            link([buffer_rv], [new_rv], "split_message_buffer")
            link([buffer_rv], [hist_rv], "split_message_buffer")
            gap_rv = var(gap, class_name="time_gap", category="time_gap")
            link([hist_rv, new_rv], [gap_rv])
            template = var(BOUNDARY_TEMPLATE, name="boundary-detection-prompt-template", category="prompt",
                           metadata={"op_type": "boundary_detection"})
            prompt = var(BOUNDARY_TEMPLATE.format(history=_lines(shown), time_gap=gap, new=_lines(new)),
                         class_name="boundary_detection_prompt", category="prompt")
            link([hist_rv, new_rv, gap_rv, template], [prompt])
            if should_end:
                reason = ("A long pause separates the new message from the history; a new conversation starts."
                          if long_gap else f"The new message turns to {msg.topic or 'another subject'}, a new topic.")
                summary = f"{self.conv.speaker_a} and {self.conv.speaker_b} on {_topics(history)}"
            else:
                reason = "The new message continues the current topic."
                summary = ""
            result = BoundaryDetectionResult(should_end, True, reason, 0.9 if should_end else 0.8, summary)
            reply = {"reasoning": reason, "should_end": should_end, "confidence": result.confidence}
            if should_end:
                reply["topic_summary"] = summary
            raw = var(json.dumps(reply, ensure_ascii=False), class_name="raw_boundary_detection_response",
                      category="llm_response")
            link([prompt], [raw], "boundary_detection")
            result_rv = comment_variable(result, to_runtime=True, class_name="boundary_detection_result",
                                         category="llm_response")
            link([raw], [result_rv], "boundary_detection", metadata={"source_code": PARSER_SOURCE})
            if should_end:
                cell = self.hooks("boundary", msg_id, list(history), history=list(history))
                memcell = {"original_data": [i.entry for i in cell], "timestamp": history[-1].entry["timestamp"],
                           "summary": summary}
                cell_rv = var(memcell, class_name="temporary_variable", category="temporary_variable", as_json=True)
                link([buffer_rv, result_rv], [cell_rv])
            else:
                marker = var("NO_SPLIT", class_name="no_split_marker", category="marker")
                link([result_rv], [marker], "boundary_detection")
        if should_end:
            self._memorize(msg_id, cell_rv, cell, memcell["timestamp"], summary)
            keep = items[-2:] if smart else items[-1:]
            with comment_mutation(target=self.buffer, mutation_name="memory_system.message_buffer_update",
                                  mutation_category="update", mutation_metadata={"smart_mask_flag": smart},
                                  **BUFFER):
                self.buffer.items = list(keep)

    def flush(self) -> None:
        if not self.buffer.items:
            return
        items = list(self.buffer.items)
        buffer_rv = comment_variable(self.buffer, to_runtime=True, **BUFFER)
        self._memorize("flush", buffer_rv, items, items[-1].entry["timestamp"], "Final conversation segment")
        with comment_mutation(target=self.buffer, mutation_name="memory_system.message_buffer_update",
                              mutation_category="update", mutation_metadata={"flush": True}, **BUFFER):
            self.buffer.items = []

    def _memorize(self, key: str, source_rv: Any, cell: list[Item], timestamp: str, summary: str) -> None:
        cell = self.hooks("finalize", key, list(cell))
        self.cells.append((key, [i.msg.dia for i in cell]))
        event_id = f"{self.rng.getrandbits(96):024x}"
        unit: dict[str, Any] = {"event_id": event_id, "timestamp": f"{timestamp}+00:00",
                                "original_data": [i.entry for i in cell], "summary": summary, "subject": None,
                                "episode": None, "foresights": None, "event_log": None}
        op = comment_op(inputs=[source_rv], outputs=[(unit, UNIT)], op_name="memory_system.finalize_memory_unit",
                        category="initialization")
        self.hooks.mark("finalize", key, op.op_id)
        unit_rv = comment_variable(unit, to_runtime=True, **UNIT)
        facts: list[str] = []
        for item in cell:
            facts += [f for f in item.facts if f not in facts]
        when = datetime.fromisoformat(timestamp)
        names = sorted({i.entry["speaker_name"] for i in cell}, key=lambda n: n != self.conv.speaker_a)
        with comment_op_scope(op_name="memory_system.extract_memory", category="extraction",
                              metadata={"llm_model": "gpt-4.1-mini", "foresight_enabled": False,
                                        "event_log_enabled": True}) as scope:
            self.hooks.mark("episode", key, scope.op_id)
            self.clock.wait(2500)
            facts = self.hooks("episode", key, facts)
            title = f"{' and '.join(names)} on {_topics(cell)}"
            opening = f"On {when.strftime('%B %d, %Y').replace(' 0', ' ')}, {' and '.join(names)} talked."
            episode = " ".join([opening, *facts]) if facts else f"{opening} They exchanged a few words."
            instructions = var(EPISODE_INSTRUCTIONS, name="episode-extraction-custom-instructions", category="prompt",
                               metadata={"op_type": "episode_extraction", "mode": "group"})
            template = var(EPISODE_TEMPLATE, name="episode-extraction-prompt-template", category="prompt",
                           metadata={"op_type": "episode_extraction"})
            slot = when.strftime("%B %d, %Y (%A) at %I:%M %p UTC")
            prompt = var(EPISODE_TEMPLATE.format(time=slot, instructions=EPISODE_INSTRUCTIONS,
                                                 conversation=_lines(cell)),
                         class_name="episode_extraction_prompt", category="prompt")
            link([unit_rv, instructions, template], [prompt])
            raw = var(json.dumps({"title": title, "content": episode}, ensure_ascii=False),
                      class_name="raw_episode_extraction_response", category="llm_response")
            link([prompt], [raw], "extraction")
            memory = var({"subject": title, "summary": episode[:200], "episode": episode}, class_name="episode_memory",
                         category="llm_response", as_json=True)
            link([raw], [memory], "extraction", metadata={"source_code": PARSER_SOURCE})
            with comment_mutation(target=unit, inputs=[memory], mutation_category="mutation", reuse_op=True,
                                  **UNIT) as step:
                unit.update(subject=title, episode=episode, summary=episode[:200] + "...")
            self.clock.wait(2000)
            ev_template = var(EVENT_LOG_TEMPLATE, name="event-log-prompt-template", category="prompt",
                              metadata={"op_type": "event_log_extraction"})
            time_line = when.strftime("%B %d, %Y(%A) at %I:%M %p")
            ev_prompt = var(EVENT_LOG_TEMPLATE.format(time=time_line, conversation=_lines(cell)),
                            class_name="event_extraction_prompt", category="prompt")
            link([step.result, ev_template], [ev_prompt])
            ev_raw = var(json.dumps({"event_log": {"time": time_line, "atomic_fact": facts}}, ensure_ascii=False),
                         class_name="raw_event_log_extraction_response", category="llm_response")
            link([ev_prompt], [ev_raw], "extraction")
            event_log = var({"atomic_fact": facts}, class_name="event_log", category="llm_response", as_json=True)
            link([ev_raw], [event_log], "extraction", metadata={"source_code": PARSER_SOURCE})
            with comment_mutation(target=unit, inputs=[event_log], mutation_category="mutation", reuse_op=True, **UNIT):
                unit["event_log"] = {"atomic_fact": list(facts)}
            with comment_mutation(target=unit, mutation_category="mutation", reuse_op=True, **UNIT):
                del unit["original_data"]
        self.units.append(unit)

    # ------------------------------------------------------------------ retrieval
    def _doc_text(self, unit: dict[str, Any]) -> str:
        facts = (unit.get("event_log") or {}).get("atomic_fact") or []
        return " ".join(facts) if facts else " ".join([unit["subject"]] * 3 + [unit["summary"]] * 2 + [unit["episode"]])

    def _hybrid(self, query: str, k: int) -> tuple[list[int], list[int], list[int]]:
        texts = [self._doc_text(u) for u in self.units]
        sparse = rank(BM25(texts).scores(query))
        dense = rank([max((trigram_cosine(query, f) for f in (u.get("event_log") or {}).get("atomic_fact") or [u["episode"]]),
                          default=0.0) for u in self.units])
        return sparse, dense, rrf([sparse, dense])[:k]

    def _rerank(self, query: str, docs: list[int]) -> list[tuple[int, float]]:
        q = set(tokens(query))
        scored = []
        for i in docs:
            facts = (self.units[i].get("event_log") or {}).get("atomic_fact") or [self.units[i]["episode"]]
            best = max(((len(q & set(tokens(f))) / (len(q) or 1) + 0.3 * trigram_cosine(query, f)) / 1.3
                        for f in facts), default=0.0)
            scored.append((i, round(best, 4)))
        return sorted(scored, key=lambda x: (-x[1], docs.index(x[0])))

    def _projection(self, i: int, score: float) -> dict[str, Any]:
        u = self.units[i]
        return {"event_id": u["event_id"], "timestamp": u["timestamp"], "subject": u["subject"],
                "summary": u["summary"], "episode": u["episode"], "event_log": u["event_log"],
                "foresights": u["foresights"], "score": score}

    def _list_node(self, kind: str, scored: list[tuple[int, float]], by_score: bool = False) -> Any:
        if by_score:
            name = ", ".join(f"{self.units[i]['event_id']}-{s}" for i, s in scored)
        else:
            ids = ", ".join(self.units[i]["event_id"] for i, _ in scored)
            name = f"{ids} | ts={self.clock.ns()} | rand={self.rng.getrandbits(32):08x}"
        return var([self._projection(i, s) for i, s in scored], name=name, class_name=kind, category=kind,
                   as_json=True)

    def _unit_outputs(self, docs: list[int]) -> list[Any]:
        return [({k: self.units[i][k] for k in PROJECTED}, UNIT) for i in docs]

    def _check_text(self, docs: list[int]) -> str:
        return "\n\n".join(f"Document {n}:\n  Title: {self.units[i]['subject']}\n  Content: "
                           f"{self.units[i]['episode'][:500] + ('...' if len(self.units[i]['episode']) > 500 else '')}"
                           for n, i in enumerate(docs, start=1))

    def retrieve(self, query_rv: Any, qa_id: str, question: Any, k: int) -> list[Entry]:
        if not self.units:
            return []
        docs = self._agentic(query_rv, qa_id, question, k) if self.mode == "agentic" else \
            self._plain_hybrid(query_rv, qa_id, question, k)
        return [Entry(f"memory-unit-{self.units[i]['event_id']}", self.units[i]["episode"],
                      f"{self.units[i]['subject']}: {self.units[i]['episode']}") for i in docs]

    def _plain_hybrid(self, query_rv: Any, qa_id: str, question: Any, k: int) -> list[int]:
        with comment_op_scope(op_name="memory_system.hybrid_retrieval", category="retrieval",
                              metadata={"mode": "hybrid_retrieval", "top_k": k, "embedding_model": "Qwen3-Embedding-4B",
                                        "rrf_k": 60}) as op:
            self.hooks.mark("hybrid", qa_id, op.op_id)
            sparse, dense, top = self._hybrid(question.text, k)
            top = self.hooks("hybrid", qa_id, top, ranking=rrf([sparse, dense]),
                             texts=[u["episode"] for u in self.units])
            sizes = {"bm25_top_n": 50, "emb_top_n": 50}
            sparse_rv = self._list_node("sparse_retrieval_results", [(i, 0.0) for i in sparse])
            dense_rv = self._list_node("dense_retrieval_results", [(i, 0.0) for i in dense])
            link([query_rv], [sparse_rv], metadata=sizes)
            link([query_rv], [dense_rv], metadata=sizes)
            for out in self._unit_outputs(top):
                link([sparse_rv, dense_rv], [out], metadata={"rrf_k": 60})
        return top

    def _agentic(self, query_rv: Any, qa_id: str, question: Any, k: int) -> list[int]:
        conv = self.conv
        with comment_op_scope(op_name="memory_system.agentic_round1_bundle", category="retrieval",
                              metadata={"round": 1, "retrieval_mode": "agentic", "top_k": k,
                                        "sufficiency_check_docs": self.check_docs, "use_reranker": True}) as op:
            self.hooks.mark("round1", qa_id, op.op_id)
            sparse, dense, r1 = self._hybrid(question.text, k)
            sparse_rv = self._list_node("sparse_retrieval_results", [(i, 0.0) for i in sparse])
            dense_rv = self._list_node("dense_retrieval_results", [(i, 0.0) for i in dense])
            link([query_rv], [sparse_rv])
            link([query_rv], [dense_rv])
            hybrid_rv = self._list_node("hybrid_retrieval_results", [(i, 0.0) for i in r1])
            link([sparse_rv, dense_rv], [hybrid_rv])
            self.clock.wait(400)
            reranked = self._rerank(question.text, r1)
            r1_rv = self._list_node("reranked_round1_results", reranked, by_score=True)
            link([hybrid_rv], [r1_rv], "retrieval")
            check = [i for i, _ in reranked[:self.check_docs]]
            check_rv = self._list_node("reranked_for_check", reranked[:self.check_docs], by_score=True)
            link([r1_rv], [check_rv], "retrieval")
            docs_text = self._check_text(check)
            docs_rv = var(docs_text, class_name="sufficiency_check_docs_text", category="formatted_documents")
            link([check_rv], [docs_rv], "retrieval", metadata={"source_code": DOCS_SOURCE})
            template = var(SUFFICIENCY_TEMPLATE, name="sufficiency-check-prompt-template",
                           class_name="sufficiency_check_prompt_template", category="prompt")
            prompt = var(SUFFICIENCY_TEMPLATE.format(query=question.text, documents=docs_text),
                         class_name="sufficiency_check_prompt", category="prompt")
            link([query_rv, docs_rv, template], [prompt])
            found = [p for p in question.pieces if states(conv, p, docs_text)]
            sufficient = len(found) == len(question.pieces)
            sufficient = self.hooks("check", qa_id, sufficient, docs=check)
            verdict = {
                "is_sufficient": sufficient,
                "reasoning": ("The documents state everything the query asks for." if sufficient else
                              "The documents do not state everything the query asks for."),
                "key_information_found": [_gist(conv, p) for p in found],
                "missing_information": [] if sufficient else
                [f"what the query asks about {p.who}" for p in question.pieces if p not in found]
                or ["the specific detail the query asks for"],
            }
            self.clock.wait(900)
            raw = var(json.dumps(verdict, ensure_ascii=False), class_name="raw_sufficiency_check_response",
                      category="llm_response")
            link([prompt], [raw], "retrieval", metadata={"source_code": PARSER_SOURCE})
            result_rv = var(verdict, class_name="sufficiency_check_result", category="sufficiency_check_result",
                            as_json=True)
            link([raw], [result_rv], "retrieval")
            if sufficient:
                final = [i for i, _ in reranked[:k]]
                for out in self._unit_outputs(final):
                    link([result_rv, r1_rv], [out])
                return final
        with comment_op_scope(op_name="memory_system.agentic_round2_bundle", category="retrieval",
                              metadata={"round": 2, "retrieval_mode": "agentic", "top_k": k,
                                        "multi_query": True}) as op:
            self.hooks.mark("round2", qa_id, op.op_id)
            mq_text = var(docs_text, class_name="multi_query_docs_text", category="formatted_documents")
            link([check_rv], [mq_text], "retrieval")
            template = var(MULTI_QUERY_TEMPLATE, name="multi-query-generation-prompt-template",
                           class_name="multi_query_generation_prompt_template", category="prompt")
            prompt = var(MULTI_QUERY_TEMPLATE.format(
                query=question.text, found=", ".join(verdict["key_information_found"]) or "N/A",
                missing=", ".join(verdict["missing_information"]) or "N/A", documents=docs_text),
                class_name="multi_query_generation_prompt", category="prompt")
            link([query_rv, result_rv, mq_text, template], [prompt])
            queries = self.hooks("queries", qa_id, list(question.followups))
            self.clock.wait(800)
            raw = var(json.dumps({"queries": queries, "reasoning": "Target the missing information directly."},
                                 ensure_ascii=False),
                      class_name="raw_multi_query_generation_response", category="llm_response")
            link([prompt], [raw], "retrieval", metadata={"source_code": PARSER_SOURCE})
            refined_rv = var(queries, name=" | ".join(queries), class_name="refined_queries", category="refined_queries",
                             as_json=True)
            link([raw], [refined_rv], "retrieval")
            lists, list_rvs = [], []
            for q in queries:
                q_rv = var(q, class_name="refined_query", category="refined_query")
                link([refined_rv], [q_rv], "retrieval")
                s, d, h = self._hybrid(q, k)
                s_rv = self._list_node("sparse_retrieval_results", [(i, 0.0) for i in s])
                d_rv = self._list_node("dense_retrieval_results", [(i, 0.0) for i in d])
                link([q_rv], [s_rv])
                link([q_rv], [d_rv])
                h_rv = self._list_node("hybrid_retrieval_results", [(i, 0.0) for i in h])
                link([s_rv, d_rv], [h_rv])
                lists.append(h)
                list_rvs.append(h_rv)
            r2 = rrf(lists)[:k] if len(lists) > 1 else lists[0]
            r2_rv = self._list_node("round2_retrieval_results", [(i, 0.0) for i in r2])
            for h_rv in list_rvs:
                link([h_rv], [r2_rv], "retrieval")
        with comment_op_scope(op_name="memory_system.agentic_final_rerank", category="retrieval",
                              metadata={"top_k": k, "use_reranker": True}) as op:
            self.hooks.mark("final", qa_id, op.op_id)
            combined = [i for i, _ in reranked] + [i for i in r2 if i not in r1]
            combined = combined[:2 * k]
            combined_rv = self._list_node("combined_retrieval_results", [(i, 0.0) for i in combined])
            link([r1_rv, r2_rv], [combined_rv])
            self.clock.wait(400)
            scored = self._rerank(question.text, combined)[:k]
            scored = self.hooks("final", qa_id, scored, combined=combined, ranking=[i for i, _ in
                                                                                     self._rerank(question.text, combined)],
                                texts=[u["episode"] for u in self.units])
            final_rv = self._list_node("final_reranked_results", scored, by_score=True)
            link([combined_rv], [final_rv], "retrieval")
            final = [i for i, _ in scored]
            for out in self._unit_outputs(final):
                link([final_rv], [out])
        return final

    def store_texts(self) -> list[str]:
        return [f"{u['subject']}: {u['episode']}" for u in self.units]

    def hit_text(self, i: int) -> str:
        return self.store_texts()[i]


def _topics(items: list[Item]) -> str:
    seen: list[str] = []
    for i in items:
        if i.msg.topic and i.msg.topic not in seen:
            seen.append(i.msg.topic)
    return ", ".join(seen[:3]) or "a short exchange"


def _gist(conv: Conversation, piece: Any) -> str:
    return f"{piece.who}: {conv.fact(piece.fact).text.split(',')[0].rstrip('.')}"
