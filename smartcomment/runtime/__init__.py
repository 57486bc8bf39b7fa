"""Runtime of the tracer: the graph (``ExecNetwork``), its handles, and the recording scopes."""

from smartcomment.runtime.context import (
    TracingContext,
    current_context,
    current_graph,
    current_op,
    current_session,
    disable_tracing,
    enable_tracing,
    is_tracing_enabled,
    tracing_enabled,
)
from smartcomment.runtime.errors import ExecNetworkKeyError, GraphFormatError, TraceConsistencyError
from smartcomment.runtime.graph import RuntimeGraph
from smartcomment.runtime.network import ExecNetwork
from smartcomment.runtime.operation import RuntimeEdge, RuntimeOp
from smartcomment.runtime.session import RuntimeSession
from smartcomment.runtime.tracing import (
    comment_fn,
    comment_graph,
    comment_link,
    comment_mutation,
    comment_op,
    comment_op_scope,
    comment_session,
    comment_variable,
    none_full_node_id,
    none_identity,
    none_op_id,
    none_session_id,
    propagate_attributes,
)
from smartcomment.runtime.variable import RuntimeVariable

__all__ = [
    "ExecNetwork",
    "ExecNetworkKeyError",
    "GraphFormatError",
    "RuntimeEdge",
    "RuntimeGraph",
    "RuntimeOp",
    "RuntimeSession",
    "RuntimeVariable",
    "TraceConsistencyError",
    "TracingContext",
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
    "enable_tracing",
    "is_tracing_enabled",
    "none_full_node_id",
    "none_identity",
    "none_op_id",
    "none_session_id",
    "propagate_attributes",
    "tracing_enabled",
]
