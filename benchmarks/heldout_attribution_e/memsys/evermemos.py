"""EverMemOS: boundary detection closes memcells, each becomes an event unit with an episode and an event log."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime
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
from benchmarks.heldout_attribution_e.memsys.text import bm25_scores, cosine, dumps, rank
from smartcomment import (
    comment_link,
    comment_mutation,
    comment_op,
    comment_op_scope,
    comment_variable,
    current_context,
)

BOUNDARY_TEMPLATE = (
    "You judge episode boundaries in a conversation. Given the conversation history, the time gap and "
    "the new message, decide whether the new message starts a new episode (a new topic or purpose, or a "
    "long pause) or continues the current one; small talk stays with its episode.\n"
    "History:\n{history}\n{time_gap}\nNew message:\n{new}\n"
    'Reply with JSON: {{"reasoning": str, "should_end": bool, "confidence": float, "topic_summary": str}}.'
)
EPISODE_TEMPLATE = (
    "Turn the conversation below into an episodic memory: a third-person, chronological record that keeps "
    "every fact, name, number, date and place. Time of the episode: {time}.\n{conversation}\n"
    'Reply with JSON: {{"title": str, "content": str}}.'
)
EPISODE_INSTRUCTIONS = (
    "Each episode must read as a complete story; keep names, times, places and feelings; write declaratively, "
    "not as dialogue; make the key information easy to retrieve."
)
EVENT_LOG_TEMPLATE = (
    "Write an event log of the conversation below as atomic facts: one meaning per fact, third person, who "
    "said or did what made explicit, dates kept. TIME: {time}.\n{conversation}\n"
    'Reply with JSON: {{"event_log": {{"time": str, "atomic_fact": [str]}}}}.'
)
SUFFICIENCY_TEMPLATE = (
    "Do the documents below completely answer the query? Check every part of it, dates included.\n"
    "Query: {query}\nDocuments:\n{documents}\n"
    'Reply with JSON: {{"is_sufficient": bool, "reasoning": str, "key_information_found": [str], '
    '"missing_information": [str]}}.'
)
PARSE_JSON_SOURCE = "result = json.loads(text[text.index('{'):text.rindex('}') + 1])"
FORMAT_DOCS_SOURCE = "'\\n\\n'.join(f'Document {i}:\\n  Title: {d.subject}\\n  Content: {d.episode[:500]}' for i, d in enumerate(docs, 1))"
_UNIT = {"id_strategy": lambda v: f"memory-unit-{v['event_id']}", "encoding_fn": dumps, "category": "memory_entry"}
_PROJECTED = ("event_id", "timestamp", "summary", "subject", "episode", "foresights", "event_log")
RRF_K = 60
POOL = 50


@dataclass(frozen=True)
class BoundaryDetectionResult:
    should_end: bool
    should_wait: bool
    reasoning: str
    confidence: float
    topic_summary: str


def _buffer_id(_value: Any) -> str:
    return "message-buffer"


def _time_gap(previous: str, new: str) -> str:
    seconds = (datetime.fromisoformat(new) - datetime.fromisoformat(previous)).total_seconds()
    if seconds < 60:
        return f"Time gap: {int(seconds)} seconds (immediate response)"
    if seconds < 86400:
        return f"Time gap: {int(seconds // 3600)} hours (same day, but significant pause)"
    return f"Time gap: {int(seconds // 86400)} days (long gap, likely new conversation)"


def _long_date(timestamp: str) -> str:
    return datetime.fromisoformat(timestamp).strftime("%d %B %Y").lstrip("0")


class EverMemOS:
    layer_type = "EverMemOS"

    def __init__(self, hooks: Faithful, speakers: tuple[str, str], rng: random.Random) -> None:
        self.hooks = hooks
        self.speakers = speakers
        self.rng = rng
        self.buffer: list[dict[str, str]] = []
        self.pending: list[Message] = []
        self.units: dict[str, dict[str, Any]] = {}
        self._query_count = 0

    # ---------------------------------------------------------------- construction
    def _buffer_node(self) -> Any:
        return comment_variable(self.buffer, to_runtime=True, id_strategy=_buffer_id, encoding_fn=dumps,
                                category="message_buffer", comment="Messages of the episode in progress.")

    def add_message(self, msg: Message) -> None:
        node = record_message(msg, "evermemos", self.speakers, variable_name="raw_input")
        try:
            with comment_mutation(target=self.buffer, inputs=[node], id_strategy=_buffer_id, encoding_fn=dumps,
                                  category="message_buffer", comment="Messages of the episode in progress.",
                                  mutation_name="memory_system.message_buffer_update", mutation_category="update"):
                self.buffer.append({"speaker_id": msg.name, "speaker_name": msg.name, "content": msg.content,
                                    "timestamp": msg.timestamp, "role": msg.role})
                self.pending.append(msg)
            if len(self.buffer) >= 2:
                self._boundary(msg)
        finally:
            current_context().remove_variable("raw_input")

    def _boundary(self, msg: Message) -> None:
        history, new = self.buffer[:-1], self.buffer[-1:]
        should_end = msg.turn.topic is not None
        title = self.pending[0].turn.topic or "Conversation segment"
        with comment_op_scope(op_name="evermemos.boundary_detection", category="boundary_detection",
                              metadata={"smart_mask_flag": False, "llm_model": LLM_MODEL}) as op:
            buffer_node = self._buffer_node()
            new_node = comment_variable(new, to_runtime=True, class_name="new_messages", category="new_messages")
            history_node = comment_variable(history, to_runtime=True, class_name="history_messages",
                                            category="history_messages")
            comment_op(inputs=[buffer_node], outputs=[new_node, history_node], category="split_message_buffer",
                       reuse_op=True)
            gap = comment_variable(_time_gap(history[-1]["timestamp"], new[0]["timestamp"]), to_runtime=True,
                                   class_name="time_gap", category="time_gap")
            comment_op(inputs=[history_node, new_node], outputs=[gap], reuse_op=True)
            template = comment_variable(BOUNDARY_TEMPLATE, to_runtime=True,
                                        id_strategy=lambda _v: "boundary-detection-prompt-template", category="prompt",
                                        metadata={"op_type": "boundary_detection"})
            render = "\n".join(f"[{m['timestamp'].replace('T', ' ')}] {m['speaker_name']}: {m['content']}" for m in history)
            prompt = comment_variable(
                BOUNDARY_TEMPLATE.format(history=render, time_gap=gap.raw_value.strip("'"),
                                         new=f"{new[0]['speaker_name']}: {new[0]['content']}"),
                to_runtime=True, class_name="boundary_detection_prompt", category="prompt")
            comment_op(inputs=[history_node, new_node, gap, template], outputs=[prompt], reuse_op=True)
            summary = f"Conversation about {title[0].lower()}{title[1:]}" if should_end else ""
            reasoning = ("The new message turns to another topic, so the current episode is complete." if should_end
                         else "The new message continues the current topic.")
            raw_text = json.dumps({"reasoning": reasoning, "should_end": should_end, "confidence": 0.9,
                                   "topic_summary": summary})
            raw = comment_variable(raw_text, to_runtime=True, class_name="raw_boundary_detection_response",
                                   category="llm_response")
            comment_op(inputs=[prompt], outputs=[raw], category="boundary_detection", reuse_op=True)
            result = comment_variable(BoundaryDetectionResult(should_end, True, reasoning, 0.9, summary), to_runtime=True,
                                      class_name="boundary_detection_result", category="llm_response")
            comment_link(source=raw, target=result, edge_metadata={"source_code": PARSE_JSON_SOURCE})
            if not should_end:
                comment_link(source=result, target=("NO_SPLIT", {"class_name": "no_split_marker", "category": "marker"}))
                return
            members = self.hooks.edit("emos.memcell", msg.id, self.pending[:-1])
            memcell = {"original_data": [self._raw(m) for m in members], "timestamp": history[-1]["timestamp"],
                       "summary": summary}
            cell = comment_variable(memcell, to_runtime=True, class_name="temporary_variable",
                                    category="temporary_variable", encoding_fn=dumps)
            comment_op(inputs=[buffer_node, result], outputs=[cell], reuse_op=True)
            self.hooks.bind("emos.memcell", msg.id, op.op_id)
        self._memorise(cell, memcell, members, title)
        with comment_mutation(target=self.buffer, id_strategy=_buffer_id, encoding_fn=dumps, category="message_buffer",
                              mutation_name="memory_system.message_buffer_update", mutation_category="update",
                              mutation_metadata={"smart_mask_flag": False}):
            self.buffer[:] = self.buffer[-1:]
        self.pending = self.pending[-1:]

    def flush(self) -> None:
        if not self.buffer:
            return
        memcell = {"original_data": [self._raw(m) for m in self.pending], "timestamp": self.buffer[-1]["timestamp"],
                   "summary": "Final conversation segment"}
        self._memorise(self._buffer_node(), memcell, list(self.pending), self.pending[0].turn.topic or "Conversation segment")
        with comment_mutation(target=self.buffer, id_strategy=_buffer_id, encoding_fn=dumps, category="message_buffer",
                              mutation_name="memory_system.message_buffer_update", mutation_category="update",
                              mutation_metadata={"flush": True}):
            self.buffer.clear()
        self.pending = []

    @staticmethod
    def _raw(m: Message) -> dict[str, str]:
        return {"content": m.content, "role": m.role, "speaker_id": m.name, "speaker_name": m.name, "timestamp": m.timestamp}

    def _memorise(self, source: Any, memcell: dict[str, Any], members: list[Message], title: str) -> None:
        event_id = f"{self.rng.getrandbits(96):024x}"
        unit: dict[str, Any] = {"event_id": event_id, "timestamp": memcell["timestamp"],
                                "original_data": memcell["original_data"], "summary": memcell["summary"],
                                "subject": None, "episode": None, "foresights": None, "event_log": None}
        comment_op(inputs=[source], outputs=[(unit, dict(_UNIT))], op_name="memory_system.finalize_memory_unit",
                   category="initialization", comment="A closed memcell becomes an event memory unit.")
        conversation = "\n".join(
            f"{{timestamp: {m.timestamp}, speaker: {m.name}, content: {m.content}}}" for m in members)
        when = datetime.fromisoformat(memcell["timestamp"])
        with comment_op_scope(op_name="memory_system.extract_memory", category="extraction",
                              metadata={"llm_model": LLM_MODEL, "foresight_enabled": False, "event_log_enabled": True}) as op:
            facts = self.hooks.edit("emos.extract", members[0].id if members else "", [f for m in members for f in m.turn.facts])
            if not facts:
                facts = [f"{self.speakers[0]} and {self.speakers[1]} chatted briefly"]
            episode = f"On {_long_date(memcell['timestamp'])}, {self.speakers[0]} and {self.speakers[1]} talked. " + " ".join(
                f"{f}." for f in facts)
            instructions = comment_variable(EPISODE_INSTRUCTIONS, to_runtime=True,
                                            id_strategy=lambda _v: "episode-extraction-custom-instructions",
                                            category="prompt", metadata={"op_type": "episode_extraction", "mode": "group"})
            template = comment_variable(EPISODE_TEMPLATE, to_runtime=True,
                                        id_strategy=lambda _v: "episode-extraction-prompt-template",
                                        category="prompt", metadata={"op_type": "episode_extraction"})
            prompt = comment_variable(
                EPISODE_TEMPLATE.format(time=when.strftime("%B %d, %Y (%A) at %I:%M %p UTC"), conversation=conversation),
                to_runtime=True, class_name="episode_extraction_prompt", category="prompt")
            comment_op(inputs=[(unit, dict(_UNIT)), instructions, template], outputs=[prompt], reuse_op=True)
            raw = comment_variable(json.dumps({"title": title, "content": episode}, ensure_ascii=False), to_runtime=True,
                                   class_name="raw_episode_extraction_response", category="llm_response")
            comment_op(inputs=[prompt], outputs=[raw], category="extraction", reuse_op=True)
            episode_memory = {"subject": title, "summary": episode[:200], "episode": episode}
            memory = comment_variable(episode_memory, to_runtime=True, class_name="episode_memory",
                                      category="llm_response", encoding_fn=dumps, variable_name="episode_memory")
            comment_link(source=raw, target=memory, category="extraction", edge_metadata={"source_code": PARSE_JSON_SOURCE})
            with comment_mutation(target=unit, inputs=[memory], id_strategy=_UNIT["id_strategy"], encoding_fn=dumps,
                                  category="memory_entry", mutation_category="mutation", reuse_op=True):
                unit.update(subject=title, episode=episode, summary=episode[:200] + "...")
            log_template = comment_variable(EVENT_LOG_TEMPLATE, to_runtime=True, id_strategy=lambda _v: "event-log-prompt-template",
                                            category="prompt", metadata={"op_type": "event_log_extraction"})
            time_line = when.strftime("%B %d, %Y(%A) at %I:%M %p")
            log_prompt = comment_variable(EVENT_LOG_TEMPLATE.format(time=time_line, conversation=conversation),
                                          to_runtime=True, class_name="event_extraction_prompt", category="prompt",
                                          variable_name="event_extraction_prompt")
            comment_op(inputs=[(unit, dict(_UNIT)), log_template], outputs=[log_prompt], reuse_op=True)
            event_log = {"time": time_line, "atomic_fact": [f"{f}." for f in facts]}
            log_raw = comment_variable(json.dumps({"event_log": event_log}, ensure_ascii=False), to_runtime=True,
                                       class_name="raw_event_log_extraction_response", category="llm_response")
            comment_op(inputs=[log_prompt], outputs=[log_raw], category="extraction", reuse_op=True)
            log_node = comment_variable({"atomic_fact": event_log["atomic_fact"]}, to_runtime=True, class_name="event_log",
                                        category="llm_response", encoding_fn=dumps, variable_name="event_log")
            comment_link(source=log_raw, target=log_node, category="extraction", edge_metadata={"source_code": PARSE_JSON_SOURCE})
            with comment_mutation(target=unit, inputs=[log_node], id_strategy=_UNIT["id_strategy"], encoding_fn=dumps,
                                  category="memory_entry", mutation_category="mutation", reuse_op=True):
                unit["event_log"] = event_log
            with comment_mutation(target=unit, id_strategy=_UNIT["id_strategy"], encoding_fn=dumps,
                                  category="memory_entry", mutation_category="mutation", reuse_op=True):
                del unit["original_data"]
            self.hooks.bind("emos.extract", members[0].id if members else "", op.op_id)
        self.units[event_id] = unit

    # ---------------------------------------------------------------- retrieval (agentic, round 1)
    def _list_node(self, kind: str, docs: list[tuple[dict[str, Any], float]], fresh: bool) -> Any:
        items = [{**{k: d[k] for k in _PROJECTED}, "score": round(s, 6)} for d, s in docs]
        if fresh:
            self._query_count += 1
            ids = ", ".join(d["event_id"] for d, _ in docs)
            name = f"{ids} | ts={1700000000000000000 + self._query_count} | rand={self.rng.getrandbits(32):08x}"
        else:
            name = ", ".join(f"{d['event_id']}-{round(s, 4)}" for d, s in docs)
        return comment_variable(items, to_runtime=True, id_strategy=lambda _v: name, class_name=kind, category=kind,
                                encoding_fn=dumps)

    def retrieve(self, query: str, k: int) -> list[Entry]:
        query_node = active_query()
        ids = list(self.units)
        if not ids:
            return []
        docs = [self.units[i] for i in ids]
        fact_lists = [d["event_log"]["atomic_fact"] for d in docs]
        sparse_scores = bm25_scores(query, [" ".join(f) for f in fact_lists])
        dense_scores = [max(cosine(query, f) for f in facts) for facts in fact_lists]
        sparse = rank(sparse_scores)[:POOL]
        dense = rank(dense_scores)[:POOL]
        fused: dict[int, float] = {}
        for order in (sparse, dense):
            for r, i in enumerate(order, 1):
                fused[i] = fused.get(i, 0.0) + 1.0 / (RRF_K + r)
        fused_order = sorted(fused, key=lambda i: -fused[i])
        with comment_op_scope(op_name="memory_system.agentic_round1_bundle", category="retrieval",
                              metadata={"round": 1, "retrieval_mode": "agentic", "top_k": k,
                                        "sufficiency_check_docs": k, "use_reranker": False,
                                        "embedding_model": EMBEDDING_MODEL}) as op:
            pools = {"bm25_top_n": POOL, "emb_top_n": POOL}
            sparse_node = self._list_node("sparse_retrieval_results", [(docs[i], sparse_scores[i]) for i in sparse], True)
            comment_op(inputs=[query_node], outputs=[sparse_node], metadata=pools, reuse_op=True)
            dense_node = self._list_node("dense_retrieval_results", [(docs[i], dense_scores[i]) for i in dense], True)
            comment_op(inputs=[query_node], outputs=[dense_node], metadata=pools, reuse_op=True)
            ranking = [(ids[i], docs[i]["episode"]) for i in fused_order]
            ranking = self.hooks.edit("retrieve", query_node.name, ranking)
            chosen = [(self.units[eid], fused[ids.index(eid)]) for eid, _ in ranking[:k]]
            hybrid = self._list_node("hybrid_retrieval_results", chosen, True)
            comment_op(inputs=[sparse_node, dense_node], outputs=[hybrid], reuse_op=True)
            check = self._list_node("reranked_for_check", chosen, False)
            comment_op(inputs=[hybrid], outputs=[check], category="retrieval", reuse_op=True)
            docs_text = "\n\n".join(f"Document {i}:\n  Title: {d['subject']}\n  Content: {d['episode'][:500]}"
                                    for i, (d, _) in enumerate(chosen, 1))
            docs_node = comment_variable(docs_text, to_runtime=True, class_name="sufficiency_check_docs_text",
                                         category="formatted_documents")
            comment_link(source=check, target=docs_node, category="retrieval", edge_metadata={"source_code": FORMAT_DOCS_SOURCE})
            template = comment_variable(SUFFICIENCY_TEMPLATE, to_runtime=True,
                                        id_strategy=lambda _v: "sufficiency-check-prompt-template",
                                        class_name="sufficiency_check_prompt_template", category="prompt")
            prompt = comment_variable(SUFFICIENCY_TEMPLATE.format(query=query, documents=docs_text), to_runtime=True,
                                      class_name="sufficiency_check_prompt", category="prompt")
            comment_op(inputs=[query_node, docs_node, template], outputs=[prompt], reuse_op=True)
            verdict = {"is_sufficient": True, "reasoning": "The documents address the query.",
                       "key_information_found": [d["subject"] for d, _ in chosen], "missing_information": []}
            raw = comment_variable(json.dumps(verdict), to_runtime=True, class_name="raw_sufficiency_check_response",
                                   category="llm_response")
            comment_link(source=prompt, target=raw, category="retrieval", edge_metadata={"source_code": PARSE_JSON_SOURCE})
            result = comment_variable(verdict, to_runtime=True, class_name="sufficiency_check_result",
                                      category="sufficiency_check_result", encoding_fn=dumps)
            comment_op(inputs=[raw], outputs=[result], category="retrieval", reuse_op=True)
            for d, _ in chosen:
                comment_op(inputs=[result, hybrid], outputs=[(d, dict(_UNIT))], reuse_op=True)
            self.hooks.bind("retrieve", query_node.name, op.op_id)
        return [Entry(d["episode"], f"{d['subject']}: {d['episode']}", f"memory-unit-{d['event_id']}") for d, _ in chosen]

    def store_texts(self) -> list[str]:
        return [f"{u['subject']}: {u['episode']}" for u in self.units.values()]
