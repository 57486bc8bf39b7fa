"""Text helpers of the simulated memory systems: tokens, BM25 ranking, and evidence probes.

A *probe* asks whether a piece of information is stated in a text: some sentence (or, for a raw
message, its whole block with the timestamp line) must contain every literal of one of the
piece's forms. The simulated answer model, the sufficiency checker and the builder's checks all
read context through the same probe, so "the evidence is in the context" means one thing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from benchmarks.heldout_attribution_f.conversations import Conversation, Piece

STOPWORDS = frozenset(
    "a an the and or but of to in on at for with from by is are was were be been being it its this that these "
    "those i you he she we they me him her us them my your his our their what which who whom when where why how "
    "do does did done have has had not no so as if then than too very can will would should could about into "
    "over after before up down out off just also only ever".split()
)

_TOKEN = re.compile(r"[a-z0-9]+")
_COUNTED = re.compile(r"\w+|[^\w\s]")


def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def count_tokens(text: str) -> int:
    """Tokenizer stand-in for buffer budgets: words and punctuation marks."""
    return len(_COUNTED.findall(text))


def tokens(text: str) -> list[str]:
    return [stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25:
    """Okapi BM25 over a fixed list of documents (k1 1.5, b 0.75)."""

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.docs = [Counter(tokens(d)) for d in docs]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.docs else 0.0
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> list[float]:
        q = tokens(query)
        out = []
        for d, length in zip(self.docs, self.lengths, strict=True):
            s = 0.0
            for t in q:
                f = d.get(t, 0)
                if f:
                    s += self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * length / (self.avg or 1)))
            out.append(s)
        return out


def trigram_cosine(a: str, b: str) -> float:
    """A cheap stand-in for embedding similarity: cosine of character trigram counts."""

    def grams(text: str) -> Counter[str]:
        t = " ".join(_TOKEN.findall(text.lower()))
        return Counter(t[i:i + 3] for i in range(max(0, len(t) - 2)))

    ga, gb = grams(a), grams(b)
    dot = sum(v * gb.get(k, 0) for k, v in ga.items())
    na = math.sqrt(sum(v * v for v in ga.values()))
    nb = math.sqrt(sum(v * v for v in gb.values()))
    return dot / (na * nb) if na and nb else 0.0


def rank(scores: Sequence[float]) -> list[int]:
    """Indices by descending score; ties keep document order."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))


def rrf(rankings: Iterable[Sequence[int]], k: int = 60) -> list[int]:
    fused: dict[int, float] = {}
    order: list[int] = []
    for ranking in rankings:
        for r, i in enumerate(ranking, start=1):
            if i not in fused:
                order.append(i)
                fused[i] = 0.0
            fused[i] += 1.0 / (k + r)
    return sorted(order, key=lambda i: (-fused[i], order.index(i)))


# ------------------------------------------------------------------------------------- probes
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def segments(text: str) -> list[str]:
    """Sentences of a context; a raw message block ("Speaker X ... says: ..." + its "Timestamp:"
    line) stays one segment, so its speaker and date bind to everything it says."""
    out: list[str] = []
    block: str | None = None
    for line in text.split("\n"):
        s = line.strip()
        if not s:
            continue
        if s.startswith("Speaker "):
            if block is not None:
                out.append(block)
            block = s
            continue
        if block is not None and s.startswith("Timestamp:"):
            out.append(f"{block} {s}")
            block = None
            continue
        if block is not None:
            out.append(block)
            block = None
        out.extend(p for p in _SENTENCE_END.split(s) if p)
    if block is not None:
        out.append(block)
    return out


def literal(text: str) -> re.Pattern[str]:
    """A literal that must stand as whole words and not be negated right before it."""
    return re.compile(r"(?<!not )(?<!never )(?<![\w-])" + re.escape(text) + r"(?![\w-])")


def piece_forms(conv: Conversation, piece: Piece) -> list[list[re.Pattern[str]]]:
    """The alternative literal sets that state ``piece``: its fact form and its raw-message form."""
    fact_form = [literal(piece.who), literal(piece.value), *(literal(a) for a in piece.also)]
    raw = [literal(piece.who), literal(piece.raw_value), *(literal(a) for a in piece.also)]
    if piece.relative:
        raw.append(re.compile(re.escape(conv.session_of(piece.msg).when.strftime("%Y-%m-%d"))))
    return [fact_form, raw]


def states(conv: Conversation, piece: Piece, text: str) -> bool:
    forms = piece_forms(conv, piece)
    return any(all(p.search(seg) for p in form) for seg in segments(text) for form in forms)


def mentions(literals: Iterable[str], text: str) -> bool:
    return any(literal(x).search(text) for x in literals)
