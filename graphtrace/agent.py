"""The graph-search attribution agent: a notebook, an agentscope 2.x ``Agent`` and a task text.

How the reference's 1.x ``ReActAgent`` subclass maps onto 2.x:

* notebook tools → ``FunctionTool`` objects in the agent's ``Toolkit`` (always allowed);
* hint before every model call, never kept → :class:`~graphtrace.agent_models.HintMiddleware`;
* structured final answer → ``reply(..., structured_schema=...)`` with an op-id-checked schema;
* ``max_iters`` → ``ReActConfig(max_iters=...)``;
* context compression with ``context_window`` (trigger), ``max_context_limit`` (hard cap) and
  ``keep_recent`` (recent tool exchanges kept verbatim) → ``ContextConfig`` on a model whose
  ``context_size`` is the hard cap, plus :class:`KeepRecentToolCalls`, which sizes the reserved
  tail to the last ``keep_recent`` tool calls.

Example (any OpenAI-compatible endpoint)::

    import asyncio
    from graphtrace import attribute_case_graph_search
    from membase.clients import build_openai_chat_model
    from toolkits.bench_utils import load_memtracebench

    graphs, cases = load_memtracebench("data/MemTraceBench", "mem0")
    model = build_openai_chat_model("gpt-4.1-mini", api_key, "https://api.openai.com/v1")
    outcome = asyncio.run(attribute_case_graph_search(
        graphs[0], cases[0], model=model,
        starting_node_ids=cases[0].source_evidence_full_node_ids, evidence_kind="real"))
    print(outcome.prediction or outcome.failure)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentscope.agent import Agent, ContextConfig, InjectionConfig, ReActConfig
from agentscope.message import Msg, ToolCallBlock, ToolResultBlock
from agentscope.middleware import MiddlewareBase
from agentscope.tool import Toolkit

from .agent_models import AttributionOutcome, HintMiddleware, run_attribution_agent
from .notebook import GraphTraceNotebook
from .prompts import (
    GRAPH_SEARCH_SYSTEM_PROMPT,
    build_instructions,
    build_task_prompt,
    choose_template,
    format_query_node,
    format_source_evidence,
)

__all__ = [
    "GraphSearchSetup",
    "KeepRecentToolCalls",
    "attribute_case_graph_search",
    "build_graph_search_agent",
    "context_config_for",
    "graph_op_validator",
]

_NO_PSEUDO_EVIDENCE = (
    "The retriever found no candidate message nodes for this question; only the query node is on the "
    "frontier. Find the evidence by exploring the graph."
)


def context_config_for(context_window: int, max_context_limit: int) -> ContextConfig:
    """Compression settings for a model whose ``context_size`` is ``max_context_limit``.

    Compression triggers once the context passes ``context_window`` tokens (agentscope allows a
    trigger of at most 90 % of the context size, so a larger window is clamped there).

    Raises:
        ValueError: non-positive limits.
    """
    if context_window < 1 or max_context_limit < 1:
        raise ValueError(
            f"context_window and max_context_limit must be >= 1, got {context_window} and {max_context_limit}"
        )
    trigger = min(0.9, context_window / max_context_limit)
    return ContextConfig(trigger_ratio=trigger, reserve_ratio=min(0.1, trigger / 2), context_buffer_ratio=0.0)


class KeepRecentToolCalls(MiddlewareBase):
    """Before a compression, size the reserved tail so the last ``keep_recent`` tool calls survive.

    agentscope keeps a token budget (``reserve_ratio`` × context size) uncompressed; the reference
    kept a number of tool-call groups instead. This middleware measures the last ``keep_recent``
    tool calls with their results and passes a config whose reserve covers them (never above the
    trigger, so a compression always frees something).
    """

    def __init__(self, keep_recent: int) -> None:
        if keep_recent < 0:
            raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
        self.keep_recent = keep_recent

    async def on_compress_context(
        self, agent: Any, input_kwargs: dict, next_handler: Callable[..., Any]
    ) -> Any:
        """Recompute ``reserve_ratio`` from the recent tool exchanges, then compress."""
        cfg: ContextConfig = input_kwargs.get("context_config") or agent.context_config
        blocks = [
            b
            for m in agent.state.context
            for b in m.content
            if isinstance(b, (ToolCallBlock, ToolResultBlock))
        ]
        call_ids = (
            [b.id for b in blocks if isinstance(b, ToolCallBlock)][-self.keep_recent :]
            if self.keep_recent
            else []
        )
        recent = [b for b in blocks if b.id in set(call_ids)]
        size = agent.model.context_size
        if recent and size:
            tokens = await agent.model.count_tokens(
                [Msg(name=agent.name, content=recent, role="assistant")], None
            )
            ratio = min(max(tokens / size, 0.001), cfg.trigger_ratio * 0.9)
            cfg = cfg.model_copy(update={"reserve_ratio": ratio})
        return await next_handler(**{**input_kwargs, "context_config": cfg})


def graph_op_validator(graph: Any) -> Callable[[str], bool]:
    """Return a membership test for the operation ids of a graph."""
    op_ids = frozenset(op.op_id for op in graph.get_all_operations())
    return op_ids.__contains__


@dataclass(kw_only=True)
class GraphSearchSetup:
    """Everything needed to run the graph-search agent on one case."""

    agent: Agent
    notebook: GraphTraceNotebook
    task_text: str
    validate_op_id: Callable[[str], bool]
    hints: HintMiddleware


def build_graph_search_agent(
    graph: Any,
    case: Any,
    *,
    model: Any,
    max_trace_nodes: int | None = 16,
    max_iters: int = 200,
    starting_node_ids: Sequence[str] | None = None,
    evidence_kind: Literal["real", "pseudo"] | None = None,
    memory_system: str | None = None,
    custom_prior: str | None = None,
    context_window: int = 272_000,
    max_context_limit: int = 1_000_000,
    keep_recent: int = 3,
    name: str = "memtrace",
    system_prompt: str = GRAPH_SEARCH_SYSTEM_PROMPT,
    clock: Callable[[], str] | None = None,
) -> GraphSearchSetup:
    """Build a ready graph-search agent for one failed case.

    With ``evidence_kind`` set, the notebook is initialised directly with the query node and the
    starting nodes (an empty list leaves only the query node); without it, the agent has to call
    ``initialize_execution_graph`` itself and starts from the synthetic root.

    Args:
        graph: The case's ``ExecNetwork`` (not modified; the notebook works on a copy).
        case: A :class:`~toolkits.bench_utils.FailedQueryCase` (or anything with
            ``query_full_node_id``, ``query``, ``golden_answer``, ``prediction``).
        model: An agentscope chat model used only by this agent (its ``context_size`` is set to
            ``max_context_limit``).
        max_trace_nodes: Frontier cap (None: no cap).
        max_iters: Reasoning-acting iterations before the agent must answer.
        starting_node_ids: Evidence nodes to start from (annotated or retrieved).
        evidence_kind: ``"real"`` (annotated evidence), ``"pseudo"`` (retrieved candidates) or
            None (no starting nodes).
        memory_system: Built-in system prior to add (``rag``, ``mem0``, ``evermemos``,
            ``long_context``); None for no prior.
        custom_prior: Prior text replacing the built-in one.
        context_window: Context tokens that trigger compression.
        max_context_limit: Hard cap on context tokens (the model's context size).
        keep_recent: Recent tool calls kept verbatim through a compression.
        name: Agent name.
        system_prompt: Agent system prompt.
        clock: Timestamp source for the notebook (tests).

    Returns:
        The agent, its notebook, the task text and the op-id validator.

    Raises:
        ValueError: the query node is not in the graph, or inconsistent arguments.
    """
    if evidence_kind is None and starting_node_ids is not None:
        raise ValueError(
            "starting_node_ids were given without evidence_kind; pass evidence_kind='real' or 'pseudo'"
        )
    if case.query_full_node_id not in graph:
        raise ValueError(
            f"query node {case.query_full_node_id!r} is not in the execution graph; check the case's query_full_node_id"
        )
    notebook = GraphTraceNotebook(graph, max_trace_nodes=max_trace_nodes, include_metadata=False, clock=clock)
    query_variable = graph.get_variable(case.query_full_node_id)
    template = choose_template(exploration_strategy="graph_search", evidence_kind=evidence_kind)
    source_evidence = ""
    if evidence_kind is not None:
        evidence_ids = []
        for full_node_id in starting_node_ids or []:
            if full_node_id in graph:
                evidence_ids.append(full_node_id)
            else:
                warnings.warn(
                    f"starting node {full_node_id!r} of query {case.query_full_node_id!r} is not in the graph; skipped",
                    stacklevel=2,
                )
        evidence_ids = [i for i in dict.fromkeys(evidence_ids) if i != case.query_full_node_id]
        notebook.start([case.query_full_node_id, *evidence_ids])
        if evidence_kind == "pseudo" and not evidence_ids:
            source_evidence = _NO_PSEUDO_EVIDENCE
        else:
            source_evidence = format_source_evidence([graph.get_variable(i) for i in evidence_ids])
    task_text = build_task_prompt(
        template,
        instructions=build_instructions(graph=True, memory_system=memory_system, custom_prior=custom_prior),
        question=case.query,
        golden_answer=case.golden_answer,
        prediction=case.prediction,
        query_node=format_query_node(query_variable),
        source_evidence=source_evidence,
    )
    model.context_size = max_context_limit
    hints = HintMiddleware(notebook.get_hint)
    agent = Agent(
        name=name,
        system_prompt=system_prompt,
        model=model,
        toolkit=Toolkit(tools=notebook.list_tools()),
        middlewares=[hints, KeepRecentToolCalls(keep_recent)],
        react_config=ReActConfig(max_iters=max_iters),
        context_config=context_config_for(context_window, max_context_limit),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    return GraphSearchSetup(
        agent=agent,
        notebook=notebook,
        task_text=task_text,
        validate_op_id=graph_op_validator(graph),
        hints=hints,
    )


async def attribute_case_graph_search(
    graph: Any,
    case: Any,
    *,
    model: Any,
    timeout: float | None = None,
    **build_kwargs: Any,
) -> AttributionOutcome:
    """Attribute one failed case with the graph-search agent; never raises for case or model problems.

    Args:
        graph: The case's ``ExecNetwork``.
        case: The failed case.
        model: A fresh agentscope chat model for this case.
        timeout: Wall-clock limit in seconds for the agent run.
        **build_kwargs: Passed to :func:`build_graph_search_agent`.

    Returns:
        The prediction, or a recorded failure (bad case data, no answer, unknown op id, API error,
        timeout).
    """
    try:
        setup = build_graph_search_agent(graph, case, model=model, **build_kwargs)
    except ValueError as exc:
        return AttributionOutcome(prediction=None, failure=f"bad case: {exc}")
    return await run_attribution_agent(setup.agent, setup.task_text, setup.validate_op_id, timeout=timeout)
