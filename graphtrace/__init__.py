"""Graph-search error attribution: the frontier notebook, its hints and tools, and the agent on top.

Public names are imported lazily, so ``import graphtrace.models`` stays light. The chat models
the agent runs on (real and fake) come from the model layer, :mod:`membase.clients`.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "GraphTraceNodeRecord": "models",
    "GraphTraceState": "models",
    "DUMMY_ROOT_ID": "models",
    "MAXIMUM_CHARACTER_LIMIT": "models",
    "DefaultGraphTraceToHint": "hints",
    "GraphTraceNotebook": "notebook",
    "ERROR_TYPES": "agent_models",
    "AttributionOutcome": "agent_models",
    "ErrorAttributionPrediction": "agent_models",
    "HintMiddleware": "agent_models",
    "answer": "agent_models",
    "prediction_schema_for": "agent_models",
    "run_attribution_agent": "agent_models",
    "GraphSearchSetup": "agent",
    "attribute_case_graph_search": "agent",
    "build_graph_search_agent": "agent",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphtrace' has no attribute {name!r}")
    return getattr(import_module(f"graphtrace.{module}"), name)
