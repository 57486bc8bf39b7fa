"""Which fault each case carries, and the label the spec's definitions give it.

A fault kind names the layer, the op it acts through and what it does. Its label is fixed here
from spec-attribution §5.1 (items 5-8), never measured from text:

* the fact never reaches any memory unit → ``ExtractionError`` at the construction op where it
  was lost — also when that op is categorised ``update`` (a NaiveRAG store write that truncates
  the document, a Mem0 decision that answers NONE, a Long-Context append that cuts the message);
* a unit held it and a later op rewrote it → ``UpdateError`` at that op (Long-Context trimming or
  compaction, a Mem0 UPDATE);
* a unit held it and was explicitly deleted → ``DeletionError`` at the DELETE decision;
* the store held it at question time, the final retrieved context lacks it → ``RetrievalError`` at
  the retrieval op whose output lost it (the final rerank when round 1 still had it);
* the final context holds all evidence and the answer is wrong → ``ResponseError`` at the QA op.

EverMemOS episode faults are labelled ``ExtractionError`` at ``memory_system.extract_memory``: the
memcell's raw ``original_data`` is an input staged for extraction (dropped from the unit's last
version by the same op), not a memory the system answers from.
"""

from __future__ import annotations

from dataclasses import dataclass

from .conversations import Conversation, Question, by_qid

__all__ = ["FAULT_KINDS", "PLAN_TABLE", "CasePlan", "FaultKind", "all_plans"]


@dataclass(frozen=True)
class FaultKind:
    name: str
    layer: str
    error_type: str
    stage: str
    """OpLog stage of the faulted op; its subject is ``target``, ``trigger`` or ``question``."""
    subject: str


FAULT_KINDS: dict[str, FaultKind] = {k.name: k for k in (
    FaultKind("lc/append_cut", "long_context", "ExtractionError", "append", "target"),
    FaultKind("lc/window_trim", "long_context", "UpdateError", "trim", "target"),
    FaultKind("lc/compaction_rewrite", "long_context", "UpdateError", "append", "trigger"),
    FaultKind("lc/stale_snapshot", "long_context", "RetrievalError", "retrieve", "question"),
    FaultKind("lc/answer_wrong", "long_context", "ResponseError", "answer", "question"),
    FaultKind("rag/document_cut", "rag", "ExtractionError", "emit", "target"),
    FaultKind("rag/store_truncate", "rag", "ExtractionError", "store", "target"),
    FaultKind("rag/near_duplicate", "rag", "RetrievalError", "retrieve", "question"),
    FaultKind("rag/partial_retrieval", "rag", "RetrievalError", "retrieve", "question"),
    FaultKind("rag/answer_wrong", "rag", "ResponseError", "answer", "question"),
    FaultKind("mem0/extract_rewrite", "mem0", "ExtractionError", "extract", "target"),
    FaultKind("mem0/extract_vague", "mem0", "ExtractionError", "extract", "target"),
    FaultKind("mem0/extract_omit", "mem0", "ExtractionError", "extract", "target"),
    FaultKind("mem0/decision_none", "mem0", "ExtractionError", "decide", "target"),
    FaultKind("mem0/update_degrade", "mem0", "UpdateError", "decide", "trigger"),
    FaultKind("mem0/delete", "mem0", "DeletionError", "decide", "trigger"),
    FaultKind("mem0/miss_after_update", "mem0", "RetrievalError", "retrieve", "question"),
    FaultKind("mem0/near_duplicate", "mem0", "RetrievalError", "retrieve", "question"),
    FaultKind("mem0/answer_wrong", "mem0", "ResponseError", "answer", "question"),
    FaultKind("evermemos/episode_rewrite", "evermemos", "ExtractionError", "extract", "target"),
    FaultKind("evermemos/episode_vague", "evermemos", "ExtractionError", "extract", "target"),
    FaultKind("evermemos/episode_omit", "evermemos", "ExtractionError", "extract", "target"),
    FaultKind("evermemos/memcell_drops_message", "evermemos", "ExtractionError", "boundary", "target"),
    FaultKind("evermemos/near_duplicate", "evermemos", "RetrievalError", "retrieve", "question"),
    FaultKind("evermemos/final_rerank_drop", "evermemos", "RetrievalError", "final_rerank", "question"),
    FaultKind("evermemos/answer_wrong", "evermemos", "ResponseError", "answer", "question"),
)}

# (fault kind, qa id, target evidence index, variant) — variant: "" or "agentic" (EverMemOS retrieval mode).
PLAN_TABLE: tuple[tuple[str, str, int, str], ...] = (
    ("lc/append_cut", "heldout-qa-1-2", 0, ""),
    ("lc/append_cut", "heldout-qa-1-4", 0, ""),
    ("lc/append_cut", "heldout-qa-2-4", 0, ""),
    ("lc/append_cut", "heldout-qa-2-7", 0, ""),
    ("lc/append_cut", "heldout-qa-1-10", 1, ""),
    ("lc/window_trim", "heldout-qa-1-1", 0, ""),
    ("lc/window_trim", "heldout-qa-2-1", 0, ""),
    ("lc/window_trim", "heldout-qa-2-2", 0, ""),
    ("lc/window_trim", "heldout-qa-1-10", 0, ""),
    ("lc/compaction_rewrite", "heldout-qa-1-3", 0, ""),
    ("lc/compaction_rewrite", "heldout-qa-1-7", 0, ""),
    ("lc/compaction_rewrite", "heldout-qa-2-5", 0, ""),
    ("lc/compaction_rewrite", "heldout-qa-2-6", 0, ""),
    ("lc/compaction_rewrite", "heldout-qa-1-6", 0, ""),
    ("lc/stale_snapshot", "heldout-qa-1-5", 0, ""),
    ("lc/stale_snapshot", "heldout-qa-2-3", 0, ""),
    ("lc/stale_snapshot", "heldout-qa-2-8", 0, ""),
    ("lc/answer_wrong", "heldout-qa-1-8", 0, ""),
    ("lc/answer_wrong", "heldout-qa-1-9", 0, ""),
    ("lc/answer_wrong", "heldout-qa-1-11", 0, ""),
    ("lc/answer_wrong", "heldout-qa-2-9", 0, ""),
    ("lc/answer_wrong", "heldout-qa-2-10", 0, ""),
    ("rag/document_cut", "heldout-qa-1-1", 0, ""),
    ("rag/document_cut", "heldout-qa-1-6", 0, ""),
    ("rag/document_cut", "heldout-qa-2-2", 0, ""),
    ("rag/document_cut", "heldout-qa-2-5", 0, ""),
    ("rag/document_cut", "heldout-qa-1-10", 0, ""),
    ("rag/store_truncate", "heldout-qa-1-3", 0, ""),
    ("rag/store_truncate", "heldout-qa-2-3", 0, ""),
    ("rag/store_truncate", "heldout-qa-2-6", 0, ""),
    ("rag/store_truncate", "heldout-qa-2-10", 1, ""),
    ("rag/near_duplicate", "heldout-qa-1-2", 0, ""),
    ("rag/near_duplicate", "heldout-qa-1-4", 0, ""),
    ("rag/near_duplicate", "heldout-qa-1-7", 0, ""),
    ("rag/near_duplicate", "heldout-qa-2-4", 0, ""),
    ("rag/near_duplicate", "heldout-qa-2-8", 0, ""),
    ("rag/partial_retrieval", "heldout-qa-1-10", 1, ""),
    ("rag/partial_retrieval", "heldout-qa-2-9", 0, ""),
    ("rag/partial_retrieval", "heldout-qa-2-10", 0, ""),
    ("rag/answer_wrong", "heldout-qa-1-5", 0, ""),
    ("rag/answer_wrong", "heldout-qa-1-9", 0, ""),
    ("rag/answer_wrong", "heldout-qa-1-11", 0, ""),
    ("rag/answer_wrong", "heldout-qa-2-1", 0, ""),
    ("rag/answer_wrong", "heldout-qa-2-7", 0, ""),
    ("mem0/extract_rewrite", "heldout-qa-1-1", 0, ""),
    ("mem0/extract_rewrite", "heldout-qa-1-3", 0, ""),
    ("mem0/extract_rewrite", "heldout-qa-1-7", 0, ""),
    ("mem0/extract_rewrite", "heldout-qa-1-11", 0, ""),
    ("mem0/extract_rewrite", "heldout-qa-2-4", 0, ""),
    ("mem0/extract_rewrite", "heldout-qa-2-6", 0, ""),
    ("mem0/extract_vague", "heldout-qa-1-6", 0, ""),
    ("mem0/extract_vague", "heldout-qa-2-3", 0, ""),
    ("mem0/extract_omit", "heldout-qa-1-10", 0, ""),
    ("mem0/extract_omit", "heldout-qa-2-9", 0, ""),
    ("mem0/decision_none", "heldout-qa-1-4", 0, ""),
    ("mem0/decision_none", "heldout-qa-2-8", 0, ""),
    ("mem0/update_degrade", "heldout-qa-1-2", 0, ""),
    ("mem0/update_degrade", "heldout-qa-1-5", 0, ""),
    ("mem0/update_degrade", "heldout-qa-1-9", 0, ""),
    ("mem0/update_degrade", "heldout-qa-2-1", 0, ""),
    ("mem0/update_degrade", "heldout-qa-2-5", 0, ""),
    ("mem0/update_degrade", "heldout-qa-2-7", 0, ""),
    ("mem0/delete", "heldout-qa-1-3", 0, ""),
    ("mem0/delete", "heldout-qa-2-6", 0, ""),
    ("mem0/delete", "heldout-qa-2-8", 0, ""),
    ("mem0/miss_after_update", "heldout-qa-1-2", 0, ""),
    ("mem0/miss_after_update", "heldout-qa-2-5", 0, ""),
    ("mem0/near_duplicate", "heldout-qa-1-8", 0, ""),
    ("mem0/near_duplicate", "heldout-qa-2-2", 0, ""),
    ("mem0/answer_wrong", "heldout-qa-1-1", 0, ""),
    ("mem0/answer_wrong", "heldout-qa-2-4", 0, ""),
    ("mem0/answer_wrong", "heldout-qa-2-10", 0, ""),
    ("evermemos/episode_rewrite", "heldout-qa-1-1", 0, ""),
    ("evermemos/episode_rewrite", "heldout-qa-1-5", 0, ""),
    ("evermemos/episode_rewrite", "heldout-qa-2-2", 0, ""),
    ("evermemos/episode_rewrite", "heldout-qa-2-7", 0, ""),
    ("evermemos/episode_vague", "heldout-qa-1-4", 0, ""),
    ("evermemos/episode_vague", "heldout-qa-2-1", 0, ""),
    ("evermemos/episode_vague", "heldout-qa-2-3", 0, ""),
    ("evermemos/episode_omit", "heldout-qa-1-10", 1, ""),
    ("evermemos/episode_omit", "heldout-qa-2-9", 1, ""),
    ("evermemos/memcell_drops_message", "heldout-qa-1-8", 0, ""),
    ("evermemos/memcell_drops_message", "heldout-qa-2-2", 0, ""),
    ("evermemos/near_duplicate", "heldout-qa-1-3", 0, ""),
    ("evermemos/near_duplicate", "heldout-qa-1-7", 0, ""),
    ("evermemos/near_duplicate", "heldout-qa-2-6", 0, ""),
    ("evermemos/final_rerank_drop", "heldout-qa-1-2", 0, "agentic"),
    ("evermemos/final_rerank_drop", "heldout-qa-2-5", 0, "agentic"),
    ("evermemos/answer_wrong", "heldout-qa-1-9", 0, ""),
    ("evermemos/answer_wrong", "heldout-qa-1-11", 0, "agentic"),
    ("evermemos/answer_wrong", "heldout-qa-2-8", 0, ""),
    ("evermemos/answer_wrong", "heldout-qa-2-10", 0, "agentic"),
)


@dataclass(frozen=True)
class CasePlan:
    case_id: str
    kind: FaultKind
    conversation: Conversation
    question: Question
    target: str
    """The evidence message the fault acts on."""
    trigger: str
    """The later message whose processing carries an update-time fault."""
    variant: str

    @property
    def multi(self) -> bool:
        return len(self.question.evidence) > 1


def _trigger(conv: Conversation, question: Question, kind: FaultKind, target: str) -> str:
    if kind.name == "mem0/update_degrade" and question.degrade:
        return question.degrade.trigger
    if kind.name == "mem0/delete" and question.delete:
        return question.delete.trigger
    if kind.name == "mem0/miss_after_update" and question.enrich:
        return question.enrich.trigger
    if kind.name == "lc/compaction_rewrite" and question.degrade:
        return question.degrade.trigger
    ids = [m.id for m in conv.messages()]
    return ids[min(ids.index(target) + 2, len(ids) - 1)]


def all_plans() -> list[CasePlan]:
    """Every case of the table, in order, with its target and trigger resolved."""
    plans = []
    counters: dict[str, int] = {}
    for kind_name, qid, target_index, variant in PLAN_TABLE:
        kind = FAULT_KINDS[kind_name]
        conv, question = by_qid(qid)
        target = question.evidence[target_index]
        counters[kind.layer] = counters.get(kind.layer, 0) + 1
        case_id = f"{kind.layer}-{counters[kind.layer]:02d}"
        plans.append(CasePlan(case_id=case_id, kind=kind, conversation=conv, question=question, target=target,
                              trigger=_trigger(conv, question, kind, target), variant=variant))
    return plans
