"""The rescue decision: a repaired case that turns right is rescued; unrepaired, or right before, it is not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from membase.replay import RunReplayer


@pytest.fixture(scope="module")
def replayer(rag_run: Path) -> Iterator[RunReplayer]:
    with RunReplayer(rag_run) as replayer:
        yield replayer


def _questions(replayer: RunReplayer, *, right: bool) -> list[str]:
    trajectory = replayer.trajectory_ids()[0]
    _, qas = replayer._trajectory(trajectory)
    out = []
    for qa in qas:
        row = replayer.original(trajectory, qa.id) or {}
        if ((row.get("metrics") or {}).get("llm_judge", {}).get("value", 0.0) >= 0.5) == right:
            out.append(qa.id)
    return out


def _retrieval_op(replayer: RunReplayer, qa_id: str) -> str:
    base = replayer.baseline(replayer.trajectory_ids()[0])
    return next(op for op, (key, name) in base.op_calls.items() if key == ("retrieve", qa_id))


def _rescued_case(replayer: RunReplayer) -> tuple[str, str]:
    trajectory = replayer.trajectory_ids()[0]
    for qa_id in _questions(replayer, right=False):
        op_id = _retrieval_op(replayer, qa_id)
        if replayer.repair(trajectory, qa_id, op_id, "retrieval").rescued:
            return qa_id, op_id
    raise AssertionError("no failed question of the run is rescued by its retrieval repair")


def test_repaired_case_is_rescued_and_unrepaired_is_not(replayer: RunReplayer) -> None:
    trajectory = replayer.trajectory_ids()[0]
    qa_id, op_id = _rescued_case(replayer)
    repaired = replayer.repair(trajectory, qa_id, op_id, "retrieval")
    assert repaired.status == "replayed" and repaired.applied
    assert repaired.rescued is True and repaired.judge_label == "CORRECT" and repaired.judge_score == 1.0
    # (new_calls is not asserted: the run's cache keeps the calls of earlier replays of this shared run)
    assert repaired.prediction != replayer.original(trajectory, qa_id)["prediction"]

    unrepaired = replayer._replay_one(trajectory, qa_id, None, query_time=True)
    assert unrepaired.status == "replayed"
    assert unrepaired.rescued is False and unrepaired.judge_label == "WRONG"
    assert unrepaired.new_calls == 0  # the same requests: all from the run's cache


def test_a_case_that_was_right_is_never_rescued(replayer: RunReplayer) -> None:
    trajectory = replayer.trajectory_ids()[0]
    right = _questions(replayer, right=True)
    assert right, "the run answered no question right"
    outcome = replayer._replay_one(trajectory, right[0], None, query_time=True)
    assert outcome.status == "replayed" and outcome.judge_label == "CORRECT"
    assert outcome.rescued is False


def test_response_checks_never_claim_a_repair(replayer: RunReplayer) -> None:
    trajectory = replayer.trajectory_ids()[0]
    qa_id = _questions(replayer, right=False)[0]
    outcome = replayer.repair(trajectory, qa_id, "op-any", "response")
    assert outcome.status == "replayed" and outcome.stage == "response"
    assert outcome.rescued is None and outcome.answer_stable is True


def test_an_op_no_layer_call_recorded_is_unsupported(replayer: RunReplayer) -> None:
    trajectory = replayer.trajectory_ids()[0]
    qa_id = _questions(replayer, right=False)[0]
    outcome = replayer.repair(trajectory, qa_id, "op-not-in-the-run", "extraction")
    assert outcome.status == "unsupported" and outcome.rescued is None
