"""A RetrievalError in the Mem0 prompt loop becomes a ``top_k`` task, searched in the same round.

The real mem0ai 1.0.5 layer (deterministic in-library LLM) runs one training conversation with
``--targets all``; ``evidence_flow`` attributes the misses. The scripted QA model answers right only
when it is shown at least 20 memories, so only a larger ``top_k`` can fix the round's failures.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")
pytest.importorskip("optuna", reason="the parameter search needs optuna (pip install 'memtrace-llm[optim]')")

from membase.clients.fake import FunctionChatModel as FunctionLLM  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
OPTIMIZER = {"rationale": "r", "feedback": "f", "aggregated_feedback": "f",
             "improved_value": "Extract facts as json {\"facts\": [...]}; decide ADD, UPDATE, DELETE or NONE per fact. "
                               "Answer $question from $context."}


@pytest.fixture(scope="module")
def round_one(tmp_path_factory, locomo_file):
    from toolkits.optimization import pipeline
    from toolkits.optimization.sampling import load_full_dataset

    full = load_full_dataset(locomo_file, max_sessions=2, max_questions=4)
    answers = {q.question: q.golden_answers[0] for qs in full.qa_pair_lists for q in qs}

    def qa(messages, **_kw):
        prompt = messages[-1]["content"]
        question = re.search(r"Question: (?:\w+: )?(.*)", prompt)
        text = question.group(1).strip() if question else ""
        return answers.get(text, "no idea") if prompt.count("Memory:") >= 20 else "no idea"

    def judge(messages, **_kw):
        prompt = messages[-1]["content"]
        reference = re.search(r"Reference answer: (.*)", prompt).group(1).strip()
        answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()
        return '{"label": "CORRECT"}' if answer and answer in reference else '{"label": "WRONG"}'

    real = pipeline.chat_model_from_spec
    patch = pytest.MonkeyPatch()
    patch.setattr(pipeline, "chat_model_from_spec", lambda spec, **kw: (
        FunctionLLM(qa, model="qa") if spec == "qa" else FunctionLLM(judge, model="judge")
        if spec == "judge" else real(spec, **kw)))
    out = tmp_path_factory.mktemp("params") / "run"
    argv = ["--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"), "--dataset-path",
            str(locomo_file), "--optimization-dir", str(out), "--sample-size", "1", "--attribution-strategy",
            "evidence_flow", "--targets", "all", "--optimizer-model", "fake:" + json.dumps(OPTIMIZER),
            "--qa-model", "qa", "--judge-model", "judge", "--max-sessions", "2", "--max-questions", "4",
            "--parameter-trials", "3", "--eval-trajectories", "none", "--no-progress"]
    try:
        assert optimization_command.main(argv) == 0
    finally:
        patch.undo()
    return out / "iteration_1"


def _json(path: Path):
    return json.loads(path.read_text())


def test_retrieval_errors_become_a_top_k_task(round_one):
    attributions = _json(round_one / "error_attribution.json")
    grouped = _json(round_one / "grouped_attributions.json")
    retrieval = [a for a in attributions if a["error_type"] == "RetrievalError"]
    assert retrieval, "evidence_flow found no retrieval miss; the scenario no longer tests anything"
    on_top_k = grouped["targets"]["top_k"]["attributions"]
    assert {a["query_full_node_id"] for a in retrieval} <= {a["query_full_node_id"] for a in on_top_k}
    assert not grouped["unoptimizable"]
    summary = _json(round_one / "iteration_summary.json")
    assert summary["optimizable_errors_by_target"]["top_k"] == len(on_top_k)


def test_the_top_k_search_runs_in_the_same_round_and_its_winner_is_kept(round_one):
    trials = _json(round_one / "parameter_trials.json")
    assert trials["parameters"] == ["top_k"] and trials["incumbent"] == {"params": {"top_k": 10}, "value": 0.0}
    assert len(trials["trials"]) == 3
    assert trials["best"]["value"] == 1.0 and trials["best"]["params"]["top_k"] >= 20
    summary = _json(round_one / "iteration_summary.json")
    assert "top_k" in summary["updated_fields"]
    assert _json(round_one / "memory_system_config.json")["top_k"] == trials["best"]["params"]["top_k"]
