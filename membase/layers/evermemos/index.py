"""In-memory hybrid index over memcells: BM25 (rank_bm25) + dense MaxSim, fused with RRF.

Documents are memcell dicts. BM25 text: the event-log facts when there are any, else the subject
three times, the summary twice and the episode once. Vectors: one per fact, else one each for
subject, summary and episode; a document scores the max cosine over its vectors.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from membase.clients.embeddings import Embedder

__all__ = ["HybridIndex", "bm25_tokenize", "rrf_fuse"]

_WORD_RE = re.compile(r"[a-z]+")
# The simulated layer's own terms, on purpose not the project's tokenizer (membase/utils/text.py):
# this EverMemOS index and the Mem0 fake (its sentence filter and update matching) decide what the
# simulated memories hold, from which faultbench and benchmarks B-F are built; other stop words
# ("really") would change that data, not only a measurement.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves""".split()
)


def _stemmer() -> Any:
    from nltk.stem import PorterStemmer

    return PorterStemmer()


_STEM = None


def bm25_tokenize(text: str) -> list[str]:
    """Lower-case, keep alphabetic tokens of length >= 2 that are not stop words, Porter-stem."""
    global _STEM
    if _STEM is None:
        _STEM = _stemmer()
    return [
        _STEM.stem(tok) for tok in _WORD_RE.findall(text.lower()) if len(tok) >= 2 and tok not in STOP_WORDS
    ]


def doc_bm25_text(doc: dict[str, Any]) -> str:
    """The text BM25 indexes for one memcell dict."""
    facts = (doc.get("event_log") or {}).get("atomic_fact") or []
    if facts:
        return " ".join(facts)
    subject, summary, episode = doc.get("subject") or "", doc.get("summary") or "", doc.get("episode") or ""
    return " ".join([subject] * 3 + [summary] * 2 + [episode])


def doc_vector_texts(doc: dict[str, Any]) -> list[str]:
    """Texts embedded for one memcell dict."""
    facts = (doc.get("event_log") or {}).get("atomic_fact") or []
    if facts:
        return list(facts)
    return [t for t in (doc.get("subject"), doc.get("summary"), doc.get("episode")) if t]


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def rrf_fuse(
    lists: Sequence[Sequence[tuple[dict[str, Any], float]]], rrf_k: int
) -> list[tuple[dict[str, Any], float]]:
    """Reciprocal-rank fusion keyed by event id: score = sum of 1 / (rrf_k + rank), rank from 1.

    Ties keep first-seen order (the first list wins), so BM25 order breaks ties when it comes first.
    """
    scores: dict[str, float] = {}
    docs: dict[str, dict[str, Any]] = {}
    for ranked in lists:
        for rank, (doc, _score) in enumerate(ranked, start=1):
            eid = doc["event_id"]
            docs.setdefault(eid, doc)
            scores[eid] = scores.get(eid, 0.0) + 1.0 / (rrf_k + rank)
    order = sorted(scores, key=lambda eid: -scores[eid])  # sorted() is stable
    return [(docs[eid], scores[eid]) for eid in order]


class HybridIndex:
    """Documents + BM25 corpus + per-document vectors."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.documents: list[dict[str, Any]] = []
        self.corpus: list[list[str]] = []
        self.vectors: list[list[list[float]]] = []
        self._bm25: Any = None

    def __len__(self) -> int:
        return len(self.documents)

    def add(self, doc: dict[str, Any]) -> None:
        """Index one memcell dict (BM25 is rebuilt over the whole corpus)."""
        texts = doc_vector_texts(doc)
        vectors = self.embedder.embed(texts) if texts else []
        self.documents.append(doc)
        self.corpus.append(bm25_tokenize(doc_bm25_text(doc)))
        self.vectors.append(vectors)
        self._bm25 = None

    def _bm25_model(self) -> Any:
        if self._bm25 is None:
            from rank_bm25 import BM25Okapi

            # BM25Okapi divides by the corpus size and fails on all-empty documents.
            self._bm25 = BM25Okapi([toks or ["\x00"] for toks in self.corpus])
        return self._bm25

    def bm25_search(self, query: str, n: int) -> list[tuple[dict[str, Any], float]]:
        """Top-n documents by BM25 (zero scores included); [] when the query has no terms."""
        tokens = bm25_tokenize(query)
        if not tokens or not self.documents:
            return []
        scores = self._bm25_model().get_scores(tokens)
        order = sorted(range(len(self.documents)), key=lambda i: -float(scores[i]))
        return [(self.documents[i], float(scores[i])) for i in order[:n]]

    def embedding_search(self, query: str, n: int) -> list[tuple[dict[str, Any], float]]:
        """Top-n documents by max cosine over their vectors."""
        if not self.documents or not query.strip():
            return []
        qv = self.embedder.embed([query])[0]
        scores = [max((_cosine(qv, v) for v in vecs), default=0.0) for vecs in self.vectors]
        order = sorted(range(len(self.documents)), key=lambda i: -scores[i])
        return [(self.documents[i], scores[i]) for i in order[:n]]

    def state(self) -> dict[str, Any]:
        """Picklable state (documents, corpus, vectors)."""
        return {"documents": self.documents, "corpus": self.corpus, "vectors": self.vectors}

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore `state()`; BM25 is rebuilt lazily."""
        self.documents = list(state["documents"])
        self.corpus = list(state["corpus"])
        self.vectors = list(state["vectors"])
        self._bm25 = None
