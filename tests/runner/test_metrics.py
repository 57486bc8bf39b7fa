import pytest

from toolkits.metrics import (
    FAILED_LABEL,
    AttributionRecord,
    attribution_metrics,
    bootstrap_interval,
    confusion_matrix,
    recall_at_k,
    recall_by_group,
)


def rec(gt, go, pt, po, group=""):
    return AttributionRecord(gold_error_type=gt, gold_op_id=go, predicted_error_type=pt, predicted_op_id=po, group=group)


RECORDS = [
    rec("ExtractionError", "op-1", "ExtractionError", "op-1", "mem0"),  # both right
    rec("ExtractionError", "op-2", "ExtractionError", "op-9", "mem0"),  # type only
    rec("RetrievalError", "op-3", "ResponseError", "op-3", "rag"),  # op only
    rec("ResponseError", "op-4", None, None, "rag"),  # failed
]


def test_eta_oia_joint_exact_definitions():
    m = attribution_metrics(RECORDS, bootstrap_samples=0)
    assert m["total_cases"] == 4
    assert m["failed_cases"] == 1
    assert m["error_type_prediction_accuracy"] == 0.5
    assert m["operation_identifier_prediction_accuracy"] == 0.5
    assert m["joint_accuracy"] == 0.25
    assert m["confidence_intervals_95"]["joint_accuracy"] is None


def test_exact_match_is_case_and_space_sensitive():
    m = attribution_metrics([rec("UpdateError", "op-1", "updateerror", " op-1")], bootstrap_samples=0)
    assert m["error_type_prediction_accuracy"] == 0.0
    assert m["operation_identifier_prediction_accuracy"] == 0.0


def test_breakdowns_and_confusion():
    m = attribution_metrics(RECORDS, bootstrap_samples=0)
    assert m["by_error_type"]["ExtractionError"]["error_type_prediction_accuracy"] == 1.0
    assert m["by_error_type"]["ExtractionError"]["operation_identifier_prediction_accuracy"] == 0.5
    assert m["by_error_type"]["ResponseError"]["failed_cases"] == 1
    assert list(m["by_error_type"]) == ["ExtractionError", "RetrievalError", "ResponseError"]
    assert m["by_group"]["rag"]["total_cases"] == 2
    assert m["by_group"]["rag"]["operation_identifier_prediction_accuracy"] == 0.5
    cm = m["confusion_matrix"]
    assert cm["RetrievalError"]["ResponseError"] == 1
    assert cm["ResponseError"][FAILED_LABEL] == 1
    assert sum(sum(row.values()) for row in cm.values()) == 4


def test_confusion_matrix_keeps_unknown_labels():
    cm = confusion_matrix([rec("UpdateError", "o", "Weird", "o")])
    assert cm["UpdateError"]["Weird"] == 1
    assert "Weird" in cm


def test_from_result_reads_output_record():
    r = AttributionRecord.from_result(
        {"final_error_type": "UpdateError", "final_op_id": "op-1", "error_attribution_result": None}
    )
    assert r.failed and not r.type_correct


def test_bootstrap_interval_is_reproducible_and_brackets_mean():
    values = [1.0] * 30 + [0.0] * 70
    lo, hi = bootstrap_interval(values, samples=500, seed=3)
    assert (lo, hi) == bootstrap_interval(values, samples=500, seed=3)
    assert lo < 0.3 < hi
    assert 0.15 < lo and hi < 0.45
    assert bootstrap_interval([1.0, 1.0], samples=100) == (1.0, 1.0)
    assert bootstrap_interval([], samples=100) is None


def test_recall_micro_and_macro():
    refs = [["a", "b"], ["c"], []]
    got = [["a", "x"], ["c", "d"], ["z"]]
    assert recall_at_k(refs, got, "macro") == pytest.approx((0.5 + 1.0) / 2)
    assert recall_at_k(refs, got, "micro") == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="undefined"):
        recall_at_k([[]], [["a"]])
    with pytest.raises(ValueError, match="reference lists"):
        recall_at_k([["a"]], [])


def test_recall_by_group():
    out = recall_by_group(["L", "L", "R"], [["a"], ["b", "c"], ["d"]], [["a"], ["b"], []])
    assert out["L"]["micro"] == pytest.approx(2 / 3)
    assert out["L"]["macro"] == pytest.approx(0.75)
    assert out["R"]["macro"] == 0.0
    assert out["overall"]["cases"] == 3
    assert recall_by_group(["E"], [[]], [["x"]])["E"]["micro"] is None
