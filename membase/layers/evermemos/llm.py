"""The one call shape every EverMemOS stage uses: a single user message, text back."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["ChatModel", "ask"]


class ChatModel(Protocol):
    """Anything with the `membase.clients` chat interface (real client or fake)."""

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        """Return a result with a `.text` attribute (or a plain string)."""
        ...


def ask(
    llm: ChatModel, prompt: str, *, temperature: float | None = None, max_tokens: int | None = None
) -> str:
    """Send `prompt` as one user message and return the reply text.

    Args:
        llm: chat model with a `complete(messages, **kw)` method.
        prompt: the full prompt text.
        temperature: sampling temperature; None keeps the model's default.
        max_tokens: reply budget; None keeps the model's default.

    Returns:
        The reply text.
    """
    kwargs: dict[str, Any] = {}
    if temperature is not None:
        kwargs["temperature"] = temperature
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    result = llm.complete([{"role": "user", "content": prompt}], **kwargs)
    return result if isinstance(result, str) else str(result.text)
