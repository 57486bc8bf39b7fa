"""One report batch against a real llama.cpp server over HTTP (gemma3-270m, CPU).

The 270M base model cannot write a useful report; the test checks the plumbing of the default
model path (credential pool → OpenAI-compatible client with the llama.cpp workarounds → agentscope
structured output): the CLI ends with a report or with a recorded one-line failure and the
statistics on disk — never a traceback or a hang. Skipped when llama-cpp-python or the GGUF
package is not installed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests._llama_server import MODEL_ALIAS
from tests._llama_server import llama_server as start_llama_server
from toolkits.report import cli as report_cli

# slow: starts a real llama.cpp server for a report batch (minutes on 2 cores)
pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    # a prompt of about 1.7k tokens and 16 output tokens per call keep this to seconds on an idle
    # 2-core machine (about 90 s when the machine is shared by several test runs)
    with start_llama_server(tmp_path_factory.mktemp("gguf"), n_ctx=4096, start_timeout=90) as base_url:
        yield base_url


def test_one_report_batch_over_http_completes_or_records_a_failure(llama_server, outputs_dir, tmp_path: Path, capsys):
    data = json.loads((outputs_dir / "rag.json").read_text(encoding="utf-8"))
    one_case = [r for r in data["results"] if not r["attribution_failure"]][:1]
    data_path = tmp_path / "one_case.json"
    data_path.write_text(json.dumps(one_case), encoding="utf-8")
    api_config = tmp_path / "api_config.json"
    api_config.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": [llama_server]}), encoding="utf-8")
    folder = tmp_path / "report"
    started = time.monotonic()
    code = report_cli.main([
        "--data-path", str(data_path), "--save-folder", str(folder), "--model", MODEL_ALIAS,
        "--api-config-path", str(api_config), "--llama-cpp-compat", "--no-stream", "--temperature", "0",
        "--max-tokens", "16", "--max-op-xml-tokens", "64", "--batch-timeout", "200", "--max-retries", "0",
        "--target-system-overview", "A retrieval-augmented memory over chat messages.", "--no-png", "--no-progress",
    ])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    print(json.dumps({"code": code, "elapsed": round(elapsed, 1), "stderr_tail": err[-500:]}))
    assert elapsed < 260  # the batch timeout (200 s) ends the attempt; nothing hangs
    assert "Traceback" not in err
    out = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert out["statistics"]["records"] == 1 and out["llm"]["batches_total"] == 1
    if code == 0:
        assert out["complete"] is True and out["report"].strip()
        assert (folder / "report_versions" / "version_001.json").is_file()
    else:
        assert code == 1 and out["complete"] is False and out["report"] is None
        failure = out["llm"]["failure"]
        assert failure.startswith("batch 1/1 failed after 1 attempt(s): ") and "\n" not in failure
        assert err.strip().splitlines()[-1].startswith("error: batch 1/1 failed")
