"""mem0 provider classes that plug our chat models and embedders into mem0ai 1.0.5.

mem0 builds its LLM and embedder through `LlmFactory` / `EmbedderFactory` from a provider name;
`register_providers()` adds the provider `"membase"` to both mappings. The objects themselves
travel inside the provider config (`chat_model=` for the LLM, `model_kwargs["membase_embedder"]`
for the embedder, since mem0's embedder config class has a fixed signature).

A fatal client error (`membase.exceptions.FATAL_ERRORS`) raised by our model is remembered on the
adapter (`fatal_error`) before it propagates: mem0 swallows failures of its update-decision call
and of each memory action, so the layer re-raises the remembered error after `memory.add` returns.

Import this module only after `membase.layers.mem0.import_mem0()` has set mem0's environment.
"""

from __future__ import annotations

from typing import Any

from mem0.configs.embeddings.base import BaseEmbedderConfig
from mem0.configs.llms.base import BaseLlmConfig
from mem0.embeddings.base import EmbeddingBase
from mem0.llms.base import LLMBase
from mem0.utils.factory import EmbedderFactory, LlmFactory

from membase.exceptions import FATAL_ERRORS

__all__ = [
    "PROVIDER",
    "FatalErrorMemory",
    "MemBaseChatLLM",
    "MemBaseEmbedding",
    "MemBaseLlmConfig",
    "register_providers",
]

PROVIDER = "membase"
EMBEDDER_KEY = "membase_embedder"


class MemBaseLlmConfig(BaseLlmConfig):
    """mem0 LLM config carrying one of our chat models (`ChatClient` or a fake)."""

    def __init__(
        self,
        *,
        chat_model: Any,
        model: str | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model=model, temperature=temperature, max_tokens=max_tokens or 2000, **kwargs)
        self.chat_model = chat_model
        self.reply_max_tokens = max_tokens


class FatalErrorMemory:
    """Remembers the first fatal client error seen since the last `take_fatal_error()`."""

    fatal_error: BaseException | None = None

    def _remember(self, exc: BaseException) -> None:
        if self.fatal_error is None:
            self.fatal_error = exc

    def take_fatal_error(self) -> BaseException | None:
        """Return the remembered fatal error (None when there is none) and forget it."""
        exc, self.fatal_error = self.fatal_error, None
        return exc


class MemBaseChatLLM(FatalErrorMemory, LLMBase):
    """mem0 LLM that forwards every request to `config.chat_model.complete(...)`."""

    def __init__(self, config: MemBaseLlmConfig) -> None:
        if not isinstance(config, MemBaseLlmConfig):
            raise TypeError(f"provider {PROVIDER!r} needs a MemBaseLlmConfig, got {type(config).__name__}")
        super().__init__(config)
        self.chat_model = config.chat_model

    def generate_response(
        self,
        messages: list[dict[str, str]],
        response_format: dict[str, Any] | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> str:
        """Return the reply text (mem0's two-prompt pipeline never asks for tools)."""
        if tools:
            raise NotImplementedError(
                f"provider {PROVIDER!r} does not support tool calls (mem0 graph memory)"
            )
        try:
            result = self.chat_model.complete(
                messages,
                temperature=self.config.temperature,
                max_tokens=self.config.reply_max_tokens,
                response_format=response_format,
            )
        except FATAL_ERRORS as exc:
            self._remember(exc)
            raise
        return result if isinstance(result, str) else result.text


class MemBaseEmbedding(FatalErrorMemory, EmbeddingBase):
    """mem0 embedder over one of our `Embedder`s."""

    def __init__(self, config: BaseEmbedderConfig | None = None) -> None:
        super().__init__(config)
        embedder = (self.config.model_kwargs or {}).get(EMBEDDER_KEY)
        if embedder is None:
            raise ValueError(f"provider {PROVIDER!r} needs model_kwargs[{EMBEDDER_KEY!r}] = an Embedder")
        self.embedder = embedder
        self.config.embedding_dims = self.config.embedding_dims or embedder.dim

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        """Embed one text (`memory_action` is irrelevant for symmetric embedders)."""
        try:
            return list(self.embedder.embed([text])[0])
        except FATAL_ERRORS as exc:
            self._remember(exc)
            raise


def register_providers() -> None:
    """Add provider `"membase"` to mem0's LLM and embedder factories (idempotent)."""
    LlmFactory.provider_to_class[PROVIDER] = (f"{__name__}.MemBaseChatLLM", MemBaseLlmConfig)
    EmbedderFactory.provider_to_class[PROVIDER] = f"{__name__}.MemBaseEmbedding"
