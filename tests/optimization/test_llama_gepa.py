"""One GEPA iteration against a real llama.cpp server over HTTP (Gemma-3-270M base model, CPU).

QA, judge and GEPA's reflection model are the local server; the memory layer is the real mem0ai
1.0.5 with its deterministic fake LLM. The base model answers poorly: the test checks that the
GEPA backend completes with a real reflection model, records its evaluations and never returns a
configuration that breaks a prompt contract. Skipped when llama-cpp-python or the GGUF package
is missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")
pytest.importorskip("gepa", reason="the GEPA backend needs gepa (pip install 'memtrace-llm[optim]')")

from membase.clients.guard import allow_model_requests  # noqa: E402
from tests._llama_server import MODEL_ALIAS  # noqa: E402
from tests._llama_server import llama_server as start_llama_server  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    with start_llama_server(tmp_path_factory.mktemp("gguf"), n_ctx=8192, start_timeout=120) as base_url:
        yield base_url


@pytest.mark.timeout(1200)
def test_one_gepa_iteration_against_llama_cpp_completes(llama_server, tmp_path, locomo_file):
    api = tmp_path / "api_config.json"
    api.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": [llama_server]}))
    out = tmp_path / "run"
    argv = [
        "--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"),
        "--dataset-path", str(locomo_file), "--optimization-dir", str(out), "--sample-size", "2",
        "--api-config-path", str(api), "--qa-model", MODEL_ALIAS, "--judge-model", MODEL_ALIAS,
        "--optimizer-model", MODEL_ALIAS, "--optimizer", "gepa", "--gepa-max-metric-calls", "6",
        "--attribution-strategy", "evidence_flow", "--targets", "question_answering_prompt",
        "--max-sessions", "1", "--max-questions", "1", "--eval-trajectories", "none",
        "--call-timeout", "300", "--model-timeout", "300", "--model-max-retries", "0",
        "--qa-max-tokens", "24", "--judge-max-tokens", "24", "--top-k", "3", "--no-progress",
        # the reflection call is otherwise bounded only by the context: one sampled run spent 13 minutes there
        "--max-tokens", "512",
    ]
    with allow_model_requests():
        assert optimization_command.main(argv) == 0
    summary = json.loads((out / "gepa_summary.json").read_text())
    assert summary["total_metric_calls"] <= 6 and summary["candidates"]
    assert not summary["best_problems"]
    assert (out / "gepa" / "evaluations.jsonl").read_text().strip()
    assert "$context" in (summary["best_bundle"]["question_answering_prompt"] or "$context")
