"""Deterministic stand-ins for the answer model and the judge.

* :class:`ExtractiveReader` answers from the context alone: it splits the memories into
  statements and returns the two statements that share the most (IDF-weighted, prefix-stemmed)
  words with the question. It never sees the golden answer.
* :func:`judge_answer` marks a prediction CORRECT when it contains the golden answer's
  content tokens (recall ≥ :data:`toolkits.evidence_flow.DEFAULT_ANSWER_THRESHOLD`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from toolkits.evidence_flow import DEFAULT_ANSWER_THRESHOLD, content_tokens, token_recall

__all__ = ["ExtractiveReader", "judge_answer", "split_statements"]

_SPEAKER_PREFIX = re.compile(r"^Speaker (.+?) \(role: \w+\) says: ")
_NO_ANSWER = "I don't know."


def split_statements(text: str) -> list[str]:
    """Split memory text into statements (lines), dropping timestamps and markup lines."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("Timestamp:", "<", "### Memory", "Time:")):
            continue
        out.append(line)
    return out


def _stems(text: str) -> set[str]:
    return {t[:6] for t in content_tokens(text)}


@dataclass(frozen=True, kw_only=True)
class ExtractiveReader:
    """Answers by quoting the statements of the context that best match the question."""

    statements: int = 2
    """How many statements the answer quotes."""

    def rank(self, question: str, memories: Sequence[str]) -> list[tuple[float, int, str]]:
        """Score every statement of ``memories`` against ``question`` (best first)."""
        lines = [s for m in memories for s in split_statements(m)]
        if not lines:
            return []
        stems = [_stems(_SPEAKER_PREFIX.sub(r"\1 ", line)) for line in lines]
        df: dict[str, int] = {}
        for s in stems:
            for t in s:
                df[t] = df.get(t, 0) + 1
        q = _stems(question)
        scored = []
        for i, (line, s) in enumerate(zip(lines, stems, strict=True)):
            score = sum(math.log(1 + len(lines) / df[t]) for t in q & s)
            scored.append((score, i, line))
        scored.sort(key=lambda x: (-x[0], x[1]))
        return scored

    def answer(self, question: str, memories: Sequence[str], *, exclude: Sequence[str] = ()) -> str:
        """Return the answer text; statements listed in ``exclude`` are skipped."""
        picked = [line for score, _, line in self.rank(question, memories) if score > 0 and line not in exclude]
        if not picked:
            return _NO_ANSWER
        return " ".join(_SPEAKER_PREFIX.sub(r"\1: ", line) for line in picked[: self.statements])


def judge_answer(golden_answers: Sequence[str], prediction: str) -> tuple[str, float]:
    """Return ``(judge response JSON, score)``; score 1.0 when any golden answer is stated."""
    tokens = content_tokens(prediction)
    ok = any(
        (g_tokens := content_tokens(g)) and token_recall(g_tokens, tokens) >= DEFAULT_ANSWER_THRESHOLD
        for g in golden_answers
    )
    return json.dumps({"label": "CORRECT" if ok else "WRONG"}), 1.0 if ok else 0.0
