"""The ``rules`` judge (the default; no model): the word-level fact probe of :mod:`.._probe`."""

from __future__ import annotations

from dataclasses import dataclass

from .._probe import FactProbe
from ._protocol import CaseFacts

__all__ = ["RulesJudgeFactory", "rules_probe"]


def rules_probe(case: CaseFacts) -> FactProbe:
    """The rule probe of ``case`` (also the first opinion of the other judges)."""
    return FactProbe.build(
        mode=case.mode, facts=case.facts, answer_tokens=case.answer_tokens, question_tokens=case.question_tokens,
        names=case.names, evidence_tokens=case.evidence_tokens, document_frequency=case.document_frequency,
        documents=case.documents, answer_spread=case.answer_spread, answer_threshold=case.answer_threshold,
        evidence_threshold=case.evidence_threshold, question=case.question, golden=case.golden, rivals=case.rivals,
        proper_names=case.proper_names, said_on=case.said_on,
    )


@dataclass(frozen=True, kw_only=True)
class RulesJudgeFactory:
    """Builds a :class:`FactProbe` per case."""

    name: str = "rules"

    def judge(self, case: CaseFacts) -> FactProbe:
        """The rule probe of ``case``."""
        return rules_probe(case)
