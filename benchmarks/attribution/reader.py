"""The evidence reader: an emulated answer model that answers right exactly when its context holds the evidence.

faultbench's extractive reader quotes the statements that share the most words with the
question; on hand-written conversations it often fails without any fault (a "No" it cannot
say, an answer worded unlike the question), and such cases cannot be verified. The authors'
generators answered as an ideal reader would: the right answer when every piece of evidence
reached the context intact, a wrong one otherwise. This reader does the same over the real
layers' contexts: each question has *keys* — texts of its evidence messages (given in the data,
or by default the sentence of each evidence message that states the answer, or on the Mem0 split
the memory text of the paraphrase table that does) — and it answers
with the golden answer when every key is in the context, "I don't know." otherwise. It is the
one emulated model of the harness; the memory layers are real.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkits.evidence_flow import content_tokens
from toolkits.faultbench import NO_ANSWER, message_sentences

__all__ = ["EvidenceReader", "evidence_keys"]


def _key_sentence(candidates: Sequence[str], answer: frozenset[str], question: frozenset[str]) -> str:
    """The candidate that carries the answer (else the one closest to the question)."""
    return max(candidates, key=lambda s: (len(content_tokens(s) & answer), len(content_tokens(s) & question)))


def _sentences(text: str) -> list[str]:
    return [s for s in message_sentences(text) if not s.endswith("?") and len(content_tokens(s)) >= 2] \
        or message_sentences(text) or [text]


def evidence_keys(question: dict[str, Any], texts: Sequence[str],
                  memories: Mapping[int, Sequence[str]] | None = None) -> tuple[str, ...]:
    """The keys of a question record (its ``keys`` field, else one per evidence message).

    An evidence message's key is its sentence that carries the answer or, when ``memories``
    (message number → memory texts) rewords it, the memory text that does.
    """
    if question.get("keys"):
        return tuple(question["keys"])
    answer = frozenset(content_tokens(" ".join(question["answers"])))
    asked = frozenset(content_tokens(question["question"]))
    memories = memories or {}
    return tuple(_key_sentence(list(memories.get(n) or _sentences(texts[n - 1])), answer, asked)
                 for n in question["evidence"])


@dataclass(frozen=True, kw_only=True)
class EvidenceReader:
    """Answers each known question right when its context holds every key, else says it does not know."""

    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Question text → the texts its context must hold."""
    answers: dict[str, str] = field(default_factory=dict)
    """Question text → the right answer."""

    def answer(self, question: str, memories: str, *, exclude: Sequence[str] = ()) -> str:
        """The golden answer when ``memories`` (less the ``exclude`` texts) hold every key."""
        asked = question.strip()
        for text in exclude:
            memories = memories.replace(text, "")
        keys = self.keys.get(asked)
        if keys is None or not all(k in memories for k in keys):
            return NO_ANSWER
        return self.answers[asked]
