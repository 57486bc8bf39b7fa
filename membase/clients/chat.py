"""Chat completions over any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, ...).

One `ChatClient` per runner: it owns its token counters, picks credentials round robin from a
`CredentialPool`, retries transient failures with exponential backoff, and can replay replies from
a disk cache keyed by (model, messages, parameters).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from membase.clients import guard
from membase.clients.cache import DiskCache, cache_key
from membase.clients.credentials import Credential, CredentialPool
from membase.clients.usage import Usage, record_endpoint_call
from membase.exceptions import ModelRequestError, ModelUnreachableError
from membase.utils.tokens import count_tokens

__all__ = ["ChatClient", "ChatModel", "ChatResult"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class ChatResult:
    """The reply of one chat completion."""

    text: str
    input_tokens: int
    output_tokens: int
    model: str
    cached: bool = False


@runtime_checkable
class ChatModel(Protocol):
    """What runners and layers need from a chat model (real or fake)."""

    model: str
    usage: Usage

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResult:
        """Answer ``messages`` (OpenAI chat format); the reply's text and token counts."""
        ...


def _estimate_input_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(count_tokens(str(m.get("content", ""))) + 4 for m in messages)


class ChatClient:
    """Chat client for an OpenAI-compatible endpoint.

    `max_tokens` is sent as `max_tokens` (llama.cpp's server ignores `max_completion_tokens`), and
    message contents are sent as plain strings (it rejects content lists in system messages).
    """

    def __init__(
        self,
        model: str,
        *,
        credentials: CredentialPool | None = None,
        timeout: float = 120.0,
        max_retries: int = 3,
        cache_dir: str | Path | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 20.0,
    ) -> None:
        """Create a client.

        Args:
            model: model name sent to the endpoint.
            credentials: key/base-URL pool; None reads the environment (`CredentialPool.from_env`).
            timeout: per-request timeout in seconds.
            max_retries: retries after the first attempt for timeouts, 429 and 5xx.
            cache_dir: folder of the reply cache; None disables caching.
            backoff_base: first backoff delay in seconds (doubled per retry).
            backoff_max: cap of one backoff delay.

        Raises:
            ConfigError: when no credentials are given and the environment has none.
        """
        self.model = model
        self.credentials = credentials if credentials is not None else CredentialPool.from_env()
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.cache = DiskCache(cache_dir) if cache_dir is not None else None
        self.usage = Usage()
        self._counter = itertools.count()
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ChatClient(model={self.model!r}, credentials={self.credentials!r})"

    def _client_for(self, cred: Credential) -> Any:
        import openai

        key = (cred.api_key, cred.base_url)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                # Retries are ours (with logging and accounting), so the SDK's are off.
                client = openai.OpenAI(
                    api_key=cred.api_key, base_url=cred.base_url, timeout=self.timeout, max_retries=0
                )
                self._clients[key] = client
        return client

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        response_format: dict[str, Any] | None = None,
    ) -> ChatResult:
        """Send one chat completion and return its text and token counts.

        Raises:
            ModelRequestsBlockedError: when real requests are switched off (tests).
            ModelUnreachableError: when the endpoint cannot be reached after all retries.
            ModelRequestError: for any other failure after all retries (or a non-retryable error).
        """
        messages = [{**m, "content": _flatten_content(m.get("content"))} for m in messages]
        params: dict[str, Any] = {"temperature": temperature}
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if response_format is not None:
            params["response_format"] = response_format
        key = cache_key({"model": self.model, "messages": messages, "params": params})
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                result = ChatResult(
                    text=hit["text"], input_tokens=hit["input_tokens"], output_tokens=hit["output_tokens"],
                    model=hit.get("model", self.model), cached=True,
                )
                self.usage.record(result.input_tokens, result.output_tokens, cached=True)
                return result

        guard.check_allow_model_requests("chat")
        result = self._request_with_retries(messages, params)
        self.usage.record(result.input_tokens, result.output_tokens)
        record_endpoint_call(result.input_tokens, result.output_tokens)
        if self.cache is not None:
            self.cache.put(key, {"text": result.text, "input_tokens": result.input_tokens,
                                 "output_tokens": result.output_tokens, "model": result.model})
        return result

    def _request_with_retries(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> ChatResult:
        import openai

        retryable = (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError,
                     openai.InternalServerError)
        attempts = self.max_retries + 1
        last_exc: Exception | None = None
        cred = self.credentials.credential_for(0)
        for attempt in range(attempts):
            cred = self.credentials.credential_for(next(self._counter))
            try:
                response = self._client_for(cred).chat.completions.create(
                    model=self.model, messages=messages, **params
                )
            except retryable as exc:
                last_exc = exc
                if attempt + 1 < attempts:
                    delay = min(self.backoff_max, self.backoff_base * 2**attempt)
                    logger.warning("chat request to %s failed (%s); retry %d/%d in %.1fs",
                                   cred.base_url, type(exc).__name__, attempt + 1, self.max_retries, delay)
                    time.sleep(delay)
                continue
            except openai.APIStatusError as exc:
                self.usage.record_failure()
                raise ModelRequestError(
                    f"chat request to {cred.base_url} for model {self.model!r} failed with HTTP "
                    f"{exc.status_code}: {_short(exc)}"
                ) from exc
            return self._to_result(response, messages)

        self.usage.record_failure()
        if isinstance(last_exc, openai.APITimeoutError):
            raise ModelUnreachableError(
                f"chat endpoint {cred.base_url} timed out after {attempts} attempts (timeout {self.timeout:g}s); "
                "raise the timeout or check the server load"
            ) from last_exc
        if isinstance(last_exc, openai.APIConnectionError):
            raise ModelUnreachableError(
                f"chat endpoint {cred.base_url} unreachable after {attempts} attempts "
                f"({type(last_exc).__name__}: {_short(last_exc)}); check the base URL and that the server runs"
            ) from last_exc
        raise ModelRequestError(
            f"chat request to {cred.base_url} for model {self.model!r} failed after {attempts} attempts: "
            f"{type(last_exc).__name__}: {_short(last_exc)}"
        ) from last_exc

    def _to_result(self, response: Any, messages: list[dict[str, Any]]) -> ChatResult:
        choices = getattr(response, "choices", None) or []
        text = (choices[0].message.content or "") if choices else ""
        usage = getattr(response, "usage", None)
        input_tokens = getattr(usage, "prompt_tokens", None)
        output_tokens = getattr(usage, "completion_tokens", None)
        return ChatResult(
            text=text,
            input_tokens=input_tokens if input_tokens is not None else _estimate_input_tokens(messages),
            output_tokens=output_tokens if output_tokens is not None else count_tokens(text),
            model=getattr(response, "model", None) or self.model,
        )


def _flatten_content(content: Any) -> Any:
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "\n".join(p.get("text", "") for p in content)
    return content


def _short(exc: BaseException | None, limit: int = 300) -> str:
    text = str(exc) if exc is not None else ""
    return text if len(text) <= limit else text[:limit] + "..."
