"""The OBS attribution agent: an agentscope 2.x ``Agent`` reading a flat log through four tools.

``attribute_case_obs`` is the entry point the attribution runner calls for
``exploration_strategy="operation_block_search"``. Fixes over the reference (spec §12.12): the
final answer is validated by ``finish_attribution`` inside the structured-output step (the model
sees the error and can answer again) and once more after the reply; token usage is summed from
agentscope's model-call events; the context is guarded like the graph-search agent's
(``max_context_limit`` as the model's context size, compression past ``context_window`` that
keeps the last ``keep_recent`` tool calls, truncation if summarising fails).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphtrace.prompts import TRACE_ATTRIBUTION_INSTRUCTIONS, TRACE_SEARCH_SYSTEM_PROMPT, build_task_prompt
from obstrace.notebook import CCTraceNotebook, check_attribution

__all__ = [
    "AGENT_NAME",
    "attribute_case_obs",
    "attribution_schema",
    "build_obs_agent",
    "obs_task_text",
    "run_checked_attribution",
]

AGENT_NAME = "memtrace"


def obs_task_text(case: Any, instructions: str = TRACE_ATTRIBUTION_INSTRUCTIONS) -> str:
    """Render the OBS task prompt for a failed case (question, golden answer, wrong answer).

    The evidence is not in the task: the notebook's hint shows it before every model call.

    Args:
        case: A ``FailedQueryCase`` (``query``, ``golden_answer``, ``prediction`` are read).
        instructions: Attribution instructions to embed (the trace variant, never a prior).
    """
    return build_task_prompt(
        "operation_block_search",
        instructions=instructions,
        question=case.query,
        golden_answer=case.golden_answer,
        prediction=case.prediction,
    )


def attribution_schema(has_op: Callable[[str], bool]) -> type:
    """Return the structured-answer schema that applies ``check_attribution`` while validating.

    agentscope validates the model's structured answer with this class; a failed check goes back
    to the model as a tool error, so it can answer again within the same reply.

    Args:
        has_op: Membership test for the operation ids the answer may name.

    Returns:
        A subclass of ``graphtrace.ErrorAttributionPrediction``.
    """
    from pydantic import model_validator

    from graphtrace import ErrorAttributionPrediction

    class _CheckedAttribution(ErrorAttributionPrediction):
        @model_validator(mode="after")
        def _finish(self) -> _CheckedAttribution:
            result = check_attribution(self.error_type, self.op_id, self.reason, has_op)
            if "error" in result:
                raise ValueError(result["error"].removeprefix("Error: "))
            self.op_id = result["op_id"]
            return self

    _CheckedAttribution.__name__ = "ErrorAttributionPrediction"
    _CheckedAttribution.__qualname__ = "ErrorAttributionPrediction"
    return _CheckedAttribution


async def run_checked_attribution(
    agent: Any, task_text: str, has_op: Callable[[str], bool], *, timeout: float | None = None
) -> Any:
    """Run one reply with the checked schema, and check the final answer once more.

    Args:
        agent: The agentscope ``Agent``.
        task_text: The task prompt.
        has_op: Membership test for the operation ids the answer may name.
        timeout: Wall-clock limit in seconds (None: none).

    Returns:
        ``graphtrace.AttributionOutcome``; an answer that fails ``check_attribution``
        becomes a recorded failure.
    """
    from graphtrace import run_attribution_agent

    outcome = await run_attribution_agent(
        agent, task_text, has_op, structured_schema=attribution_schema(has_op), timeout=timeout
    )
    if outcome.prediction is not None:
        p = outcome.prediction
        check = check_attribution(p.error_type, p.op_id, p.reason, has_op)
        if "error" in check:
            outcome.failure = "invalid answer: " + check["error"].removeprefix("Error: ")
            outcome.prediction = None
    return outcome


def build_obs_agent(
    notebook: CCTraceNotebook,
    *,
    model: Any,
    max_iters: int = 200,
    context_window: int = 272_000,
    keep_recent: int = 3,
    max_context_limit: int | None = None,
    system_prompt: str = TRACE_SEARCH_SYSTEM_PROMPT,
) -> Any:
    """Build the OBS agent: the notebook's four tools, its hint before every model call.

    Compression is set up as for the graph-search agent (``graphtrace.agent``): it triggers past
    ``context_window`` tokens, keeps the last ``keep_recent`` tool calls verbatim, and falls back
    to truncation if summarising fails.

    Args:
        notebook: The flat log and its tools.
        model: An agentscope 2.x chat model (real or one of the library's fake models), used
            only by this agent.
        max_iters: ReAct iterations per reply.
        context_window: Context tokens that trigger compression.
        keep_recent: Recent tool calls kept verbatim through a compression.
        max_context_limit: Hard cap on context tokens; sets ``model.context_size`` when given
            (None keeps the model's own size).
        system_prompt: The system prompt.

    Returns:
        The agentscope ``Agent``.

    Raises:
        ValueError: For non-positive ``max_iters``, ``context_window`` or ``max_context_limit``,
            or a negative ``keep_recent``.
    """
    from agentscope.agent import Agent, InjectionConfig, ReActConfig
    from agentscope.tool import Toolkit

    from graphtrace import HintMiddleware
    from graphtrace.agent import KeepRecentToolCalls, context_config_for

    if max_iters < 1:
        raise ValueError(f"max_iters must be >= 1, got {max_iters}")
    if max_context_limit is not None:
        if max_context_limit < 1:
            raise ValueError(f"max_context_limit must be >= 1, got {max_context_limit}")
        model.context_size = max_context_limit
    context_config = context_config_for(context_window, model.context_size)
    return Agent(
        name=AGENT_NAME,
        system_prompt=system_prompt,
        model=model,
        toolkit=Toolkit(tools=notebook.tools()),
        middlewares=[HintMiddleware(notebook.hint), KeepRecentToolCalls(keep_recent)],
        context_config=context_config,
        react_config=ReActConfig(max_iters=max_iters),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


async def attribute_case_obs(
    graph: Any,
    case: Any,
    *,
    model: Any,
    evidence_nodes: Sequence[Any] | None = None,
    max_iters: int = 200,
    context_window: int = 272_000,
    keep_recent: int = 3,
    max_context_limit: int | None = None,
    timeout: float | None = None,
    identities: bool = False,
) -> Any:
    """Attribute one failed case with the OBS agent; never raises for model misbehaviour.

    By default this is the paper's ablation: the log has no variable ids and the hint shows the
    evidence by content and time only (``identities=True`` adds both — ours, not the paper's).

    Args:
        graph: The case's execution graph (read only).
        case: The ``FailedQueryCase``.
        model: An agentscope 2.x chat model, one per case.
        evidence_nodes: Starting source-evidence full node ids (real or retrieved), shown in the
            hint; None or empty shows none.
        max_iters: ReAct iterations.
        context_window: Context tokens that trigger compression.
        keep_recent: Recent tool calls kept verbatim through a compression.
        max_context_limit: Hard cap on context tokens (the model's context size); None keeps the
            model's own size.
        timeout: Wall-clock limit for the reply in seconds (None: none).
        identities: Variable ids in the log and evidence ids plus lineage in the hint.

    Returns:
        ``graphtrace.AttributionOutcome``: a prediction whose op id exists in the log
        and whose reason passed ``finish_attribution``, or a recorded failure.
    """
    notebook = CCTraceNotebook.from_graph(graph, evidence_nodes, identities=identities)
    agent = build_obs_agent(
        notebook,
        model=model,
        max_iters=max_iters,
        context_window=context_window,
        keep_recent=keep_recent,
        max_context_limit=max_context_limit,
    )
    return await run_checked_attribution(agent, obs_task_text(case), notebook.index.has_op, timeout=timeout)
