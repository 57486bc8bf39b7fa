"""A context cut at answering time in the Mem0 prompt loop becomes an ``answer_context_budget`` task.

The real mem0ai 1.0.5 layer (deterministic in-library LLM) runs one training conversation whose
bundle cuts the answering context to 64 tokens. The scripted QA model answers right only when it
is shown more than 300 tokens of context (the uncut contexts hold 305 to 360), so the round's failures are caused by the cut; the
attribution at the answering op that cut its context goes to the budget, and the Optuna search of
the same round raises it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")
pytest.importorskip("optuna", reason="the parameter search needs optuna (pip install 'memtrace-llm[optim]')")

from membase.clients.fake import FunctionChatModel  # noqa: E402
from membase.utils.tokens import count_tokens  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
START_BUDGET = 64
ENOUGH_CONTEXT = 300
OPTIMIZER = {"rationale": "r", "feedback": "f", "aggregated_feedback": "f",
             "improved_value": "Use the memories in $context to answer $question in a few words."}


def _context_of(prompt: str) -> str:
    start = prompt.find("### Memory")
    return prompt[start:] if start >= 0 else ""


@pytest.fixture(scope="module")
def round_one(tmp_path_factory, locomo_file):
    from toolkits.optimization import pipeline
    from toolkits.optimization.sampling import load_full_dataset

    full = load_full_dataset(locomo_file, max_sessions=2, max_questions=4)
    answers = {q.question: q.golden_answers[0] for qs in full.qa_pair_lists for q in qs}
    seen: list[int] = []

    def qa(messages, **_kw):
        prompt = messages[-1]["content"]
        question = re.search(r"Question: (?:\w+: )?(.*)", prompt)
        text = question.group(1).strip() if question else ""
        shown = count_tokens(_context_of(prompt))
        seen.append(shown)
        return answers.get(text, "no idea") if shown > ENOUGH_CONTEXT else "no idea"

    def judge(messages, **_kw):
        prompt = messages[-1]["content"]
        reference = re.search(r"Reference answer: (.*)", prompt).group(1).strip()
        answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()
        return '{"label": "CORRECT"}' if answer and answer in reference else '{"label": "WRONG"}'

    folder = tmp_path_factory.mktemp("budget")
    layer = json.loads((REPO / "examples" / "configs" / "mem0_offline.json").read_text())
    config = folder / "bundle.json"
    config.write_text(json.dumps({"backend": layer.pop("layer_type"), "base_config": layer,
                                  "answer_context_budget": START_BUDGET}))
    real = pipeline.chat_model_from_spec
    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "chat_model_from_spec", lambda spec, **kw: (
        FunctionChatModel(qa, model="qa") if spec == "qa" else FunctionChatModel(judge, model="judge")
        if spec == "judge" else real(spec, **kw)))
    out = folder / "run"
    argv = ["--config-path", str(config), "--dataset-path", str(locomo_file), "--optimization-dir", str(out),
            "--sample-size", "1", "--attribution-strategy", "evidence_flow",
            "--targets", "question_answering_prompt,answer_context_budget",
            "--optimizer-model", "fake:" + json.dumps(OPTIMIZER), "--qa-model", "qa", "--judge-model", "judge",
            "--max-sessions", "2", "--max-questions", "4", "--parameter-trials", "4", "--eval-trajectories", "none",
            "--no-progress"]
    try:
        assert optimization_command.main(argv) == 0
    finally:
        patch.undo()
    return out / "iteration_1", seen


def _json(path: Path):
    return json.loads(path.read_text())


def test_the_cut_is_traced_with_the_budget_as_its_input(round_one):
    from smartcomment.runtime.network import ExecNetwork

    folder, seen = round_one
    assert seen and max(seen[:4]) <= START_BUDGET  # the traced round's answers saw the cut context
    summary = _json(folder / "iteration_summary.json")
    graph = ExecNetwork.from_file(summary["graph_path"])
    budget = graph.get_latest_variable("parameter:answer_context_budget")
    assert budget.raw_value == str(START_BUDGET) and budget.metadata["scope"] == "answer"
    contexts = [n for n in graph.search_variables(class_name="context") if (n.metadata or {}).get("cut")]
    assert contexts and all(n.metadata["tokens_after_cut"] <= START_BUDGET < n.metadata["tokens_before_cut"]
                            for n in contexts)


def test_a_cut_context_becomes_a_budget_task_and_the_search_raises_the_budget(round_one):
    folder, _ = round_one
    grouped = _json(folder / "grouped_attributions.json")
    cuts = grouped.get("context_cuts")
    assert cuts, f"no attribution at an answering op that cut its context: {grouped['assignments']}"
    assert {c["field"] for c in cuts} == {"answer_context_budget"}
    assert len(grouped["targets"]["answer_context_budget"]["attributions"]) == len(cuts)
    summary = _json(folder / "iteration_summary.json")
    assert summary["optimizable_errors_by_target"]["answer_context_budget"] == len(cuts)
    trials = _json(folder / "parameter_trials.json")
    assert trials["parameters"] == ["answer_context_budget"]
    assert trials["incumbent"] == {"params": {"answer_context_budget": START_BUDGET}, "value": 0.0}
    assert trials["best"]["value"] > 0.0 and trials["best"]["params"]["answer_context_budget"] > ENOUGH_CONTEXT
    assert "answer_context_budget" in summary["updated_fields"]
    kept = _json(folder / "memory_system_config.json")["answer_context_budget"]
    assert kept == trials["best"]["params"]["answer_context_budget"] > START_BUDGET
