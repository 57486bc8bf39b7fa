"""The OBS agent end to end on agentscope 2.x with the library's offline models (spec §4.4)."""

from __future__ import annotations

import asyncio
import json
import warnings

import pytest

from graphtrace import answer
from membase.clients import FunctionChatModel, ScriptedChatModel, ToolCall
from obstrace import CCTraceNotebook, attribute_case_obs, build_obs_agent, obs_task_text
from obstrace.agent import run_checked_attribution

REASON = (
    "The decision op turned the extracted fact 'moved from Sweden' into an ADD that says Norway; "
    "with a faithful ADD the store would hold Sweden, and no earlier op lost it."
)


def _tool_payloads(model: ScriptedChatModel) -> list[dict]:
    """Tool results the model saw, in order (each call's messages repeat earlier ones)."""
    seen: dict[str, dict] = {}
    for call in model.calls:
        for message in call.messages:
            if message.get("role") == "tool" and message["tool_call_id"] not in seen:
                content = message["content"]
                text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
                try:
                    seen[message["tool_call_id"]] = json.loads(text)
                except json.JSONDecodeError:
                    seen[message["tool_call_id"]] = {"raw": text}
    return list(seen.values())


def test_scripted_agent_finds_the_faulty_operation(bench_case):
    graph, case, annotation = bench_case
    target = annotation["final_op_id"]
    model = ScriptedChatModel([
        ToolCall(name="inspect_trace"),
        ToolCall(name="grep_log", args={"pattern": "Norway"}),
        ToolCall(name="view_operation", args={"op_id": target}),
        answer("ExtractionError", target, REASON),
    ])
    outcome = asyncio.run(attribute_case_obs(
        graph, case, model=model, evidence_nodes=case.source_evidence_full_node_ids, max_iters=10))
    assert outcome.failure is None and outcome.prediction is not None
    assert (outcome.prediction.error_type, outcome.prediction.op_id) == ("ExtractionError", target)
    assert outcome.usage["num_calls"] == 4 and outcome.usage["input_tokens"] > 0
    grep, view = _tool_payloads(model)[1:3]
    assert grep["matched_op_ids"][0] == target  # the wrong fact first appears in the faulty op
    assert view["op_id"] == target and "Norway" in view["content"]
    # The hint is the last message of every call: start hint first, then the active one.
    assert "call inspect_trace" in model.calls[0].last_text
    assert all("do not repeat searches" in c.last_text for c in model.calls[1:])
    assert all("### Source Evidence 1" in c.last_text for c in model.calls)
    task = model.calls[0].messages[1]["content"][0]["text"]
    assert task == obs_task_text(case) and "Golden answer:\nSweden\n" in task


def test_function_model_agent_locates_the_op_from_tool_results(bench_case):
    graph, case, annotation = bench_case

    def policy(messages, tools, tool_choice):
        results = [m for m in messages if m.get("role") == "tool"]
        if not results:
            return ToolCall(name="grep_log", args={"pattern": case.prediction, "case_sensitive": True})
        text = results[-1]["content"]
        text = text if isinstance(text, str) else "".join(p.get("text", "") for p in text)
        first_op = json.loads(text)["matched_op_ids"][0]
        return answer("UpdateError", first_op, REASON)

    model = FunctionChatModel(policy)
    outcome = asyncio.run(attribute_case_obs(graph, case, model=model, evidence_nodes=None, max_iters=5))
    assert outcome.prediction is not None and outcome.prediction.op_id == annotation["final_op_id"]
    assert "Source evidence" not in model.calls[0].last_text


def test_malformed_tool_arguments_come_back_as_error_payloads(bench_case):
    graph, case, annotation = bench_case
    model = ScriptedChatModel([
        ToolCall(name="view_operation", args={"op_index": 99}),
        ToolCall(name="grep_log", args={"pattern": "a", "case_senstive": True}),
        ToolCall(name="view_log_window", args={"offset": 0}),
        answer("ExtractionError", annotation["final_op_id"], REASON),
    ])
    outcome = asyncio.run(attribute_case_obs(graph, case, model=model, max_iters=10))
    assert outcome.prediction is not None
    errors = _tool_payloads(model)[:3]
    assert [e["tool"] for e in errors] == ["view_operation", "grep_log", "view_log_window"]
    assert all(set(e) == {"tool", "error", "arguments"} and e["error"].startswith("Error: ") for e in errors)
    assert "operation_count=16" in errors[0]["error"] and errors[0]["arguments"] == {"op_index": 99}
    assert "case_senstive" in errors[1]["error"]


def test_invalid_answers_are_sent_back_and_can_be_corrected(bench_case):
    graph, case, annotation = bench_case
    model = ScriptedChatModel([
        answer("ExtractionError", "op-does-not-exist", REASON),
        answer("ExtractionError", annotation["final_op_id"], "too short"),
        answer("ExtractionError", annotation["final_op_id"], REASON),
    ])
    outcome = asyncio.run(attribute_case_obs(graph, case, model=model, max_iters=10))
    assert outcome.prediction is not None and outcome.prediction.op_id == annotation["final_op_id"]
    feedback = [p["raw"] for p in _tool_payloads(model)[:2]]
    assert "not in the trace" in feedback[0] and "reason is too short" in feedback[1]


def test_a_model_that_never_answers_validly_is_a_recorded_failure(bench_case):
    graph, case, _ = bench_case
    model = ScriptedChatModel([answer("ExtractionError", "op-nope", REASON)] * 20)
    outcome = asyncio.run(attribute_case_obs(graph, case, model=model, max_iters=2))
    assert outcome.prediction is None and outcome.failure.startswith("no answer")


def test_api_errors_are_recorded_not_raised(bench_case):
    graph, case, _ = bench_case
    outcome = asyncio.run(attribute_case_obs(graph, case, model=ScriptedChatModel([RuntimeError("boom")])))
    assert outcome.prediction is None and "RuntimeError: boom" in outcome.failure


def test_hints_are_never_stored_in_the_agent_context(bench_case):
    graph, case, annotation = bench_case
    notebook = CCTraceNotebook.from_graph(graph, case.source_evidence_full_node_ids)
    model = ScriptedChatModel([ToolCall(name="inspect_trace"), answer("ResponseError", annotation["final_op_id"], REASON)])
    agent = build_obs_agent(notebook, model=model, max_iters=5)
    assert sorted(t.name for t in notebook.tools()) == ["grep_log", "inspect_trace", "view_log_window", "view_operation"]
    outcome = asyncio.run(run_checked_attribution(agent, obs_task_text(case), notebook.index.has_op))
    assert outcome.prediction is not None
    stored = json.dumps([m.model_dump(mode="json") for m in agent.state.context])
    assert "<system-hint>" not in stored and notebook.step == 1


def test_compression_settings_follow_the_graph_search_agent():
    model = ScriptedChatModel([], context_size=50_000)
    agent = build_obs_agent(CCTraceNotebook("x"), model=model, context_window=272_000, max_context_limit=1_000_000)
    assert model.context_size == 1_000_000
    assert agent.context_config.trigger_ratio == pytest.approx(0.272)
    assert agent.context_config.compression_fallback_to_truncation
    kept = build_obs_agent(CCTraceNotebook("x"), model=ScriptedChatModel([], context_size=100_000))
    assert kept.context_config.trigger_ratio == 0.9  # 272k window on a 100k model: clamped
    for bad in ({"max_iters": 0}, {"max_context_limit": 0}, {"context_window": 0}, {"keep_recent": -1}):
        with pytest.raises(ValueError):
            build_obs_agent(CCTraceNotebook("x"), model=ScriptedChatModel([]), **bad)


def test_answers_that_slip_past_the_schema_are_still_checked(bench_case):
    from agentscope.message import Msg, TextBlock

    graph, _, annotation = bench_case
    notebook = CCTraceNotebook.from_graph(graph)

    class SchemaIgnoringAgent:
        """Returns a structured answer without going through agentscope's schema validation."""

        async def reply_stream(self, *args, **kwargs):
            msg = Msg(name="memtrace", content=[TextBlock(text="done")], role="assistant")
            msg.structured_output = {"error_type": "UpdateError", "op_id": annotation["final_op_id"], "reason": "short"}
            yield msg

    outcome = asyncio.run(run_checked_attribution(SchemaIgnoringAgent(), "task", notebook.index.has_op))
    assert outcome.prediction is None and outcome.failure.startswith("invalid answer: the reason is too short")


def test_long_runs_are_compressed_and_still_answer(bench_case):
    graph, case, annotation = bench_case
    summaries: list[int] = []
    step = {"n": 0}
    fields = ("task_overview", "current_state", "important_discoveries", "next_steps", "context_to_preserve")

    def policy(messages, tools, tool_choice):
        if tool_choice == "generate_structured_output":
            summaries.append(len(messages))
            return ToolCall(name="generate_structured_output", args={f: f"summary {f}" for f in fields})
        step["n"] += 1
        if step["n"] <= 6:
            return ToolCall(name="view_log_window", args={"offset": 1 + 6_000 * (step["n"] - 1), "limit": 6_000})
        return answer("ExtractionError", annotation["final_op_id"], REASON)

    model = FunctionChatModel(policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = asyncio.run(attribute_case_obs(
            graph, case, model=model, max_iters=12, context_window=3_500, max_context_limit=10_000, keep_recent=1))
    assert summaries, "compression never ran"
    assert outcome.prediction is not None and outcome.prediction.op_id == annotation["final_op_id"]
    # Every call stayed under the hard cap (about 4 characters per token); the six windows alone
    # hold 36,000 characters, so without compression the last calls would not.
    assert max(sum(len(json.dumps(m)) for m in c.messages) for c in model.calls) < 4 * 10_000
