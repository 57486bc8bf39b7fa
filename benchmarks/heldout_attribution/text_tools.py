"""Small text helpers of the simulated layers (ranking and cutting; never used for labels)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from .conversations import Message, Question

_STOP = frozenset(
    "a an the and or but of to in on at for with is are was were be been do does did i im i'm you he she it we "
    "they my your his her its our their me him us them this that these those what which who when where why how "
    "many much too also so just not no yes still some one".split()
)
_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    return {w for w in words(text) if w not in _STOP}


def overlap(a: str, b: str) -> int:
    return len(content_words(a) & content_words(b))


def rank(query: str, candidates: Sequence[tuple[str, str]]) -> list[str]:
    """Candidate keys by shared content words with ``query`` (stable: earlier first on ties)."""
    scored = [(-overlap(query, text), i, key) for i, (key, text) in enumerate(candidates)]
    return [key for _, _, key in sorted(scored)]


def answer_part(question: Question, message: Message) -> str:
    """The golden answer (of a multi-part answer: the part) that ``message`` states."""
    if len(question.answers) == 1:
        return question.answers[0]
    return max(question.answers, key=lambda a: overlap(a, message.text))


def answer_fact_index(question: Question, message: Message) -> int:
    if len(question.evidence) == 1:
        return question.fact_index
    part = answer_part(question, message)
    return max(range(len(message.facts)), key=lambda i: overlap(part, message.facts[i]))


def cut_before_answer(text: str, answer: str) -> str:
    """``text`` up to the first word of ``answer`` that it contains (a token-limit style cut)."""
    lowered = text.lower()
    positions = [m.start() for w in words(answer) for m in re.finditer(rf"\b{re.escape(w)}\b", lowered)]
    if not positions:
        return text
    return text[: min(positions)].rstrip(" ,;:")


def fact_key(question: Question, message: Message) -> str:
    """Token naming the answer-bearing fact of an evidence message (what a memory must hold)."""
    return f"{message.id}#{answer_fact_index(question, message)}"


def select(query: str, fault: str, evidence: set[str], lost: set[str],
           units: Sequence[tuple[str, str, set[str]]], k: int) -> list[str]:
    """The unit keys a retrieval returns, in rank order.

    ``units`` are ``(key, text, tokens of the evidence the unit still holds)``. Without a
    retrieval fault every unit that holds evidence is returned (filled up by rank);
    ``near_duplicate`` / ``miss_after_update`` return only units holding none of it, and
    ``partial_retrieval`` loses the units holding ``lost``.
    """
    ranked = rank(query, [(key, text) for key, text, _ in units])
    held = {key: tokens for key, _, tokens in units}
    holders = [key for key in ranked if held[key] & evidence]
    if fault in {"near_duplicate", "miss_after_update"}:
        return [key for key in ranked if key not in holders][:k]
    if fault == "partial_retrieval":
        ranked = [key for key in ranked if not held[key] & lost]
        holders = [key for key in holders if key in ranked]
    rest = [key for key in ranked if key not in holders]
    chosen = set(holders) | set(rest[: max(0, k - len(holders))])
    return [key for key in ranked if key in chosen]
