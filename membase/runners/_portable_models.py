"""Chat models that can be rebuilt inside a worker process or a Ray task.

A model client holds locks and open HTTP clients, which cannot travel to another process. What
travels instead is a *recipe*: a picklable ``() -> model`` that builds an equivalent client
there (same endpoint settings, credentials and reply cache, fresh usage counters). Each worker's
usage comes back as a dict and is summed by the caller.
"""

from __future__ import annotations

import functools
import pickle
from collections.abc import Callable
from typing import Any

from membase.exceptions import ConfigError

__all__ = ["add_usage", "model_recipe"]


def _chat_client(settings: dict[str, Any]) -> Any:
    from membase.clients import ChatClient

    return ChatClient(**settings)


def _function_model(fn: Callable[..., str], model: str) -> Any:
    from membase.clients.fake import FunctionChatModel

    return FunctionChatModel(fn, model=model)


def model_recipe(model: Any, *, role: str, needs_pickle: bool) -> Callable[[], Any]:
    """A picklable ``() -> model`` that builds a copy of ``model`` in another process.

    Args:
        model: A :class:`~membase.clients.ChatClient`, a ``FunctionChatModel``, a cache wrapper of one
            (``inner`` model, ``cache.root`` folder), or any picklable model.
        role: What the model does (``qa model``, ``judge model``), for the error message.
        needs_pickle: True for worker processes (plain pickle: no lambdas); Ray pickles closures too.

    Raises:
        ConfigError: When the model cannot be sent to a worker.
    """
    from membase.clients import ChatClient
    from membase.clients.fake import FunctionChatModel

    if isinstance(model, ChatClient):
        recipe: Callable[[], Any] = functools.partial(_chat_client, {
            "model": model.model, "credentials": model.credentials, "timeout": model.timeout,
            "max_retries": model.max_retries, "backoff_base": model.backoff_base, "backoff_max": model.backoff_max,
            "cache_dir": str(model.cache.root) if model.cache is not None else None,
        })
    elif isinstance(model, FunctionChatModel):
        recipe = functools.partial(_function_model, model.fn, model.model)
    elif hasattr(model, "inner") and hasattr(getattr(model, "cache", None), "root"):
        # a wrapper that puts a model behind a reply cache: rebuild the model, then wrap it again
        inner = model_recipe(model.inner, role=role, needs_pickle=needs_pickle)
        recipe = functools.partial(_wrapped_model, type(model), inner, str(model.cache.root))
    else:
        recipe = functools.partial(_identity, model)
    if needs_pickle:
        try:
            pickle.dumps(recipe)
        except Exception as exc:  # pickle raises several types (PicklingError, TypeError, AttributeError)
            raise ConfigError(
                f"the {role} {getattr(model, 'model', model)!r} cannot be sent to worker processes ({exc}); "
                "use a module-level reply function, or run with one worker"
            ) from None
    return recipe


def _wrapped_model(wrapper: type, inner: Callable[[], Any], cache_root: str) -> Any:
    return wrapper(inner(), cache_root)


def _identity(model: Any) -> Any:
    return model


def add_usage(total: dict[str, int] | None, part: dict[str, int] | None) -> dict[str, int] | None:
    """Sum two usage dicts of the same model (None when both are None)."""
    if part is None:
        return total
    if total is None:
        return dict(part)
    return {key: total.get(key, 0) + value for key, value in part.items()}
