"""Run folders of `python -m membase run` shared by the replay tests (built once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay._helpers import make_run

RAG_CONFIG = {"layer_type": "NaiveRAG", "max_tokens": 200, "deferred": True, "vector_store": "memory",
              "retriever_name_or_path": "fake:256", "retriever_dim": 256}
LONG_CONTEXT_CONFIG = {"layer_type": "Long-Context", "context_window": 300}
MEM0_CONFIG = {"layer_type": "Mem0", "llm_provider": "fake", "llm_model": "mem0-fake", "embedder_provider": "fake",
               "embedding_model_dims": 256}


@pytest.fixture(scope="session")
def rag_run(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Path:
    """NaiveRAG, top_k 3, 40 messages, the extractive reader and the token judge: natural failures."""
    return make_run(locomo_path, tmp_path_factory.mktemp("rag") / "run", RAG_CONFIG, max_messages=40)


@pytest.fixture(scope="session")
def long_context_run(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Path:
    """Long-Context with a 300-token window: old lines are trimmed (update ops that lose lines)."""
    return make_run(locomo_path, tmp_path_factory.mktemp("lc") / "run", LONG_CONTEXT_CONFIG, max_messages=30)


@pytest.fixture(scope="session")
def mem0_run(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Path:
    """Real mem0ai 1.0.5 on the fake model and embedder; 30 messages give ADD, UPDATE and DELETE decisions."""
    pytest.importorskip("mem0", reason="mem0ai is not installed (pip install -e .[mem0])")
    return make_run(locomo_path, tmp_path_factory.mktemp("mem0") / "run", MEM0_CONFIG, max_messages=30)
