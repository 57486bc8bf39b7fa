"""Deterministic fake chat models for tests and offline demos (they never touch the network)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from membase.clients.chat import ChatResult
from membase.clients.usage import Usage
from membase.utils.tokens import count_tokens

__all__ = ["FunctionChatModel", "ScriptedChatModel"]


class _FakeBase:
    __test__ = False  # keep pytest from collecting these as test classes

    def __init__(self, model: str) -> None:
        self.model = model
        self.usage = Usage()
        self.calls: list[dict[str, Any]] = []
        """Every call received: `{"messages", "temperature", "max_tokens", "response_format"}`."""
        self._lock = threading.Lock()

    def _reply(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        raise NotImplementedError

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResult:
        """Same interface as `ChatClient.complete`; token counts are deterministic estimates."""
        kwargs = {"temperature": temperature, "max_tokens": max_tokens, "response_format": response_format}
        with self._lock:
            self.calls.append({"messages": [dict(m) for m in messages], **kwargs})
        text = self._reply(messages, **kwargs)
        if not isinstance(text, str):
            raise TypeError(f"fake model {self.model!r} must produce str replies, got {type(text).__name__}")
        input_tokens = sum(count_tokens(str(m.get("content", ""))) for m in messages)
        output_tokens = count_tokens(text)
        self.usage.record(input_tokens, output_tokens)
        return ChatResult(text=text, input_tokens=input_tokens, output_tokens=output_tokens, model=self.model)


class FunctionChatModel(_FakeBase):
    """Computes each reply with `fn(messages, **kwargs) -> str`.

    `fn` may raise to simulate a failing request.
    """

    def __init__(self, fn: Callable[..., str], *, model: str = "function-model") -> None:
        super().__init__(model)
        self.fn = fn

    def _reply(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        return self.fn(messages, **kwargs)


class ScriptedChatModel(_FakeBase):
    """Replays a list of replies in order; raises `IndexError` once the script is exhausted.

    A reply that is an `Exception` instance is raised instead of returned.
    """

    def __init__(self, replies: Iterable[str | Exception], *, model: str = "scripted-model") -> None:
        super().__init__(model)
        self._replies = list(replies)
        self._next = 0

    @property
    def remaining(self) -> int:
        """Replies not yet used."""
        return len(self._replies) - self._next

    def _reply(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        with self._lock:
            if self._next >= len(self._replies):
                raise IndexError(f"scripted model {self.model!r} ran out of replies after {self._next} calls")
            reply = self._replies[self._next]
            self._next += 1
        if isinstance(reply, Exception):
            raise reply
        return reply
