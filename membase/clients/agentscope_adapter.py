"""The agentscope 2.x side of the model layer: real chat models and structured replies.

Every agent of the project (the graph-search and flat-log attribution agents, the prompt
optimizer, the report writer) talks to its model through agentscope. This module holds what
they share and what is not about attribution:

* :func:`build_openai_chat_model` for any OpenAI-compatible endpoint, including the two
  workarounds a llama.cpp server needs (:class:`FlatTextFormatter`);
* :class:`StructuredReply`, which streams one agent reply under a structured-output schema and
  sums its model usage as the calls end;
* :data:`STRUCTURED_OUTPUT_TOOL`, the tool name agentscope uses for a structured answer.

The offline counterparts (scripted and function chat models) are in :mod:`membase.clients.fake`.
Importing this module imports agentscope (a core dependency, about a second), so
:mod:`membase.clients` loads it only when one of these names is used.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from agentscope.credential import OpenAICredential
from agentscope.event import ModelCallEndEvent
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg, UserMsg
from agentscope.model import OpenAIChatModel
from pydantic import BaseModel

__all__ = ["STRUCTURED_OUTPUT_TOOL", "FlatTextFormatter", "StructuredReply", "build_openai_chat_model"]

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
