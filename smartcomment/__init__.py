"""smartcomment: record a program's run as an operation-variable execution graph.

A clean-room implementation, API- and file-format-compatible with smartcomment 0.1.2 (the
format of the MemTraceBench dataset). Open a graph, mark sessions and operations, and every
traced value becomes a versioned variable node::

    from smartcomment import comment_graph, comment_op

    with comment_graph(user_id="alice") as graph:
        comment_op(inputs=["raw text"], outputs=["fact"], op_name="extract")
    graph.export_graph()  # JSON-ready dict
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smartcomment._logging import logger, setup_logger
from smartcomment.identity.registry import IdentityRegistry
from smartcomment.runtime.context import (
    current_context,
    current_graph,
    current_op,
    current_session,
    disable_tracing,
    enable_tracing,
    is_tracing_enabled,
    tracing_enabled,
)
from smartcomment.runtime.errors import (
    ExecNetworkKeyError,
    GraphFormatError,
    MemTraceError,
    TraceConsistencyError,
)
from smartcomment.runtime.network import ExecNetwork
from smartcomment.runtime.tracing import (
    comment_fn,
    comment_graph,
    comment_link,
    comment_mutation,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    propagate_attributes,
)

__version__ = "0.1.2"


def draw_graph(fn: Callable[..., Any], /, *, fn_kwargs: dict[str, Any] | None = None, backend: str = "graphviz",
               **kwargs: Any) -> Any:
    """Run ``fn(**fn_kwargs)`` inside a fresh graph and return its visual rendering."""
    with comment_graph() as graph:
        fn(**(fn_kwargs or {}))
    if graph is None:
        raise RuntimeError("draw_graph needs tracing enabled")
    return graph.visualize(backend=backend, **kwargs)


__all__ = [
    "ExecNetwork",
    "ExecNetworkKeyError",
    "GraphFormatError",
    "IdentityRegistry",
    "MemTraceError",
    "TraceConsistencyError",
    "comment_fn",
    "comment_graph",
    "comment_link",
    "comment_mutation",
    "comment_op",
    "comment_op_scope",
    "comment_session",
    "comment_variable",
    "current_context",
    "current_graph",
    "current_op",
    "current_session",
    "disable_tracing",
    "draw_graph",
    "enable_tracing",
    "is_tracing_enabled",
    "logger",
    "propagate_attributes",
    "setup_logger",
    "tracing_enabled",
]
