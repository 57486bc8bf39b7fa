"""Failures that are not memory errors: a judge that said WRONG to a right answer, a gold answer
that nothing in the conversation supports.

Audits of memory benchmarks find a share of their failures outside the memory system: the
answering model was right and the LLM judge marked it wrong (``LLMAsAJudgeError``), or the gold
answer itself is wrong (``AnnotationError``). Blaming a memory operation for those would send a
developer after a fault that does not exist, so they get their own status, with the reason:

* **LLMAsAJudgeError candidate** — the prediction states the golden answer: every content token of
  the answer is in it, it does not negate it, it offers no alternative ("or", "not sure"), and its
  numbers, dates and the conversation's names of the kinds the answer has are the answer's own
  (no "7 May or 8 May", no second person).
* **AnnotationError candidate** — no message of the conversation states the golden answer (none
  holds ``answer_threshold`` of its words) and none of its words (numbers and dates aside, in any
  spelling, which a reader may compute) occurs in any message: nothing the memory system read could give it. Gold
  answers are often worded more abstractly than the conversation ("vintage cameras" for a
  speaker's "my grandfather's old cameras"), so one shared word is enough to leave the answer alone; a
  question that asks for an inference ("would she likely ...", "might he ...") expects an answer
  no message states, and is left alone too.

Yes/no answers have no words to compare and are never triaged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._facts import anchors_of, is_negated_about
from ._graph_view import GraphView
from ._text import content_tokens, token_recall

__all__ = ["NON_MEMORY_STATUSES", "Triage", "annotation_error", "judge_error"]

#: Result ``status`` → the non-memory error kind it reports.
NON_MEMORY_STATUSES = {"llm_judge_error": "LLMAsAJudgeError", "annotation_error": "AnnotationError"}
# Questions that ask the reader to infer: their gold answers are stated nowhere by design.
_ASKS_INFERENCE = re.compile(r"\b(?:likely|would|might|could|probably)\b", re.IGNORECASE)
_HEDGE = re.compile(r"\bor\b|\bnot sure\b|\bunclear\b|\bdo(?:n'?t| not) know\b|\bno information\b|\bunknown\b",
                    re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Triage:
    """A non-memory verdict on a failed case."""

    status: str
    """``llm_judge_error`` or ``annotation_error``."""
    kind: str
    """``LLMAsAJudgeError`` or ``AnnotationError``."""
    reason: str

    def as_dict(self) -> dict[str, str]:
        """The record written into the result."""
        return {"status": self.status, "kind": self.kind, "reason": self.reason}


def _names(tokens: frozenset[str], names: frozenset[str]) -> frozenset[str]:
    return tokens & names


def judge_error(golden: str, prediction: str, *, names: frozenset[str], question: str = "") -> Triage | None:
    """An ``LLMAsAJudgeError`` candidate when ``prediction`` states ``golden`` (see the module docstring)."""
    answer = content_tokens(golden)
    said = content_tokens(prediction)
    if not answer or not prediction.strip() or answer - said or _HEDGE.search(prediction):
        return None
    if is_negated_about(prediction, answer):
        return None
    said_anchors = anchors_of(said)
    for kind, values in anchors_of(answer).items():
        if said_anchors.get(kind, frozenset()) - values:
            return None
    asked = content_tokens(question)
    if _names(answer, names) and _names(said, names) - answer - asked:
        return None
    reason = (f"The prediction {prediction.strip()[:200]!r} states the golden answer {golden!r} (every answer word, "
              "its numbers, dates and names, no negation or alternative), yet the case was judged wrong: an "
              "LLMAsAJudgeError candidate, not a memory error; no memory operation is blamed.")
    return Triage(status="llm_judge_error", kind="LLMAsAJudgeError", reason=reason)


def annotation_error(view: GraphView, golden: str, *, answer_threshold: float, question: str = "") -> Triage | None:
    """An ``AnnotationError`` candidate when no message supports ``golden`` (see the module docstring)."""
    answer = content_tokens(golden)
    if not answer or not view.messages or _ASKS_INFERENCE.search(question):
        return None
    told = view.message_tokens.values()
    if any(token_recall(answer, tokens) >= answer_threshold for tokens in told):
        return None
    # a word holding a digit is a number or a date in some spelling ("3pm", "21st", a date glued to its
    # month or with the month misspelt): computable like the numbers and dates themselves
    computable = frozenset().union(*anchors_of(answer).values(), (t for t in answer if any(c.isdigit() for c in t)))
    everywhere = frozenset().union(*told)
    words = answer - computable
    unsaid = sorted(words - everywhere)
    if not words or len(unsaid) < len(words):
        return None
    reason = (f"No message of the conversation states the golden answer {golden!r}, and its word(s) "
              f"{', '.join(unsaid)} occur(s) in no message at all: nothing the memory system read could give this "
              "answer. An AnnotationError candidate (the gold answer may be wrong), not a memory error; no memory "
              "operation is blamed.")
    return Triage(status="annotation_error", kind="AnnotationError", reason=reason)
