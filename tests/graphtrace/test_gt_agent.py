"""The graph-search agent end to end with scripted and function models (offline)."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from graphtrace import answer, run_attribution_agent
from graphtrace.agent import _NO_PSEUDO_EVIDENCE, attribute_case_graph_search, build_graph_search_agent
from graphtrace.prompts import SYSTEM_PRIOR_INSTRUCTIONS
from membase.clients import FunctionChatModel, ScriptedChatModel, ToolCall
from toolkits.bench_utils import FailedQueryCase

QUERY = "query:locomo-qa-1-2@1"
EVIDENCE = "U1:D2:2@1"
FACTS = "extracted_facts:str:89955ac90bb762e629bee4dd977d9b7a87fba4d5@1"
UNIT_2 = "memory-unit-00000000-0000-0000-0000-000000000002@1"
GOLD_OP = "op-2893695d32274e23b17111a365ca9afa"
REASON = (
    "The update decision turned the correctly extracted fact 'moved from Sweden' into the memory "
    "'moved from Norway'; with Sweden stored, retrieval and QA would have answered correctly."
)


@pytest.fixture
def case():
    return FailedQueryCase(
        query_full_node_id=QUERY,
        query="'Where did Caroline move from four years ago?'",
        golden_answer="[Sweden]",
        prediction="Norway",
        source_evidence_full_node_ids=[EVIDENCE],
    )


def tool_results(call) -> list[str]:
    out = []
    for message in call.messages:
        if message["role"] == "tool":
            content = message["content"]
            out.append(content if isinstance(content, str) else "\n".join(p["text"] for p in content))
    return out


def test_scripted_walk_from_real_evidence_to_validated_answer(bench_graph, case, clock):
    turns = [
        ToolCall(name="explore_graph_trace_node", args={"include_variable_value": False}),
        ToolCall(name="view_node_value", args={"full_node_id": FACTS}),
        ToolCall(
            name="update_to_explore_nodes",
            args={"action": "add", "full_node_id": UNIT_2, "discovered_by_op_id": GOLD_OP},
        ),
        ToolCall(name="finish_node_exploration", args={"outcome": "Sweden was extracted correctly."}),
        ToolCall(name="explore_graph_trace_node", args={}),
        ToolCall(
            name="view_node_value",
            args={"full_node_id": UNIT_2, "pattern": "Norway", "max_surrounding_chars": 5},
        ),
        ToolCall(
            name="finish_node_exploration",
            args={"outcome": "The unit says Norway: the update decision is wrong."},
        ),
        ToolCall(name="update_to_explore_nodes", args={"action": "delete", "full_node_id": QUERY}),
        ToolCall(name="finish_graph_exploration", args={"outcome": "Fault at the update decision."}),
        answer("UpdateError", GOLD_OP, REASON),
    ]
    model = ScriptedChatModel(turns)
    setup = build_graph_search_agent(
        bench_graph,
        case,
        model=model,
        starting_node_ids=[EVIDENCE],
        evidence_kind="real",
        max_iters=20,
        clock=clock,
    )
    assert setup.notebook.current_state.frontier_size == 2  # initialised before the first model call
    assert (
        "Full Node Identifier: U1:D2:2@1" in setup.task_text and "Golden answer:\n[Sweden]" in setup.task_text
    )

    outcome = asyncio.run(run_attribution_agent(setup.agent, setup.task_text, setup.validate_op_id))

    assert outcome.failure is None
    assert (outcome.prediction.error_type, outcome.prediction.op_id) == ("UpdateError", GOLD_OP)
    assert outcome.usage["num_calls"] == len(turns)
    # one fresh hint per model call, matching the state at that moment
    hints = [call.last_text for call in model.calls]
    assert "There is no variable node in exploration." in hints[0]
    assert f"Variable node `{EVIDENCE}` is being explored." in hints[1]
    assert f"Variable node `{UNIT_2}` is being explored." in hints[5]
    assert "call `initialize_execution_graph` first" in hints[-1]  # after finish_graph_exploration
    assert (
        sum(
            "<system-hint>" in m.get("content", "")
            if isinstance(m.get("content"), str)
            else any("<system-hint>" in p.get("text", "") for p in m.get("content") or [])
            for m in model.calls[-1].messages
        )
        == 1
    )
    results = tool_results(model.calls[-1])
    assert results[2] == (
        f"Variable `{UNIT_2}` was added to the to-explore frontier (3 node(s) now, including any node being explored)."
    )
    assert results[5].startswith(f"# Matches for `Norway` in variable `{UNIT_2}`")
    assert "...from Norway four..." in results[5]
    assert results[7] == f"Variable `{QUERY}` was deleted from the to-explore frontier (0 node(s) left)."
    # system prompt, task, agentscope's structured-output reminder, then our hint last
    assert [m["role"] for m in model.calls[0].messages] == ["system", "user", "user", "user"]
    assert model.calls[0].messages[1]["content"][0]["text"] == setup.task_text


def test_agent_without_starting_nodes_initialises_from_the_dummy_root(bench_graph, case):
    model = ScriptedChatModel(
        [
            ToolCall(name="initialize_execution_graph", args={}),
            ToolCall(name="explore_graph_trace_node", args={"include_variable_value": False}),
            answer("ExtractionError", "op-ad912fa103d643e0b4b16a3e9e7169cb", "r"),
        ]
    )
    setup = build_graph_search_agent(bench_graph, case, model=model, max_iters=5)
    assert setup.notebook.current_state is None
    assert "no starting nodes are given" in setup.task_text and "Source evidence:" not in setup.task_text
    outcome = asyncio.run(run_attribution_agent(setup.agent, setup.task_text, setup.validate_op_id))
    assert outcome.prediction.error_type == "ExtractionError"
    assert "# Operation `DUMMY_OP`" in tool_results(model.calls[-1])[1]
    assert "An execution graph of the memory system's run is available" in model.calls[0].last_text


def test_unknown_op_id_and_silence_are_recorded_failures(bench_graph, case):
    liar = ScriptedChatModel([answer("UpdateError", "op-made-up", "r")] * 10)
    outcome = asyncio.run(
        attribute_case_graph_search(
            bench_graph, case, model=liar, starting_node_ids=[], evidence_kind="real", max_iters=2
        )
    )
    assert outcome.prediction is None and outcome.failure.startswith("no answer")
    rejected = tool_results(liar.calls[-1])
    assert all("operation id 'op-made-up' does not exist in the execution graph" in r for r in rejected)

    silent = ScriptedChatModel([], exhausted_text="I am still thinking.")
    outcome = asyncio.run(attribute_case_graph_search(bench_graph, case, model=silent, max_iters=2))
    assert outcome.prediction is None and outcome.finished_reason == "exceed_max_iters"


def test_bad_case_is_a_recorded_failure(bench_graph, case):
    broken = case.model_copy(update={"query_full_node_id": "query:missing@1"})
    outcome = asyncio.run(attribute_case_graph_search(bench_graph, broken, model=ScriptedChatModel([])))
    assert outcome.failure == (
        "bad case: query node 'query:missing@1' is not in the execution graph; check the case's query_full_node_id"
    )


def test_task_text_variants_priors_and_unknown_evidence(bench_graph, case):
    with pytest.warns(UserWarning, match="starting node 'ghost@1'"):
        setup = build_graph_search_agent(
            bench_graph,
            case,
            model=ScriptedChatModel([]),
            starting_node_ids=["ghost@1"],
            evidence_kind="pseudo",
            memory_system="mem0",
        )
    assert _NO_PSEUDO_EVIDENCE in setup.task_text
    assert SYSTEM_PRIOR_INSTRUCTIONS["mem0"] in setup.task_text
    assert [r.full_node_id for r in setup.notebook.current_state.frontier()] == [QUERY]
    custom = build_graph_search_agent(
        bench_graph,
        case,
        model=ScriptedChatModel([]),
        custom_prior="## Prior\nLook at X.",
        memory_system="mem0",
    )
    assert "Look at X." in custom.task_text and SYSTEM_PRIOR_INSTRUCTIONS["mem0"] not in custom.task_text
    with pytest.warns(UserWarning, match="no built-in system prior for memory system 'zep'"):
        build_graph_search_agent(bench_graph, case, model=ScriptedChatModel([]), memory_system="zep")
    with pytest.raises(ValueError, match="without evidence_kind"):
        build_graph_search_agent(bench_graph, case, model=ScriptedChatModel([]), starting_node_ids=[EVIDENCE])


def test_context_compression_summarises_and_the_run_still_answers(bench_graph, case):
    summary_requests = []
    step = {"n": 0}

    def fn(messages, tools, tool_choice):
        if tool_choice == "generate_structured_output":
            summary_requests.append(len(messages))
            fields = (
                "task_overview",
                "current_state",
                "important_discoveries",
                "next_steps",
                "context_to_preserve",
            )
            return ToolCall(name="generate_structured_output", args={f: f"summary {f}" for f in fields})
        step["n"] += 1
        if step["n"] <= 4:
            return ToolCall(name="explore_graph_trace_node", args={})  # ~1,250 tokens each
        return answer("UpdateError", GOLD_OP, REASON)

    model = FunctionChatModel(fn)
    setup = build_graph_search_agent(
        bench_graph,
        case,
        model=model,
        starting_node_ids=[EVIDENCE],
        evidence_kind="real",
        context_window=3_500,
        max_context_limit=10_000,
        keep_recent=1,
        max_iters=10,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = asyncio.run(run_attribution_agent(setup.agent, setup.task_text, setup.validate_op_id))
    assert summary_requests, "compression never ran"
    assert "summary task_overview" in str(setup.agent.state.summary)
    assert outcome.prediction is not None and outcome.prediction.op_id == GOLD_OP
    # the most recent tool exchange survived the compression verbatim
    kept = [b for m in setup.agent.state.context for b in m.content if b.type == "tool_result"]
    assert kept and kept[-1].name == "GenerateStructuredOutput"
    assert any(b.name == "explore_graph_trace_node" for b in kept)
