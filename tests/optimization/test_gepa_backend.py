"""--optimizer gepa end to end: real mem0ai 1.0.5 (deterministic LLM), scripted QA, judge and reflection models.

The scripted QA model answers right only under a template that starts with "Evidence:"; the scripted
reflection model proposes such a template for the QA prompt. GEPA must accept it on its minibatch,
keep it as the best candidate, and the held-out evaluation must show the gain.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.optimization._scripted import evidence_template_qa

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")
pytest.importorskip("gepa", reason="the GEPA backend needs gepa (pip install 'memtrace-llm[optim]')")

from membase.clients.fake import FunctionChatModel as FunctionLLM  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BETTER_QA = "Evidence:\n$context\nQuestion: $question\nAnswer in a few words:"
DECISION = "For each new fact choose ADD, UPDATE, DELETE or NONE; keep dates and names exact."


@pytest.fixture(scope="module")
def gepa_run(tmp_path_factory, locomo_file):
    from toolkits.optimization import gepa_backend, pipeline

    qa = evidence_template_qa(locomo_file)

    def judge(messages, **_kw):
        prompt = messages[-1]["content"]
        reference = re.search(r"Reference answer: (.*)", prompt).group(1).strip()
        answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()
        return '{"label": "CORRECT"}' if answer and answer in reference else '{"label": "WRONG"}'

    reflections: list[str] = []

    def reflect(prompt):
        text = prompt if isinstance(prompt, str) else json.dumps(prompt)
        reflections.append(text)
        return f"```\n{DECISION if 'NONE' in text else BETTER_QA}\n```"

    real = pipeline.chat_model_from_spec
    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "chat_model_from_spec", lambda spec, **kw: (
        FunctionLLM(qa, model="qa") if spec == "qa" else FunctionLLM(judge, model="judge")
        if spec == "judge" else real(spec, **kw)))
    patch.setattr(gepa_backend, "reflection_model", lambda spec, **kw: reflect)
    out = tmp_path_factory.mktemp("gepa") / "run"
    argv = ["--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"), "--dataset-path",
            str(locomo_file), "--optimization-dir", str(out), "--sample-size", "2", "--seed", "3",
            "--attribution-strategy", "evidence_flow", "--targets", "question_answering_prompt,custom_update_memory_prompt",
            "--optimizer", "gepa", "--gepa-max-metric-calls", "10", "--optimizer-model", "reflector",
            "--qa-model", "qa", "--judge-model", "judge", "--max-sessions", "1", "--max-questions", "2",
            "--eval-trajectories", "5", "--no-progress"]
    try:
        assert optimization_command.main(argv) == 0
    finally:
        patch.undo()
    return out, reflections


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_gepa_accepts_the_better_qa_template_and_the_held_out_score_rises(gepa_run):
    out, reflections = gepa_run
    summary = json.loads((out / "gepa_summary.json").read_text())
    assert set(summary["components"]) == {"question_answering_prompt", "custom_update_memory_prompt"}
    assert summary["best_candidate"]["question_answering_prompt"] == BETTER_QA
    assert summary["best_idx"] > 0 and summary["val_aggregate_scores"][summary["best_idx"]] == 1.0
    assert summary["val_aggregate_scores"][0] == 0.0
    assert summary["total_metric_calls"] <= 10
    assert summary["best_bundle"]["question_answering_prompt"] == BETTER_QA
    assert summary["best_bundle"]["base_config"].get("custom_update_memory_prompt") is None  # untouched stays unset
    report = json.loads((out / "final_evaluation.json").read_text())
    assert report["metrics"]["llm_judge"]["before"] == 0.0 and report["metrics"]["llm_judge"]["after"] == 1.0


def test_the_reflection_saw_memtrace_attributions_and_the_selector_followed_them(gepa_run):
    out, reflections = gepa_run
    assert reflections and any("MemTrace blames" in r for r in reflections)
    assert all("'" + "When" not in r for r in reflections)  # questions without repr quotes
    selections = _lines(out / "gepa" / "selections.jsonl")
    first = selections[0]
    assert first["why"] == "most attributed failures"
    assert first["chosen"] == max(first["failures_by_component"], key=first["failures_by_component"].get)
    assert "Accepted candidate" in (out / "gepa" / "gepa.log").read_text()  # GEPA's minibatch acceptance
    evaluations = _lines(out / "gepa" / "evaluations.jsonl")
    assert any(e["traced"] and e["failures_by_component"] for e in evaluations)
