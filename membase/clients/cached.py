"""Any chat model behind the on-disk call cache (``ChatClient`` keeps its own).

Fake and ``py:`` models are cached too: a run's every call is then in its cache, so a replay of
the run can tell the calls a repair changed (cache misses, counted by :class:`CallMeter`) from
the ones it repeats (hits), whatever model answered them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from membase.clients.cache import DiskCache, cache_key
from membase.clients.chat import ChatResult
from membase.clients.usage import record_endpoint_call

__all__ = ["CachedChatModel", "cached", "layer_config_with_cache"]


class CachedChatModel:
    """``complete`` answers from ``cache_dir`` when the same request was made before."""

    def __init__(self, model: Any, cache_dir: str | Path) -> None:
        self.inner = model
        self.cache = DiskCache(cache_dir)
        self.model = getattr(model, "model", type(model).__name__)

    @property
    def usage(self) -> Any:
        """The wrapped model's counters."""
        return getattr(self.inner, "usage", None)

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (unpickling): no recursion through __getattr__
            raise AttributeError(name)
        return getattr(self.inner, name)

    def complete(self, messages: list[dict[str, Any]], *, temperature: float = 0.0, max_tokens: int | None = None,
                 response_format: dict[str, Any] | None = None) -> ChatResult:
        """Same interface as ``ChatClient.complete``."""
        params = {"temperature": temperature, "max_tokens": max_tokens, "response_format": response_format}
        key = cache_key({"model": self.model, "messages": messages, "params": params})
        hit = self.cache.get(key)
        if hit is not None:
            if self.usage is not None:
                self.usage.record(hit["input_tokens"], hit["output_tokens"], cached=True)
            return ChatResult(text=hit["text"], input_tokens=hit["input_tokens"], output_tokens=hit["output_tokens"],
                              model=self.model, cached=True)
        result = self.inner.complete(messages, temperature=temperature, max_tokens=max_tokens,
                                     response_format=response_format)
        record_endpoint_call(result.input_tokens, result.output_tokens)
        self.cache.put(key, {"text": result.text, "input_tokens": result.input_tokens,
                             "output_tokens": result.output_tokens})
        return result


def cached(model: Any, cache_dir: str | Path | None) -> Any:
    """``model`` behind the call cache (unchanged when ``cache_dir`` is None)."""
    return model if cache_dir is None else CachedChatModel(model, cache_dir)


def layer_config_with_cache(layer_type: str, memory_config: dict[str, Any], cache_dir: str) -> dict[str, Any]:
    """A copy of a layer config whose model calls go through ``cache_dir`` (unless it names its own)."""
    from membase.layers import CONFIG_MAPPING

    config_cls = CONFIG_MAPPING.get(layer_type)
    if config_cls is None or "llm_config" not in getattr(config_cls, "model_fields", {}):
        return dict(memory_config)
    llm = dict(memory_config.get("llm_config") or {})
    llm.setdefault("cache_dir", cache_dir)
    return {**memory_config, "llm_config": llm}
