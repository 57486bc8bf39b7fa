"""The one pair of fake chat models serves membase's synchronous interface and agentscope's alike."""

from __future__ import annotations

import asyncio

import pytest
from agentscope.message import UserMsg
from agentscope.model import ChatModelBase

from membase.clients import (
    STRUCTURED_OUTPUT_TOOL,
    ApiPool,
    ChatClient,
    CredentialError,
    CredentialPool,
    FunctionChatModel,
    ScriptedChatModel,
    ToolCall,
)


def _agent_call(model, text="a question"):
    return asyncio.run(model(messages=[UserMsg(name="user", content=text)]))


def test_one_scripted_model_answers_a_layer_and_an_agent_from_one_script():
    model = ScriptedChatModel(["for the layer", ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"x": 1})])
    assert isinstance(model, ChatModelBase)

    assert model.complete([{"role": "user", "content": "extract"}], temperature=0.2).text == "for the layer"
    response = _agent_call(model)
    assert [block.name for block in response.content] == [STRUCTURED_OUTPUT_TOOL]

    first, second = model.calls
    assert first.messages == [{"role": "user", "content": "extract"}] and first.temperature == 0.2
    assert second.messages[0]["role"] == "user" and second.tools == []
    assert model.usage.requests == 2 and model.remaining == 0


def test_past_its_script_a_layer_call_fails_and_an_agent_call_gets_the_exhausted_text():
    model = ScriptedChatModel([], exhausted_text="nothing more")
    assert _agent_call(model).content[0].text == "nothing more"
    with pytest.raises(IndexError, match="ran out of replies"):
        model.complete([{"role": "user", "content": "x"}])


def test_a_tool_call_is_no_reply_for_a_layer_and_an_exception_turn_is_raised():
    model = ScriptedChatModel([ToolCall(name="t"), RuntimeError("endpoint down")])
    with pytest.raises(TypeError, match="must produce str replies"):
        model.complete([{"role": "user", "content": "x"}])
    with pytest.raises(RuntimeError, match="endpoint down"):
        model.complete([{"role": "user", "content": "x"}])


def test_a_function_model_is_called_the_way_each_interface_calls():
    seen = []

    def fn(messages, *args, **kwargs):
        seen.append((args, sorted(kwargs)))
        return "ok"

    model = FunctionChatModel(fn, model="judge")
    assert model.complete([{"role": "user", "content": "x"}], max_tokens=5).model == "judge"
    assert _agent_call(model).content[0].text == "ok"
    assert seen == [((), ["max_tokens", "response_format", "temperature"]), (([], None), [])]
    assert model.calls[0].max_tokens == 5


def test_the_strict_pool_is_a_credential_pool_a_chat_client_takes():
    pool = ApiPool(["sk-aaaaaaaaaaaaaaaa", "EMPTY"], ["http://h:1/v1", None])
    assert isinstance(pool, CredentialPool) and pool.credential_for(3).slot == 1
    assert "sk-a" not in repr(pool.credential_for(0)) and "sk-a" not in repr(ChatClient("m", credentials=pool))
    with pytest.raises(CredentialError, match="blank key"):
        ApiPool([" "], [None])
