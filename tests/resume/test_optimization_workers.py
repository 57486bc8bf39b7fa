"""run_optimization.py --workers 2: the final evaluation's conversations built in worker processes.

A serial run and a ``--workers 2`` run of the same command must leave the same final evaluation
(every file, after the run folder, fresh ids and clock times are canonicalised, the evaluation
reports' token usage included), and a ``--workers 2`` run killed between the two bundles'
evaluations must resume without evaluating the first bundle again. Long-Context layer (no model
inside the layer) and scripted ``py:`` QA/judge models that the spawned workers rebuild.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membase.runners._canonical import canonical_run
from tests.resume import _process
from tests.resume._optimization_driver import make_factory
from toolkits.optimization import command as optimization_command

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCRIPTED = "py:tests.resume._optimization_scripted:"
NEW_QA = "Answer $question from these notes only: $context"
REPLY = {"rationale": "r", "feedback": "f", "aggregated_feedback": "f", "improved_value": NEW_QA}


def _argv(locomo_file: Path, out: Path, workers: int, config: Path) -> list[str]:
    return ["--config-path", str(config), "--dataset-path", str(locomo_file), "--optimization-dir", str(out),
            "--sample-size", "1", "--attribution-strategy", "evidence_flow", "--targets", "qa",
            "--optimizer-model", "fake:" + json.dumps(REPLY), "--qa-model", SCRIPTED + "qa_model",
            "--judge-model", SCRIPTED + "judge_model", "--max-sessions", "1", "--max-questions", "3",
            "--eval-trajectories", "2,3", "--bootstrap-samples", "50", "--no-progress", "--workers", str(workers)]


def _final_evaluation(out: Path) -> dict:
    """The final evaluation's files, canonical (token usage too: each run reports its own calls, in
    the serial run as in a worker)."""
    files = {name: json.loads(text) for name, text in canonical_run(out / "final_evaluation").items()}
    files["final_evaluation.json"] = json.loads(
        (out / "final_evaluation.json").read_text(encoding="utf-8").replace(str(out), "<run>"))
    return files


def _bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_two_workers_equal_the_serial_run_and_resume_after_a_kill(tmp_path, locomo_path, monkeypatch):
    config = tmp_path / "long_context.json"
    config.write_text(json.dumps({"layer_type": "Long-Context"}), encoding="utf-8")
    serial = tmp_path / "serial"
    argv = _argv(locomo_path, serial, 1, config)
    assert optimization_command.main(argv, optimizer_model_factory=make_factory(argv)) == 0

    fanned = tmp_path / "two workers"
    argv = _argv(locomo_path, fanned, 2, config)
    # SIGKILL right after the initial bundle's evaluation is saved, before the final bundle's starts
    ended = _process.run("_optimization_driver", argv, tmp_path, calls=tmp_path / "calls.log",
                         kill="after:outcomes.json:1")
    assert ended.killed, ended.stderr
    assert (fanned / "final_evaluation" / "initial" / "outcomes.json").is_file()
    assert not (fanned / "final_evaluation.json").exists()
    initial = _bytes(fanned / "final_evaluation" / "initial")

    from membase.runners import construction

    plans = []
    real_fan_out = construction.fan_out

    def spy(task, payloads, plan):  # noqa: ANN001, ANN202
        plans.append((plan.workers, len(payloads)))
        return real_fan_out(task, payloads, plan)

    monkeypatch.setattr(construction, "fan_out", spy)
    assert optimization_command.main(argv, optimizer_model_factory=make_factory(argv)) == 0
    assert plans == [(2, 2)]  # only the final bundle is built, its two conversations in two workers
    assert _bytes(fanned / "final_evaluation" / "initial") == initial  # evaluated once, not again
    report = json.loads((fanned / "final_evaluation.json").read_text(encoding="utf-8"))
    assert not report["identical_bundles"] and report["final_bundle"]["question_answering_prompt"] == NEW_QA
    predictions = {q["user_id"]: q["after"]["prediction"] for q in report["questions"]}
    assert len(set(predictions.values())) == 2  # each conversation answered from its own memory
    mine, reference = _final_evaluation(fanned), _final_evaluation(serial)
    assert mine.keys() == reference.keys()
    for name, content in mine.items():
        assert content == reference[name], name
    usages = [content["usage"] for name, content in mine.items() if name.endswith("_evaluation_report.json")]
    assert len(usages) == 2 and all(u["qa_model"]["requests"] == 6 for u in usages)  # each run: 2 conversations x 3


def test_a_model_that_workers_cannot_rebuild_is_refused_before_anything_is_built(tmp_path):
    from membase.clients.fake import FunctionChatModel
    from membase.types import MemoryDataset, Message, Session, Trajectory
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.pipeline import (
        PipelineError,
        PipelineSettings,
        _check_portable,
        chat_model_from_spec,
        run_pipeline,
    )

    def trajectory(name: str) -> Trajectory:
        message = Message(id=f"{name}:1", role="user", name="Ada", content="The kettle is blue.",
                          timestamp="2024-01-01T10:00:00")
        return Trajectory(id=name, sessions=[Session(id=f"{name}:s1", messages=[message])])

    dataset = MemoryDataset(name="tiny", trajectories=[trajectory("u1"), trajectory("u2")], qa_pair_lists=[[], []])
    bundle = MemoryConfigBundle.from_layer_config({"layer_type": "Long-Context"})
    judge = chat_model_from_spec('fake:{"label": "WRONG"}')
    local = FunctionChatModel(lambda _messages, **_kw: "blue", model="a lambda")
    settings = PipelineSettings(top_k=3, qa_model=local, judge_model=judge, workers=2, show_progress=False)
    with pytest.raises(PipelineError, match=r"--workers 2: the qa model 'a lambda' cannot be sent to worker processes"):
        run_pipeline(bundle, dataset, tmp_path / "run", settings)
    assert not (tmp_path / "run").exists()
    portable = PipelineSettings(top_k=3, qa_model=chat_model_from_spec("fake:blue"), judge_model=judge, workers=2)
    _check_portable(portable)  # fake: and py: specs travel
