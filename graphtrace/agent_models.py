"""agentscope 2.x plumbing shared by every attribution agent.

The graph-search agent (:mod:`graphtrace`), the flat-log agent (:mod:`obstrace`) and the
long-context baseline all need the same pieces around an agentscope ``Agent``:

* the structured final answer :class:`ErrorAttributionPrediction` and the five error types;
* deterministic chat models that ship in the library (:class:`ScriptedChatModel` replays turns,
  :class:`FunctionChatModel` computes them) so that whole agent loops run offline in tests;
* :func:`build_openai_chat_model` for any OpenAI-compatible endpoint, including the two
  workarounds a llama.cpp server needs;
* :class:`HintMiddleware`, which shows a fresh hint before every model call without ever storing
  it in the agent's context;
* :func:`run_attribution_agent`, which drives one reply and turns every kind of model
  misbehaviour (no answer within ``max_iters``, an unknown op id, an API error, a timeout) into a
  recorded failure instead of an exception.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agentscope.credential import CredentialBase, OpenAICredential
from agentscope.event import ModelCallEndEvent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import HintBlock, Msg, TextBlock, ToolCallBlock, UserMsg
from agentscope.middleware import MiddlewareBase
from agentscope.model import ChatModelBase, ChatResponse, ChatUsage, OpenAIChatModel
from agentscope.tool import ToolChoice
from pydantic import BaseModel, Field, ValidationError, field_validator

__all__ = [
    "ERROR_TYPES",
    "STRUCTURED_OUTPUT_TOOL",
    "AttributionOutcome",
    "ErrorAttributionPrediction",
    "ErrorType",
    "FlatTextFormatter",
    "FunctionChatModel",
    "HintMiddleware",
    "ModelCall",
    "ScriptedChatModel",
    "StructuredReply",
    "ToolCall",
    "answer",
    "build_openai_chat_model",
    "prediction_schema_for",
    "run_attribution_agent",
]

ErrorType = Literal["ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError"]
ERROR_TYPES: tuple[str, ...] = get_args(ErrorType)

#: Name of the tool agentscope 2.x registers for ``reply(..., structured_schema=...)``.
STRUCTURED_OUTPUT_TOOL = "GenerateStructuredOutput"


@dataclass
class StructuredReply:
    """One streamed agent reply with a structured answer: its model usage, summed as the calls end
    (so a reply cut short by a timeout still reports what it cost), and its final message."""

    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "num_calls": 0})
    final: Msg | None = None

    async def drive(self, agent: Any, text: str, schema: type[BaseModel]) -> None:
        """Stream ``agent``'s reply to ``text`` (a user message named ``user``) under ``schema``.

        Raises:
            asyncio.CancelledError: The task was cancelled during the reply (Ctrl-C, or a
                ``wait_for`` timeout, which then surfaces as ``TimeoutError``). agentscope swallows
                the cancellation and ends the reply as "interrupted"; raised again here, so that a
                Ctrl-C stops the run instead of being recorded as a failed reply.
        """
        async for item in agent.reply_stream(UserMsg(name="user", content=text), structured_schema=schema,
                                             yield_final_msg=True):
            if isinstance(item, ModelCallEndEvent):
                self.usage["input_tokens"] += item.input_tokens
                self.usage["output_tokens"] += item.output_tokens
                self.usage["num_calls"] += 1
            elif isinstance(item, Msg):
                self.final = item
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise asyncio.CancelledError


class ErrorAttributionPrediction(BaseModel):
    """The final answer of an attribution agent: one error type and one operation."""

    error_type: ErrorType = Field(
        description="The memory-system error type of the failure (one of the five types).",
    )
    op_id: str = Field(
        description="Identifier of the earliest decisive faulty operation in the execution graph.",
    )
    reason: str = Field(
        description="A concise, graph-grounded explanation of why this operation is the earliest decisive fault.",
    )


def prediction_schema_for(validate_op_id: Callable[[str], bool] | None) -> type[ErrorAttributionPrediction]:
    """Return a subclass of :class:`ErrorAttributionPrediction` whose ``op_id`` is checked.

    agentscope validates the structured answer with this class and sends a validation error
    back to the model, so a model that names an unknown operation gets a chance to correct
    itself inside the same reply.

    Args:
        validate_op_id: Returns True for op ids that exist in the graph; None skips the check.

    Returns:
        The schema class to pass as ``structured_schema``.
    """
    if validate_op_id is None:
        return ErrorAttributionPrediction

    class _CheckedPrediction(ErrorAttributionPrediction):
        @field_validator("op_id")
        @classmethod
        def _op_id_exists(cls, value: str) -> str:
            value = value.strip()
            if not value or not validate_op_id(value):
                raise ValueError(
                    f"operation id {value!r} does not exist in the execution graph; "
                    "answer with an operation id exactly as the tools showed it"
                )
            return value

    _CheckedPrediction.__name__ = "ErrorAttributionPrediction"
    _CheckedPrediction.__qualname__ = "ErrorAttributionPrediction"
    return _CheckedPrediction


# ---------------------------------------------------------------------------------------------
# Turns understood by the fake models
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call that a fake model emits."""

    name: str
    """Tool name, e.g. ``explore_graph_trace_node``."""
    args: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the call (JSON-serialisable)."""


def answer(error_type: str, op_id: str, reason: str) -> ToolCall:
    """Build the structured-answer tool call of a scripted turn.

    Args:
        error_type: One of :data:`ERROR_TYPES` (not checked here, so tests can send bad ones).
        op_id: The attributed operation id.
        reason: The explanation.

    Returns:
        A :class:`ToolCall` of agentscope's structured-output tool.
    """
    return ToolCall(
        name=STRUCTURED_OUTPUT_TOOL, args={"error_type": error_type, "op_id": op_id, "reason": reason}
    )


Turn = str | ToolCall | tuple | list | BaseException
"""A model turn: text, one tool call (a :class:`ToolCall` or a ``(name, args)`` tuple), a list
of tool calls, or an exception instance that the model raises (to simulate API errors)."""


@dataclass(frozen=True, kw_only=True)
class ModelCall:
    """What a fake model was sent on one call (OpenAI wire format, for assertions)."""

    messages: list[dict[str, Any]]
    tools: list[str]
    tool_choice: str | None

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


class _FakeChatModel(ChatModelBase):
    """Shared base of the offline models: formats like OpenAI, records calls, counts usage."""

    class Parameters(BaseModel):
        """The fake models take no parameters."""

    def __init__(self, model_name: str, context_size: int) -> None:
        super().__init__(
            credential=CredentialBase(),
            model=model_name,
            parameters=self.Parameters(),
            stream=False,
            max_retries=0,
            context_size=context_size,
        )
        # agentscope reads model.formatter for every incoming message.
        self.formatter = OpenAIChatFormatter()
        self.calls: list[ModelCall] = []

    async def _next_turn(self, call: ModelCall) -> Turn:  # pragma: no cover - abstract
        raise NotImplementedError

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
        self.calls.append(call)
        turn = await self._next_turn(call)
        if isinstance(turn, BaseException):
            raise turn
        tool_calls = _as_tool_calls(turn)
        if tool_calls is not None:
            content: list = [
                ToolCallBlock(id=f"call_{len(self.calls)}_{i}", name=c.name, input=json.dumps(c.args))
                for i, c in enumerate(tool_calls)
            ]
        elif isinstance(turn, str):
            content = [TextBlock(text=turn)]
        else:
            raise TypeError(
                f"unsupported model turn {turn!r}: use a str, a ToolCall, a list of them or an exception"
            )
        prompt_chars = sum(len(_content_text(m)) for m in wire)
        out_chars = (
            len(turn) if isinstance(turn, str) else sum(len(json.dumps(c.args)) for c in tool_calls or [])
        )
        return ChatResponse(
            content=content,
            is_last=True,
            usage=ChatUsage(
                input_tokens=max(1, prompt_chars // 4), output_tokens=max(1, out_chars // 4), time=0.0
            ),
        )


class ScriptedChatModel(_FakeChatModel):
    """A deterministic chat model that replays a fixed list of turns.

    Each call pops the next turn (see :data:`Turn`); once the script is exhausted it answers with
    ``exhausted_text`` so that an agent loop always terminates through ``max_iters``. Every call
    is recorded in :attr:`calls` in OpenAI wire format.

    Args:
        turns: The turns to replay, in order.
        exhausted_text: Text returned after the last turn.
        context_size: Context size reported to agentscope (drives compression).
    """

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        exhausted_text: str = "(script exhausted)",
        context_size: int = 1_000_000,
    ) -> None:
        super().__init__("scripted-model", context_size)
        self.turns: list[Turn] = list(turns)
        self.exhausted_text = exhausted_text

    async def _next_turn(self, call: ModelCall) -> Turn:
        return self.turns.pop(0) if self.turns else self.exhausted_text


class FunctionChatModel(_FakeChatModel):
    """A deterministic chat model whose turns are computed by a function.

    Args:
        fn: ``fn(messages, tools, tool_choice) -> turn`` (sync or async) where ``messages`` are
            the OpenAI-format dicts sent, ``tools`` the tool names and ``tool_choice`` the mode
            (``None``, ``"auto"``, ``"none"``, ``"required"`` or a tool name).
        context_size: Context size reported to agentscope (drives compression).
    """

    def __init__(
        self,
        fn: Callable[[list[dict[str, Any]], list[str], str | None], Turn | Awaitable[Turn]],
        *,
        context_size: int = 1_000_000,
    ) -> None:
        super().__init__("function-model", context_size)
        self.fn = fn

    async def _next_turn(self, call: ModelCall) -> Turn:
        result = self.fn(call.messages, call.tools, call.tool_choice)
        if inspect.isawaitable(result):
            result = await result
        return result


# ---------------------------------------------------------------------------------------------
# Real models
# ---------------------------------------------------------------------------------------------


class FlatTextFormatter(OpenAIChatFormatter):
    """OpenAI formatter adapted to llama-cpp-python's server.

    The server rejects list-valued content for system and tool messages, and a ``null`` content
    on assistant messages that only carry tool calls; text-only lists are sent as one string and
    a missing assistant content as ``""``.
    """

    async def format(self, msgs: list[Msg], **kwargs: Any) -> list[dict[str, Any]]:  # type: ignore[override]
        """Format as OpenAI does, then flatten every text-only content list to a string."""
        out = await super().format(msgs, **kwargs)
        for message in out:
            content = message.get("content")
            if isinstance(content, list) and all(
                isinstance(p, dict) and p.get("type") == "text" for p in content
            ):
                message["content"] = "\n".join(p["text"] for p in content)
            elif content is None and message.get("role") == "assistant":
                message["content"] = ""
        return out


def build_openai_chat_model(
    model: str,
    api_key: str | None,
    base_url: str | None,
    *,
    temperature: float | None = 1.0,
    max_tokens: int | None = None,
    stream: bool = True,
    llama_cpp_compat: bool = False,
    context_size: int = 1_000_000,
    timeout: float | None = 120.0,
    max_retries: int = 3,
) -> OpenAIChatModel:
    """Build an agentscope chat model for any OpenAI-compatible endpoint.

    Args:
        model: Model name sent to the endpoint.
        api_key: API key (``"EMPTY"`` is used when None, as local servers accept anything).
        base_url: Endpoint base URL, e.g. ``http://127.0.0.1:8765/v1``; None means OpenAI.
        temperature: Sampling temperature (None leaves the server default).
        max_tokens: Output token cap per call.
        stream: Stream responses.
        llama_cpp_compat: Apply the llama.cpp server workarounds: send ``max_tokens`` in the
            request body (the server ignores ``max_completion_tokens``) and flatten text-only
            message content to strings.
        context_size: Context size agentscope uses for compression decisions.
        timeout: Per-request timeout in seconds for the OpenAI client.
        max_retries: Retries on transient API errors.

    Returns:
        The configured ``OpenAIChatModel``.
    """
    parameters = OpenAIChatModel.Parameters(
        temperature=temperature,
        max_tokens=None if llama_cpp_compat else max_tokens,
    )
    extra_body = {"max_tokens": max_tokens} if llama_cpp_compat and max_tokens is not None else None
    # Retries belong to agentscope's loop (max_retries); the SDK's own would multiply them.
    client_kwargs: dict[str, Any] = {"max_retries": 0}
    if timeout is not None:
        client_kwargs["timeout"] = timeout
    return OpenAIChatModel(
        credential=OpenAICredential(api_key=api_key or "EMPTY", base_url=base_url),
        model=model,
        parameters=parameters,
        stream=stream,
        max_retries=max_retries,
        context_size=context_size,
        formatter=FlatTextFormatter() if llama_cpp_compat else None,
        client_kwargs=client_kwargs,
        extra_body=extra_body,
    )


# ---------------------------------------------------------------------------------------------
# Hints
# ---------------------------------------------------------------------------------------------


class HintMiddleware(MiddlewareBase):
    """Shows a fresh hint as the last user message of every model call.

    The hint is added to the messages of that call only, never to ``agent.state.context``, so
    the model only ever sees the current hint (the reference deleted stored hints after
    formatting; not storing them is the same behaviour without the bookkeeping).

    agentscope stores a structured-output reminder in the context on every reasoning step while
    an answer is pending; with ``dedupe_reminders`` only the latest one is sent (a 200-step run
    would otherwise resend 200 identical reminders).

    Args:
        hint_fn: Returns the hint text (or None for no hint); sync or async, called once per
            model call. Compression calls do not pass through middlewares, so they never get one.
        dedupe_reminders: Send only the newest agentscope reminder of each kind.
    """

    def __init__(
        self, hint_fn: Callable[[], str | None | Awaitable[str | None]], *, dedupe_reminders: bool = True
    ) -> None:
        self.hint_fn = hint_fn
        self.dedupe_reminders = dedupe_reminders
        self.shown: list[str] = []

    async def on_model_call(self, agent: Any, input_kwargs: dict, next_handler: Callable[..., Any]) -> Any:
        """Append the current hint to the outgoing messages, then call the model."""
        hint = self.hint_fn()
        if inspect.isawaitable(hint):
            hint = await hint
        messages = list(input_kwargs["messages"])
        if self.dedupe_reminders:
            messages = _drop_stale_reminders(messages)
        if hint:
            self.shown.append(hint)
            messages.append(UserMsg(name="user", content=hint))
        return await next_handler(**{**input_kwargs, "messages": messages})


def _drop_stale_reminders(messages: list[Msg]) -> list[Msg]:
    """Keep only the newest hint block per ``source`` (agentscope's stored reminders)."""
    latest: dict[str | None, str] = {}
    for msg in messages:
        for block in msg.content if isinstance(msg.content, list) else []:
            if isinstance(block, HintBlock) and block.source:
                latest[block.source] = block.id
    if not latest:
        return messages
    keep_ids = set(latest.values())
    out: list[Msg] = []
    for msg in messages:
        if not isinstance(msg.content, list) or not any(
            isinstance(b, HintBlock) and b.source and b.id not in keep_ids for b in msg.content
        ):
            out.append(msg)
            continue
        content = [
            b for b in msg.content if not (isinstance(b, HintBlock) and b.source and b.id not in keep_ids)
        ]
        if content:
            out.append(msg.model_copy(update={"content": content}))
    return out


# ---------------------------------------------------------------------------------------------
# Running one attribution
# ---------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class AttributionOutcome:
    """The result of one attribution run: a prediction or a recorded failure, plus usage."""

    prediction: ErrorAttributionPrediction | None
    """The validated answer; None when the run failed."""
    failure: str | None = None
    """One-line reason when no valid prediction was produced."""
    usage: dict[str, int] = field(
        default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "num_calls": 0}
    )
    """Token usage summed over every model call of the run (and compression calls)."""
    elapsed_seconds: float = 0.0
    finished_reason: str | None = None
    """agentscope's finished reason of the reply (``completed``, ``exceed_max_iters`` …)."""
    error: BaseException | None = field(default=None, repr=False, compare=False)
    """The exception that ended the run (API/model errors), so callers can classify it by type
    (e.g. retry transient ones); None otherwise."""

    @property
    def ok(self) -> bool:
        """True when a prediction was produced."""
        return self.prediction is not None


class _InnerTimeoutError(Exception):
    """A TimeoutError raised inside the reply, not by the reply's wall-clock limit."""


async def run_attribution_agent(
    agent: Any,
    task_text: str,
    validate_op_id: Callable[[str], bool] | None = None,
    *,
    structured_schema: type[ErrorAttributionPrediction] | None = None,
    timeout: float | None = None,
) -> AttributionOutcome:
    """Run one attribution reply and return a prediction or a recorded failure.

    Model misbehaviour never raises: no structured answer within ``max_iters`` (plus
    agentscope's grace iterations), an unknown op id, an invalid error type, an API error or a
    timeout all end as ``AttributionOutcome(prediction=None, failure=...)``. Only cancellation
    and programming errors in the caller's own objects (e.g. a non-agent) propagate.

    Args:
        agent: An agentscope 2.x ``Agent``.
        task_text: The task prompt, sent as a user message named ``user``.
        validate_op_id: Returns True for op ids that exist in the graph; None accepts any id.
        structured_schema: Schema passed to ``reply``; defaults to
            ``prediction_schema_for(validate_op_id)``.
        timeout: Wall-clock limit in seconds for the whole reply (None: no limit).

    Returns:
        The outcome with usage summed over the reply's model calls.
    """
    schema = structured_schema or prediction_schema_for(validate_op_id)
    reply = StructuredReply()
    usage = reply.usage
    started = time.perf_counter()

    async def _drive() -> None:
        await reply.drive(agent, task_text, schema)

    def _outcome(
        prediction: ErrorAttributionPrediction | None, failure: str | None, error: BaseException | None = None
    ) -> AttributionOutcome:
        reason = getattr(reply.final, "finished_reason", None)
        return AttributionOutcome(
            prediction=prediction,
            failure=failure,
            usage=usage,
            elapsed_seconds=time.perf_counter() - started,
            finished_reason=getattr(reason, "value", reason),
            error=error,
        )

    async def _drive_limited() -> None:
        # a TimeoutError raised inside the reply (e.g. an HTTP read timeout) is an API error,
        # not the whole-reply limit: tag it so only wait_for's own timeout reads as one
        try:
            await _drive()
        except TimeoutError as exc:
            raise _InnerTimeoutError from exc

    try:
        if timeout is None:
            await _drive()
        else:
            await asyncio.wait_for(_drive_limited(), timeout)
    except _InnerTimeoutError as wrapped:
        exc = wrapped.__cause__ or wrapped
        return _outcome(None, f"agent error: {type(exc).__name__}: {_one_line(str(exc))}", exc)
    except TimeoutError as exc:
        if timeout is not None:
            return _outcome(None, f"timeout: the agent did not answer within {timeout:g} s")
        return _outcome(None, f"agent error: {type(exc).__name__}: {_one_line(str(exc))}", exc)
    except Exception as exc:  # noqa: BLE001 - any model/API failure becomes a per-case record
        return _outcome(None, f"agent error: {type(exc).__name__}: {_one_line(str(exc))}", exc)

    final = reply.final
    if final is None:
        return _outcome(None, "agent error: the reply produced no final message")
    raw = final.structured_output
    reason = getattr(final.finished_reason, "value", final.finished_reason)
    if raw is None and reason == "interrupted":
        # agentscope swallows the cancellation of wait_for and ends the reply as interrupted.
        if timeout is not None and time.perf_counter() - started >= timeout:
            return _outcome(None, f"timeout: the agent did not answer within {timeout:g} s")
        return _outcome(None, "interrupted: the reply was cancelled before a structured attribution")
    if raw is None:
        return _outcome(
            None,
            f"no answer: the agent finished ({reason}) without a valid structured attribution",
        )
    try:
        prediction = ErrorAttributionPrediction.model_validate(raw)
    except ValidationError as exc:
        return _outcome(None, f"invalid answer: {_one_line(str(exc))}")
    prediction = prediction.model_copy(update={"op_id": prediction.op_id.strip()})
    if validate_op_id is not None and not validate_op_id(prediction.op_id):
        return _outcome(
            None, f"invalid answer: operation id {prediction.op_id!r} does not exist in the graph"
        )
    return _outcome(prediction, None)


def _one_line(text: str) -> str:
    # Whole, never cut: this text may hold a key the caller has to mask, and a key cut in half
    # would escape the mask. Callers that write it somewhere mask first, then cut
    # (``toolkits.runner.MemTraceRunner``).
    return " ".join(text.split())
