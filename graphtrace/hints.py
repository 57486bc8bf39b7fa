"""Hints shown to the agent before every model call, chosen from the notebook's state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .models import GraphTraceState

__all__ = ["DefaultGraphTraceToHint", "GraphTraceToHint", "wrap_hint"]


def wrap_hint(text: str) -> str:
    """Wrap a hint body in ``<system-hint>`` tags."""
    return f"<system-hint>\n{text}\n</system-hint>"


class GraphTraceToHint(Protocol):
    """Turns the notebook state into a hint (None when there is nothing to say)."""

    def __call__(self, state: GraphTraceState | None) -> str | None:
        """The hint for this state, or None."""
        ...


class DefaultGraphTraceToHint:
    """The three-state hint: graph not loaded, loaded with nothing exploring, a node exploring."""

    not_loaded = (
        "An execution graph of the memory system's run is available but not loaded. Whenever the task "
        "depends on it (error attribution, root-cause analysis, exploring or inspecting nodes, "
        "provenance, summaries or questions about its structure), call `initialize_execution_graph` "
        "first: it loads the graph and reports your starting position."
    )
    idle_options = (
        "Next step, choose one:\n"
        "1. Call `explore_graph_trace_node` to explore the earliest node of the to-explore frontier "
        "(pass `include_variable_value=False` for a value-less preview when values are likely large).\n"
        "2. Call `finish_graph_exploration` if the task can already be answered."
    )
    exploring_options = (
        "Next step, choose any that apply:\n"
        "1. If the last `explore_graph_trace_node` output was truncated, call it again with the "
        "`offset` its status line gave; after a value-less preview, read relevant values with "
        "`view_node_value` (optionally with a `pattern`).\n"
        "2. Keep the frontier useful with `update_to_explore_nodes`: `add` variables that carry the "
        "critical information downstream, `delete` ones that turned out irrelevant.\n"
        "3. When you are done with this node, call `finish_node_exploration` with a node-level "
        "outcome (what this node's operations did and whether they were locally correct)."
    )

    def __call__(self, state: GraphTraceState | None) -> str:
        """Return the hint for a state (``None`` = graph not loaded)."""
        if state is None:
            return wrap_hint(self.not_loaded)
        block = f"```markdown\n{state.to_markdown()}\n```"
        if state.get_exploring_node() is None:
            return wrap_hint(f"{block}\n\n{self.idle_options}")
        return wrap_hint(f"{block}\n\n{self.exploring_options}")
