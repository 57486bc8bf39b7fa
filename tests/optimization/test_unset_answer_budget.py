"""An answering context budget the config leaves unset is no target of either optimizer.

Unset, ``answer_context_budget`` means no cut: nothing is traced, so no attribution reaches it,
and a number an optimizer proposed would start cutting every context. ``--targets all`` leaves it
out for GEPA (no candidate component, not in the final bundle) and for the three-stage optimizer
(not among the run's targets); naming it in ``--targets`` is an input error. The NaiveRAG layer
with fake embeddings and scripted QA, judge and reflection models keeps the runs short.
"""

from __future__ import annotations

import json
import re

import pytest

from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall
from tests.optimization._scripted import evidence_template_qa
from toolkits.optimization import command as optimization_command
from toolkits.optimization.bundle import MemoryConfigBundle
from toolkits.optimization.parameters import parameter_registry, unset_answer_parameters

FAKE_RAG = {"layer_type": "NaiveRAG", "retriever_name_or_path": "fake:64", "retriever_dim": 64, "vector_store": "memory"}
BETTER_QA = "Evidence:\n$context\nQuestion: $question\nAnswer in a few words:"


def _judge(messages, **_kw):
    prompt = messages[-1]["content"]
    reference = re.search(r"Reference answer: (.*)", prompt).group(1).strip()
    answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()
    return '{"label": "CORRECT"}' if answer and answer in reference else '{"label": "WRONG"}'


def _argv(tmp_path, locomo_file, optimizer: str, targets: str = "all") -> list[str]:
    config = tmp_path / "naive_rag.json"
    config.write_text(json.dumps(FAKE_RAG), encoding="utf-8")
    return ["--config-path", str(config), "--dataset-path", str(locomo_file), "--optimization-dir",
            str(tmp_path / optimizer), "--sample-size", "2", "--seed", "1", "--attribution-strategy", "evidence_flow",
            "--targets", targets, "--optimizer", optimizer, *(["--gepa-max-metric-calls", "6"] if optimizer == "gepa" else []),
            "--optimizer-model", "reflector", "--qa-model", "qa", "--judge-model", "judge",
            "--max-sessions", "1", "--max-questions", "2", "--eval-trajectories", "none", "--no-progress"]


@pytest.fixture
def scripted(monkeypatch, locomo_file):
    """QA right only under a template starting "Evidence:" (the reflection's proposal), a string-match judge."""
    from toolkits.optimization import gepa_backend, pipeline

    qa = evidence_template_qa(locomo_file)

    real = pipeline.chat_model_from_spec
    monkeypatch.setattr(pipeline, "chat_model_from_spec", lambda spec, **kw: (
        FunctionChatModel(_judge, model="judge") if spec == "judge"
        else FunctionChatModel(qa, model="qa") if spec == "qa" else real(spec, **kw)))
    monkeypatch.setattr(gepa_backend, "reflection_model", lambda spec, **kw: (
        lambda prompt: "```\n" + ("1024" if "answer_context_budget" in str(prompt) else BETTER_QA) + "\n```"))


def test_gepa_with_targets_all_has_no_component_for_the_unset_budget(tmp_path, locomo_file, scripted, capsys):
    pytest.importorskip("gepa", reason="the GEPA backend needs gepa (pip install 'memtrace-llm[optim]')")
    assert optimization_command.main(_argv(tmp_path, locomo_file, "gepa")) == 0
    assert "leaves out answer_context_budget" in capsys.readouterr().err
    summary = json.loads((tmp_path / "gepa" / "gepa_summary.json").read_text())
    assert "question_answering_prompt" in summary["components"] and "top_k" in summary["components"]
    assert "answer_context_budget" not in summary["components"]
    assert "answer_context_budget" not in summary["seed_candidate"]
    assert summary["candidates"] and all("answer_context_budget" not in c for c in summary["candidates"])
    assert len(summary["candidates"]) > 1 and summary["best_candidate"]["question_answering_prompt"] == BETTER_QA
    assert summary["best_bundle"]["question_answering_prompt"] == BETTER_QA
    assert "answer_context_budget" not in summary["best_bundle"]  # unset: the bundle file leaves the key out
    saved = json.loads((tmp_path / "gepa" / "gepa" / "seed_candidate.json").read_text())
    assert "answer_context_budget" not in saved["texts"]


def _optimizer_factory(_call_index):
    def fn(messages, tools, _choice):
        if STRUCTURED_OUTPUT_TOOL not in tools:
            return "thinking"
        return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={
            "rationale": "r", "feedback": "f", "aggregated_feedback": "f", "improved_value": BETTER_QA})

    return FunctionChatModel(fn)


def test_textgrad_with_targets_all_leaves_the_unset_budget_out_too(tmp_path, locomo_file, scripted, capsys):
    argv = [*_argv(tmp_path, locomo_file, "textgrad"), "--disable-memtrace"]
    argv[argv.index("--sample-size") + 1] = "1"
    assert optimization_command.main(argv, optimizer_model_factory=_optimizer_factory) == 0
    assert "leaves out answer_context_budget" in capsys.readouterr().err
    targets = json.loads((tmp_path / "textgrad" / "run_settings.json").read_text())["targets"]
    assert "question_answering_prompt" in targets and "answer_context_budget" not in targets


@pytest.mark.parametrize("optimizer", ["textgrad", "gepa"])
def test_naming_the_unset_budget_is_an_input_error(tmp_path, locomo_file, capsys, optimizer):
    argv = _argv(tmp_path, locomo_file, optimizer, targets="question_answering_prompt,answer_context_budget")
    assert optimization_command.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --targets answer_context_budget:") and "leaves it unset" in err
    assert not (tmp_path / optimizer / "run_settings.json").exists()


def test_a_budget_the_config_sets_stays_a_target():
    targets = parameter_registry().for_layer("NaiveRAG")
    unset = MemoryConfigBundle.from_layer_config(FAKE_RAG)
    assert unset_answer_parameters(targets, unset) == ["answer_context_budget"]
    assert unset_answer_parameters(targets, unset.with_updates({"answer_context_budget": 512})) == []
