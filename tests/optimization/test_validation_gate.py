"""--validation-gate keeps an update only when it does not lower llm_judge on the held-out conversation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

import run_optimization  # noqa: E402
from membase.clients.fake import FunctionChatModel  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
WORSE = {"rationale": "r", "feedback": "f", "aggregated_feedback": "f", "improved_value": "Reply to $question using $context."}


def test_gate_rejects_an_update_that_lowers_the_validation_score(tmp_path, locomo_file, monkeypatch):
    from toolkits.optimization import pipeline
    from toolkits.optimization.sampling import load_full_dataset

    full = load_full_dataset(locomo_file, max_sessions=1, max_questions=2)
    answers = {q.question: q.golden_answers[0] for q in full.qa_pair_lists[2]}  # the validation conversation

    def qa(messages, **_kw):
        prompt = messages[-1]["content"]
        question = re.search(r"Question: (?:\w+: )?(.*)", prompt)
        text = question.group(1).strip() if question else ""
        # the default template ("Memories:") answers the validation questions right; anything else is wrong
        return answers.get(text, "no idea") if "Memories:" in prompt else "no idea"

    def judge(messages, **_kw):
        prompt = messages[-1]["content"]
        reference = re.search(r"Reference answer: (.*)", prompt).group(1).strip()
        answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()
        return '{"label": "CORRECT"}' if answer and answer in reference else '{"label": "WRONG"}'

    real = pipeline.chat_model_from_spec
    monkeypatch.setattr(pipeline, "chat_model_from_spec", lambda spec, **kw: (
        FunctionChatModel(qa, model="qa") if spec == "qa" else FunctionChatModel(judge, model="judge")
        if spec == "judge" else real(spec, **kw)))
    out = tmp_path / "run"
    argv = ["--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"), "--dataset-path", str(locomo_file),
            "--optimization-dir", str(out), "--sample-size", "1", "--disable-memtrace", "--targets",
            "question_answering_prompt", "--optimizer-model", "fake:" + json.dumps(WORSE), "--qa-model", "qa",
            "--judge-model", "judge", "--max-sessions", "1", "--max-questions", "2", "--validation-gate",
            "--validation-trajectories", "2", "--eval-trajectories", "none", "--no-progress"]
    assert run_optimization.main(argv) == 0
    summary = json.loads((out / "iteration_1" / "iteration_summary.json").read_text())
    assert summary["num_failed_queries"] == 2  # the training conversation is always answered wrong
    assert summary["targets"][0]["status"] == "updated"  # the optimizer proposed a valid template ...
    gate = summary["validation_gate"]
    assert gate["current"] == 1.0 and gate["candidate"] == 0.0 and gate["accepted"] is False  # ... the gate refused it
    assert summary["updated_fields"] == []
    bundle = json.loads((out / "iteration_1" / "memory_system_config.json").read_text())
    assert bundle["question_answering_prompt"] is None  # the refused template never reached the config
    assert (out / "iteration_1" / "validation" / "candidate").is_dir()
