"""Embedders used by evidence retrieval, and an on-disk embedding cache.

The retriever depends only on the small :class:`Embedder` protocol (``model_name``, ``dim``,
``embed(texts)``). :func:`make_embedder` picks an implementation from
:mod:`membase.clients.embeddings`: the local MiniLM model by default, an OpenAI-compatible
endpoint by flag, or the deterministic hashing fake for tests.

:class:`CachedEmbedder` stores vectors in one SQLite file keyed by ``sha256(cache_key, text)``,
where the cache key names the model, its dimensions *and* its endpoint, so two servers that
serve different weights under one model name never share entries.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from array import array
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["CachedEmbedder", "Embedder", "embedder_cache_key", "make_embedder"]

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors."""

    model_name: str

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed each text (same order)."""
        ...


def embedder_cache_key(embedder: Any) -> str:
    """Identity of an embedder for caching: its own ``cache_key`` if any, else model and dim."""
    key = getattr(embedder, "cache_key", None)
    if isinstance(key, str) and key:
        return key
    base_url = getattr(embedder, "base_url", None)
    return f"{type(embedder).__name__}|{embedder.model_name}|{embedder.dim}|{base_url or ''}"


def make_embedder(
    provider: Literal["auto", "local", "openai", "hashing"] = "auto",
    *,
    model_name: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    dimensions: int | None = None,
) -> Embedder:
    """Build the embedder a config asks for, from :mod:`membase.clients.embeddings`.

    ``auto`` means: an OpenAI-compatible endpoint when ``base_url`` is given, otherwise local
    MiniLM. ``hashing`` is the deterministic fake (tests and smoke runs only).

    Raises:
        ValueError: For an unknown provider, or a local model other than MiniLM.
    """
    from membase.clients.embeddings import FakeEmbedder, MiniLMEmbedder, OpenAIEmbedder

    if provider == "auto":
        provider = "openai" if base_url else "local"
    if provider == "hashing":
        return FakeEmbedder(dimensions or 64)
    if provider == "local":
        if model_name and "minilm-l6" not in model_name.lower():
            raise ValueError(
                f"embedding model {model_name!r} is not available locally: only all-MiniLM-L6-v2 is; "
                "give --embedding-base-url for an OpenAI-compatible endpoint"
            )
        return MiniLMEmbedder()
    if provider == "openai":
        return OpenAIEmbedder(
            model_name or DEFAULT_OPENAI_MODEL, base_url=base_url, api_key=api_key or "EMPTY", dimensions=dimensions
        )
    raise ValueError(f"unknown embedding provider {provider!r}: use auto, local, openai or hashing")


class CachedEmbedder:
    """Wraps an embedder with a persistent SQLite cache keyed by (embedder identity, text).

    Only texts missing from the cache reach the wrapped embedder, in batches of
    ``batch_size``. Safe to share between threads.

    Args:
        embedder: The embedder to wrap.
        cache_dir: Folder for ``embeddings.sqlite``; None keeps the cache in memory only.
        batch_size: Texts per call to the wrapped embedder.
    """

    def __init__(self, embedder: Embedder, cache_dir: str | Path | None = None, *, batch_size: int = 16) -> None:
        if batch_size < 1:
            raise ValueError(f"`batch_size` must be >= 1, got {batch_size}")
        self.inner = embedder
        self.model_name = embedder.model_name
        self._key = embedder_cache_key(embedder)
        self._batch_size = batch_size
        self._memory: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if cache_dir is not None:
            path = Path(cache_dir)
            path.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path / "embeddings.sqlite"), check_same_thread=False)
            # WAL + normal sync: a commit per batch stays cheap (a lost tail after a power cut
            # only means re-embedding those texts).
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
            self._db.commit()
        self.hits = 0
        self.misses = 0

    @property
    def cache_key(self) -> str:
        """Identity of the wrapped embedder."""
        return self._key

    @property
    def dim(self) -> int:
        """Vector dimension of the wrapped embedder."""
        return self.inner.dim

    def _hash(self, text: str) -> str:
        return hashlib.sha256(f"{self._key}\x00{text}".encode()).hexdigest()

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts, computing only the ones not cached yet."""
        keys = [self._hash(t) for t in texts]
        found: dict[str, list[float]] = {}
        with self._lock:
            for k in set(keys):
                if k in self._memory:
                    found[k] = self._memory[k]
                elif self._db is not None:
                    row = self._db.execute("SELECT vec FROM emb WHERE key = ?", (k,)).fetchone()
                    if row is not None:
                        vec = array("f")
                        vec.frombytes(row[0])
                        found[k] = self._memory[k] = vec.tolist()
        todo: dict[str, str] = {}
        for k, t in zip(keys, texts, strict=True):
            if k not in found and k not in todo:
                todo[k] = t
        self.hits += len(texts) - sum(1 for k in keys if k in todo)
        self.misses += sum(1 for k in keys if k in todo)
        items = list(todo.items())
        for start in range(0, len(items), self._batch_size):
            chunk = items[start : start + self._batch_size]
            vecs = self.inner.embed([t for _, t in chunk])
            if len(vecs) != len(chunk):
                raise RuntimeError(f"embedder {self.model_name!r} returned {len(vecs)} vectors for {len(chunk)} texts")
            with self._lock:
                for (k, _), v in zip(chunk, vecs, strict=True):
                    found[k] = self._memory[k] = list(v)
                if self._db is not None:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO emb (key, vec) VALUES (?, ?)",
                        [(k, array("f", v).tobytes()) for (k, _), v in zip(chunk, vecs, strict=True)],
                    )
                    self._db.commit()
        return [found[k] for k in keys]

    def close(self) -> None:
        """Close the SQLite file."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

