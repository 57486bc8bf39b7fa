"""The OBS attribution agent: an agentscope 2.x ``Agent`` reading a flat log through four tools.

``attribute_case_obs`` is the entry point the attribution runner calls for
``exploration_strategy="operation_block_search"``. Fixes over the reference (spec §12.12): the
final answer is validated by ``finish_attribution`` inside the structured-output step (the model
sees the error and can answer again) and once more after the reply; token usage is summed from
agentscope's model-call events; the context is guarded by agentscope's compression with
truncation as the fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphtrace.prompts import TRACE_ATTRIBUTION_INSTRUCTIONS, TRACE_SEARCH_SYSTEM_PROMPT, build_task_prompt
from obstrace.notebook import CCTraceNotebook

__all__ = [
    "AGENT_NAME",
    "attribute_case_obs",
    "build_obs_agent",
    "context_config_for",
    "obs_prediction_schema",
    "obs_task_text",
]

AGENT_NAME = "memtrace"
_MAX_TRIGGER_RATIO = 0.9  # agentscope's upper bound for ContextConfig.trigger_ratio


def context_config_for(model: Any, context_window: int, keep_recent: int = 3) -> Any:
    """Map the runner's compression settings onto agentscope 2.x's ``ContextConfig``.

    agentscope compresses when the context exceeds ``trigger_ratio × model.context_size`` and
    keeps a *token* reserve, not a number of tool-call groups. ``context_window`` sets the trigger
    (capped at 90% of the model's context size); ``keep_recent`` sizes the reserve at
    ``min(0.5, 0.1 × keep_recent)`` of the trigger. If summarising fails, agentscope truncates
    (the guard the reference OBS agent lacked).

    Args:
        model: The agentscope chat model (its ``context_size`` is read).
        context_window: Compression trigger in tokens.
        keep_recent: How much recent context to keep (see above); must be >= 0.

    Returns:
        The ``ContextConfig``.

    Raises:
        ValueError: If ``context_window`` < 1 or ``keep_recent`` < 0.
    """
    from agentscope.agent import ContextConfig

    if context_window < 1:
        raise ValueError(f"context_window must be >= 1 token, got {context_window}")
    if keep_recent < 0:
        raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
    trigger = min(_MAX_TRIGGER_RATIO, max(0.01, context_window / max(1, model.context_size)))
    reserve = max(0.001, trigger * min(0.5, 0.1 * max(1, keep_recent)))
    return ContextConfig(trigger_ratio=trigger, reserve_ratio=reserve, compression_fallback_to_truncation=True)


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


def obs_prediction_schema(notebook: CCTraceNotebook) -> type:
    """Return the structured-answer schema that applies ``finish_attribution`` while validating.

    agentscope validates the model's structured answer with this class; a failed check goes back
    to the model as a tool error, so it can answer again within the same reply.
    """
    from pydantic import model_validator

    from graphtrace.agent_models import ErrorAttributionPrediction

    class _FinishedAttribution(ErrorAttributionPrediction):
        @model_validator(mode="after")
        def _finish(self) -> _FinishedAttribution:
            result = notebook.finish_attribution(self.error_type, self.op_id, self.reason)
            if "error" in result:
                raise ValueError(result["error"].removeprefix("Error: "))
            self.op_id = result["op_id"]
            return self

    _FinishedAttribution.__name__ = "ErrorAttributionPrediction"
    _FinishedAttribution.__qualname__ = "ErrorAttributionPrediction"
    return _FinishedAttribution


def build_obs_agent(
    notebook: CCTraceNotebook,
    *,
    model: Any,
    max_iters: int = 200,
    context_window: int = 272_000,
    keep_recent: int = 3,
    system_prompt: str = TRACE_SEARCH_SYSTEM_PROMPT,
) -> Any:
    """Build the OBS agent: the notebook's four tools, its hint before every model call.

    Args:
        notebook: The flat log and its tools.
        model: An agentscope 2.x chat model (real or one of the library's fake models).
        max_iters: ReAct iterations per reply.
        context_window: Compression trigger in tokens (see ``context_config_for``).
        keep_recent: Recent-context reserve (see ``context_config_for``).
        system_prompt: The system prompt.

    Returns:
        The agentscope ``Agent``.
    """
    from agentscope.agent import Agent, InjectionConfig, ReActConfig
    from agentscope.tool import Toolkit

    from graphtrace.agent_models import HintMiddleware

    if max_iters < 1:
        raise ValueError(f"max_iters must be >= 1, got {max_iters}")
    return Agent(
        name=AGENT_NAME,
        system_prompt=system_prompt,
        model=model,
        toolkit=Toolkit(tools=notebook.tools()),
        middlewares=[HintMiddleware(notebook.hint)],
        context_config=context_config_for(model, context_window, keep_recent),
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
    timeout: float | None = None,
) -> Any:
    """Attribute one failed case with the OBS agent; never raises for model misbehaviour.

    Args:
        graph: The case's execution graph (read only).
        case: The ``FailedQueryCase``.
        model: An agentscope 2.x chat model, one per case.
        evidence_nodes: Starting source-evidence full node ids (real or retrieved), shown in the
            hint; None or empty shows none.
        max_iters: ReAct iterations.
        context_window: Compression trigger in tokens.
        keep_recent: Recent-context reserve for compression.
        timeout: Wall-clock limit for the reply in seconds (None: none).

    Returns:
        ``graphtrace.agent_models.AttributionOutcome``: a prediction whose op id exists in the log
        and whose reason passed ``finish_attribution``, or a recorded failure.
    """
    from graphtrace.agent_models import AttributionOutcome, run_attribution_agent

    notebook = CCTraceNotebook.from_graph(graph, evidence_nodes)
    agent = build_obs_agent(
        notebook, model=model, max_iters=max_iters, context_window=context_window, keep_recent=keep_recent
    )
    outcome: AttributionOutcome = await run_attribution_agent(
        agent,
        obs_task_text(case),
        notebook.index.has_op,
        structured_schema=obs_prediction_schema(notebook),
        timeout=timeout,
    )
    if outcome.prediction is not None:
        check = notebook.finish_attribution(
            outcome.prediction.error_type, outcome.prediction.op_id, outcome.prediction.reason
        )
        if "error" in check:
            outcome.failure = "invalid answer: " + check["error"].removeprefix("Error: ")
            outcome.prediction = None
    return outcome
