"""Labels from records and attribution outputs, consensus, ETA/OIA and Cohen's kappa."""

from __future__ import annotations

import json

import pytest

from annotation_interface.agreement import annotator_agreement, cohen_kappa, strategy_agreement
from annotation_interface.labels import (
    AttributionOutputError,
    Label,
    case_qa_id,
    consensus,
    human_labels,
    load_attribution_output,
)


def _rec(qa, who, kind, op="op-1", *, unsure=False, at="2026-01-01T00:00:00Z"):
    return {"graph_name": "mem0/g.json", "qa_id": qa, "annotator": who, "unsure": unsure, "saved_at": at,
            "manual_error_attribution": {"op_id": op, "error_type": kind, "edge_id": None, "reason": "r"}}


def test_cohen_kappa_matches_a_hand_computed_value():
    # 10 cases, 7 agreements; left marginals A=5 B=5, right A=6 B=4: p_e = 0.5*0.6 + 0.5*0.4 = 0.5
    left = ["A"] * 5 + ["B"] * 5
    right = ["A", "A", "A", "A", "B", "A", "A", "B", "B", "B"]
    assert cohen_kappa(left, right) == pytest.approx((0.7 - 0.5) / 0.5)
    assert cohen_kappa(["A", "B"], ["A", "B"]) == pytest.approx(1.0)
    assert cohen_kappa(["A", "B"], ["B", "A"]) == pytest.approx(-1.0)
    assert cohen_kappa(["A", "A"], ["A", "A"]) is None  # one label throughout: undefined
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa(["A"], [])


def test_human_labels_and_consensus():
    records = [_rec("q1", "ana", "UpdateError"), _rec("q1", "bo", "UpdateError"),
               _rec("q1", "cy", "RetrievalError", at="2026-02-01T00:00:00Z"),
               _rec("q2", "ana", "ExtractionError", unsure=True), {"not": "a record"}]
    humans = human_labels(records)
    assert set(humans) == {("mem0/g.json", "q1"), ("mem0/g.json", "q2")}
    assert consensus(humans[("mem0/g.json", "q1")]).error_type == "UpdateError"  # 2 votes against 1
    assert consensus(humans[("mem0/g.json", "q2")]) is None  # unsure only
    tie = {"a": Label(source="h", error_type="X", op_id=None, saved_at="1"),
           "b": Label(source="h", error_type="Y", op_id=None, saved_at="2")}
    assert consensus(tie).error_type == "Y"  # a tie goes to the latest


def test_strategy_and_annotator_tables():
    humans = human_labels([_rec("q1", "ana", "UpdateError"), _rec("q2", "ana", "RetrievalError", "op-2"),
                           _rec("q1", "bo", "UpdateError"), _rec("q2", "bo", "ExtractionError", "op-2", at="2026-03-01T00:00:00Z")])
    auto = {("mem0/g.json", "q1"): Label(source="s", error_type="UpdateError", op_id="op-9"),
            ("mem0/g.json", "q2"): Label(source="s", error_type="RetrievalError", op_id="op-2"),
            ("mem0/g.json", "q3"): Label(source="s", error_type="RetrievalError", op_id="op-3")}
    [row] = strategy_agreement(humans, {"s": auto})
    # q2's human label is bo's, the latest of a 1-1 tie; q3 has no human label
    assert row.cases == 2 and row.eta == pytest.approx(0.5) and row.oia == pytest.approx(0.5)
    [pair] = annotator_agreement(humans)
    assert (pair.left, pair.right, pair.cases) == ("human:ana", "human:bo", 2)
    assert pair.eta == pytest.approx(0.5) and pair.oia == pytest.approx(1.0)
    # ana U,R against bo U,E: p_o = 0.5, p_e = P(U)^2 = 0.25, kappa = 0.25 / 0.75
    assert pair.kappa == pytest.approx(1 / 3)


def test_attribution_output_is_matched_to_the_dataset_cases(tmp_path):
    out = tmp_path / "graph_search.json"
    out.write_text(json.dumps({"results": [
        {"query_id": "query:q1@1", "graph_path": "/x/mem0/g.json",
         "error_attribution_result": {"error_type": "UpdateError", "op_id": "op-1", "reason": "why"},
         "counterfactual_label": {"error_type": "RetrievalError", "op_id": "op-7"}},
        {"query_id": "query:q2@1", "graph_path": "/x/mem0/g.json",
         "error_attribution_result": {"error_type": "ResponseError", "op_id": "op-2", "reason": ""},
         "replay": {"rescued": True, "op_id": "op-2"}},
        {"query_id": "query:q3@1", "graph_path": "/x/mem0/g.json",
         "error_attribution_result": {"error_type": "ResponseError", "op_id": "op-3", "reason": ""},
         "replay": {"rescued": False}},
        {"query_id": "query:q9@1", "graph_path": "/x/mem0/other.json", "error_attribution_result": {}},
    ]}))
    auto = load_attribution_output(out, [("mem0/g.json", "q1"), ("mem0/g.json", "q2"), ("mem0/g.json", "q3")])
    assert auto.name == "graph_search" and auto.unmatched == 1
    assert auto.labels[("mem0/g.json", "q1")].error_type == "UpdateError"
    assert auto.replay[("mem0/g.json", "q3")].error_type is None  # not rescued: no replay label
    assert auto.replay[("mem0/g.json", "q1")].error_type == "RetrievalError"
    rescued = auto.replay[("mem0/g.json", "q2")]  # a rescue confirms the attribution's label
    assert (rescued.error_type, rescued.op_id) == ("ResponseError", "op-2") and "rescued: True" in rescued.reason
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": [{"graph_path": "x"}]}')
    with pytest.raises(AttributionOutputError, match="bad.json: record 0 has no query_id"):
        load_attribution_output(bad, [])
    bad.write_text("[1,")
    with pytest.raises(AttributionOutputError, match="not a JSON file"):
        load_attribution_output(bad, [])


def test_case_qa_id():
    assert case_qa_id("query:locomo-qa-3-140@1") == "locomo-qa-3-140"
    assert case_qa_id("query:locomo-qa-3-140") == "locomo-qa-3-140"
    assert case_qa_id("locomo-qa-3-140") == "locomo-qa-3-140"
