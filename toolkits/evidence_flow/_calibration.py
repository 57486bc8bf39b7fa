"""A word-for-word copy of the evidence keeps what the evidence says, whatever the judge scores.

A seed is chosen because its *message* states the golden answer; a judge scores texts by their
best segment. When the golden answer is long (a whole reference reply, several facts of which
one message states a part) the judge can score the seed itself below its threshold. Every copy
of the seed then scores no better and reads as *lost* at the first operation that copies it,
so a verbatim buffer or document is blamed for a loss that never happened. A text that holds a
seed's whole text word for word has lost nothing of it: :class:`SeedCalibratedJudge` counts such
a text as present (unless the judge finds a conflict in it) and leaves every other verdict, a
reworded or cut copy included, to the judge it wraps.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ._assessment import Assessment

__all__ = ["SeedCalibratedJudge", "calibrate_to_seeds"]

_SPACE = re.compile(r"\s+")


def _flat(text: str) -> str:
    """The text with every run of white space one blank (a buffer re-joins lines its own way)."""
    return _SPACE.sub(" ", text).strip()


@dataclass(kw_only=True)
class SeedCalibratedJudge:
    """A presence judge that also accepts a word-for-word copy of a seed (see the module docstring)."""

    inner: Any
    """The judge that scores texts (:class:`~toolkits.evidence_flow.judges.PresenceJudge`)."""
    seed_texts: tuple[str, ...]
    """The seeds' texts, white space flattened."""

    @property
    def name(self) -> str:
        """The wrapped judge's name."""
        return str(self.inner.name)

    def assess(self, text: str) -> Assessment:
        """``inner``'s verdict, present also when the text holds a seed word for word."""
        verdict = self.inner.assess(text)
        if verdict.present or verdict.contradicts:
            return verdict
        flat = _flat(text)
        if not any(seed in flat for seed in self.seed_texts):
            return verdict
        return dataclasses.replace(verdict, present=True, why=f"{verdict.why}, but a word-for-word copy of the evidence")

    def describe(self) -> str:
        """The wrapped judge's line, and the copies it accepts."""
        return f"{self.inner.describe()}, or the evidence copied word for word"

    def __getattr__(self, attribute: str) -> Any:
        # prefetch, usage and the like belong to the wrapped judge
        if attribute == "inner":  # not set yet (while copying): no recursion
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)


def calibrate_to_seeds(judge: Any, seed_texts: Iterable[str]) -> Any:
    """``judge``, or a :class:`SeedCalibratedJudge` when it finds none of the seeds present."""
    texts = [t for t in seed_texts if t.strip()]
    if not texts or any(judge.assess(t).present for t in texts):
        return judge
    return SeedCalibratedJudge(inner=judge, seed_texts=tuple(_flat(t) for t in texts))
