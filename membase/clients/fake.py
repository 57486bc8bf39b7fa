"""Deterministic fake chat models for tests and offline demos (they never touch the network).

One pair serves the whole project: :class:`ScriptedChatModel` replays a list of turns and
:class:`FunctionChatModel` computes them. Each is an agentscope ``ChatModelBase`` (so the
attribution agents, the optimizer and the report writer can drive it) and also offers
membase's synchronous :meth:`complete` (so memory layers, runners and judges can call it like
a :class:`~membase.clients.ChatClient`). Both interfaces record every call in ``calls`` and
count tokens in ``usage``.

The two interfaces differ where their callers do:

* a synchronous call takes a text turn (or an exception, raised); an agent call also takes
  tool calls (:class:`ToolCall`, a ``(name, args)`` pair or a list of them);
* a function model's ``fn`` is called as ``fn(messages, temperature=..., max_tokens=...,
  response_format=...)`` by :meth:`complete` and as ``fn(messages, tools, tool_choice)`` by an
  agent (it may then return an awaitable);
* past the end of its script, a scripted model raises ``IndexError`` on a synchronous call (a
  test that expected fewer calls fails loudly) and answers ``exhausted_text`` to an agent (so
  the agent loop still ends through ``max_iters``).

Importing this module imports agentscope (a core dependency, about a second);
:mod:`membase.clients` loads it only when a fake model is used.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agentscope.credential import CredentialBase
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg, TextBlock, ToolCallBlock
from agentscope.model import ChatModelBase, ChatResponse, ChatUsage
from agentscope.tool import ToolChoice
from pydantic import BaseModel

from membase.clients.chat import ChatResult
from membase.clients.usage import Usage
from membase.utils.tokens import count_tokens

__all__ = ["FunctionChatModel", "ModelCall", "ScriptedChatModel", "ToolCall", "Turn"]


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call that a fake model emits to an agent."""

    name: str
    """Tool name, e.g. ``explore_graph_trace_node``."""
    args: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the call (JSON-serialisable)."""


Turn = str | ToolCall | tuple | list | BaseException
"""A model turn: text, one tool call (a :class:`ToolCall` or a ``(name, args)`` tuple), a list
of tool calls, or an exception instance that the model raises (to simulate API errors)."""


@dataclass(frozen=True, kw_only=True)
class ModelCall:
    """What a fake model was sent on one call (OpenAI wire format, for assertions)."""

    messages: list[dict[str, Any]]
    """The messages, as dicts with ``role`` and ``content``."""
    tools: list[str] = field(default_factory=list)
    """Names of the tools offered (agent calls)."""
    tool_choice: str | None = None
    """The tool choice mode of an agent call (``auto``, ``required``, a tool name …)."""
    temperature: float | None = None
    """Sampling temperature of a synchronous call."""
    max_tokens: int | None = None
    """Output cap of a synchronous call."""
    response_format: dict[str, Any] | None = None
    """Requested response format of a synchronous call."""

    @property
    def last_text(self) -> str:
        """Text content of the last message (the hint, when a hint middleware is used)."""
        return _content_text(self.messages[-1]) if self.messages else ""


def _content_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _as_tool_calls(turn: Any) -> list[ToolCall] | None:
    if isinstance(turn, ToolCall):
        return [turn]
    if isinstance(turn, tuple) and len(turn) == 2 and isinstance(turn[0], str):
        return [ToolCall(name=turn[0], args=dict(turn[1]))]
    if isinstance(turn, list):
        calls: list[ToolCall] = []
        for item in turn:
            one = _as_tool_calls(item)
            if one is None or len(one) != 1:
                raise TypeError(f"a list turn must hold tool calls only, got {item!r}")
            calls.extend(one)
        return calls
    return None


def _agent_content(turn: Turn, call_number: int) -> tuple[list, int]:
    """The response blocks of an agent turn and the characters it holds."""
    tool_calls = _as_tool_calls(turn)
    if tool_calls is not None:
        blocks: list = [
            ToolCallBlock(id=f"call_{call_number}_{i}", name=c.name, input=json.dumps(c.args))
            for i, c in enumerate(tool_calls)
        ]
        return blocks, sum(len(json.dumps(c.args)) for c in tool_calls)
    if isinstance(turn, str):
        return [TextBlock(text=turn)], len(turn)
    raise TypeError(f"unsupported model turn {turn!r}: use a str, a ToolCall, a list of them or an exception")


class _FakeChatModel(ChatModelBase):
    """Shared base: records calls, counts usage, answers both interfaces."""

    __test__ = False  # keep pytest from collecting these as test classes

    class Parameters(BaseModel):
        """The fake models take no parameters."""

    def __init__(self, model: str, context_size: int) -> None:
        super().__init__(
            credential=CredentialBase(),
            model=model,
            parameters=self.Parameters(),
            stream=False,
            max_retries=0,
            context_size=context_size,
        )
        # agentscope reads model.formatter for every incoming message.
        self.formatter = OpenAIChatFormatter()
        self.usage = Usage()
        self.calls: list[ModelCall] = []
        """Every call received, synchronous and agent calls alike, in order."""
        self._lock = threading.Lock()

    def _record(self, call: ModelCall) -> int:
        with self._lock:
            self.calls.append(call)
            return len(self.calls)

    def _sync_turn(self, call: ModelCall) -> Turn:  # pragma: no cover - abstract
        raise NotImplementedError

    async def _next_turn(self, call: ModelCall) -> Turn:  # pragma: no cover - abstract
        raise NotImplementedError

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResult:
        """Same interface as :meth:`ChatClient.complete`; token counts are deterministic estimates.

        Raises:
            TypeError: The turn is not text (a tool call is for agents only).
            IndexError: A scripted model has no turn left.
        """
        call = ModelCall(messages=[dict(m) for m in messages], temperature=temperature, max_tokens=max_tokens,
                         response_format=response_format)
        self._record(call)
        text = self._sync_turn(call)
        if isinstance(text, BaseException):
            raise text
        if not isinstance(text, str):
            raise TypeError(f"fake model {self.model!r} must produce str replies, got {type(text).__name__}")
        input_tokens = sum(count_tokens(str(m.get("content", ""))) for m in messages)
        output_tokens = count_tokens(text)
        self.usage.record(input_tokens, output_tokens)
        return ChatResult(text=text, input_tokens=input_tokens, output_tokens=output_tokens, model=self.model)

    async def _call_api(
        self,
        model_name: str,
        messages: list[Msg],
        tools: list[dict] | None = None,
        tool_choice: ToolChoice | None = None,
        **kwargs: Any,
    ) -> ChatResponse:
        wire = await self.formatter.format(messages)
        call = ModelCall(
            messages=wire,
            tools=[t.get("function", {}).get("name", "") for t in tools or []],
            tool_choice=tool_choice.mode if tool_choice else None,
        )
        number = self._record(call)
        turn = await self._next_turn(call)
        if isinstance(turn, BaseException):
            raise turn
        content, out_chars = _agent_content(turn, number)
        input_tokens = max(1, sum(len(_content_text(m)) for m in wire) // 4)
        output_tokens = max(1, out_chars // 4)
        self.usage.record(input_tokens, output_tokens)
        return ChatResponse(
            content=content,
            is_last=True,
            usage=ChatUsage(input_tokens=input_tokens, output_tokens=output_tokens, time=0.0),
        )


class ScriptedChatModel(_FakeChatModel):
    """A deterministic chat model that replays a fixed list of turns, one per call.

    Both interfaces take turns from the same script (see :data:`Turn`). Past its end a
    synchronous call raises ``IndexError`` and an agent call answers ``exhausted_text``.

    Args:
        turns: The turns to replay, in order.
        model: Model name reported in results and errors.
        exhausted_text: Text an agent call gets after the last turn.
        context_size: Context size reported to agentscope (drives compression).
    """

    def __init__(
        self,
        turns: Iterable[Turn],
        *,
        model: str = "scripted-model",
        exhausted_text: str = "(script exhausted)",
        context_size: int = 1_000_000,
    ) -> None:
        super().__init__(model, context_size)
        self.turns: list[Turn] = list(turns)
        """The turns not yet used."""
        self.exhausted_text = exhausted_text
        self._used = 0

    @property
    def remaining(self) -> int:
        """Turns not yet used."""
        return len(self.turns)

    def _pop(self) -> Turn | None:
        with self._lock:
            if not self.turns:
                return None
            self._used += 1
            return self.turns.pop(0)

    def _sync_turn(self, call: ModelCall) -> Turn:
        turn = self._pop()
        if turn is None:
            raise IndexError(f"scripted model {self.model!r} ran out of replies after {self._used} calls")
        return turn

    async def _next_turn(self, call: ModelCall) -> Turn:
        turn = self._pop()
        return self.exhausted_text if turn is None else turn


class FunctionChatModel(_FakeChatModel):
    """A deterministic chat model whose turns are computed by a function.

    Args:
        fn: Computes the turn. A synchronous call runs ``fn(messages, temperature=...,
            max_tokens=..., response_format=...)`` and needs text back; an agent call runs
            ``fn(messages, tools, tool_choice)`` (sync or async) where ``messages`` are the
            OpenAI-format dicts sent, ``tools`` the tool names and ``tool_choice`` the mode
            (``None``, ``"auto"``, ``"none"``, ``"required"`` or a tool name). ``fn`` may raise
            to simulate a failing request.
        model: Model name reported in results and errors.
        context_size: Context size reported to agentscope (drives compression).
    """

    def __init__(
        self,
        fn: Callable[..., Turn | Awaitable[Turn]],
        *,
        model: str = "function-model",
        context_size: int = 1_000_000,
    ) -> None:
        super().__init__(model, context_size)
        self.fn = fn

    def _sync_turn(self, call: ModelCall) -> Turn:
        return self.fn(call.messages, temperature=call.temperature, max_tokens=call.max_tokens,
                       response_format=call.response_format)

    async def _next_turn(self, call: ModelCall) -> Turn:
        result = self.fn(call.messages, call.tools, call.tool_choice)
        if inspect.isawaitable(result):
            result = await result
        return result
