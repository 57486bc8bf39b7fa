"""Replay against a real llama.cpp server over HTTP (Gemma-3-270M answers; the token judge grades).

The tiny base model answers poorly: the test checks plumbing — the run's calls are cached and an
unrepaired replay repeats them offline; a repaired case completes, with its outcome recorded —
never answer quality. Skips when llama-cpp-python or the GGUF package is missing
(``bash scripts/install_llama_cpp.sh``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from membase.cli import main as membase_main
from membase.clients.guard import allow_model_requests
from tests._llama_server import MODEL_ALIAS
from tests._llama_server import llama_server as start_llama_server
from tests.replay._helpers import make_run
from tests.replay.conftest import RAG_CONFIG
from toolkits.attribution import cli as attribution_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def llama_run(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("llama")
    with start_llama_server(folder, n_ctx=2048, chat_format="gemma") as base_url:
        api_config = folder / "api_config.json"
        api_config.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": [base_url]}))
        with allow_model_requests():
            run = make_run(locomo_path, folder / "run", RAG_CONFIG, max_messages=12, top_k=1, qa_model=MODEL_ALIAS,
                           extra=("--api-config", str(api_config), "--timeout", "120"))
        yield run  # the server stays up: a repaired case asks the model again


def test_unrepaired_replay_repeats_the_llama_run_offline(llama_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = membase_main(["replay", str(llama_run), "--check", "--offline", "--quiet"])
    report = json.loads(capsys.readouterr().out)["replay_check"]
    assert code == 0, report
    assert report["reproduced"] is True and report["new_calls"] == 0 and report["questions"] > 0


def test_repaired_cases_complete_against_the_server(llama_run: Path, tmp_path: Path) -> None:
    graph = llama_run / "traced_data" / "locomo-1" / "graph_evaluation.json"
    data = json.loads(graph.read_text())["data"]
    retrieve = {op["op_id"] for op in data["operations"] if op.get("op_name") == "memory_system.retrieve"}
    blamed = [(e["source_full_node_id"], e["op_id"]) for e in data["edges"]
              if e["op_id"] in retrieve and e["source_full_node_id"].startswith("query:")]
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"results": [{
        "query_id": query, "graph_path": str(graph),
        "error_attribution_result": {"error_type": "RetrievalError", "op_id": op_id},
        "attributed_operation": {"op_name": "memory_system.retrieve"}} for query, op_id in blamed]}))
    out = tmp_path / "out.json"
    with allow_model_requests():
        code = attribution_cli.main([str(llama_run), "--exploration-strategy", "evidence_flow", "--output-path",
                                           str(out), "--no-progress", "--verify", "replay", "--from", str(source)])
    assert code == 0
    replays = [r["replay"] for r in json.loads(out.read_text())["results"]]
    assert len(replays) == len(blamed) > 0
    for replay in replays:
        assert replay["status"] == "replayed", replay
        assert replay["stage"] == "retrieval" and isinstance(replay["rescued"], bool)
        assert isinstance(replay.get("prediction"), str) and replay["judge_label"] in ("CORRECT", "WRONG")
        if replay["applied"]:  # the context changed: the server answered the question anew
            assert replay["new_calls"] >= 1 and replay["tokens"] > 0
        else:  # nothing to repair: every call came from the run's cache
            assert replay["new_calls"] == 0
    assert any(r["applied"] for r in replays), "no retrieval repair acted: the server was never asked again"
