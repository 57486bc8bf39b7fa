"""--validation-gate judges each target's update on its own, on at least two validation conversations.

The real mem0ai 1.0.5 layer (deterministic in-library LLM) runs one training conversation; every
failure goes to every target (``--disable-memtrace``). The scripted optimizer rewrites the QA
template into one the scripted QA model answers right with, and the fact-extraction prompt into a
valid one that changes nothing the judge sees: the first update is kept, the second (a tie) is not.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.optimization._scripted import evidence_template_qa

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall  # noqa: E402
from membase.clients.fake import FunctionChatModel as FunctionLLM  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402
from toolkits.optimization.bundle import MemoryConfigBundle  # noqa: E402
from toolkits.optimization.loop import ValidationGate  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
BETTER_QA = "Evidence:\n$context\nQuestion: $question\nAnswer in a few words:"
NEUTRAL_FACTS = 'Extract every personal fact with its date; reply in json as {"facts": [...]}.'


def _text(messages) -> str:
    content = messages[1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _optimizer(_call_index):
    def fn(messages, tools, _choice):
        text = _text(messages)
        if STRUCTURED_OUTPUT_TOOL not in tools:
            return "thinking"
        block = text.split("## Failure")[0].split("## Feedback")[0]
        if text.startswith("Rewrite"):
            value = BETTER_QA if "question-answering-prompt" in block else NEUTRAL_FACTS
            return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "r", "improved_value": value})
        return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "r", "feedback": "f", "aggregated_feedback": "f"})

    return FunctionChatModel(fn)


@pytest.fixture()
def scripted_qa(locomo_file, monkeypatch):
    from toolkits.optimization import pipeline

    qa = evidence_template_qa(locomo_file)

    def judge(messages, **_kw):
        prompt = messages[-1]["content"]
        reference = re.search(r"Reference answer: (.*)", prompt).group(1).strip()
        answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()
        return '{"label": "CORRECT"}' if answer and answer in reference else '{"label": "WRONG"}'

    real = pipeline.chat_model_from_spec
    monkeypatch.setattr(pipeline, "chat_model_from_spec", lambda spec, **kw: (
        FunctionLLM(qa, model="qa") if spec == "qa" else FunctionLLM(judge, model="judge")
        if spec == "judge" else real(spec, **kw)))


def _argv(locomo_file, out: Path, validation: str) -> list[str]:
    return ["--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"), "--dataset-path",
            str(locomo_file), "--optimization-dir", str(out), "--sample-size", "1", "--seed", "1", "--disable-memtrace",
            "--targets", "question_answering_prompt,custom_fact_extraction_prompt", "--optimizer-model", "unused",
            "--qa-model", "qa", "--judge-model", "judge", "--max-sessions", "1", "--max-questions", "2",
            "--validation-gate", "--validation-trajectories", validation, "--min-improvement", "0.25",
            "--eval-trajectories", "none", "--no-progress"]


@pytest.mark.slow
def test_one_update_is_kept_and_the_other_rejected_in_the_same_round(tmp_path, locomo_file, scripted_qa):
    out = tmp_path / "run"
    assert optimization_command.main(_argv(locomo_file, out, "2,3"), optimizer_model_factory=_optimizer) == 0
    summary = json.loads((out / "iteration_1" / "iteration_summary.json").read_text())
    assert {t["field"]: t["status"] for t in summary["targets"]} == {
        "question_answering_prompt": "updated", "custom_fact_extraction_prompt": "updated"}  # both proposed ...
    gate = summary["validation_gate"]
    assert gate["conversations"] == ["locomo-3", "locomo-4"] and gate["min_improvement"] == 0.25
    assert gate["current"] == 0.0
    assert gate["per_target"]["question_answering_prompt"] == {"candidate": 1.0, "gain": 1.0, "accepted": True}
    assert gate["per_target"]["custom_fact_extraction_prompt"] == {"candidate": 0.0, "gain": 0.0, "accepted": False}
    assert gate["accepted_fields"] == ["question_answering_prompt"]  # ... one kept, the tie rejected
    assert summary["updated_fields"] == ["question_answering_prompt"]
    bundle = json.loads((out / "iteration_1" / "memory_system_config.json").read_text())
    assert bundle["question_answering_prompt"] == BETTER_QA
    assert bundle["base_config"].get("custom_fact_extraction_prompt") is None
    assert (out / "iteration_1" / "validation" / "candidate-custom_fact_extraction_prompt").is_dir()


def test_one_validation_conversation_is_refused(tmp_path, locomo_file, scripted_qa, capsys):
    out = tmp_path / "run"
    assert optimization_command.main(_argv(locomo_file, out, "2"), optimizer_model_factory=_optimizer) == 2
    assert "at least two validation conversations" in capsys.readouterr().err
    assert not (out / "iteration_1").exists()


class _StubGate(ValidationGate):
    """Scores read off the bundle's QA template (no memory system run)."""

    def score(self, bundle, folder):
        return {None: 0.5, "up": 0.7, "down": 0.3, "flat": 0.5}[bundle.question_answering_prompt]


def test_an_update_that_lowers_its_score_is_rejected_while_another_is_kept(tmp_path):
    gate = _StubGate(dataset=type("D", (), {"trajectories": []})(), settings=None, min_improvement=0.1)
    current = MemoryConfigBundle.from_layer_config({"layer_type": "NaiveRAG"})
    # one field per decision: the stub reads the QA template, so decide on it alone with each value
    for value, expected in (("up", True), ("down", False), ("flat", False)):
        kept, record = gate.decide(current, {"question_answering_prompt": value}, tmp_path)
        assert record["per_target"]["question_answering_prompt"]["accepted"] is expected, value
        assert (kept == {"question_answering_prompt": value}) is expected

