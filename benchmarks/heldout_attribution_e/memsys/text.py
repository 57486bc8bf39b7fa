"""Text helpers of the simulated memory systems: encodings, token counts and the two scorers."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import Any

STOPWORDS = frozenset(
    "a an the and or but if of to in on at for with from by about as is are was were be been being "
    "do does did done have has had i me my you your he him his she her it its we our they them their "
    "this that these those what which who whom when where why how there here so than then too very "
    "can could will would shall should may might must not no yes just also only still again ever".split()
)


def dumps(value: Any) -> str:
    """The JSON encoding that memory-unit and message nodes use."""
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


def count_tokens(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [_stem(w) for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]


def cosine(query: str, text: str) -> float:
    """Bag-of-words cosine: the dense scorer's stand-in."""
    q, d = Counter(terms(query)), Counter(terms(text))
    dot = sum(q[t] * d[t] for t in q)
    if not dot:
        return 0.0
    return dot / (math.sqrt(sum(v * v for v in q.values())) * math.sqrt(sum(v * v for v in d.values())))


def bm25_scores(query: str, docs: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    tokenised = [terms(d) for d in docs]
    if not tokenised:
        return []
    avg = sum(len(t) for t in tokenised) / len(tokenised) or 1.0
    df = Counter(t for toks in tokenised for t in set(toks))
    n = len(tokenised)
    scores = []
    for toks in tokenised:
        tf = Counter(toks)
        s = 0.0
        for t in terms(query):
            if t not in tf:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            s += idf * tf[t] * (k1 + 1) / (tf[t] + k1 * (1 - b + b * len(toks) / avg))
        scores.append(s)
    return scores


def rank(scores: list[float]) -> list[int]:
    """Indices by descending score, ties in input order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))
