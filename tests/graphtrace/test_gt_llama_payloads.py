"""Every request the agent sends in llama.cpp mode is accepted by llama-cpp-python's request schema.

Fast and offline: a scripted model with the llama.cpp formatter records the payloads, which are
then validated with the server's own pydantic request model.
"""

from __future__ import annotations

import asyncio

import pytest

from graphtrace import answer, run_attribution_agent
from graphtrace.agent import build_graph_search_agent
from membase.clients import FlatTextFormatter, ScriptedChatModel, ToolCall
from toolkits.bench_utils import FailedQueryCase


def test_llama_cpp_accepts_every_payload_of_a_scripted_run(bench_graph):
    types = pytest.importorskip("llama_cpp.server.types", reason="llama-cpp-python[server] is not installed")
    model = ScriptedChatModel(
        [
            "I will look at the graph first.",
            ToolCall(name="explore_graph_trace_node", args={"limit": 500}),
            answer("UpdateError", "op-unknown", "first try"),
            answer("UpdateError", "op-2893695d32274e23b17111a365ca9afa", "second try"),
        ]
    )
    model.formatter = FlatTextFormatter()
    case = FailedQueryCase(
        query_full_node_id="query:locomo-qa-1-2@1", query="q", golden_answer="g", prediction="p"
    )
    setup = build_graph_search_agent(
        bench_graph, case, model=model, starting_node_ids=["U1:D2:2@1"], evidence_kind="real", max_iters=5
    )
    outcome = asyncio.run(run_attribution_agent(setup.agent, setup.task_text, setup.validate_op_id))
    assert outcome.ok
    assert len(model.calls) == 4
    for call in model.calls:
        types.CreateChatCompletionRequest(model="gemma3-270m", messages=call.messages)
