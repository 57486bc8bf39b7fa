"""The graph-search agent against a real local llama.cpp server (gemma3-270m, CPU).

The base 270M model cannot attribute anything; the test checks the plumbing: the agent loop runs
against a real OpenAI-compatible endpoint and ends with a schema-valid answer or a recorded
failure — never an exception or a hang. Skipped when llama-cpp-python or the GGUF package is
not installed.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from graphtrace import ERROR_TYPES, run_attribution_agent
from graphtrace.agent import build_graph_search_agent
from membase.clients import build_openai_chat_model
from tests._llama_server import llama_server as start_llama_server
from toolkits.bench_utils import FailedQueryCase

# slow: starts a real llama.cpp server and runs the agent loop against it (minutes on 2 cores)
pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUERY = "query:locomo-qa-1-2@1"
EVIDENCE = "U1:D2:2@1"


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    with start_llama_server(tmp_path_factory.mktemp("gguf"), n_ctx=8192, start_timeout=60) as base_url:
        yield base_url


def test_agent_loop_ends_with_valid_answer_or_recorded_failure(llama_server, bench_graph):
    case = FailedQueryCase(
        query_full_node_id=QUERY,
        query="'Where did Caroline move from four years ago?'",
        golden_answer="[Sweden]",
        prediction="Norway",
        source_evidence_full_node_ids=[EVIDENCE],
    )
    model = build_openai_chat_model(
        "gemma3-270m",
        "sk-local",
        llama_server,
        temperature=0.0,
        max_tokens=96,
        stream=False,
        llama_cpp_compat=True,
        timeout=200,
        max_retries=0,
    )
    setup = build_graph_search_agent(
        bench_graph,
        case,
        model=model,
        starting_node_ids=[EVIDENCE],
        evidence_kind="real",
        max_iters=1,
        max_context_limit=8192,
        context_window=7000,
    )
    # The full instructions cost minutes of CPU prompt processing on a shared 2-core box; the loop,
    # the tools, the hints and the structured answer are what this test exercises.
    task = (
        "Attribute the failed answer to one operation of the execution graph.\n"
        f"Question: {case.query}\nGolden answer: {case.golden_answer}\nModel's wrong answer: {case.prediction}"
    )
    started = time.monotonic()
    outcome = asyncio.run(run_attribution_agent(setup.agent, task, setup.validate_op_id, timeout=270))
    elapsed = time.monotonic() - started
    print(json.dumps({"failure": outcome.failure, "usage": outcome.usage, "elapsed": round(elapsed, 1)}))
    assert elapsed < 300  # the agent's own timeout (270 s) ends the run; it never hangs
    if outcome.prediction is not None:
        assert outcome.prediction.error_type in ERROR_TYPES
        assert outcome.prediction.op_id in {op.op_id for op in bench_graph.get_all_operations()}
    else:
        assert outcome.failure and "\n" not in outcome.failure
    assert outcome.usage["num_calls"] >= 1 or outcome.failure.startswith(("agent error", "timeout"))
