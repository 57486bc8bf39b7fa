"""Chat models named by a command-line spec, so that a run folder can name them again for a replay.

* ``fake:<reply>`` — a fake model that always answers ``<reply>`` (offline demos and tests);
* ``py:<module>:<factory>`` — ``factory()`` from an importable module returns the model (any
  object with ``complete(messages, ...)``; e.g. a deterministic reader shipped with a toolkit);
* anything else — a model name served by an OpenAI-compatible endpoint (``ChatClient``), with the
  credentials of ``api_config`` or the environment and an optional on-disk reply cache.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from membase.clients.cached import cached
from membase.exceptions import ConfigError

__all__ = ["resolve_chat_model"]


def resolve_chat_model(
    spec: str,
    *,
    api_config: str | None = None,
    cache_dir: str | None = None,
    timeout: float = 120.0,
    max_retries: int = 3,
) -> Any:
    """The chat model a spec names (see the module docstring).

    Raises:
        ConfigError: a ``py:`` spec that does not import or does not name a callable.
    """
    if spec.startswith("fake:"):
        from membase.clients.fake import FunctionChatModel

        reply = spec.split(":", 1)[1]
        return cached(FunctionChatModel(functools.partial(_fixed_reply, reply), model=spec), cache_dir)  # picklable
    if spec.startswith("py:"):
        return cached(_factory(spec)(), cache_dir)
    from membase.clients import ChatClient, CredentialPool

    pool = CredentialPool.resolve(api_config_path=api_config)
    return ChatClient(spec, credentials=pool, timeout=timeout, max_retries=max_retries, cache_dir=cache_dir)


def _fixed_reply(reply: str, _messages: Any, **_kw: Any) -> str:
    return reply


def _factory(spec: str) -> Any:
    module_name, _, attr = spec[len("py:"):].partition(":")
    if not module_name or not attr:
        raise ConfigError(f"model spec {spec!r}: write py:<module>:<factory>, e.g. py:toolkits.faultbench:reader_model")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"model spec {spec!r}: module {module_name!r} does not import ({exc})") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ConfigError(f"model spec {spec!r}: {module_name} has no callable {attr!r}")
    return factory
