"""Which questions a fault can aim at, from the dataset's own annotations (never from a measure).

A question qualifies when LoCoMo annotates exactly one evidence message for it, that message is
in the (cut) conversation, the question is not adversarial, its text is unique in the
conversation, and the evidence message states the golden answer in words (a sentence of it
holds the answer's content tokens). That message is the *fact message*: every fault of a case
acts on what became of it, so the case's label is the op where the fault acted.

Other messages may well contain the answer's words (common-word answers: "happy", "painting"):
such questions are kept on purpose. ``spread`` counts them, so a benchmark can be read by how
common its answers are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolkits.evidence_flow import DEFAULT_ANSWER_THRESHOLD, content_tokens, token_recall

__all__ = ["Target", "find_targets", "message_sentences"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def message_sentences(text: str) -> list[str]:
    """Split a message into sentences (the unit faults corrupt)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


@dataclass(frozen=True, kw_only=True)
class Target:
    """A question and the message that states its answer."""

    qa: Any
    fact: Any
    """The fact message (a ``membase.types.Message``)."""
    fact_index: int
    """Position of the fact message in the conversation."""
    answer_tokens: frozenset[str]
    fact_sentences: tuple[str, ...]
    """Sentences of the fact message that state the golden answer."""
    speaker: str
    others: tuple[str, ...]
    """The other speakers of the conversation."""
    spread: int
    """Messages of the conversation whose text holds the answer's tokens (1 = only the fact)."""

    @property
    def question_names_speaker(self) -> bool:
        """True when the question names the fact message's speaker."""
        return bool(self.speaker) and re.search(rf"\b{re.escape(self.speaker)}\b", self.qa.question) is not None


def _stating(text: str, answer: frozenset[str], question: frozenset[str] = frozenset()) -> list[str]:
    """Sentences of ``text`` that state the answer; of several, those closest to the question."""
    sentences = message_sentences(text)
    hits = [s for s in sentences if token_recall(answer, content_tokens(s)) >= DEFAULT_ANSWER_THRESHOLD]
    if len(hits) > 1 and question:
        overlap = [len(content_tokens(s) & question) for s in hits]
        hits = [s for s, n in zip(hits, overlap, strict=True) if n == max(overlap)]
    if hits:
        return hits
    if token_recall(answer, content_tokens(text)) >= DEFAULT_ANSWER_THRESHOLD:
        return [text.strip()]
    return []


def find_targets(trajectory: Any, qas: Sequence[Any]) -> list[Target]:
    """The questions of ``trajectory`` a fault can aim at (see the module docstring)."""
    messages = [m for s in trajectory.sessions for m in s.messages]
    index = {m.id: i for i, m in enumerate(messages)}
    speakers = list(dict.fromkeys(m.name for m in messages if m.name))
    names = frozenset(content_tokens(" ".join(speakers)))
    question_counts: dict[str, int] = {}
    for qa in qas:
        question_counts[qa.question.strip().lower()] = question_counts.get(qa.question.strip().lower(), 0) + 1
    out = []
    for qa in qas:
        evidence = qa.metadata.get("evidence") or []
        if qa.metadata.get("category_id") == 5 or len(evidence) != 1 or evidence[0] not in index:
            continue
        if question_counts[qa.question.strip().lower()] > 1:
            continue
        answer = content_tokens(" ".join(qa.golden_answers))
        if not answer:
            continue
        fact = messages[index[evidence[0]]]
        sentences = _stating(fact.content, answer, content_tokens(qa.question) - names)
        if not sentences:
            continue
        spread = sum(1 for m in messages if _stating(m.content, answer))
        out.append(Target(qa=qa, fact=fact, fact_index=index[fact.id], answer_tokens=answer,
                          fact_sentences=tuple(sentences), speaker=fact.name or "",
                          others=tuple(s for s in speakers if s != fact.name), spread=spread))
    return out
