"""Deterministic stand-ins for the answer model and the judge, served as chat models.

Both are plugged into membase's evaluation runner as ``FunctionChatModel`` s, so the
question-answering and judge ops are recorded by the runner exactly as for real models.

* :class:`ExtractiveReader` answers from the memories in its prompt alone. It cuts them into
  statements, keeps track of who each statement is about (``Speaker X ... says:``, ``X said:``,
  ``X:`` attributions carry over to the following sentences of the same line), and ranks the
  statements by the rarity-weighted words they share with the question — skipping statements
  about somebody else when the question names a person, and negated statements when the
  question is not negated, as a careful reader would. It quotes the two best statements and never
  sees the golden answer.
* :func:`judge_answer` marks a prediction CORRECT when it holds the golden answer's content
  tokens (recall at least :data:`toolkits.evidence_flow.DEFAULT_ANSWER_THRESHOLD`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from toolkits.evidence_flow import DEFAULT_ANSWER_THRESHOLD, content_tokens, token_recall

__all__ = ["ExtractiveReader", "Statement", "judge_answer", "parse_statements", "reader_model", "token_judge_model"]

NO_ANSWER = "I don't know."
_ATTRIBUTION = re.compile(
    r"^(?:Memory:\s*)?(?:Speaker (?P<a>[A-Z][\w'’-]*) \(role: \w+\) says:|(?P<b>[A-Z][\w'’-]*) said:|"
    r"(?P<c>[A-Z][\w'’-]*):)\s*"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SKIP_LINE = ("Timestamp:", "Time:", "<", "### Memory")
_NEGATED = re.compile(r"\b(not|never|no|nothing|nobody|none|cannot)\b|n't\b", re.IGNORECASE)
_NOT_NAMES = frozenset({"memory", "time", "title", "document", "question"})


@dataclass(frozen=True, kw_only=True)
class Statement:
    """One sentence of the memories and who it is about."""

    text: str
    speaker: str | None
    names: frozenset[str]
    """Lower-case speaker names mentioned in it."""
    turn: int = 0
    """Sentences of one speaker's turn in one line share a number."""


def parse_statements(memories: str) -> list[Statement]:
    """Cut memory text into sentences with their speaker (attributions carry over in a line)."""
    raw: list[tuple[str, str | None, int]] = []
    turn = 0
    for line in memories.splitlines():
        line = line.strip()
        if not line or line.startswith(_SKIP_LINE):
            continue
        speaker: str | None = None
        turn += 1
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            match = _ATTRIBUTION.match(sentence)
            if match:
                name = match.group("a") or match.group("b") or match.group("c")
                if name.lower() not in _NOT_NAMES:
                    speaker = name
                    turn += 1
                    sentence = sentence[match.end():].strip()
            if sentence:
                raw.append((sentence, speaker, turn))
    speakers = {s.lower() for _, s, _ in raw if s}
    out = []
    for sentence, speaker, turn in raw:
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", sentence)}
        out.append(Statement(text=sentence, speaker=speaker, names=frozenset(words & speakers), turn=turn))
    return out


def _stems(text: str) -> set[str]:
    return {t[:6] for t in content_tokens(text)}


@dataclass(frozen=True, kw_only=True)
class ExtractiveReader:
    """Answers by quoting the statements of the memories that best match the question."""

    statements: int = 2
    """How many statements the answer quotes."""

    def rank(self, question: str, statements: Sequence[Statement]) -> list[tuple[float, int, Statement]]:
        """Score the eligible statements (best first); ineligible ones are left out.

        People decide eligibility, not the score: a statement about someone other than the
        person asked about is skipped, and names count for nothing in the word overlap.
        """
        if not statements:
            return []
        known = {s.speaker.lower() for s in statements if s.speaker}
        asked_about = {w.lower() for w in re.findall(r"[A-Za-z]+", question)} & known
        question_negated = bool(_NEGATED.search(question))
        names = {n[:6] for n in known}
        stems = [_stems(s.text) - names for s in statements]
        df: dict[str, int] = {}
        for bag in stems:
            for t in bag:
                df[t] = df.get(t, 0) + 1
        wanted = _stems(question) - names
        scored = []
        for i, (statement, bag) in enumerate(zip(statements, stems, strict=True)):
            about = ({statement.speaker.lower()} if statement.speaker else set()) | statement.names
            if asked_about and about and not about & asked_about:
                continue
            if not question_negated and _NEGATED.search(statement.text):
                continue
            score = sum(math.log(1 + len(statements) / df[t]) for t in wanted & bag)
            if score > 0:
                scored.append((score, i, statement))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return scored

    def answer(self, question: str, memories: str, *, exclude: Sequence[str] = ()) -> str:
        """The answer text; statements whose text is in ``exclude`` are skipped.

        The best statement is quoted with the sentences around it in its speaker's turn (an answer
        often sits next to the sentence that matches the question), then the next best ones.
        """
        statements = [s for s in parse_statements(memories) if s.text not in exclude]
        ranked = self.rank(question, statements)
        if not ranked:
            return NO_ANSWER
        best = ranked[0][1]
        picked = [i for i in (best - 1, best, best + 1)
                  if 0 <= i < len(statements) and statements[i].turn == statements[best].turn]
        for _, i, _ in ranked[1:]:
            if len({statements[j].turn for j in picked}) >= self.statements:
                break
            if i not in picked:
                picked.append(i)
        return " ".join(f"{statements[i].speaker}: {statements[i].text}" if statements[i].speaker
                        else statements[i].text for i in picked)


def judge_answer(golden_answers: Sequence[str], prediction: str) -> tuple[str, float]:
    """Return ``(judge response JSON, score)``; score 1.0 when any golden answer is stated."""
    tokens = content_tokens(prediction)
    ok = any(
        (g_tokens := content_tokens(g)) and token_recall(g_tokens, tokens) >= DEFAULT_ANSWER_THRESHOLD
        for g in golden_answers
    )
    return json.dumps({"label": "CORRECT" if ok else "WRONG"}), 1.0 if ok else 0.0


def split_qa_prompt(prompt: str) -> tuple[str, str]:
    """``(question, memories)`` out of the evaluation runner's question-answering prompt."""
    match = re.search(r"Question: (?P<q>.*?)\n\s*\n?Memories:\n(?P<m>.*)\Z", prompt, re.DOTALL)
    if match is None:
        raise ValueError("question-answering prompt without 'Question:' and 'Memories:' sections")
    return match.group("q").strip(), match.group("m")


def split_judge_prompt(prompt: str) -> tuple[str, str, str]:
    """``(question, reference, prediction)`` out of the judge prompt."""
    match = re.search(r"Question: (?P<q>.*?)\nReference answer: (?P<r>.*?)\nAnswer to grade: (?P<p>.*?)\n\n",
                      prompt, re.DOTALL)
    if match is None:
        raise ValueError("judge prompt without 'Question:', 'Reference answer:' and 'Answer to grade:'")
    return match.group("q").strip(), match.group("r"), match.group("p")


def reply_text(messages: list[dict[str, Any]]) -> str:
    """The last message's text of a chat request."""
    return str(messages[-1].get("content", "")) if messages else ""


def _read(messages: list[dict[str, Any]], **_kwargs: Any) -> str:
    question, memories = split_qa_prompt(reply_text(messages))
    return ExtractiveReader().answer(question, memories)


def _grade(messages: list[dict[str, Any]], **_kwargs: Any) -> str:
    _question, reference, prediction = split_judge_prompt(reply_text(messages))
    return judge_answer([reference], prediction)[0]


def reader_model() -> Any:
    """The extractive reader as a chat model (``--qa-model py:toolkits.faultbench:reader_model``)."""
    from membase.clients.fake import FunctionChatModel

    return FunctionChatModel(_read, model="extractive-reader")


def token_judge_model() -> Any:
    """The token-recall judge as a chat model (``--judge-model py:toolkits.faultbench:token_judge_model``)."""
    from membase.clients.fake import FunctionChatModel

    return FunctionChatModel(_grade, model="token-judge")
