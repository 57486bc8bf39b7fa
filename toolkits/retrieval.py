"""Evidence retrieval over the message nodes of an execution graph (spec-attribution §5.6).

When a benchmark case comes without annotated evidence, the attribution agents start from
*pseudo* source evidence: the messages most similar to the failed question (optionally with
its golden answer or the wrong prediction). :class:`DocumentRetriever` ranks documents three
ways:

* ``sparse`` — BM25 (``rank_bm25.BM25Okapi``, k1 1.5, b 0.75) over tokens from a tokenizer
  (:func:`unicode_tokenize` by default; :func:`ascii_tokenize` reproduces the reference);
* ``dense`` — cosine similarity of embeddings held in a qdrant local-mode collection;
* ``hybrid`` — reciprocal-rank fusion (``k = 60``) of the top ``limit × candidate_multiplier``
  of both lists.

A retriever is built once per graph (:class:`GraphRetrieverPool`) and reused by every case of
that graph; embeddings go through :class:`toolkits._embeddings.CachedEmbedder`, so a rerun does
not embed a message twice.

The settings of the reference (ASCII tokens, the raw JSON value as document text, zero-score
BM25 documents allowed into the fused list) are :data:`REFERENCE_SETTINGS`; ours differ where
``benchmarks/retrieval_locomo.py`` measured a gain.
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from membase.utils.text import STOP_WORDS, content_words
from toolkits._embeddings import CachedEmbedder, Embedder

__all__ = [
    "OURS_SETTINGS",
    "QUERY_TYPES",
    "REFERENCE_SETTINGS",
    "RETRIEVAL_TYPES",
    "Document",
    "DocumentRetriever",
    "GraphRetrieverPool",
    "RetrievalSettings",
    "ScoredDocument",
    "ascii_tokenize",
    "build_retrieval_query",
    "message_documents",
    "message_text",
    "messages_known_at",
    "starting_evidence",
    "rrf_fuse",
    "unicode_tokenize",
]

RetrievalType = Literal["sparse", "dense", "hybrid"]
QueryType = Literal["query_with_golden_answer", "query_only", "query_with_prediction"]
RETRIEVAL_TYPES: tuple[str, ...] = ("sparse", "dense", "hybrid")
QUERY_TYPES: tuple[str, ...] = ("query_with_golden_answer", "query_only", "query_with_prediction")
RRF_K = 60

# ---------------------------------------------------------------------------------------------
# Tokenizers

_ASCII_TOKEN = re.compile(r"[a-z0-9_]+")


def ascii_tokenize(text: str) -> list[str]:
    """The reference tokenizer: lowercase, then ASCII runs ``[a-z0-9_]+`` (other scripts vanish)."""
    return _ASCII_TOKEN.findall(text.lower())


#: The project's one stop-word list (:mod:`membase.utils.text`): function words and chat fillers
#: carry no evidence signal but dominate BM25 term frequencies of chat messages.
ENGLISH_STOPWORDS = STOP_WORDS


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    from nltk.stem.porter import PorterStemmer

    stem = PorterStemmer().stem
    return lru_cache(maxsize=200_000)(stem)


def unicode_tokenize(
    text: str, *, stopwords: bool = True, stem: bool = True, stemmer: Literal["light", "porter"] = "light"
) -> list[str]:
    """Unicode-aware tokenizer for BM25: the project's one tokenizer (:func:`membase.utils.text.words`).

    NFKC-normalises and case-folds the text, splits it into words (letters and digits of every
    script), and splits runs of CJK characters — written without spaces — into single characters
    plus adjacent bigrams. Optionally drops the project's stop words and stems words.

    Args:
        text: Text to tokenize.
        stopwords: Drop :data:`ENGLISH_STOPWORDS`.
        stem: Stem words.
        stemmer: ``light`` (the project's stemmer, :func:`membase.utils.text.stem`) or ``porter``
            (NLTK's Porter stemmer, kept as a benchmark variant).
    """
    if stemmer == "light" or not stem:
        return content_words(text, drop_stop_words=stopwords, stemmed=stem)
    porter = _stemmer()
    return [w if w.isdigit() else porter(w) for w in content_words(text, drop_stop_words=stopwords, stemmed=False)]


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "ascii": ascii_tokenize,
    "unicode": lambda t: unicode_tokenize(t, stopwords=False, stem=False),
    "unicode_stop": lambda t: unicode_tokenize(t, stopwords=True, stem=False),
    "unicode_stem": unicode_tokenize,
    "unicode_porter": lambda t: unicode_tokenize(t, stemmer="porter"),
}

# ---------------------------------------------------------------------------------------------
# Documents

_MEM0_SUFFIX = "\nBelow is this message's metadata:"


TextMode = Literal["raw", "fields", "content", "speaker_content"]


def message_text(value: str, mode: TextMode = "speaker_content") -> str:
    r"""The text of a message node used for retrieval.

    Message values are JSON objects ``{content, name, role, timestamp}`` (spec-tracer §4.6).

    Args:
        value: The stored (raw) value of the node.
        mode: ``raw`` — the stored string as is (the reference: JSON syntax and escapes such
            as a literal ``\n`` included); ``fields`` — the decoded string values of the object,
            one per line (content, speaker, role, timestamp); ``content`` — only the ``content``
            field, without the Mem0 metadata suffix; ``speaker_content`` — the speaker name
            followed by that content. Values that are not such JSON are returned as is.
    """
    if mode == "raw":
        return value
    try:
        data = json.loads(value)
    except (TypeError, ValueError):
        return value
    if not isinstance(data, dict) or not isinstance(data.get("content"), str):
        return value
    if mode == "fields":
        return "\n".join(str(v) for _, v in sorted(data.items()) if isinstance(v, str | int | float))
    content = data["content"]
    cut = content.find(_MEM0_SUFFIX)
    if cut >= 0:
        content = content[:cut]
    if mode == "speaker_content" and data.get("name") and not content.startswith("Speaker "):
        return f"{data['name']}: {content}"
    return content


@dataclass(frozen=True, kw_only=True)
class Document:
    """One retrievable text."""

    doc_id: str
    """Identifier (a message node's full_node_id)."""
    text: str
    """Text indexed by BM25 (and embedded when ``dense_text`` is None)."""
    dense_text: str | None = None
    """Text that is embedded, when it differs from ``text``."""


@dataclass(frozen=True, kw_only=True)
class ScoredDocument:
    """A ranked retrieval hit."""

    doc_id: str
    """Identifier of the document."""
    text: str
    """Indexed text."""
    score: float
    """BM25 score, cosine similarity, or fused RRF score (by retrieval type)."""
    rank: int
    """1-based rank in the returned list."""


@dataclass(frozen=True, kw_only=True)
class RetrievalSettings:
    """How documents are built and ranked (the knobs the benchmark compares)."""

    tokenizer: str = "unicode_stem"
    """Key of :data:`TOKENIZERS`."""
    text_mode: TextMode = "fields"
    """How a message value becomes the BM25 text (see :func:`message_text`)."""
    dense_text_mode: TextMode = "speaker_content"
    """How a message value becomes the embedded text."""
    drop_zero_sparse: bool = True
    """Keep BM25 documents with score 0 out of the ranked list (and of the fusion)."""
    rrf_k: int = RRF_K
    """RRF constant."""
    candidate_multiplier: int = 2
    """Hybrid takes ``limit × candidate_multiplier`` candidates from each list."""


REFERENCE_SETTINGS = RetrievalSettings(
    tokenizer="ascii", text_mode="raw", dense_text_mode="raw", drop_zero_sparse=False
)
"""The reference algorithm: ASCII BM25 on the raw JSON value, zero-score docs ranked, RRF k=60."""
OURS_SETTINGS = RetrievalSettings()
"""Our default, chosen by ``benchmarks/retrieval_locomo.py``: Unicode tokens with stop words
removed and light stemming over the decoded message fields (speaker names and timestamps help
BM25; JSON escapes such as a literal ``\\n`` only glue words together),
embeddings of the message content without the JSON wrapper (which only adds noise for MiniLM),
zero-score BM25 hits dropped, plain RRF k=60 (weighted fusion gained less than the noise)."""


def message_documents(
    graph: Any, *, text_mode: str = "fields", dense_text_mode: str | None = None
) -> list[Document]:
    """One document per ``message`` variable of a graph, in creation order.

    Args:
        graph: An ``ExecNetwork`` (anything with ``search_variables(category=...)``).
        text_mode: BM25 text, see :func:`message_text`.
        dense_text_mode: Embedded text (None: the same as ``text_mode``).
    """
    nodes = graph.search_variables(category="message")
    docs = []
    for node in nodes:
        raw = node.value if isinstance(node.value, str) else str(node.value)
        text = message_text(raw, text_mode)  # type: ignore[arg-type]
        dense = None
        if dense_text_mode is not None and dense_text_mode != text_mode:
            dense = message_text(raw, dense_text_mode)  # type: ignore[arg-type]
        docs.append(Document(doc_id=node.full_node_id, text=text, dense_text=dense))
    return docs


def messages_known_at(graph: Any, node: Any) -> frozenset[str] | None:
    """The ``message`` variables recorded no later than ``node``: what a memory system could have
    seen when it answered that question.

    An online run (RealMem, a question asked mid-conversation) records the question before its own
    turn, the reference reply and every later message; none of them can be the evidence the answer
    lacked, yet a query built with the golden answer ranks the reference reply first. An offline
    run (LoCoMo) asks after the last message, so nothing is left out. None (no filter) when every
    message is that early, when none is, or when the graph gives no usable times.
    """
    when = getattr(node, "created_at", None)
    if when is None:
        return None
    messages = graph.search_variables(category="message")
    try:
        known = frozenset(m.full_node_id for m in messages if m.created_at is not None and m.created_at <= when)
    except TypeError:  # times of different kinds (text and datetime): no order to trust
        return None
    return known if known and len(known) < len(messages) else None


def starting_evidence(pool: GraphRetrieverPool, graph: Any, case: Any, limit: int, query_type: str) -> list[str]:
    """The ``limit`` messages of ``graph`` retrieved for a failed case (the attribution's starting
    evidence when none is annotated), among those recorded before its question
    (:func:`messages_known_at`)."""
    query = build_retrieval_query(case.query, case.golden_answer, case.prediction, query_type)
    try:
        known = messages_known_at(graph, graph.get_variable(case.query_full_node_id))
    except (AttributeError, KeyError):  # no such query node here: nothing to order by
        known = None
    return [hit.doc_id for hit in pool.get(graph).search(query, limit, allowed=known)]


def build_retrieval_query(query: str, golden_answer: str, prediction: str, query_type: str) -> str:
    """The retrieval query for a failed case (spec §5.6).

    Raises:
        ValueError: For an unknown query type.
    """
    if query_type == "query_with_golden_answer":
        return f"{query}\n{golden_answer}"
    if query_type == "query_only":
        return query
    if query_type == "query_with_prediction":
        return f"{query}\n{prediction}"
    raise ValueError(f"unknown starting-point query type {query_type!r}: use one of {', '.join(QUERY_TYPES)}")


def rrf_fuse(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> list[tuple[str, float]]:
    """Reciprocal-rank fusion: ``score(d) = Σ 1 / (k + rank)`` over the lists that contain ``d``.

    Ties are broken by the best (lowest) rank in any list, then by document id.

    Args:
        rankings: Ranked lists of document ids (rank 1 first).
        k: RRF constant.

    Returns:
        ``(doc_id, score)`` pairs, best first.
    """
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranking in rankings:
        for rank, doc_id in enumerate(ranking, start=1):
            scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (k + rank)
            best[doc_id] = min(best.get(doc_id, rank), rank)
    return sorted(scores.items(), key=lambda item: (-item[1], best[item[0]], item[0]))


# ---------------------------------------------------------------------------------------------
# The retriever


class _Bm25:
    """``rank_bm25.BM25Okapi`` scores from an inverted index.

    The statistics (idf with the epsilon floor, document lengths, k1, b) are rank_bm25's own;
    scoring walks only the postings of the query terms instead of every document per term,
    which gives the same numbers an order of magnitude faster on chat-sized corpora.
    """

    def __init__(self, corpus: list[list[str]]) -> None:
        import numpy as np
        from rank_bm25 import BM25Okapi

        bm25 = BM25Okapi(corpus)
        self._n = bm25.corpus_size
        norm = bm25.k1 * (1 - bm25.b + bm25.b * np.asarray(bm25.doc_len, dtype=float) / bm25.avgdl)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, freqs in enumerate(bm25.doc_freqs):
            for term, tf in freqs.items():
                ids, weights = postings.setdefault(term, ([], []))
                ids.append(i)
                weights.append(tf * (bm25.k1 + 1) / (tf + norm[i]))
        self._postings = {
            t: (np.asarray(ids), bm25.idf[t] * np.asarray(w)) for t, (ids, w) in postings.items()
        }

    def get_scores(self, query: list[str]) -> Any:
        import numpy as np

        scores = np.zeros(self._n)
        for term in query:
            hit = self._postings.get(term)
            if hit is not None:
                scores[hit[0]] += hit[1]
        return scores


class DocumentRetriever:
    """BM25 / dense / hybrid retrieval over a fixed set of documents.

    Documents are indexed once at construction (empty texts skipped with a warning); the
    embedder is only used for ``dense``/``hybrid``.

    Args:
        documents: Documents to index (ids must be unique).
        retrieval_type: Default ranking for :meth:`search`.
        embedder: Embedder for dense retrieval (wrap it in ``CachedEmbedder`` to cache on disk).
        settings: Tokenizer, fusion and candidate settings.
        embedding_batch_size: Texts per embedding call.

    Raises:
        ValueError: For an unknown retrieval type, a dense type without an embedder, bad
            settings, or duplicate document ids.
    """

    def __init__(
        self,
        documents: Iterable[Document],
        *,
        retrieval_type: str = "hybrid",
        embedder: Embedder | None = None,
        settings: RetrievalSettings = OURS_SETTINGS,
        embedding_batch_size: int = 16,
    ) -> None:
        if retrieval_type not in RETRIEVAL_TYPES:
            raise ValueError(f"unknown retrieval type {retrieval_type!r}: use sparse, dense or hybrid")
        if settings.candidate_multiplier < 1:
            raise ValueError(f"`candidate_multiplier` must be >= 1, got {settings.candidate_multiplier}")
        if embedding_batch_size < 1:
            raise ValueError(f"`embedding_batch_size` must be >= 1, got {embedding_batch_size}")
        if settings.tokenizer not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer {settings.tokenizer!r}: use one of {', '.join(TOKENIZERS)}")
        self.retrieval_type = retrieval_type
        self.settings = settings
        self._tokenize = TOKENIZERS[settings.tokenizer]
        docs: list[Document] = []
        seen: set[str] = set()
        for doc in documents:
            if doc.doc_id in seen:
                raise ValueError(f"duplicate document id {doc.doc_id!r}")
            seen.add(doc.doc_id)
            if not doc.text.strip():
                warnings.warn(f"skipping empty document {doc.doc_id!r}", stacklevel=2)
                continue
            docs.append(doc)
        self.documents: tuple[Document, ...] = tuple(docs)
        self._index = {d.doc_id: i for i, d in enumerate(docs)}
        self._bm25: Any = None
        if docs:
            self._bm25 = _Bm25([self._tokenize(d.text) or ["\x00"] for d in docs])
        self._embedder = embedder
        self._lock = threading.Lock()
        self._qdrant: Any = None
        self._collection = "documents"
        if retrieval_type in ("dense", "hybrid"):
            if embedder is None:
                raise ValueError(f"retrieval type {retrieval_type!r} needs an embedder")
            self._build_dense(embedding_batch_size)

    def _build_dense(self, batch_size: int) -> None:
        from qdrant_client import QdrantClient, models

        assert self._embedder is not None
        embedder = self._embedder
        if not isinstance(embedder, CachedEmbedder):
            embedder = CachedEmbedder(embedder, None, batch_size=batch_size)
        self._embedder = embedder
        self._qdrant = QdrantClient(":memory:")
        self._qdrant.create_collection(
            self._collection,
            vectors_config=models.VectorParams(size=embedder.dim, distance=models.Distance.COSINE),
        )
        if not self.documents:
            return
        vectors = embedder.embed([d.dense_text if d.dense_text is not None else d.text for d in self.documents])
        self._qdrant.upsert(
            self._collection,
            points=[
                models.PointStruct(id=i, vector=v, payload={"doc_id": d.doc_id})
                for i, (d, v) in enumerate(zip(self.documents, vectors, strict=True))
            ],
        )

    def __len__(self) -> int:
        return len(self.documents)

    def _sparse(self, query: str, limit: int) -> list[tuple[int, float]]:
        if self._bm25 is None or limit <= 0:
            return []
        tokens = self._tokenize(query)
        if tokens:
            scores = self._bm25.get_scores(tokens)
        else:
            scores = [0.0] * len(self.documents)
        import numpy as np

        order = np.argsort(-np.asarray(scores, dtype=float), kind="stable")  # ties keep corpus order
        if self.settings.drop_zero_sparse:
            order = order[np.asarray(scores)[order] > 0.0]
        return [(int(i), float(scores[i])) for i in order[:limit]]

    def _dense(self, query: str, limit: int) -> list[tuple[int, float]]:
        if self._qdrant is None or not self.documents or limit <= 0:
            return []
        assert self._embedder is not None
        vector = self._embedder.embed([query])[0]
        with self._lock:  # cases of one graph search from several worker threads
            points = self._qdrant.query_points(self._collection, query=vector, limit=limit, with_payload=False).points
        return [(int(p.id), float(p.score)) for p in points]

    def search(
        self, query: str, limit: int, *, retrieval_type: str | None = None, score_threshold: float | None = None,
        allowed: Collection[str] | None = None,
    ) -> list[ScoredDocument]:
        """Rank documents for a query.

        Args:
            query: Query text.
            limit: Maximum number of hits.
            retrieval_type: Override of the retriever's default type.
            score_threshold: Drop hits scoring below this (BM25 score, cosine, or RRF score).
            allowed: Only these document ids may be returned (None: all); every document is
                ranked first, so the filter never leaves fewer hits than ``limit`` allowed ones.

        Raises:
            ValueError: For a negative limit, an unknown type, or a dense type on a sparse-only
                retriever.
        """
        if limit < 0:
            raise ValueError(f"`limit` must be >= 0, got {limit}")
        kind = retrieval_type or self.retrieval_type
        if kind not in RETRIEVAL_TYPES:
            raise ValueError(f"unknown retrieval type {kind!r}: use sparse, dense or hybrid")
        if kind != "sparse" and self._qdrant is None:
            raise ValueError(f"this retriever was built without embeddings and cannot run {kind!r} retrieval")
        wanted = limit if allowed is None else len(self.documents)
        if kind == "sparse":
            hits = self._sparse(query, wanted)
        elif kind == "dense":
            hits = self._dense(query, wanted)
        else:
            candidates = wanted * self.settings.candidate_multiplier
            ranking_ids = [
                [self.documents[i].doc_id for i, _ in self._sparse(query, candidates)],
                [self.documents[i].doc_id for i, _ in self._dense(query, candidates)],
            ]
            hits = [(self._index[doc_id], score) for doc_id, score in rrf_fuse(ranking_ids, k=self.settings.rrf_k)]
        if score_threshold is not None:
            hits = [h for h in hits if h[1] >= score_threshold]
        if allowed is not None:
            hits = [h for h in hits if self.documents[h[0]].doc_id in allowed]
        return [
            ScoredDocument(doc_id=self.documents[i].doc_id, text=self.documents[i].text, score=s, rank=r)
            for r, (i, s) in enumerate(hits[:limit], start=1)
        ]

    def close(self) -> None:
        """Release the in-memory vector store."""
        with self._lock:
            if self._qdrant is not None:
                self._qdrant.close()
                self._qdrant = None


class GraphRetrieverPool:
    """Builds one :class:`DocumentRetriever` per graph, on first use, and hands it out again.

    Keyed by the graph object's identity (``graph_id`` plus ``id(graph)``), so cases that share
    a loaded graph share its index and embeddings. Thread-safe: concurrent first requests for
    one graph wait for a single build.

    Args:
        retrieval_type: Retrieval type of every retriever.
        embedder_factory: Called once (lazily) to make the embedder; not needed for ``sparse``.
        settings: Retrieval settings.
        embedding_cache_dir: Folder of the persistent embedding cache (None = memory only).
        embedding_batch_size: Texts per embedding call.
    """

    def __init__(
        self,
        *,
        retrieval_type: str = "hybrid",
        embedder_factory: Callable[[], Embedder] | None = None,
        settings: RetrievalSettings = OURS_SETTINGS,
        embedding_cache_dir: str | Path | None = None,
        embedding_batch_size: int = 16,
    ) -> None:
        self.retrieval_type = retrieval_type
        self.settings = settings
        self._embedder_factory = embedder_factory
        self._cache_dir = embedding_cache_dir
        self._batch_size = embedding_batch_size
        self._embedder: CachedEmbedder | None = None
        self._retrievers: dict[tuple[str, int], DocumentRetriever] = {}
        self._locks: dict[tuple[str, int], threading.Lock] = {}
        self._guard = threading.Lock()
        self.builds = 0

    def _get_embedder(self) -> CachedEmbedder | None:
        if self.retrieval_type == "sparse":
            return None
        with self._guard:
            if self._embedder is None:
                if self._embedder_factory is None:
                    raise ValueError(f"retrieval type {self.retrieval_type!r} needs an embedder factory")
                self._embedder = CachedEmbedder(
                    self._embedder_factory(), self._cache_dir, batch_size=self._batch_size
                )
            return self._embedder

    @staticmethod
    def _key(graph: Any) -> tuple[str, int]:
        return (str(getattr(graph, "graph_id", "")), id(graph))

    def get(self, graph: Any) -> DocumentRetriever:
        """The retriever of ``graph`` (built on first call)."""
        key = self._key(graph)
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            retriever = self._retrievers.get(key)
            if retriever is None:
                docs = message_documents(
                    graph, text_mode=self.settings.text_mode, dense_text_mode=self.settings.dense_text_mode
                )
                retriever = DocumentRetriever(
                    docs,
                    retrieval_type=self.retrieval_type,
                    embedder=self._get_embedder(),
                    settings=self.settings,
                    embedding_batch_size=self._batch_size,
                )
                self._retrievers[key] = retriever
                self.builds += 1
            return retriever

    @property
    def embedder(self) -> CachedEmbedder | None:
        """The shared cached embedder (None until first dense build)."""
        return self._embedder

    def close(self) -> None:
        """Close every retriever and the embedding cache."""
        with self._guard:
            for retriever in self._retrievers.values():
                retriever.close()
            self._retrievers.clear()
            if self._embedder is not None:
                self._embedder.close()

