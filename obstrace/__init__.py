"""Flat-log attribution: flatten an execution graph into operation blocks and attribute failures.

* ``flatten_execution_graph`` / ``render_operation_blocks`` — the chronological log (spec §4.1);
* ``TraceIndex`` / ``GrepMatch`` / ``OperationBlock`` — parse the log back and search it (§4.2);
* ``CCTraceNotebook`` — the four agent tools, the hint and ``finish_attribution`` (§4.3);
* ``attribute_case_obs`` / ``build_obs_agent`` — the OBS agent on agentscope 2.x (§4.4);
* ``build_obstrace_agent`` → ``ObsTraceAgent.solve_case`` / ``solve_case_async`` — the one-call
  API on a flattened trace (§4.4);
* ``attribute_case_long_context`` / ``budget_trace`` — the long-context baseline (§4.5).

The agent modules import agentscope lazily, so the log tools work without it.
"""

from obstrace._flatten import FlatBlock, flatten_execution_graph, render_operation_blocks
from obstrace._index import GrepMatch, OperationBlock, TraceIndex, block_preview
from obstrace._tokens import default_token_counter, estimate_tokens
from obstrace.agent import attribute_case_obs, build_obs_agent, obs_task_text, run_checked_attribution
from obstrace.exceptions import ObstraceError, PatternError, PatternTimeoutError
from obstrace.long_context import (
    BudgetedTrace,
    attribute_case_long_context,
    budget_trace,
    build_long_context_agent,
    build_long_context_task,
)
from obstrace.notebook import CCTraceNotebook, EvidenceRow, check_attribution, evidence_rows_from_graph
from obstrace.standalone import ObsTraceAgent, build_obstrace_agent

__all__ = [
    "BudgetedTrace",
    "CCTraceNotebook",
    "EvidenceRow",
    "FlatBlock",
    "GrepMatch",
    "ObsTraceAgent",
    "ObstraceError",
    "OperationBlock",
    "PatternError",
    "PatternTimeoutError",
    "TraceIndex",
    "attribute_case_long_context",
    "attribute_case_obs",
    "block_preview",
    "budget_trace",
    "build_long_context_agent",
    "build_long_context_task",
    "build_obs_agent",
    "build_obstrace_agent",
    "check_attribution",
    "default_token_counter",
    "estimate_tokens",
    "evidence_rows_from_graph",
    "flatten_execution_graph",
    "obs_task_text",
    "render_operation_blocks",
    "run_checked_attribution",
]
