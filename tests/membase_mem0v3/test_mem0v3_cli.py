"""`python -m membase run` builds, searches, answers and traces with the Mem0v3 layer (fake models)."""

from __future__ import annotations

import json

import pytest

from tests.membase_mem0v3._helpers import NEEDS_MEM0V3

pytest.importorskip("mem0.utils.scoring", reason=NEEDS_MEM0V3)

from membase.cli import main  # noqa: E402
from smartcomment.runtime.network import ExecNetwork  # noqa: E402

LAYER_CONFIG = {
    "layer_type": "Mem0v3",
    "llm_provider": "fake",
    "llm_model": "mem0v3-fake",
    "embedder_provider": "fake",
    "embedding_model_dims": 64,
    "custom_instructions": "Keep names of places and dates.",
}


@pytest.fixture
def one_session_locomo(tmp_path, locomo_path):
    """LoCoMo sample 1 cut to its first session and two questions whose evidence lies there."""
    sample = json.loads(locomo_path.read_text(encoding="utf-8"))[0]
    conv = sample["conversation"]
    keep = {k: v for k, v in conv.items() if not k.startswith("session_") or k.split("_")[1] == "1"}
    qa = [q for q in sample["qa"] if q.get("evidence") and all(e.split(":")[0] == "D1" for e in q["evidence"])]
    path = tmp_path / "locomo_one_session.json"
    path.write_text(json.dumps([{**sample, "conversation": keep, "qa": qa[:2]}]), encoding="utf-8")
    return path


def test_cli_run_traces_a_mem0v3_graph(tmp_path, one_session_locomo):
    config_path = tmp_path / "mem0v3.json"
    config_path.write_text(json.dumps(LAYER_CONFIG), encoding="utf-8")
    out = tmp_path / "run"
    code = main(["run", "--layer-config", str(config_path), "--dataset", str(one_session_locomo),
                 "--output-dir", str(out), "--quiet", "--top-k", "3", "--qa-model", "fake:I do not know",
                 "--metrics", "f1"])
    assert code == 0
    graph_file = out / "traced_data" / "locomo-1" / "graph_evaluation.json"
    graph = ExecNetwork.import_graph(json.loads(graph_file.read_text(encoding="utf-8")))
    assert graph.project_id == "Mem0v3"
    ops = [op.op_name for op in graph.get_all_operations()]
    assert ops.count("memory_system.score_fusion") == 2 and "question-answering" in ops
    assert ops.count("memory_system.extract_memories") == ops.count("memory_system.recent_messages") > 10
    qa_ops = {op.op_id for op in graph.get_all_operations() if op.op_name == "question-answering"}
    sources = {e.source_full_node_id for e in graph.get_all_edges() if e.op_id in qa_ops}
    assert any(s.startswith("memory-unit-") for s in sources) and all(s in graph for s in sources)
