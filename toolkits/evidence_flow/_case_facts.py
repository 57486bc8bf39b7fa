"""What a presence judge is built from, for a case in a graph or a question over a bare conversation.

:func:`case_facts` gathers a followed piece of information's :class:`.judges.CaseFacts` from the
graph's index and the chosen evidence (the attributor's step 2). :func:`conversation_judge` does
the same for a conversation without any memory system around it — messages, the one that states
the fact, a question and its golden answer — so that a judge can be measured on memory texts
alone (``benchmarks/evidence_flow_paraphrase.py``): it sees exactly what the attributor would
hand it for that evidence.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ._dates import message_date
from ._evidence import EvidenceChoice, choose_evidence
from ._graph_view import GraphView, NodeRec
from ._text import DEFAULT_ANSWER_THRESHOLD, DEFAULT_EVIDENCE_THRESHOLD, content_tokens, message_text
from .judges import CaseFacts, JudgeFactory, PresenceJudge, make_judge_factory

__all__ = ["case_facts", "conversation_judge", "conversation_view"]


def case_facts(view: GraphView, choice: EvidenceChoice, *, question: str, golden: str, answer_threshold: float,
               evidence_threshold: float) -> CaseFacts:
    """The facts a judge of ``choice`` is built from (its seeds must not be empty)."""
    return CaseFacts(
        mode=choice.mode, facts=choice.facts, answer_tokens=content_tokens(golden),
        question_tokens=content_tokens(question), names=view.speakers,
        evidence_tokens=frozenset().union(*(content_tokens(message_text(n.value)) for n in choice.seeds)),
        document_frequency=view.document_frequency, documents=len(view.messages), answer_spread=choice.answer_spread,
        answer_threshold=answer_threshold, evidence_threshold=evidence_threshold,
        question=question, golden=golden, rivals=choice.rivals, proper_names=view.proper_names,
        said_on=[day for day in (message_date(n.value) for n in choice.seeds) if day is not None],
    )


def _message_id(index: int) -> str:
    return f"message-{index}@1"


def conversation_view(messages: Sequence[Mapping[str, Any]]) -> GraphView:
    """The index of a graph that holds only ``messages`` (each with ``speaker``, ``text`` and an
    optional ISO ``time``), in order; message ``i`` is node ``message-i@1``."""
    nodes = []
    for i, message in enumerate(messages):
        value = {"content": message["text"], "name": message["speaker"], "role": "user"}
        if message.get("time"):
            value["timestamp"] = message["time"]
        nodes.append({"full_node_id": _message_id(i), "full_name": f"message-{i}", "name": f"message-{i}",
                      "version": 1, "value": json.dumps(value), "category": "message", "class_name": None,
                      "created_at": f"2000-01-01 00:00:{i // 1000:02d}.{i % 1000:03d}", "metadata": {}})
    return GraphView(nodes, [], [])


def conversation_judge(messages: Sequence[Mapping[str, Any]], *, evidence: Sequence[int], question: str,
                       golden: str, judge: JudgeFactory | str = "rules", embedder: Any = None,
                       answer_threshold: float = DEFAULT_ANSWER_THRESHOLD,
                       evidence_threshold: float = DEFAULT_EVIDENCE_THRESHOLD) -> PresenceJudge:
    """The judge the attributor would build for ``question`` with the annotated ``evidence`` (message
    indexes) of a conversation.

    Raises:
        ValueError: when no message of ``evidence`` exists, or for a judge that cannot be built.
    """
    view = conversation_view(messages)
    query = NodeRec(full_node_id="query@1", full_name="query", name="query", version=1, value=question,
                    category="query", class_name=None, created_at="9999", metadata={}, order=len(messages))
    choice = choose_evidence(view, query=query, question=question, answer=content_tokens(golden),
                             evidence_ids=[_message_id(i) for i in evidence], pseudo=False,
                             answer_threshold=answer_threshold, golden=golden)
    if not choice.seeds:
        raise ValueError(f"no evidence message among {list(evidence)} for {question!r}")
    factory = make_judge_factory(judge, embedder=embedder) if isinstance(judge, str) else judge
    return factory.judge(case_facts(view, choice, question=question, golden=golden,
                                    answer_threshold=answer_threshold, evidence_threshold=evidence_threshold))
