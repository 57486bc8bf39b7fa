"""One optimization round against a real llama.cpp server over HTTP (Gemma-3-270M base model, CPU).

QA, judge and optimizer models are the local server; the memory layer is the real mem0ai 1.0.5
with its deterministic fake LLM (a 270M model would need minutes per message). The base model
answers poorly: the test only checks that the round completes, that failures are recorded, and
that nothing crashes or hangs. Skipped when llama-cpp-python or the GGUF package is missing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

from membase.clients.guard import allow_model_requests  # noqa: E402
from tests._llama_server import MODEL_ALIAS  # noqa: E402
from tests._llama_server import llama_server as start_llama_server  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

# slow: a whole optimization round against a real llama.cpp server (minutes)
pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    with start_llama_server(tmp_path_factory.mktemp("gguf"), n_ctx=8192, start_timeout=120) as base_url:
        yield base_url


@pytest.mark.timeout(900)  # about a minute on an idle 2-core machine; a loaded one is far slower
def test_one_round_against_llama_cpp_completes_and_records_failures(llama_server, tmp_path, locomo_file):
    api = tmp_path / "api_config.json"
    api.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": [llama_server]}))
    out = tmp_path / "run"
    argv = [
        "--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"),
        "--dataset-path", str(locomo_file), "--optimization-dir", str(out), "--sample-size", "1",
        "--api-config-path", str(api), "--qa-model", MODEL_ALIAS, "--judge-model", MODEL_ALIAS,
        "--optimizer-model", MODEL_ALIAS, "--disable-memtrace", "--targets", "question_answering_prompt",
        "--max-sessions", "1", "--max-questions", "1", "--eval-trajectories", "none",
        "--llama-cpp-compat", "--max-tokens", "64", "--no-stream", "--temperature", "0",
        "--optimizer-max-iters", "1", "--optimizer-max-retries", "0", "--retry-backoff", "0",
        "--contract-retries", "0", "--call-timeout", "300", "--model-timeout", "300", "--model-max-retries", "0",
        "--qa-max-tokens", "24", "--judge-max-tokens", "24", "--top-k", "3",
        "--no-progress",
    ]
    with allow_model_requests():
        assert optimization_command.main(argv) == 0
    folder = out / "iteration_1"
    assert (folder / "memory_system_config.json").is_file()
    summary = json.loads((folder / "iteration_summary.json").read_text())
    failed = json.loads((folder / "failed_cases.json").read_text())
    assert summary["num_queries"] == 1 and summary["num_failed_queries"] == len(failed)
    assert summary["metrics"]["n"] == 1
    # a QA/judge request that timed out is a failed question too (metrics "failed"), never a crash
    for outcome in summary["targets"]:
        assert outcome["status"] in {"updated", "unchanged", "failed", "rejected"}
        if outcome["status"] == "failed":
            assert outcome["failures"], "a failed target must say why"
        if outcome["status"] == "rejected":
            assert outcome["rejected_proposals"]
    recorded = len(failed) + summary["metrics"]["failed"] + len(summary["optimization_failures"])
    assert recorded >= 1, "the 270M base model should fail somewhere, and it must be recorded"
    bundle = json.loads((folder / "memory_system_config.json").read_text())
    template = bundle["question_answering_prompt"]
    if "question_answering_prompt" in summary["updated_fields"]:
        assert "$question" in template and "$context" in template
    else:
        assert template is None  # not updated: the default stays in force
