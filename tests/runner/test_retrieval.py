import json
import threading

import pytest

from membase.clients.embeddings import FakeEmbedder
from toolkits._embeddings import CachedEmbedder, make_embedder
from toolkits.retrieval import (
    REFERENCE_SETTINGS,
    Document,
    DocumentRetriever,
    GraphRetrieverPool,
    RetrievalSettings,
    ascii_tokenize,
    build_retrieval_query,
    message_documents,
    message_text,
    messages_known_at,
    rrf_fuse,
    unicode_tokenize,
)


class CountingEmbedder(FakeEmbedder):
    def __init__(self, dim=32):
        super().__init__(dim)
        self.texts = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


DOCS = [
    Document(doc_id="m1", text="Caroline went to the LGBTQ support group yesterday."),
    Document(doc_id="m2", text="Melanie painted a sunrise over the lake."),
    Document(doc_id="m3", text="我们明天去北京看长城"),
    Document(doc_id="m4", text="The weather is nice."),
]


def test_ascii_tokenizer_loses_non_latin_text():
    assert ascii_tokenize("Café 北京 go_to 42") == ["caf", "go_to", "42"]


def test_unicode_tokenizer_keeps_scripts_and_splits_cjk():
    tokens = unicode_tokenize("Café 北京长城 Support-groups", stopwords=False, stem=False)
    assert "café" in tokens
    assert {"北", "京", "北京", "京长", "长城"} <= set(tokens)
    assert "support" in tokens and "groups" in tokens
    stemmed = unicode_tokenize("the groups were painting")
    assert stemmed == ["group", "paint"]


def test_message_text_modes():
    value = json.dumps(
        {"content": "I moved from Sweden.\nBelow is this message's metadata:\nSpeaker Name: C\n", "name": "Caroline",
         "role": "user", "timestamp": "2023"}, indent=4, sort_keys=True)
    assert message_text(value, "raw") == value
    assert message_text(value, "content") == "I moved from Sweden."
    assert message_text(value, "speaker_content") == "Caroline: I moved from Sweden."
    assert message_text("not json", "content") == "not json"
    fields = message_text(value, "fields")
    assert "\\n" not in fields and fields.splitlines()[0] == "I moved from Sweden."
    assert "Caroline" in fields and "2023" in fields
    lc = json.dumps({"content": "Speaker Caroline (role: user) says: hi", "name": "Caroline"})
    assert message_text(lc, "speaker_content") == "Speaker Caroline (role: user) says: hi"


def test_build_retrieval_query():
    assert build_retrieval_query("q", "g", "p", "query_with_golden_answer") == "q\ng"
    assert build_retrieval_query("q", "g", "p", "query_only") == "q"
    assert build_retrieval_query("q", "g", "p", "query_with_prediction") == "q\np"
    with pytest.raises(ValueError, match="unknown starting-point query type"):
        build_retrieval_query("q", "g", "p", "nope")


def test_rrf_scores_and_tie_breaks():
    fused = rrf_fuse([["a", "b", "c"], ["b", "d"]], k=60)
    assert [d for d, _ in fused] == ["b", "a", "d", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    # equal scores: the better single rank wins, then the id
    assert [d for d, _ in rrf_fuse([["x", "y"], ["y", "x"]])] == ["x", "y"]


def test_sparse_ranks_matching_doc_first_and_drops_zero_scores():
    r = DocumentRetriever(DOCS, retrieval_type="sparse")
    hits = r.search("Where is the support group?", 3)
    assert [h.doc_id for h in hits] == ["m1"]
    assert hits[0].rank == 1 and hits[0].score > 0
    ref = DocumentRetriever(DOCS, retrieval_type="sparse", settings=REFERENCE_SETTINGS)
    assert len(ref.search("Where is the support group?", 3)) == 3  # reference keeps zero-score docs


def test_unicode_bm25_finds_chinese_where_reference_cannot():
    ours = DocumentRetriever(DOCS, retrieval_type="sparse")
    assert ours.search("长城", 1)[0].doc_id == "m3"
    ref = DocumentRetriever(DOCS, retrieval_type="sparse", settings=REFERENCE_SETTINGS)
    assert all(h.score == 0 for h in ref.search("长城", 4))


def test_dense_channel_embeds_dense_text():
    emb = CountingEmbedder()
    docs = [Document(doc_id="a", text='{"content": "x"}', dense_text="x"), Document(doc_id="b", text="y z")]
    DocumentRetriever(docs, retrieval_type="dense", embedder=emb)
    assert emb.texts == ["x", "y z"]


def test_dense_and_hybrid_with_fake_embedder():
    emb = CountingEmbedder()
    r = DocumentRetriever(DOCS, retrieval_type="hybrid", embedder=emb)
    assert len(emb.texts) == 4  # documents embedded once, at build time
    dense = r.search("Melanie painted a sunrise", 2, retrieval_type="dense")
    assert dense[0].doc_id == "m2"
    hybrid = r.search("Melanie painted a sunrise", 2)
    assert hybrid[0].doc_id == "m2"
    assert hybrid[0].score == pytest.approx(2 / 61)
    assert len(r.search("anything", 0)) == 0
    assert r.search("Melanie painted", 4, score_threshold=0.03)[0].doc_id == "m2"
    assert all(h.score >= 0.03 for h in r.search("Melanie painted", 4, score_threshold=0.03))
    r.close()


def test_hybrid_candidate_multiplier_limits_each_list():
    emb = CountingEmbedder()
    settings = RetrievalSettings(candidate_multiplier=1)
    r = DocumentRetriever(DOCS, retrieval_type="hybrid", embedder=emb, settings=settings)
    assert len(r.search("Melanie painted a sunrise", 1)) == 1


def test_retriever_validation_and_empty_docs():
    with pytest.raises(ValueError, match="unknown retrieval type"):
        DocumentRetriever(DOCS, retrieval_type="fuzzy")
    with pytest.raises(ValueError, match="needs an embedder"):
        DocumentRetriever(DOCS, retrieval_type="dense")
    with pytest.raises(ValueError, match="duplicate"):
        DocumentRetriever([DOCS[0], DOCS[0]], retrieval_type="sparse")
    with pytest.warns(UserWarning, match="empty document"):
        r = DocumentRetriever([*DOCS, Document(doc_id="e", text="  ")], retrieval_type="sparse")
    assert len(r) == 4
    with pytest.raises(ValueError, match="without embeddings"):
        r.search("x", 1, retrieval_type="dense")
    assert DocumentRetriever([], retrieval_type="hybrid", embedder=FakeEmbedder()).search("x", 3) == []


def test_cached_embedder_persists_and_keys_by_model(tmp_path):
    inner = CountingEmbedder(16)
    cached = CachedEmbedder(inner, tmp_path, batch_size=2)
    first = cached.embed(["a b", "c d", "a b", "e"])
    assert inner.texts == ["a b", "c d", "e"]
    cached.close()
    inner2 = CountingEmbedder(16)
    again = CachedEmbedder(inner2, tmp_path).embed(["e", "a b"])
    assert inner2.texts == []
    assert again == [pytest.approx(first[3]), pytest.approx(first[0])]
    other = CountingEmbedder(8)  # different model identity -> no sharing
    CachedEmbedder(other, tmp_path).embed(["a b"])
    assert other.texts == ["a b"]


def test_make_embedder_providers():
    assert make_embedder("hashing", dimensions=16).dim == 16
    assert make_embedder("auto").model_name == "all-MiniLM-L6-v2"
    remote = make_embedder("auto", base_url="http://127.0.0.1:9/v1", api_key="k", model_name="Qwen3-Embedding-4B")
    assert remote.model_name == "Qwen3-Embedding-4B"
    with pytest.raises(ValueError, match="not available locally"):
        make_embedder("local", model_name="text-embedding-3-small")


class FakeNode:
    def __init__(self, fid, value):
        self.full_node_id, self.value = fid, value


class FakeGraph:
    graph_id = "g-1"

    def __init__(self):
        self.calls = 0

    def search_variables(self, category=None):
        self.calls += 1
        assert category == "message"
        return [FakeNode("m1@1", json.dumps({"content": "hello lake", "name": "A"})),
                FakeNode("m2@1", json.dumps({"content": "sunrise painting", "name": "B"}))]


def test_graph_pool_builds_once_per_graph_even_concurrently():
    emb = CountingEmbedder()
    pool = GraphRetrieverPool(retrieval_type="hybrid", embedder_factory=lambda: emb)
    g = FakeGraph()
    got = []
    threads = [threading.Thread(target=lambda: got.append(pool.get(g))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pool.builds == 1 and g.calls == 1
    assert all(r is got[0] for r in got)
    assert len(emb.texts) == 2
    other = FakeGraph()
    pool.get(other)
    assert pool.builds == 2
    assert len(emb.texts) == 2  # same texts: served from the embedding cache
    pool.close()


@pytest.mark.parametrize("kind", ["sparse", "dense", "hybrid"])
def test_search_keeps_to_the_allowed_documents_and_still_fills_the_limit(kind):
    retriever = DocumentRetriever(DOCS, retrieval_type=kind, embedder=None if kind == "sparse" else FakeEmbedder(32))
    query = "Caroline support group lake sunrise"
    best = retriever.search(query, 1)[0].doc_id
    allowed = {d.doc_id for d in DOCS} - {best}
    hits = retriever.search(query, 2, allowed=allowed)
    assert best not in [h.doc_id for h in hits] and {h.doc_id for h in hits} <= allowed
    assert len(hits) == (1 if kind == "sparse" else 2)  # sparse drops zero-score documents


class _Message:
    def __init__(self, node_id, created_at):
        self.full_node_id, self.created_at = node_id, created_at


class _Graph:
    def __init__(self, *messages):
        self.messages = list(messages)

    def search_variables(self, category):
        assert category == "message"
        return self.messages


def test_messages_known_at_keeps_what_was_recorded_before_the_question():
    graph = _Graph(_Message("a", "2025-01-01 10:00:00.000"), _Message("b", "2025-01-01 10:00:02.000"))
    asked = _Message("query", "2025-01-01 10:00:01.000")
    assert messages_known_at(graph, asked) == frozenset({"a"})
    # asked after every message (an offline run): no filter, the search is unchanged
    assert messages_known_at(graph, _Message("query", "2025-01-01 11:00:00.000")) is None
    # asked before every message, or a graph without times: no filter rather than no evidence
    assert messages_known_at(graph, _Message("query", "2024-12-31 00:00:00.000")) is None
    assert messages_known_at(graph, _Message("query", None)) is None
    from datetime import datetime

    assert messages_known_at(graph, _Message("query", datetime(2025, 1, 1, 10, 0, 1))) is None  # mixed kinds


def test_message_documents_from_real_fixture(fixtures_dir):
    from smartcomment.runtime.network import ExecNetwork

    graph = ExecNetwork.import_graph(json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text()))
    docs = message_documents(graph, text_mode="raw", dense_text_mode="speaker_content")
    assert [d.doc_id for d in docs] == ["U1:D1:1@1", "U1:D1:2@1", "U1:D1:3@1", "U1:D2:1@1", "U1:D2:2@1"]
    assert docs[0].text == graph.get_variable("U1:D1:1@1").value
    assert docs[0].dense_text == "Caroline: Hey Mel! Good to see you!"
    assert message_documents(graph, text_mode="content")[0].dense_text is None
    r = DocumentRetriever(docs, retrieval_type="sparse")
    assert r.search("Sweden", 1)[0].doc_id == "U1:D2:2@1"


def test_bm25_index_matches_rank_bm25_scores():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from rank_bm25 import BM25Okapi

    from toolkits.retrieval import _Bm25

    words = st.sampled_from(["a", "b", "c", "d", "e", "f"])

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.lists(words, min_size=1, max_size=8), min_size=1, max_size=8), st.lists(words, max_size=5))
    def check(corpus, query):
        expected = BM25Okapi(corpus).get_scores(query)
        got = _Bm25(corpus).get_scores(query)
        assert list(got) == pytest.approx(list(expected))

    check()


@pytest.mark.integration
def test_minilm_hybrid_on_fixture_graph(fixtures_dir, tmp_path):
    pytest.importorskip("sentence_transformers")
    from smartcomment.runtime.network import ExecNetwork

    graph = ExecNetwork.import_graph(json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text()))
    pool = GraphRetrieverPool(retrieval_type="hybrid", embedder_factory=lambda: make_embedder("local"),
                              embedding_cache_dir=tmp_path)
    retriever = pool.get(graph)
    query = build_retrieval_query("'Where did Caroline move from four years ago?'", "Sweden", "Norway", "query_only")
    assert retriever.search(query, 1, retrieval_type="dense")[0].doc_id == "U1:D2:2@1"
    assert retriever.search(query, 2)[0].doc_id == "U1:D2:2@1"
    assert pool.embedder.misses == 6 and pool.embedder.inner.dim == 384  # 5 messages + 1 query
    pool.close()
