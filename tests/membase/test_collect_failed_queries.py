"""`toolkits.bench_utils.collect_failed_queries` finds exactly the questions the fake judge failed."""

from __future__ import annotations

import json

import pytest

from tests.membase._helpers import FIXED_ANSWER, conv26_two_sessions, run_pipeline

bench_utils = pytest.importorskip("toolkits.bench_utils", reason="toolkits.bench_utils (helper graphtrace) not there yet")


@pytest.mark.parametrize("layer_type, config", [
    ("Long-Context", {}),
    ("NaiveRAG", {"retriever_name_or_path": "fake:64", "retriever_dim": 64, "vector_store": "memory"}),
])
def test_collect_failed_queries_matches_the_fake_judge(locomo_path, tmp_path, layer_type, config):
    from smartcomment.runtime.network import ExecNetwork

    dataset = conv26_two_sessions(locomo_path)
    _, _, evaluation = run_pipeline(layer_type, config, dataset, tmp_path)
    results = json.loads(evaluation.output_path.read_text())
    failed_ids = {r["qa_pair"]["id"] for r in results if r["metrics"]["llm_judge"]["value"] == 0.0}
    assert failed_ids and len(failed_ids) < len(results)  # the slice has both outcomes

    graph_path = tmp_path / "traced" / "locomo-1" / "graph_evaluation.json"
    graph = ExecNetwork.import_graph(json.loads(graph_path.read_text()))
    cases = bench_utils.collect_failed_queries(graph)

    assert {c.query_full_node_id for c in cases} == {f"query:{qa_id}@1" for qa_id in failed_ids}
    by_id = {r["qa_pair"]["id"]: r for r in results}
    for case in cases:
        record = by_id[case.query_full_node_id.removeprefix("query:").removesuffix("@1")]
        assert case.prediction == FIXED_ANSWER  # the model's text, not its stored repr
        assert case.query == record["qa_pair"]["question"]
        assert case.golden_answer == ", ".join(record["qa_pair"]["golden_answers"])
        assert case.source_evidence_full_node_ids == [f"{e}@1" for e in record["qa_pair"]["metadata"]["evidence"]]
