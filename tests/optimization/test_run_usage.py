"""Each run of an optimization reports the token usage of its own calls only.

The QA and judge models are made once per process and shared by every run of a serial optimization
(training rounds, the validation gate, the final evaluation); a worker process makes its own. The
evaluation report's ``usage`` must be the run's calls in both cases, not the model's calls since
the process started.
"""

from __future__ import annotations

import json

from membase.clients import FunctionChatModel
from membase.types import MemoryDataset, Message, QuestionAnswerPair, Session, Trajectory
from toolkits.optimization.bundle import MemoryConfigBundle
from toolkits.optimization.pipeline import PipelineSettings, run_pipeline

_TURNS = [("Marta", "I repainted the garden shed a pale yellow on Sunday."),
          ("Olek", "Nice. Our choir rehearses on Thursday evenings now."),
          ("Marta", "The shed door still squeaks, though.")]


def _dataset() -> MemoryDataset:
    messages = [Message(id=f"D1:{i}", role="user", name=name, content=text, timestamp="2024-04-07T18:00:00")
                for i, (name, text) in enumerate(_TURNS, start=1)]
    trajectory = Trajectory(id="synthetic-1", sessions=[Session(id="synthetic-1:s1", messages=messages)])
    questions = [QuestionAnswerPair(id="q1", question="What colour is Marta's shed?", golden_answers=["pale yellow"],
                                    metadata={"evidence": ["D1:1"]}),
                 QuestionAnswerPair(id="q2", question="When does Olek's choir rehearse?",
                                    golden_answers=["Thursday evenings"], metadata={"evidence": ["D1:2"]})]
    return MemoryDataset(name="LoCoMo", trajectories=[trajectory], qa_pair_lists=[questions])


def _settings() -> PipelineSettings:
    qa = FunctionChatModel(lambda _messages, **_kw: "pale yellow", model="fake-qa")
    judge = FunctionChatModel(lambda _messages, **_kw: '{"label": "CORRECT"}', model="fake-judge")
    return PipelineSettings(top_k=3, qa_model=qa, judge_model=judge, tracing=False, show_progress=False)


def _usage(tmp_path, name: str, settings: PipelineSettings) -> dict:
    bundle = MemoryConfigBundle.from_layer_config({"layer_type": "Long-Context"})
    result = run_pipeline(bundle, _dataset(), tmp_path / name, settings)
    saved = json.loads(result.evaluation_path.with_name(f"{result.evaluation_path.stem}_report.json").read_text())
    assert saved["usage"] == result.reports["evaluation"]["usage"]
    return saved["usage"]


def test_two_serial_runs_with_shared_models_each_report_their_own_usage(tmp_path):
    shared = _settings()
    first, second = _usage(tmp_path, "first", shared), _usage(tmp_path, "second", shared)
    alone = _usage(tmp_path, "alone", _settings())
    assert first == second == alone
    assert alone["qa_model"]["requests"] == alone["judge_model"]["requests"] == 2
    assert alone["qa_model"]["input_tokens"] > 0
    assert shared.qa_model.usage.requests == 4  # the model itself still counts every call it answered
