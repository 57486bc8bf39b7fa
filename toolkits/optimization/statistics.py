"""The statistics the loop reports: conversation-level bootstrap, acceptance by a stated margin, seeds.

* :func:`conversation_bootstrap_interval` — questions of one conversation share a memory, so they
  are not independent draws; the interval resamples whole conversations (a cluster bootstrap) and
  recomputes the mean per-question difference over the questions of the drawn conversations.
* :func:`improves` — an update is accepted only when it raises the score by at least the stated
  minimum; a tie is never an improvement, whatever the minimum.
* :func:`mean_sd` / :func:`summarize_seeds` — mean ± sample standard deviation over repeated runs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["conversation_bootstrap_interval", "improves", "mean_sd", "summarize_seeds"]


def conversation_bootstrap_interval(
    by_conversation: Mapping[str, Sequence[float]],
    *,
    samples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float] | None:
    """Percentile interval of the per-question mean, resampling conversations with replacement.

    Args:
        by_conversation: Conversation id → its per-question values (e.g. after − before).
        samples: Resamples (0 disables the interval).
        seed: Seed of the resampling (the interval is reproducible).
        confidence: Coverage of the interval.

    Returns:
        ``(low, high)``, or None without values or samples. With one conversation every resample is
        that conversation, so the interval collapses to the point estimate: one conversation says
        nothing about the spread between conversations.
    """
    groups = [(sum(v), len(v)) for _, v in sorted(by_conversation.items()) if len(v)]
    if not groups or samples <= 0:
        return None
    rng = random.Random(seed)
    n = len(groups)
    means = []
    for _ in range(samples):
        total = count = 0.0
        for _ in range(n):
            s, c = groups[rng.randrange(n)]
            total += s
            count += c
        means.append(total / count)
    means.sort()
    tail = (1.0 - confidence) / 2.0
    lo = means[min(samples - 1, max(0, int(tail * samples)))]
    hi = means[min(samples - 1, max(0, int((1.0 - tail) * samples) - 1))]
    return (lo, hi)


def improves(before: float, after: float, min_improvement: float = 0.0) -> bool:
    """True when ``after`` beats ``before`` by at least ``min_improvement`` and by more than a tie."""
    gain = after - before
    return gain > 1e-12 and gain >= min_improvement - 1e-12


def mean_sd(values: Sequence[float]) -> dict[str, Any]:
    """``{"mean", "sd", "n", "values"}``; ``sd`` is the sample standard deviation (0.0 for one value)."""
    values = [float(v) for v in values]
    n = len(values)
    if n == 0:
        return {"mean": None, "sd": None, "n": 0, "values": []}
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "n": n, "values": values}


def summarize_seeds(reports: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """Mean ± sd over seeds of each metric's before, after and difference in ``final_evaluation.json``s.

    Args:
        reports: Seed → its final evaluation report (``metrics.<name>.{before,after,difference}``).
    """
    seeds = sorted(reports)
    names = sorted({name for r in reports.values() for name in (r.get("metrics") or {})})
    out: dict[str, Any] = {"seeds": seeds, "metrics": {}}
    for name in names:
        rows = [reports[s]["metrics"][name] for s in seeds if name in (reports[s].get("metrics") or {})]
        out["metrics"][name] = {key: mean_sd([row[key] for row in rows]) for key in ("before", "after", "difference")}
    return out
