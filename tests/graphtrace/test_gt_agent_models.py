"""The shared agent plumbing: fake models, transient hints and failure-safe attribution runs."""

from __future__ import annotations

import asyncio

import pytest
from agentscope.agent import Agent, InjectionConfig, ReActConfig
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, Toolkit

from graphtrace import (
    ERROR_TYPES,
    ErrorAttributionPrediction,
    HintMiddleware,
    answer,
    prediction_schema_for,
    run_attribution_agent,
)
from membase.clients import (
    FlatTextFormatter,
    FunctionChatModel,
    ScriptedChatModel,
    ToolCall,
    build_openai_chat_model,
)

ALLOW = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="ok")


def ping(text: str) -> str:
    """Echo a text back.

    Args:
        text (str): The text to echo.
    """
    return f"pong {text}"


def _agent(model, *, max_iters: int = 5, hint=None) -> Agent:
    return Agent(
        name="memtrace",
        system_prompt="system prompt",
        model=model,
        toolkit=Toolkit(tools=[FunctionTool(ping, permission=ALLOW)]),
        middlewares=[HintMiddleware(hint)] if hint else [],
        react_config=ReActConfig(max_iters=max_iters),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


def test_error_types_are_the_five_reference_strings():
    assert ERROR_TYPES == (
        "ExtractionError",
        "UpdateError",
        "DeletionError",
        "RetrievalError",
        "ResponseError",
    )


def test_checked_schema_rejects_unknown_op_and_strips_known_one():
    schema = prediction_schema_for(lambda op: op == "op-1")
    assert (
        schema.model_validate({"error_type": "UpdateError", "op_id": " op-1 ", "reason": "r"}).op_id == "op-1"
    )
    with pytest.raises(ValueError, match="does not exist in the execution graph"):
        schema.model_validate({"error_type": "UpdateError", "op_id": "op-9", "reason": "r"})
    with pytest.raises(ValueError):
        schema.model_validate({"error_type": "MadeUpError", "op_id": "op-1", "reason": "r"})
    assert prediction_schema_for(None) is ErrorAttributionPrediction


def test_scripted_run_with_tool_call_retry_and_transient_hints():
    counter = iter(range(100))
    model = ScriptedChatModel(
        [
            ToolCall(name="ping", args={"text": "a"}),
            answer("UpdateError", "op-unknown", "first try"),
            answer("UpdateError", "op-1", "because"),
        ]
    )
    agent = _agent(model, hint=lambda: f"<system-hint>hint {next(counter)}</system-hint>")
    outcome = asyncio.run(run_attribution_agent(agent, "the task", lambda op: op == "op-1"))

    assert outcome.ok and outcome.failure is None
    assert outcome.prediction == ErrorAttributionPrediction(
        error_type="UpdateError", op_id="op-1", reason="because"
    )
    assert outcome.usage["num_calls"] == 3 and outcome.usage["input_tokens"] > 0
    assert [call.last_text for call in model.calls] == [
        f"<system-hint>hint {i}</system-hint>" for i in range(3)
    ]
    # the rejected answer went back to the model as a tool result it could act on
    tool_texts = [m.get("content") for m in model.calls[2].messages if m["role"] == "tool"]
    assert "pong a" in tool_texts[0]
    assert "does not exist in the execution graph" in str(tool_texts[1])
    # hints never stay in the agent's context
    stored = str([m.model_dump() for m in agent.state.context])
    assert "<system-hint>" not in stored


def test_no_answer_within_max_iters_is_a_recorded_failure():
    model = ScriptedChatModel([], exhausted_text="I keep talking")
    outcome = asyncio.run(run_attribution_agent(_agent(model, max_iters=2), "task", lambda op: True))
    assert outcome.prediction is None
    assert outcome.failure.startswith("no answer") and "exceed_max_iters" in outcome.failure
    assert outcome.finished_reason == "exceed_max_iters"


def test_unknown_op_id_accepted_by_schema_is_still_rejected_by_validator():
    model = ScriptedChatModel([answer("ResponseError", "op-x", "r")])
    outcome = asyncio.run(
        run_attribution_agent(
            _agent(model),
            "task",
            lambda op: op == "op-1",
            structured_schema=ErrorAttributionPrediction,
        )
    )
    assert outcome.prediction is None
    assert outcome.failure == "invalid answer: operation id 'op-x' does not exist in the graph"


def test_api_error_and_timeout_become_failures():
    boom = ScriptedChatModel([RuntimeError("HTTP 500 from server")])
    outcome = asyncio.run(run_attribution_agent(_agent(boom), "task"))
    assert outcome.failure == "agent error: RuntimeError: HTTP 500 from server"

    async def slow(messages, tools, tool_choice):
        await asyncio.sleep(10)
        return "late"

    outcome = asyncio.run(run_attribution_agent(_agent(FunctionChatModel(slow)), "task", timeout=0.2))
    assert outcome.failure == "timeout: the agent did not answer within 0.2 s"


def test_function_model_sees_tools_and_tool_choice():
    seen = []

    def fn(messages, tools, tool_choice):
        seen.append((tools, tool_choice, messages[-1]["role"]))
        return answer("RetrievalError", "op-2", "r")

    outcome = asyncio.run(
        run_attribution_agent(_agent(FunctionChatModel(fn)), "task", lambda op: op == "op-2")
    )
    assert outcome.prediction.op_id == "op-2"
    assert seen[0][0] == ["ping", "GenerateStructuredOutput"]


def test_openai_model_llama_compat_options():
    plain = build_openai_chat_model("m", None, "http://127.0.0.1:9/v1", max_tokens=64, stream=False)
    assert plain.parameters.max_tokens == 64 and not isinstance(plain.formatter, FlatTextFormatter)
    compat = build_openai_chat_model("m", "k", "http://127.0.0.1:9/v1", max_tokens=64, llama_cpp_compat=True)
    assert compat.parameters.max_tokens is None
    assert isinstance(compat.formatter, FlatTextFormatter)


def test_flat_text_formatter_flattens_text_only_content():
    from agentscope.message import SystemMsg, UserMsg

    out = asyncio.run(
        FlatTextFormatter().format([SystemMsg(name="system", content="s"), UserMsg(name="u", content="hi")])
    )
    assert out[0]["content"] == "s" and out[1]["content"] == "hi"


def test_flat_text_formatter_gives_tool_call_messages_a_string_content():
    from agentscope.message import AssistantMsg, ToolCallBlock

    call = AssistantMsg(name="a", content=[ToolCallBlock(id="c1", name="ping", input="{}")])
    out = asyncio.run(FlatTextFormatter().format([call]))
    assert out[0]["content"] == "" and out[0]["tool_calls"][0]["function"]["name"] == "ping"


def test_only_the_newest_structured_output_reminder_is_sent():
    model = ScriptedChatModel(["thinking", "still thinking", answer("UpdateError", "op-1", "r")])
    outcome = asyncio.run(run_attribution_agent(_agent(model, hint=lambda: "HINT"), "task", lambda op: True))
    assert outcome.ok
    for call in model.calls:
        sent = str(call.messages)
        assert sent.count("You're required to generate structured output") == 1
