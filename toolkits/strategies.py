"""Registry of attribution strategies that :class:`toolkits.runner.MemTraceRunner` dispatches to.

A strategy attributes one failed case: ``async fn(ctx: StrategyContext) -> outcome`` where the
outcome has ``prediction`` (an ``ErrorAttributionPrediction``, a dict, or None), ``failure``
(one-line reason or None) and ``usage`` (``input_tokens``/``output_tokens``/``num_calls``) —
the shape of :class:`graphtrace.AttributionOutcome`. Synchronous functions are run
in a worker thread.

Built-in names resolve lazily, so importing this module imports no agent code:

* ``graph_search`` — the graph-search agent (:mod:`graphtrace`);
* ``operation_block_search`` and ``long_context`` — the flat-log agent and the long-context
  baseline (:mod:`obstrace`);
* ``evidence_flow`` — the no-LLM attributor (:mod:`toolkits.evidence_flow`).

Other code (and tests) add strategies with :func:`register_strategy`.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "StrategyContext",
    "StrategySpec",
    "available_strategies",
    "get_strategy",
    "register_strategy",
    "unregister_strategy",
]


@dataclass(frozen=True, kw_only=True)
class StrategyContext:
    """Everything a strategy may use to attribute one case."""

    graph: Any
    """The case's execution graph (shared by the graph's cases: do not mutate it)."""
    case: Any
    """The ``FailedQueryCase``."""
    case_index: int
    """Position of the case in the run (also its credential slot)."""
    config: Any
    """The runner's ``MemTraceConfig``."""
    evidence_ids: list[str] | None
    """Starting evidence node ids (annotated or retrieved); None = start without evidence."""
    evidence_is_pseudo: bool
    """True when ``evidence_ids`` came from retrieval rather than annotations."""
    memory_system: str | None
    """Memory system whose built-in prior to use (None = no prior)."""
    custom_prior_knowledge: str | None
    """Prior text that replaces the built-in one."""
    model_factory: Callable[[StrategyContext], Any] | None
    """Builds this case's chat model (None for strategies that need none)."""
    timeout: float | None
    """Wall-clock budget of one attempt in seconds (None = unlimited)."""
    credential: Any = None
    """The case's credential slot (a ``toolkits._base.Credential``; None without a pool)."""

    def build_model(self) -> Any:
        """A fresh chat model for this case.

        Raises:
            RuntimeError: If the runner has no model factory (no credentials were resolved).
        """
        if self.model_factory is None:
            raise RuntimeError("this strategy needs a chat model, but the runner has no model factory")
        return self.model_factory(self)


Strategy = Callable[[StrategyContext], Any]


@dataclass(frozen=True, kw_only=True)
class StrategySpec:
    """A registered strategy."""

    name: str
    """Registry name (the ``--exploration-strategy`` value)."""
    fn: Strategy
    """The attribution function (sync or async)."""
    needs_model: bool = True
    """False for strategies that call no LLM (the runner then needs no credentials)."""

    async def __call__(self, ctx: StrategyContext) -> Any:
        """Run the strategy (sync functions in a worker thread)."""
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(ctx)
        result = await asyncio.to_thread(self.fn, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result


_REGISTRY: dict[str, StrategySpec] = {}

# name -> ("module:function", needs_model); resolved on first use.
_BUILTINS: dict[str, tuple[str, bool]] = {
    "graph_search": ("toolkits._builtin_strategies:graph_search", True),
    "operation_block_search": ("toolkits._builtin_strategies:operation_block_search", True),
    "long_context": ("toolkits._builtin_strategies:long_context", True),
    "evidence_flow": ("toolkits._builtin_strategies:evidence_flow", False),
}


def register_strategy(name: str, fn: Strategy, *, needs_model: bool = True, replace: bool = False) -> StrategySpec:
    """Register a strategy under ``name``.

    Args:
        name: Registry name.
        fn: ``fn(ctx) -> outcome`` (sync or async).
        needs_model: Whether the strategy builds a chat model.
        replace: Allow replacing an existing registration (built-ins included).

    Raises:
        ValueError: If the name is taken and ``replace`` is False.
    """
    if not replace and (name in _REGISTRY or name in _BUILTINS):
        raise ValueError(f"strategy {name!r} is already registered: pass replace=True to override it")
    spec = StrategySpec(name=name, fn=fn, needs_model=needs_model)
    _REGISTRY[name] = spec
    return spec


def unregister_strategy(name: str) -> None:
    """Remove a registration made with :func:`register_strategy` (built-ins come back)."""
    _REGISTRY.pop(name, None)


def available_strategies() -> list[str]:
    """Every registered and built-in strategy name, sorted."""
    return sorted(set(_REGISTRY) | set(_BUILTINS))


def get_strategy(name: str) -> StrategySpec:
    """Resolve a strategy by name (importing a built-in on first use).

    Raises:
        ValueError: For an unknown name.
        ImportError: If the built-in's module is not installed (message names the package).
    """
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name not in _BUILTINS:
        raise ValueError(f"unknown exploration strategy {name!r}: use one of {', '.join(available_strategies())}")
    path, needs_model = _BUILTINS[name]
    module_name, _, attr = path.partition(":")
    fn = getattr(importlib.import_module(module_name), attr)
    return StrategySpec(name=name, fn=fn, needs_model=needs_model)
