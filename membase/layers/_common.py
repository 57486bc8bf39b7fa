"""Helpers shared by the LLM-backed layers (Mem0, EverMemOS): model construction, the raw-input
variable, token accounting."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from membase.layers.tracing import trace_message
from membase.types import Message

__all__ = ["build_chat_client", "build_layer_embedder", "registered_message", "usage_report"]


def build_chat_client(
    model: str,
    *,
    api_config_path: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    cache_dir: str | None = None,
) -> Any:
    """A `ChatClient` whose credentials come from an api_config file, an explicit key/URL, or the
    environment (in that order).

    Raises:
        ConfigError: the api_config file is missing or malformed, or no credentials are found.
    """
    from membase.clients import ChatClient, CredentialPool

    if api_config_path:
        credentials = CredentialPool.from_api_config(api_config_path)
    elif api_key or base_url:
        credentials = CredentialPool([api_key or "EMPTY"], [base_url])
    else:
        credentials = None  # read from the environment
    return ChatClient(model, credentials=credentials, cache_dir=cache_dir)


def build_layer_embedder(provider: str, model: str, dim: int, **openai_options: Any) -> Any:
    """An embedder for a layer's `provider`: `fake`, `huggingface`/`minilm` (local
    sentence-transformers), anything else an OpenAI-compatible endpoint (`openai_options`:
    `base_url`, `api_key`)."""
    from membase.clients import build_embedder

    if provider == "fake":
        return build_embedder("fake", dim=dim)
    if provider in ("huggingface", "minilm"):
        return build_embedder(f"huggingface:{model}", dim=dim)
    return build_embedder(f"openai:{model}", dim=dim, **openai_options)


@contextmanager
def registered_message(
    message: Message, content: str, *, variable_name: str, speaker_key: str = "speakers"
) -> Iterator[Any]:
    """Record the message node, register it as `variable_name` in the current smartcomment
    context, and remove the registration on exit. Yields the runtime variable (None when not
    tracing)."""
    message_rv = trace_message(message, content, variable_name=variable_name, speaker_key=speaker_key)
    try:
        yield message_rv
    finally:
        if message_rv is not None:
            from smartcomment import current_context

            ctx = current_context()
            if ctx is not None:
                try:
                    ctx.remove_variable(variable_name)
                except NameError:
                    pass


def usage_report(**models: tuple[str, Any]) -> dict[str, Any]:
    """`{role: {"model": name, **usage counters}}` for each `role=(name, model)` whose model keeps a
    `usage` (models without one, e.g. local embedders, are left out)."""
    report: dict[str, Any] = {}
    for role, (name, model) in models.items():
        usage = getattr(model, "usage", None)
        if usage is not None and hasattr(usage, "as_dict"):
            report[role] = {"model": name, **usage.as_dict()}
    return report
