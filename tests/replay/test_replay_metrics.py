"""The verdict counting of toolkits/replay_verify: kinds of outcome, rescued shares, agreement with labels."""

from __future__ import annotations

from typing import Any

from toolkits.replay_verify import replay_line, replay_metrics


def _record(error: str | None, op: str | None, replay: dict[str, Any] | None, *, op_name: str = "memory_system.retrieve",
            label: dict[str, Any] | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"error_attribution_result": {"error_type": error, "op_id": op},
                              "attributed_operation": {"op_name": op_name}}
    if replay is not None:
        record["replay"] = replay
    if label is not None:
        record["counterfactual_label"] = label
    return record


RESCUED = {"status": "replayed", "stage": "retrieval", "rescued": True}
NOT_RESCUED = {"status": "replayed", "stage": "retrieval", "rescued": False}
RESPONSE = {"status": "replayed", "stage": "response", "answer_stable": True}


def test_each_outcome_is_counted_once_under_its_kind() -> None:
    records = [
        _record("RetrievalError", "op-1", RESCUED),
        _record("RetrievalError", "op-2", NOT_RESCUED),
        _record("RetrievalError", "op-3", NOT_RESCUED),
        _record("ExtractionError", "op-4", {"status": "unsupported", "stage": "extraction"},
                op_name="memory_system.add"),
        _record("ExtractionError", "op-5", {"status": "failed", "stage": "extraction", "error": "boom"},
                op_name="memory_system.add"),
        _record("ResponseError", "op-6", RESPONSE, op_name="question-answering"),
        _record(None, None, None),  # not attributed: no replay, not counted
    ]
    m = replay_metrics(records)
    assert (m["replayed_cases"], m["rescued"], m["not_rescued"]) == (6, 1, 2)
    assert (m["unsupported"], m["failed"], m["response_checks"]) == (1, 1, 1)
    assert m["rescued_share"] == round(1 / 3, 4)  # only repaired verdicts count, never response checks
    assert m["by_error_type"]["RetrievalError"] == {"rescued": 1, "not_rescued": 2, "replays": 3,
                                                    "rescued_share": round(1 / 3, 4)}
    assert m["by_error_type"]["ExtractionError"]["rescued_share"] is None  # nothing judged: no share
    assert m["by_error_type"]["ResponseError"] == {"response_check": 1, "replays": 1, "rescued_share": None}
    assert m["by_op_name"]["memory_system.add"] == {"unsupported": 1, "failed": 1, "replays": 2,
                                                    "rescued_share": None}
    assert "counterfactual" not in m
    assert replay_line(m).startswith("replay: 1 of 3 repaired case(s) rescued (1 unsupported, 1 failed, "
                                     "1 response check(s))")


def test_a_response_check_that_says_rescued_is_still_a_response_check() -> None:
    m = replay_metrics([_record("ResponseError", "op", {**RESPONSE, "rescued": True})])
    assert m["rescued"] == 0 and m["response_checks"] == 1 and m["rescued_share"] is None


def test_all_rescued_share_is_one_and_none_is_zero() -> None:
    assert replay_metrics([_record("RetrievalError", "a", RESCUED)])["rescued_share"] == 1.0
    assert replay_metrics([_record("RetrievalError", "a", NOT_RESCUED)])["rescued_share"] == 0.0


def test_agreement_with_counterfactual_labels() -> None:
    label = {"op_id": "op-1", "error_type": "RetrievalError"}
    records = [
        _record("RetrievalError", "op-1", RESCUED, label=label),  # type and op agree
        _record("RetrievalError", "op-9", NOT_RESCUED, label={"op_id": "op-2", "error_type": "RetrievalError"}),
        _record("ResponseError", "op-3", RESPONSE, label={"op_id": "op-7", "error_type": "ExtractionError"}),
        _record("ResponseError", "op-4", RESPONSE, label={"op_id": None, "error_type": None}),  # no rescue found
    ]
    cf = replay_metrics(records)["counterfactual"]
    assert cf["cases"] == 4 and cf["labelled"] == 3 and cf["no_single_op_rescue"] == 1
    assert cf["label_types"] == {"RetrievalError": 2, "ExtractionError": 1}
    assert cf["error_type_agreement"] == round(2 / 3, 4)
    assert cf["op_agreement"] == round(1 / 3, 4)
    line = replay_line(replay_metrics(records))
    assert "counterfactual labels for 3 of 4 case(s)" in line


def test_agreement_without_any_label_is_none() -> None:
    cf = replay_metrics([_record("RetrievalError", "a", NOT_RESCUED, label={"op_id": None, "error_type": None})])[
        "counterfactual"]
    assert cf["labelled"] == 0 and cf["error_type_agreement"] is None and cf["op_agreement"] is None
