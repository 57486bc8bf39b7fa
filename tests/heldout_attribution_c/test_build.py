"""Held-out benchmark C builds, loads, and its labels point at ops of the faulted stage."""

from __future__ import annotations

import json

import pytest

from benchmarks.heldout_attribution_c.build import build
from benchmarks.heldout_attribution_c.plans import KINDS
from toolkits.bench_utils import load_memtracebench

# error type -> the op categories (and sessions) a label of that type may point at
STAGE = {
    "ExtractionError": ({"extraction", "update", "boundary_detection", "initialization"}, "memory_construction"),
    "UpdateError": ({"update"}, "memory_construction"),
    "DeletionError": ({"update"}, "memory_construction"),
    "RetrievalError": ({"retrieval"}, "memory_search"),
    "ResponseError": ({"evaluation"}, "memory_evaluation"),
}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("hc") / "bench"
    rows = build(out, seed=0)
    return out, rows


def test_cases_load_with_labels_on_ops_of_the_faulted_stage(bench):
    out, rows = bench
    assert 80 <= len(rows) <= 120
    assert {r["kind"] for r in rows} == set(KINDS)
    graphs, cases = load_memtracebench(out, download=False)
    assert len(cases) == len(rows)
    for graph, case in zip(graphs, cases, strict=False):
        ann = case.metadata["annotation"]
        op = graph.get_operation(ann["final_op_id"])
        categories, session_category = STAGE[ann["final_error_type"]]
        assert op.category in categories, (case.metadata["graph_filename"], op.op_name)
        assert graph.get_session(op.session_id).category == session_category
        if ann["final_error_type"] == "ResponseError":
            assert op.op_name == "question-answering"
        assert case.prediction not in ann["golden_answers"]
        for evidence in case.source_evidence_full_node_ids:
            assert graph.get_variable(evidence).category == "message"
        graph.get_variable(case.query_full_node_id)


def test_nothing_in_a_graph_names_its_fault(bench):
    out, rows = bench
    for row in rows:
        text = (out / row["split"] / f"{row['case']}.json").read_text(encoding="utf-8").lower()
        assert row["kind"] not in text
        assert "fault" not in text and "inject" not in text
        data = json.loads(text)
        assert set(data["data"]["annotations"][0]) == {
            "query_id", "query", "golden_answers", "golden_answers_id", "prediction", "prediction_id",
            "source_evidence_ids", "final_error_type", "final_op_id"}
