"""A base install (no MiniLM, no embedding endpoint) still retrieves starting evidence."""

from __future__ import annotations

import pytest

from toolkits import runner
from toolkits.runner import MemTraceConfig


def test_auto_embeddings_without_minilm_fall_back_to_bm25(monkeypatch) -> None:
    monkeypatch.setattr(runner, "_local_embedder_installed", lambda: False)
    with pytest.warns(UserWarning, match="BM25 only"):
        assert runner._effective_retrieval_type(MemTraceConfig(retrieval_type="hybrid")) == "sparse"


@pytest.mark.parametrize(
    "overrides",
    [
        {"embedding_base_url": "http://127.0.0.1:8008/v1"},
        {"embedding_provider": "hashing"},
        {"retrieval_type": "sparse"},
    ],
)
def test_configured_retrieval_is_kept(monkeypatch, overrides) -> None:
    monkeypatch.setattr(runner, "_local_embedder_installed", lambda: False)
    config = MemTraceConfig(**{"retrieval_type": "hybrid", **overrides})
    assert runner._effective_retrieval_type(config) == config.retrieval_type


def test_installed_minilm_keeps_hybrid(monkeypatch) -> None:
    monkeypatch.setattr(runner, "_local_embedder_installed", lambda: True)
    assert runner._effective_retrieval_type(MemTraceConfig(retrieval_type="hybrid")) == "hybrid"
