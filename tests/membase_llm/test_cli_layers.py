"""Both LLM layers run from the membase CLI with a layer-config file (fake models, no network)."""

from __future__ import annotations

import json

import pytest

from membase.cli import main
from smartcomment.runtime.network import ExecNetwork

LAYER_CONFIGS = {
    "Mem0": {
        "layer_type": "Mem0",
        "llm_provider": "fake",
        "llm_model": "mem0-fake",
        "embedder_provider": "fake",
        "embedding_model_dims": 64,
    },
    "EverMemOS": {
        "layer_type": "EverMemOS",
        "llm_config": {"provider": "fake", "model": "evermemos-fake"},
        "embedding_config": {"provider": "fake", "embedding_dims": 64},
        "retrieval_config": {"retrieval_mode": "agentic", "final_top_k": 10, "sufficiency_check_docs": 5},
    },
}
RETRIEVAL_OPS = {
    "Mem0": "memory_system.search_vector_store",
    "EverMemOS": "memory_system.agentic_round1_bundle",
}


@pytest.fixture(scope="module")
def small_locomo(tmp_path_factory, locomo_path):
    """LoCoMo sample 1 cut to its first two sessions and the QAs whose evidence lies there."""
    sample = json.loads(locomo_path.read_text(encoding="utf-8"))[0]
    conv = sample["conversation"]
    keep = {k: v for k, v in conv.items() if not k.startswith("session_") or k.split("_")[1] in ("1", "2")}
    qa = [
        q
        for q in sample["qa"]
        if q.get("evidence") and all(e.split(":")[0] in ("D1", "D2") for e in q["evidence"])
    ]
    path = tmp_path_factory.mktemp("locomo") / "locomo_small.json"
    path.write_text(json.dumps([{**sample, "conversation": keep, "qa": qa[:4]}]), encoding="utf-8")
    return path


@pytest.mark.parametrize("layer_type", sorted(LAYER_CONFIGS))
@pytest.mark.slow
def test_cli_run_builds_searches_and_traces(tmp_path, small_locomo, layer_type):
    config_path = tmp_path / f"{layer_type}.json"
    config_path.write_text(json.dumps(LAYER_CONFIGS[layer_type]), encoding="utf-8")
    out = tmp_path / "run"
    code = main(
        [
            "run",
            "--layer-config",
            str(config_path),
            "--dataset",
            str(small_locomo),
            "--output-dir",
            str(out),
            "--quiet",
            "--top-k",
            "3",
            "--qa-model",
            "fake:I do not know",
            "--metrics",
            "f1,bleu",
        ]
    )
    assert code == 0
    graph_file = out / "traced_data" / "locomo-1" / "graph_evaluation.json"
    graph = ExecNetwork.import_graph(json.loads(graph_file.read_text(encoding="utf-8")))
    assert graph.project_id == layer_type
    ops = {op.op_name for op in graph.get_all_operations()}
    assert RETRIEVAL_OPS[layer_type] in ops and "question-answering" in ops
    # every memory the QA op used resolves to a node of the graph
    qa_ops = [op for op in graph.get_all_operations() if op.op_name == "question-answering"]
    sources = {e.source_full_node_id for e in graph.get_all_edges() if e.op_id in {o.op_id for o in qa_ops}}
    assert any(s.startswith("memory-unit-") for s in sources)
    assert all(s in graph for s in sources)
