"""--estimate-cost: the counts of a dry run equal the calls a scripted run of the same command makes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

from toolkits.optimization import command as optimization_command  # noqa: E402
from toolkits.optimization.cost_estimate import CallMeter, count_text_tokens, offline_layer_config  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


def _argv(locomo_file, out: Path) -> list[str]:
    return ["--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"), "--dataset-path",
            str(locomo_file), "--optimization-dir", str(out), "--sample-size", "1", "--attribution-strategy",
            "evidence_flow", "--optimizer-model", "gpt-planned", "--qa-model", "gpt-qa", "--judge-model", "gpt-judge",
            "--max-sessions", "1", "--max-questions", "3", "--eval-trajectories", "2", "--no-progress"]


def test_the_estimate_matches_a_scripted_run(tmp_path, locomo_file, monkeypatch, capsys):
    estimate_dir = tmp_path / "planned"
    assert optimization_command.main([*_argv(locomo_file, estimate_dir), "--estimate-cost"]) == 0
    estimate = json.loads((estimate_dir / "cost_estimate.json").read_text())
    assert "estimate qa:" in capsys.readouterr().out
    assert not (estimate_dir / "iteration_1").exists()  # the planned run itself did not start

    # the same command, run with scripted models that record what they are sent
    from toolkits.optimization import pipeline

    observed = CallMeter()
    monkeypatch.setattr(pipeline, "chat_model_from_spec",
                        lambda spec, **_kw: observed.chat_model("qa" if spec == "gpt-qa" else "judge"))
    run_dir = tmp_path / "scripted"
    assert optimization_command.main(_argv(locomo_file, run_dir), optimizer_model_factory=observed.optimizer_factory) == 0

    answered = sum(len(json.loads(p.read_text())) for p in run_dir.rglob("*_evaluation.json")
                   if re.fullmatch(r"\d+_\d+_\d+_evaluation\.json", p.name))  # <top_k>_<start>_<end>
    assert answered > 0 and estimate["qa"]["calls"] == estimate["judge"]["calls"] == answered
    for role in ("qa", "judge", "optimizer"):
        prompts = observed.prompts[role]
        assert estimate[role]["calls"] == len(prompts), role
        # the optimizer is shown graph XML whose unit ids and timestamps differ from run to run
        assert estimate[role]["input_tokens"] == pytest.approx(sum(count_text_tokens(p) for p in prompts), rel=0.02), role
    assert estimate["optimizer"]["calls"] > 0
    assert estimate["qa"]["output_tokens_upper_bound"] == 256 * estimate["qa"]["calls"]
    scripted_layer = [json.loads(p.read_text())["llm"]["requests"]
                      for p in run_dir.rglob("memory_construction_token_cost_*.json")]
    assert estimate["layer"]["requests"] == sum(scripted_layer) > 0
    assert estimate["tokenizer"].startswith("tiktoken:")


def test_a_real_layer_config_is_swapped_for_its_offline_twin():
    real = json.loads((REPO / "examples" / "configs" / "mem0_openai.json").read_text())
    offline = offline_layer_config({**real, "top_k": 7})
    assert offline == {"layer_type": "Mem0", "top_k": 7, "llm_provider": "fake", "embedder_provider": "fake",
                       "embedding_model_dims": 64}
    with pytest.raises(ValueError, match="not supported"):
        offline_layer_config({"layer_type": "EverMemOS"})
