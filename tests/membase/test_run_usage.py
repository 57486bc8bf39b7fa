"""A run's report counts the model calls of that run, not those the same model objects made before.

Optimization runs share one QA and one judge model across many runs in a process (see
``tests/optimization/test_run_usage.py`` for the pipeline); these tests pin the two membase runners
that write an evaluation report: the offline evaluation runner and the online evaluator.
"""

from __future__ import annotations

import json

from membase.clients import FunctionChatModel
from membase.runners import EvaluationRunner, EvaluationRunnerConfig, SearchRunnerConfig
from membase.runners.online import OnlineEvaluator
from membase.types import MemoryDataset, Message, Session, Trajectory


def _models() -> tuple[FunctionChatModel, FunctionChatModel]:
    qa = FunctionChatModel(lambda _messages, **_kw: "on Tuesday", model="fake-qa")
    judge = FunctionChatModel(lambda _messages, **_kw: '{"label": "WRONG"}', model="fake-judge")
    for model in (qa, judge):  # an earlier run of this process
        model.complete([{"role": "user", "content": "The library reopens after the flood repairs."}])
    return qa, judge


def _searched(tmp_path) -> str:
    path = tmp_path / "3_None_None.json"
    path.write_text(json.dumps([{
        "user_id": "synthetic-1",
        "qa_pair": {"id": "q1", "question": "When does the library reopen?", "golden_answers": ["on Monday"]},
        "retrieved_memories": [{"id": "m1", "content": "The library reopens on Monday."}],
    }]), encoding="utf-8")
    return str(path)


def test_the_evaluation_report_counts_only_this_runs_calls(tmp_path):
    qa, judge = _models()
    config = EvaluationRunnerConfig(search_results_path=_searched(tmp_path), tracing=False, show_progress=False)
    first = EvaluationRunner(config, qa_model=qa, judge_model=judge).run().usage
    second = EvaluationRunner(config, qa_model=qa, judge_model=judge).run().usage
    assert first == second
    assert first["qa_model"]["requests"] == first["judge_model"]["requests"] == 1
    saved = json.loads((tmp_path / "3_None_None_evaluation_report.json").read_text(encoding="utf-8"))
    assert saved["usage"] == second


def test_the_online_report_counts_only_this_runs_calls(tmp_path):
    qa, judge = _models()
    message = Message(id="D1:1", role="user", name="Ada", content="Hello.", timestamp="2024-01-01T10:00:00")
    dataset = MemoryDataset(name="tiny", trajectories=[Trajectory(id="synthetic-1", sessions=[
        Session(id="synthetic-1:s1", messages=[message])])], qa_pair_lists=[[]])
    search = SearchRunnerConfig(layer_type="Long-Context", save_dir=str(tmp_path), top_k=3, show_progress=False)
    evaluation = EvaluationRunnerConfig(search_results_path=str(tmp_path / "3_None_None.json"), show_progress=False)
    online = OnlineEvaluator(dataset=dataset, search=search, evaluation=evaluation, qa_model=qa, judge_model=judge)
    online.save()
    assert online.evaluation_report.usage["qa_model"]["requests"] == 0
    assert online.evaluation_report.usage["judge_model"]["requests"] == 0
