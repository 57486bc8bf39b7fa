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
    assert set(MEMORY_LAYERS_MAPPING) == {"Long-Context", "NaiveRAG", "Mem0", "EverMemOS"}
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
