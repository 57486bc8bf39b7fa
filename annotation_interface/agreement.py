"""Agreement of labels: each automatic strategy against the human labels, and annotators
against each other.

ETA and OIA are computed as ``run_error_attribution.py`` defines them (exact string equality
of ``error_type`` and of ``op_id``), over the cases that both sides labelled. Cohen's kappa is
taken on the error types: the agreement beyond what the two sides' label frequencies give by
chance (1 = perfect, 0 = chance, negative = worse than chance; undefined when both sides use a
single identical label throughout).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from .labels import CaseRef, Label, consensus

__all__ = ["AgreementRow", "annotator_agreement", "cohen_kappa", "strategy_agreement"]


@dataclass(frozen=True, kw_only=True)
class AgreementRow:
    """One line of the agreement table."""

    left: str
    right: str
    cases: int
    eta: float | None
    """Share of cases with the same error type (None without common cases)."""
    oia: float | None
    """Share of cases with the same op id."""
    kappa: float | None
    """Cohen's kappa on the error types."""


def cohen_kappa(left: Sequence[str | None], right: Sequence[str | None]) -> float | None:
    """Cohen's kappa of two label sequences of the same cases (None when undefined)."""
    if len(left) != len(right):
        raise ValueError("cohen_kappa needs two label lists of the same cases")
    n = len(left)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(left, right, strict=True)) / n
    lc, rc = Counter(left), Counter(right)
    expected = sum(lc[k] * rc.get(k, 0) for k in lc) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def _row(left: str, right: str, pairs: list[tuple[Label, Label]]) -> AgreementRow:
    if not pairs:
        return AgreementRow(left=left, right=right, cases=0, eta=None, oia=None, kappa=None)
    n = len(pairs)
    return AgreementRow(
        left=left, right=right, cases=n,
        eta=sum(a.error_type == b.error_type for a, b in pairs) / n,
        oia=sum(a.op_id == b.op_id for a, b in pairs) / n,
        kappa=cohen_kappa([a.error_type for a, _ in pairs], [b.error_type for _, b in pairs]),
    )


def strategy_agreement(humans: Mapping[CaseRef, Mapping[str, Label]],
                       strategies: Mapping[str, Mapping[CaseRef, Label]]) -> list[AgreementRow]:
    """One row per strategy: its labels scored against the human label of each case it labelled."""
    gold = {ref: lab for ref, by in humans.items() if (lab := consensus(by)) is not None}
    rows = []
    for name, labels in strategies.items():
        pairs = [(labels[ref], gold[ref]) for ref in gold if ref in labels]
        rows.append(_row(name, "human", pairs))
    return rows


def annotator_agreement(humans: Mapping[CaseRef, Mapping[str, Label]]) -> list[AgreementRow]:
    """One row per pair of annotators, over the cases both labelled (unsure labels included)."""
    names = sorted({a for by in humans.values() for a in by})
    rows = []
    for a, b in combinations(names, 2):
        pairs = [(by[a], by[b]) for by in humans.values() if a in by and b in by]
        rows.append(_row(f"human:{a or '?'}", f"human:{b or '?'}", pairs))
    return rows
