"""Fault kinds, how many cases of each, and the label each one gets by construction.

Labels follow spec-attribution §5.1 (items 5–8), decided per kind before any measurement:

* the fact never reaches a memory unit intact → ``ExtractionError`` at the op that lost or
  rewrote it — also when that op is an ``update``-category op (a Long-Context append that cuts
  the message, a NaiveRAG buffer update or store write, a Mem0 NONE or rewritten ADD decision,
  an EverMemOS buffer update, boundary or memcell finalisation);
* a unit held it and a later op rewrote/trimmed/merged it away → ``UpdateError`` at that op
  (Long-Context trims and compaction, Mem0 UPDATE); explicitly removed → ``DeletionError``;
* the store holds it at query time, the final context does not → ``RetrievalError`` at the
  retrieval op that dropped it (EverMemOS: round 1 when its check wrongly said "sufficient",
  the final rerank when round 1 had it and the rerank cut it);
* the context holds every evidence phrase, the answer is still wrong → ``ResponseError`` at
  ``question-answering``.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from .conversations import CONVERSATIONS, Conversation, Question
from .layers import Fault
from .pipeline import Recording, evidence_keys, record

# kind: (split, error type, number of cases)
KINDS: dict[str, tuple[str, str, int]] = {
    "lc_overtrim": ("long_context", "UpdateError", 4),
    "lc_window_overflow": ("long_context", "UpdateError", 3),
    "lc_compaction_swap": ("long_context", "UpdateError", 5),
    "lc_compaction_partial": ("long_context", "UpdateError", 3),
    "lc_append_cut": ("long_context", "ExtractionError", 3),
    "lc_retrieve_stale": ("long_context", "RetrievalError", 3),
    "lc_response": ("long_context", "ResponseError", 4),
    "rag_buffer_drop": ("rag", "ExtractionError", 3),
    "rag_chunk_cut": ("rag", "ExtractionError", 5),
    "rag_flush_drop": ("rag", "ExtractionError", 1),
    "rag_store_swap": ("rag", "ExtractionError", 4),
    "rag_retrieval_miss": ("rag", "RetrievalError", 4),
    "rag_retrieval_near_dup": ("rag", "RetrievalError", 4),
    "rag_response": ("rag", "ResponseError", 4),
    "mem0_extract_drop": ("mem0", "ExtractionError", 3),
    "mem0_extract_swap": ("mem0", "ExtractionError", 7),
    "mem0_extract_partial": ("mem0", "ExtractionError", 2),
    "mem0_decision_none": ("mem0", "ExtractionError", 2),
    "mem0_add_swap": ("mem0", "ExtractionError", 2),
    "mem0_update_overwrite": ("mem0", "UpdateError", 3),
    "mem0_update_degrade": ("mem0", "UpdateError", 2),
    "mem0_delete": ("mem0", "DeletionError", 3),
    "mem0_retrieval_miss": ("mem0", "RetrievalError", 3),
    "mem0_response": ("mem0", "ResponseError", 3),
    "em_buffer_drop": ("evermemos", "ExtractionError", 2),
    "em_boundary_drop": ("evermemos", "ExtractionError", 3),
    "em_finalize_cut": ("evermemos", "ExtractionError", 2),
    "em_episode_swap": ("evermemos", "ExtractionError", 4),
    "em_episode_partial": ("evermemos", "ExtractionError", 2),
    "em_round1_miss": ("evermemos", "RetrievalError", 4),
    "em_final_truncate": ("evermemos", "RetrievalError", 4),
    "em_response": ("evermemos", "ResponseError", 4),
}
NEEDS_SWAP = {"lc_compaction_swap", "rag_store_swap", "mem0_extract_swap", "mem0_add_swap", "em_episode_swap"}
NEEDS_PARTIAL = {"lc_compaction_partial", "mem0_extract_partial", "em_episode_partial"}
CUTS_RAW = {"lc_append_cut", "rag_chunk_cut", "em_finalize_cut"}


@dataclass
class Case:
    kind: str
    conv: Conversation
    question: Question
    fault: Fault
    recording: Recording
    error_type: str


def _session_starts(conv: Conversation) -> list[int]:
    starts, n = [], 0
    for _, msgs in conv.sessions:
        starts.append(n)
        n += len(msgs)
    return starts


def _session_of(conv: Conversation, gidx: int) -> int:
    starts = _session_starts(conv)
    return max(s for s, start in enumerate(starts) if start <= gidx)


def _fault_for(kind: str, conv: Conversation, q: Question, ev: int) -> Fault | None:
    idx, fk, mk = q.keys()[ev]
    f = Fault(kind=kind, msg_index=idx, fact_key=fk, msg_key=mk, swap=q.swap if ev == 0 else None,
              vague=q.vague if ev == 0 else "", qid=q.qid)
    msgs = [m for _, _, m in conv.messages()]
    starts = _session_starts(conv)
    sess = _session_of(conv, idx)
    if kind in NEEDS_SWAP and not f.swap:
        return None
    if kind in NEEDS_PARTIAL and len(q.keys()) == 1 and not f.vague:
        return None
    if kind in ("lc_overtrim", "lc_compaction_swap", "lc_compaction_partial"):
        if sess + 1 >= len(starts):
            return None
        f.at_index = starts[sess + 1]
    if kind == "lc_retrieve_stale":
        if sess == 0:
            return None
        f.at_index = starts[sess] + 1  # the buffer version at the end of the previous session
    if kind in ("mem0_update_overwrite", "mem0_update_degrade", "mem0_delete"):
        later = [i for i in range(idx + 3, len(msgs)) if msgs[i].facts]
        if not later:
            return None
        f.at_index = later[0]
    if kind == "mem0_update_degrade" and not (f.swap or f.vague):
        return None
    return f


def verify(kind: str, error_type: str, q: Question, f: Fault, rec: Recording, base: Recording) -> str | None:
    """Why the construction does not show the intended fault (None: it does)."""
    if f.label_op is None:
        return "the fault never ran"
    if rec.predictions[q.qid] == "; ".join(q.answers):
        return "still answered correctly"
    raw = rec.raw_layer
    key = f.msg_key if raw else f.fact_key
    keys = evidence_keys(q, raw)
    context = rec.contexts[q.qid]
    in_store = any(key in t for t in rec.store_texts)
    ever = _ever_in_units(rec, key)
    if error_type == "ResponseError":
        return None if all(k in context for k in keys) else "context lacks evidence"
    if error_type == "RetrievalError":
        if not all(any(k in t for t in rec.store_texts) for k in keys):
            return "store lacks evidence"
        return None if key not in context else "context still holds it"
    if in_store:
        return "store still holds it"
    if error_type == "ExtractionError" and ever:
        return "a unit held it"
    if error_type in ("UpdateError", "DeletionError") and not ever:
        return "no unit ever held it"
    if rec.store_texts == base.store_texts:
        return "store unchanged"
    return None


def _ever_in_units(rec: Recording, key: str) -> bool:
    for node in rec.graph.get_all_nodes():
        if node.category != "memory_entry" or not node.name.startswith("memory-unit"):
            continue
        value = node.value
        if rec.split == "evermemos":
            data = json.loads(value)
            value = " ".join(str(data.get(k) or "") for k in ("subject", "episode", "event_log"))
        elif rec.split == "mem0":
            value = json.loads(value)["memory"]
        if key in value:
            return True
    return False


def build_cases(seed: int = 0) -> list[Case]:
    rng = random.Random(seed)
    pool = [(c, q, ev) for c in CONVERSATIONS for q in c.questions for ev in range(len(q.keys()))]
    bases: dict[tuple[int, str], Recording] = {}
    cases: list[Case] = []
    for kind, (split, error_type, count) in KINDS.items():
        order = list(pool)
        rng.shuffle(order)
        used: set[tuple[int, int]] = set()
        for conv, q, ev in order:
            if len([c for c in cases if c.kind == kind]) >= count:
                break
            fault = _fault_for(kind, conv, q, ev)
            if fault is None or (conv.index, q.qid) in used:
                continue
            if kind.endswith("_response"):
                fault.kind = "response"
            window = 4000
            if kind == "lc_window_overflow":
                window = 300
            base_key = (conv.index, split)
            if base_key not in bases:
                bases[base_key] = record(conv, split, Fault(), seed=seed)
            rec = record(conv, split, fault, seed=seed, lc_window=window)
            if fault.kind == "response":
                fault.label_op = _qa_op(rec, conv, q)
            problem = verify(kind, error_type, q, fault, rec, bases[base_key])
            if problem:
                continue
            used.add((conv.index, q.qid))
            cases.append(Case(kind, conv, q, fault, rec, error_type))
    return cases


def _qa_op(rec: Recording, conv: Conversation, q: Question) -> str:
    query_id = rec.node_ids[q.qid]["query_id"]
    for op in rec.graph.get_operations_by_variable(query_id):
        if op.op_name == "question-answering":
            return op.op_id
    raise LookupError(query_id)
