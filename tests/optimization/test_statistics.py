"""Conversation-level bootstrap, acceptance by a stated margin, mean ± sd over seeds."""

from __future__ import annotations

import pytest

from toolkits.optimization.final_eval import compare_runs
from toolkits.optimization.statistics import (
    conversation_bootstrap_interval,
    improves,
    mean_sd,
    summarize_seeds,
)


def _output(qa_id: str, user: str, value: float) -> dict:
    return {"qa_pair": {"id": qa_id, "question": f"q {qa_id}", "golden_answers": ["x"], "metadata": {}},
            "user_id": user, "prediction": "p", "metrics": {"m": {"value": value}}}


def test_one_conversation_gives_no_spread_while_the_question_bootstrap_claims_one():
    # ten questions of one conversation: half improved
    before = [_output(str(i), "conv-a", 0.0) for i in range(10)]
    after = [_output(str(i), "conv-a", 1.0 if i < 5 else 0.0) for i in range(10)]
    m = compare_runs(before, after, ["m"], bootstrap_samples=200, seed=1)["metrics"]["m"]
    assert m["difference"] == pytest.approx(0.5)
    assert m["relative_difference"] is None  # from 0 there is no relative gain
    assert m["ci95_difference"] == pytest.approx([0.5, 0.5])  # resampling the one conversation: no spread
    low, high = m["ci95_difference_by_question"]
    assert low < 0.5 < high  # resampling questions pretends ten independent draws


def test_the_interval_resamples_whole_conversations():
    # conversation a gains everywhere, b loses everywhere: a resample holds whole conversations, so the
    # mean can only be one of a few values, never one a question-level resample would mix
    groups = {"a": [1.0, 1.0, 1.0], "b": [-1.0, -1.0, -1.0]}
    low, high = conversation_bootstrap_interval(groups, samples=500, seed=3)
    assert low == pytest.approx(-1.0) and high == pytest.approx(1.0)
    assert conversation_bootstrap_interval(groups, samples=0) is None
    assert conversation_bootstrap_interval({}, samples=10) is None


def test_improves_rejects_ties_and_gains_below_the_stated_minimum():
    assert not improves(0.5, 0.5)
    assert not improves(0.5, 0.5, min_improvement=0.0)
    assert not improves(0.5, 0.51, min_improvement=0.02)
    assert improves(0.5, 0.52, min_improvement=0.02)
    assert improves(0.5, 0.6)
    assert not improves(0.6, 0.5)


def test_mean_sd_over_seeds():
    stats = mean_sd([0.1, 0.3, 0.2])
    assert stats["mean"] == pytest.approx(0.2) and stats["sd"] == pytest.approx(0.1) and stats["n"] == 3
    assert mean_sd([0.4])["sd"] == 0.0
    summary = summarize_seeds({0: {"metrics": {"m": {"before": 0.1, "after": 0.3, "difference": 0.2}}},
                               1: {"metrics": {"m": {"before": 0.1, "after": 0.5, "difference": 0.4}}}})
    assert summary["seeds"] == [0, 1]
    assert summary["metrics"]["m"]["difference"]["mean"] == pytest.approx(0.3)
    assert summary["metrics"]["m"]["after"]["sd"] == pytest.approx(0.1414, abs=1e-4)


def test_seeds_run_once_each_into_their_folder_and_are_summarized(tmp_path, capsys):
    import argparse
    import json

    from toolkits.optimization.seeds import run_over_seeds

    seen = []

    def run_one(args):
        seen.append((args.seed, args.seeds, args.optimization_dir))
        folder = tmp_path / f"seed_{args.seed}"
        folder.mkdir()
        gain = {0: 0.1, 1: 0.3}[args.seed]
        (folder / "final_evaluation.json").write_text(json.dumps(
            {"metrics": {"llm_judge": {"before": 0.2, "after": 0.2 + gain, "difference": gain}}}))
        return 0

    args = argparse.Namespace(seeds="0,1", seed=42, optimization_dir=str(tmp_path))
    assert run_over_seeds(args, run_one) == 0
    assert seen == [(0, None, str(tmp_path / "seed_0")), (1, None, str(tmp_path / "seed_1"))]
    summary = json.loads((tmp_path / "seeds_summary.json").read_text())
    assert summary["metrics"]["llm_judge"]["difference"]["mean"] == pytest.approx(0.2)
    assert summary["metrics"]["llm_judge"]["difference"]["sd"] == pytest.approx(0.1414, abs=1e-4)
    assert "llm_judge: 0.2000 ± 0.0000 -> 0.4000 ± 0.1414 (difference +0.2000 ± 0.1414)" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["0,x", "1,1", ","])
def test_bad_seeds_are_one_error_line(tmp_path, capsys, text):
    from toolkits.optimization import command as optimization_command

    argv = ["--config-path", "missing.json", "--dataset-path", "missing.json", "--optimization-dir", str(tmp_path / "o"),
            "--seeds", text]
    assert optimization_command.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --seeds") and err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_relative_gain_is_the_difference_over_the_starting_score():
    before = [_output(str(i), "conv-a", 1.0 if i < 4 else 0.0) for i in range(10)]
    after = [_output(str(i), "conv-a", 1.0 if i < 5 else 0.0) for i in range(10)]
    m = compare_runs(before, after, ["m"], bootstrap_samples=0)["metrics"]["m"]
    assert m["difference"] == pytest.approx(0.1) and m["relative_difference"] == pytest.approx(0.25)


@pytest.mark.parametrize("choice, expected", [
    ("qa", {"question_answering_prompt"}),
    ("memory", {"custom_fact_extraction_prompt", "custom_update_memory_prompt", "top_k"}),
    ("all", {"question_answering_prompt", "custom_fact_extraction_prompt", "custom_update_memory_prompt", "top_k",
             "answer_context_budget"}),
    (None, {"question_answering_prompt", "custom_fact_extraction_prompt", "custom_update_memory_prompt"}),
])
def test_target_sets_of_the_ablation(choice, expected):
    import argparse

    from toolkits.optimization.cli import _targets

    chosen = _targets(argparse.Namespace(targets=choice), "Mem0")
    assert {t.field for t in chosen} == expected
