"""The ``embedding`` judge: the rules judge, with MiniLM (the ``local`` extra) as a second opinion.

Where the rules find the golden answer but a little less of the fact's own words than they need
(a *borderline* segment, see :mod:`.._probe`), the embedder compares that segment with the fact
statements; a cosine similarity of at least ``threshold`` accepts it as a paraphrase. A missing
answer word is never overruled, and a conflict found by the rules stands. An embedder that fails
gives no opinion for the rest of the case (the rules' verdict stands), never an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._assessment import Assessment
from .._probe import FactProbe
from .._text import DEFAULT_EMBEDDING_THRESHOLD, Embedder, cosine
from ._protocol import CaseFacts
from .rules import rules_probe

__all__ = ["EmbeddingJudge", "EmbeddingJudgeFactory"]

#: Borderline segments of one text shown to the embedder at most.
MAX_SECOND_OPINIONS = 8


@dataclass(kw_only=True)
class EmbeddingJudge:
    """The rules' verdict, overruled to *present* where the embedder finds a close paraphrase."""

    rules: FactProbe
    embedder: Embedder | None
    threshold: float = DEFAULT_EMBEDDING_THRESHOLD
    name: str = "embedding"
    _fact_vectors: list[list[float]] | None = field(default=None, repr=False)
    _cache: dict[str, Assessment] = field(default_factory=dict, repr=False)

    def describe(self) -> str:
        """What the rules follow."""
        return self.rules.describe()

    def assess(self, text: str) -> Assessment:
        """The rules' verdict on ``text``, or the embedder's on its borderline segments."""
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        best, borderline = self.rules.judge_text(text)
        if not best.present and borderline and self.embedder is not None:
            best = self._second_opinion(best, list(borderline[:MAX_SECOND_OPINIONS]))
        self._cache[text] = best
        return best

    def _second_opinion(self, best: Assessment, candidates: list[str]) -> Assessment:
        assert self.embedder is not None
        try:
            if self._fact_vectors is None:
                self._fact_vectors = self.embedder.embed([f.text for f in self.rules.facts])
            vectors = self.embedder.embed(candidates)
        except Exception:  # an unusable embedder gives no opinion  # noqa: BLE001
            self.embedder = None
            return best
        for text, vector in zip(candidates, vectors, strict=False):
            similarity = max(cosine(vector, fv) for fv in self._fact_vectors)
            if similarity >= self.threshold:
                return Assessment(present=True, score=1.0, why=f"embedding similarity {similarity:.2f}",
                                  segment=text[:160])
        return best


@dataclass(frozen=True, kw_only=True)
class EmbeddingJudgeFactory:
    """Builds an :class:`EmbeddingJudge` per case around one shared embedder."""

    embedder: Any
    """Anything with ``embed(texts) -> vectors`` (MiniLM by default in the runner)."""
    threshold: float = DEFAULT_EMBEDDING_THRESHOLD
    name: str = "embedding"

    def judge(self, case: CaseFacts) -> EmbeddingJudge:
        """The embedding judge of ``case``."""
        return EmbeddingJudge(rules=rules_probe(case), embedder=self.embedder, threshold=self.threshold)
