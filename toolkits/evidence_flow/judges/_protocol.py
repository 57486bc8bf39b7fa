"""The seam between the graph side and the text side: a judge says whether a text still states a fact.

The graph side (lineage, lifecycle, query-time identity) never reads words itself; at every step it
visits it asks the case's :class:`PresenceJudge` about one text and reads the :class:`Assessment`
(``present``; ``contradicts`` for the conflict verdict; ``score`` and ``why`` for the trail). A
:class:`JudgeFactory` makes one judge per followed piece of information from its :class:`CaseFacts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .._assessment import Assessment

if TYPE_CHECKING:
    from .._facts import Statement

__all__ = ["Assessment", "CaseFacts", "JudgeFactory", "PresenceJudge"]


@runtime_checkable
class PresenceJudge(Protocol):
    """Judges whether texts still state one case's critical information."""

    name: str
    """The judge's name (``rules``, ``embedding``, ``llm``), recorded in every result."""

    def assess(self, text: str) -> Assessment:
        """The verdict on ``text``: present, absent, or contradicting the fact."""
        ...

    def describe(self) -> str:
        """One line naming what is followed (it goes into the reason)."""
        ...


@dataclass(frozen=True, kw_only=True)
class CaseFacts:
    """What a judge is built from: the facts of one followed piece of information."""

    mode: str
    """``answer`` (a message states the golden answer) or ``evidence`` (an inferred answer)."""
    facts: Sequence[Statement]
    """The evidence statements that carry the information."""
    answer_tokens: frozenset[str]
    question_tokens: frozenset[str]
    names: frozenset[str]
    """The conversation's speakers, lower case."""
    evidence_tokens: frozenset[str]
    document_frequency: dict[str, int] = field(hash=False)
    documents: int
    answer_spread: int
    """How many messages state the golden answer (1 = only the evidence)."""
    answer_threshold: float
    evidence_threshold: float
    question: str
    golden: str
    rivals: Sequence[Statement] = ()
    proper_names: frozenset[str] = frozenset()
    said_on: Sequence[date] = ()


class JudgeFactory(Protocol):
    """Makes the presence judge of each followed piece of information."""

    name: str

    def judge(self, case: CaseFacts) -> PresenceJudge:
        """A judge for ``case``."""
        ...
