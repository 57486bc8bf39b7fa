"""Prompts of the ``llm`` presence judge (written for this project), kept short: every token is paid
once per question, and the judge asks only where the rules are unsure.

The user prompt is plain lines:

* ``Fact:`` — the evidence statement(s) that carried the critical information, as the
  conversation said them, with who said them when known;
* ``Answer:`` — the golden answer the fact supports (empty for a yes/no question);
* ``[N]`` — one text the graph side reached (a memory unit, a buffer, a context), on one line, cut
  to a bounded length around the fact.

The model answers one atomic question per text, in the texts' order, as JSON:
``{"v": ["yes" | "no" | "contradicts", ...]}``. :func:`read_question` reads a prompt back (for
scripted models and tests).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["PRESENCE_SYSTEM", "VERDICTS", "VERDICT_SCHEMA", "presence_question", "read_question"]

VERDICTS = ("yes", "no", "contradicts")

PRESENCE_SYSTEM = (
    "For each numbered text, does it still state the fact? yes: it states it (any wording); "
    "no: the fact is missing or only partly there; contradicts: it states something incompatible "
    "(another person, time, number, value, the opposite). Judge only the fact. JSON only."
)

_REPLY = '{"v": [one of "yes", "no", "contradicts" per text, in order]}'

VERDICT_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "presence_verdicts",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"v": {"type": "array", "items": {"type": "string", "enum": list(VERDICTS)}}},
            "required": ["v"],
            "additionalProperties": False,
        },
    },
}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def presence_question(fact: str, answer: str, texts: Sequence[str]) -> str:
    """The user prompt asking about ``texts`` (each shown on one line)."""
    numbered = "\n".join(f"[{i}] {_one_line(text)}" for i, text in enumerate(texts, start=1))
    return f"Fact: {_one_line(fact)}\nAnswer: {_one_line(answer)}\n{numbered}\nReply {_REPLY}"


_TEXT_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)
_ANSWER_LINE = re.compile(r"^Answer: (.*)$", re.MULTILINE)


def read_question(prompt: str) -> tuple[str, list[str]]:
    """``(answer, texts)`` of a prompt made by :func:`presence_question`."""
    answer = _ANSWER_LINE.search(prompt)
    return (answer.group(1) if answer else ""), [m.group(2) for m in _TEXT_LINE.finditer(prompt)]
