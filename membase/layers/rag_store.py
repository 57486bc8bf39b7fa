"""A small document store on qdrant-client: local mode (in memory or a folder) or a server by URL.

qdrant-client 1.20 removed `search`; queries go through `query_points`. One local folder may be
opened by one client per process, so `close()` must run before the folder is reopened.

Writes are batched: `add` assigns the key at once but embeds and upserts in batches of
`write_batch_size`; every read (and `close`) first writes what is pending, so callers never see
the difference. Query embeddings can be computed in one batch ahead with `prefetch_queries`.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from membase.clients.embeddings import Embedder

__all__ = ["DocumentStore", "StoredDocument"]


@dataclass(frozen=True, kw_only=True)
class StoredDocument:
    """One stored document and, for search hits, its similarity score."""

    key: str
    content: str
    namespace: list[str]
    created_at: str
    updated_at: str
    score: float | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat()


def collection_name_for(user_id: str, prefix: str = "naive_rag") -> str:
    """A qdrant-safe collection name derived from a user id."""
    return f"{prefix}_{re.sub(r'[^A-Za-z0-9_-]', '_', user_id)}"


class DocumentStore:
    """Documents with embeddings in one qdrant collection, namespaced by user."""

    def __init__(
        self,
        embedder: Embedder,
        *,
        collection: str,
        namespace: list[str],
        url: str | None = None,
        api_key: str | None = None,
        path: str | Path | None = None,
        write_batch_size: int = 64,
    ) -> None:
        """Open (lazily) a collection.

        Args:
            embedder: embeds documents and queries.
            collection: qdrant collection name.
            namespace: recorded on every document (`["memories", user_id]`).
            url: a qdrant server; wins over `path`.
            api_key: API key of the qdrant server.
            path: a local-mode folder; None (and no url) keeps everything in memory.
            write_batch_size: documents embedded and upserted together.
        """
        self.embedder = embedder
        self.collection = collection
        self.namespace = list(namespace)
        self.url = url
        self.api_key = api_key
        self.path = Path(path) if path is not None else None
        self._client: Any = None
        self.write_batch_size = max(1, write_batch_size)
        self._pending: list[StoredDocument] = []
        self._query_vectors: dict[str, list[float]] = {}

    @property
    def persistent(self) -> bool:
        """Whether documents survive `close()` (a folder or a server)."""
        return self.url is not None or self.path is not None

    @property
    def client(self) -> Any:
        """The qdrant client, created (and the collection ensured) on first use."""
        if self._client is None:
            from qdrant_client import QdrantClient, models

            if self.url is not None:
                client = QdrantClient(url=self.url, api_key=self.api_key)
            elif self.path is not None:
                self.path.mkdir(parents=True, exist_ok=True)
                client = QdrantClient(path=str(self.path))
            else:
                client = QdrantClient(location=":memory:")
            if not client.collection_exists(self.collection):
                client.create_collection(
                    self.collection,
                    vectors_config=models.VectorParams(size=self.embedder.dim, distance=models.Distance.COSINE),
                )
            self._client = client
        return self._client

    def add(self, content: str, key: str | None = None) -> StoredDocument:
        """Queue one document for storage; returns it with its key (a new uuid4 by default)."""
        key = key or str(uuid.uuid4())
        now = _now()
        doc = StoredDocument(key=key, content=content, namespace=self.namespace, created_at=now, updated_at=now)
        self._pending.append(doc)
        if len(self._pending) >= self.write_batch_size:
            try:
                self.write_pending()
            except BaseException:
                # The caller learns this document failed; the earlier ones stay queued for a retry.
                self._pending.remove(doc)
                raise
        return doc

    def write_pending(self) -> None:
        """Embed and upsert the documents added since the last write."""
        from qdrant_client import models

        if not self._pending:
            return
        docs = list(self._pending)
        vectors = self.embedder.embed([d.content for d in docs])
        self.client.upsert(self.collection, points=[
            models.PointStruct(id=d.key, vector=v, payload=self._payload(d)) for d, v in zip(docs, vectors, strict=True)
        ])
        # Dropped only once stored: a failed embedding or upsert keeps the batch for the next write.
        del self._pending[:len(docs)]

    def prefetch_queries(self, queries: list[str]) -> None:
        """Embed upcoming queries in one batch; `search` then reuses the vectors."""
        todo = [q for q in dict.fromkeys(queries) if q not in self._query_vectors]
        if todo:
            self._query_vectors.update(zip(todo, self.embedder.embed(todo), strict=True))

    def restore(self, records: list[dict[str, Any]]) -> None:
        """Upsert records exported by `export(with_vectors=True)`."""
        from qdrant_client import models

        if not records:
            return
        self.write_pending()
        points = [models.PointStruct(id=r["key"], vector=r["vector"], payload={k: v for k, v in r.items() if k != "vector"})
                  for r in records]
        self.client.upsert(self.collection, points=points)

    def get(self, key: str) -> StoredDocument | None:
        """Return the document with `key`, or None."""
        self.write_pending()
        found = self.client.retrieve(self.collection, ids=[key], with_payload=True)
        return self._doc(found[0].payload) if found else None

    def update(self, key: str, content: str) -> StoredDocument | None:
        """Replace the content (and embedding) of a document; None when the key is unknown."""
        from qdrant_client import models

        old = self.get(key)
        if old is None:
            return None
        doc = StoredDocument(key=key, content=content, namespace=self.namespace, created_at=old.created_at,
                             updated_at=_now())
        vector = self.embedder.embed([content])[0]
        self.client.upsert(self.collection, points=[models.PointStruct(id=key, vector=vector, payload=self._payload(doc))])
        return doc

    def delete(self, key: str) -> bool:
        """Delete one document; True when it existed."""
        from qdrant_client import models

        if self.get(key) is None:
            return False
        self.client.delete(self.collection, points_selector=models.PointIdsList(points=[key]))
        return True

    def count(self) -> int:
        """Number of stored documents."""
        self.write_pending()
        return self.client.count(self.collection, exact=True).count

    def search(self, query: str, k: int) -> list[StoredDocument]:
        """The `k` documents most similar to `query`, best first."""
        if k <= 0:
            return []
        self.write_pending()
        vector = self._query_vectors.pop(query, None) or self.embedder.embed([query])[0]
        points = self.client.query_points(self.collection, query=vector, limit=k, with_payload=True).points
        return [self._doc(p.payload, score=p.score) for p in points]

    def export(self, *, with_vectors: bool = False) -> list[dict[str, Any]]:
        """All documents as dicts (payload fields, plus `vector` when asked)."""
        self.write_pending()
        out, offset = [], None
        while True:
            points, offset = self.client.scroll(self.collection, limit=256, offset=offset, with_payload=True,
                                                with_vectors=with_vectors)
            for p in points:
                record = dict(p.payload)
                if with_vectors:
                    record["vector"] = list(p.vector)
                out.append(record)
            if offset is None:
                return sorted(out, key=lambda r: r["created_at"])

    def close(self) -> None:
        """Write what is pending, then close the client (releases a local folder). Safe to call twice.

        The client is closed even when the last write fails (the error is raised after closing).
        """
        try:
            if self._pending:
                self.write_pending()
        finally:
            if self._client is not None:
                try:
                    self._client.close()
                finally:
                    self._client = None

    @staticmethod
    def _payload(doc: StoredDocument) -> dict[str, Any]:
        return {"key": doc.key, "content": doc.content, "namespace": doc.namespace,
                "created_at": doc.created_at, "updated_at": doc.updated_at}

    @staticmethod
    def _doc(payload: dict[str, Any], score: float | None = None) -> StoredDocument:
        return StoredDocument(key=payload["key"], content=payload["content"], namespace=list(payload["namespace"]),
                              created_at=payload["created_at"], updated_at=payload["updated_at"], score=score)
