"""What every attribution agent shares around an agentscope ``Agent``.

The graph-search agent (:mod:`graphtrace`), the flat-log agent (:mod:`obstrace`) and the
long-context baseline all need:

* the structured final answer :class:`ErrorAttributionPrediction` and the five error types;
* :func:`answer`, the structured-answer turn of a scripted fake model;
* :class:`HintMiddleware`, which shows a fresh hint before every model call without ever storing
  it in the agent's context;
* :func:`run_attribution_agent`, which drives one reply and turns every kind of model
  misbehaviour (no answer within ``max_iters``, an unknown op id, an API error, a timeout) into a
  recorded failure instead of an exception.

The models themselves (real and fake, and the agentscope adapter) belong to the model layer,
:mod:`membase.clients`; nothing imports a model from here.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agentscope.message import HintBlock, Msg, UserMsg
from agentscope.middleware import MiddlewareBase
from pydantic import BaseModel, Field, ValidationError, field_validator

from membase.clients.agentscope_adapter import STRUCTURED_OUTPUT_TOOL, StructuredReply
from membase.clients.fake import ToolCall

__all__ = [
    "ERROR_TYPES",
    "AttributionOutcome",
    "ErrorAttributionPrediction",
    "ErrorType",
    "HintMiddleware",
    "answer",
    "prediction_schema_for",
    "run_attribution_agent",
]

ErrorType = Literal["ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError"]
ERROR_TYPES: tuple[str, ...] = get_args(ErrorType)


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
# The structured answer as a scripted turn
# ---------------------------------------------------------------------------------------------


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

    prediction, failure = _read_final(reply.final, validate_op_id, timeout, time.perf_counter() - started)
    return _outcome(prediction, failure)


def _read_final(
    final: Any, validate_op_id: Callable[[str], bool] | None, timeout: float | None, elapsed: float
) -> tuple[ErrorAttributionPrediction | None, str | None]:
    """The prediction a finished reply holds, or why it holds none."""
    if final is None:
        return None, "agent error: the reply produced no final message"
    raw = final.structured_output
    reason = getattr(final.finished_reason, "value", final.finished_reason)
    if raw is None and reason == "interrupted":
        # agentscope swallows the cancellation of wait_for and ends the reply as interrupted.
        if timeout is not None and elapsed >= timeout:
            return None, f"timeout: the agent did not answer within {timeout:g} s"
        return None, "interrupted: the reply was cancelled before a structured attribution"
    if raw is None:
        return None, f"no answer: the agent finished ({reason}) without a valid structured attribution"
    try:
        prediction = ErrorAttributionPrediction.model_validate(raw)
    except ValidationError as exc:
        return None, f"invalid answer: {_one_line(str(exc))}"
    prediction = prediction.model_copy(update={"op_id": prediction.op_id.strip()})
    if validate_op_id is not None and not validate_op_id(prediction.op_id):
        return None, f"invalid answer: operation id {prediction.op_id!r} does not exist in the graph"
    return prediction, None


def _one_line(text: str) -> str:
    # Whole, never cut: this text may hold a key the caller has to mask, and a key cut in half
    # would escape the mask. Callers that write it somewhere mask first, then cut
    # (``toolkits.runner.MemTraceRunner``).
    return " ".join(text.split())
