from __future__ import annotations

import pytest

from membase.clients import FakeEmbedder
from membase.exceptions import ConfigError
from membase.layers import CONFIG_MAPPING, MEMORY_LAYERS_MAPPING, build_layer, build_layer_config
from membase.layers.long_context import LongContextConfig, LongContextLayer
from membase.layers.naive_rag import NaiveRAGConfig, NaiveRAGLayer
from membase.types import Message


def _messages(n: int) -> list[Message]:
    return [Message(id=f"m{i}", name="Ann", content=f"I visited city number {i}", timestamp=f"2023-05-0{i + 1}T10:00:00")
            for i in range(n)]


def test_registry_is_lazy_and_validates():
    assert set(MEMORY_LAYERS_MAPPING) == {"Long-Context", "NaiveRAG", "Mem0", "Mem0v3", "EverMemOS"}
    assert MEMORY_LAYERS_MAPPING["NaiveRAG"] is NaiveRAGLayer and CONFIG_MAPPING["Long-Context"] is LongContextConfig
    with pytest.raises(ConfigError, match="unknown layer_type"):
        build_layer("A-MEM", user_id="u")
    with pytest.raises(ConfigError, match="retriever_dimm"):
        build_layer_config("NaiveRAG", user_id="u", retriever_dimm=3)


def test_save_dir_may_not_be_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file"):
        build_layer_config("Long-Context", user_id="u", save_dir=str(tmp_path / "f"))


def test_long_context_untraced_roundtrip(tmp_path):
    layer = LongContextLayer(LongContextConfig(user_id="u", save_dir=str(tmp_path), context_window=55))
    layer.add_messages(_messages(3))
    entries = layer.retrieve("anything", k=1)
    assert len(entries) == 1 and entries[0].trace_id == "memory-unit"
    assert "city number 2" in entries[0].content and "city number 0" not in entries[0].content  # window cut
    assert entries[0].formatted_content.startswith("<long_context_memory>\n")
    layer.save_memory()
    again = LongContextLayer(LongContextConfig(user_id="u", save_dir=str(tmp_path), context_window=55))
    assert again.load_memory() and again.retrieve("x")[0].content == entries[0].content
    other = LongContextLayer(LongContextConfig(user_id="v", save_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="belongs to user 'u'"):
        other.load_memory()
    assert LongContextLayer(LongContextConfig(user_id="u", save_dir=str(tmp_path / "empty"))).load_memory() is False


@pytest.mark.parametrize("store", ["local", "memory"])
def test_naive_rag_untraced_store_search_persist(tmp_path, store):
    config = NaiveRAGConfig(user_id="u", save_dir=str(tmp_path), vector_store=store, retriever_dim=64)
    layer = NaiveRAGLayer(config, embedder=FakeEmbedder(64))
    layer.add_messages(_messages(4))
    hits = layer.retrieve("city number 2", k=2)
    assert "city number 2" in hits[0].content
    assert hits[0].metadata["trace_id"] == f"memory-unit-{hits[0].metadata['key']}"
    assert hits[0].metadata["namespace"] == ["memories", "u"] and hits[0].metadata["score"] >= hits[1].metadata["score"]
    key = hits[0].metadata["key"]
    assert layer.update(key, content="moved to Lyon") and layer.retrieve("Lyon", k=1)[0].content == "moved to Lyon"
    assert layer.delete(key) and not layer.delete(key)
    layer.save_memory()
    layer.cleanup()
    again = NaiveRAGLayer(config, embedder=FakeEmbedder(64))
    assert again.load_memory() and again.store.count() == 3
    again.cleanup()


def test_naive_rag_deferred_flush_stores_the_rest(tmp_path):
    config = NaiveRAGConfig(user_id="u", save_dir=str(tmp_path), vector_store="memory", deferred=True,
                            max_tokens=1000, retriever_dim=64)
    layer = NaiveRAGLayer(config, embedder=FakeEmbedder(64))
    layer.add_messages(_messages(3))
    assert layer.store.count() == 0
    layer.flush()
    assert layer.store.count() == 1 and layer.buffer_messages == []
    assert layer.retrieve("city", k=5)[0].content.count("Speaker Ann") == 3


def test_server_store_needs_url():
    with pytest.raises(ConfigError, match="qdrant_url"):
        NaiveRAGLayer(NaiveRAGConfig(user_id="u", vector_store="server"))


class CountingEmbedder(FakeEmbedder):
    def __init__(self):
        super().__init__(32)
        self.batches: list[int] = []

    def embed(self, texts):
        self.batches.append(len(texts))
        return super().embed(texts)


def test_store_batches_writes_and_prefetched_queries():
    from membase.layers.rag_store import DocumentStore

    emb = CountingEmbedder()
    store = DocumentStore(emb, collection="c", namespace=["memories", "u"], write_batch_size=3)
    keys = [store.add(f"document about topic {i}").key for i in range(4)]
    assert emb.batches == [3]  # one batch of three, the fourth still pending
    store.prefetch_queries(["topic 3", "topic 1", "topic 3"])
    assert emb.batches == [3, 2]
    assert store.search("topic 3", 1)[0].key == keys[3]  # pending document written before reading
    assert store.search("topic 1", 4)[0].key == keys[1]
    assert emb.batches == [3, 2, 1]  # the pending write; no query was embedded again
    store.close()


class FlakyEmbedder(FakeEmbedder):
    """Fails the next `fail` embed calls, then works."""

    def __init__(self):
        super().__init__(16)
        self.fail = 0

    def embed(self, texts):
        if self.fail:
            self.fail -= 1
            raise TimeoutError("simulated embedding failure")
        return super().embed(texts)


def test_store_keeps_the_batch_when_embedding_fails():
    from membase.layers.rag_store import DocumentStore

    emb = FlakyEmbedder()
    store = DocumentStore(emb, collection="c", namespace=["memories", "u"], write_batch_size=2)
    store.add("first document")
    emb.fail = 1
    with pytest.raises(TimeoutError):
        store.add("second document")  # fills the batch; its write fails
    # The failed add is withdrawn; the earlier document is still queued, not lost.
    assert [d.content for d in store._pending] == ["first document"]
    emb.fail = 1
    with pytest.raises(TimeoutError):
        store.write_pending()
    assert len(store._pending) == 1
    assert store.count() == 1 and store._pending == []
    store.close()


def test_store_close_closes_the_client_even_when_the_last_write_fails(tmp_path):
    from membase.layers.rag_store import DocumentStore

    emb = FlakyEmbedder()
    store = DocumentStore(emb, collection="c", namespace=["memories", "u"], path=tmp_path / "q",
                          write_batch_size=10)
    store.add("stored")
    assert store.count() == 1
    store.add("pending")
    emb.fail = 1
    with pytest.raises(TimeoutError):
        store.close()
    assert store._client is None  # the folder is released: it can be reopened
    again = DocumentStore(emb, collection="c", namespace=["memories", "u"], path=tmp_path / "q")
    assert again.count() == 1
    again.close()


def test_saved_config_hides_secrets_and_still_loads(tmp_path):
    import json

    from membase.layers.base import redact_secrets

    cfg = NaiveRAGConfig(user_id="u1", save_dir=str(tmp_path / "u1"), vector_store="memory",
                         retriever_name_or_path="fake:16", retriever_dim=16, qdrant_api_key="sk-secret-123")
    layer = NaiveRAGLayer(cfg)
    layer.add_message(Message(id="m1", role="user", content="hello there", name="A",
                              timestamp="2023-05-07T10:00:00"))
    layer.save_memory()
    layer.cleanup()
    text = (tmp_path / "u1" / "config.json").read_text()
    assert "sk-secret-123" not in text
    saved = json.loads(text)
    assert saved["qdrant_api_key"] == "***" and saved["user_id"] == "u1"
    reloaded = NaiveRAGLayer(cfg.model_copy())
    assert reloaded.load_memory("u1")  # only the user id is compared
    with pytest.raises(ValueError, match="belongs to user"):
        reloaded.load_memory("u2")
    reloaded.cleanup()
    nested = {"api_key": "a", "llm": {"apiKey": "b", "auth-token": "c", "max_tokens": 5, "keyword": "k"},
              "api_keys": ["x", "y"], "client_secret": None, "token_budget": 512, "items": [{"secret": "s"}]}
    assert redact_secrets(nested) == {
        "api_key": "***", "llm": {"apiKey": "***", "auth-token": "***", "max_tokens": 5, "keyword": "k"},
        "api_keys": "***", "client_secret": None, "token_budget": 512, "items": [{"secret": "***"}]}


def test_atomic_writes_follow_the_umask(tmp_path):
    import os
    import stat

    from membase.utils.io import atomic_write_json, current_umask

    previous = os.umask(0o027)
    try:
        assert current_umask() == 0o027
        path = atomic_write_json(tmp_path / "a.json", {"x": 1})
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    path = atomic_write_json(tmp_path / "b.json", [])
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~previous
