"""Hint texts of the flat-log agent, written for this project.

The task templates, attribution instructions and system prompts of the OBS agent and the
long-context baseline are shared with the graph-search agent and live in ``graphtrace.prompts``
(``TASK_PROMPT_TEMPLATES["operation_block_search"]`` / ``["long_context"]``,
``TRACE_ATTRIBUTION_INSTRUCTIONS``, ``TRACE_SEARCH_SYSTEM_PROMPT``, ``LONG_CONTEXT_SYSTEM_PROMPT``).
Hints are wrapped in ``<system-hint>`` tags by ``CCTraceNotebook.hint`` and shown as the last
user message of each model call.
"""

from __future__ import annotations

__all__ = ["OBS_HINT_ACTIVE", "OBS_HINT_START", "REASON_REQUIREMENT"]

OBS_HINT_START = (
    "A flattened execution trace of the memory system is available. Before any work that depends "
    "on it, call inspect_trace to see its size and its first and last operations."
)

OBS_HINT_ACTIVE = (
    "The trace is loaded. Keep using only the four trace tools (inspect_trace, grep_log, "
    "view_log_window, view_operation), decide from what you have already seen, and do not repeat "
    "searches you have already made. When you are sure, give the structured attribution."
)

REASON_REQUIREMENT = (
    "the reason must explain, from the trace, what this operation got wrong locally, why fixing it "
    "would have rescued the answer, and why earlier candidate operations are not decisive"
)
