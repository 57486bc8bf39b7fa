"""The long-context baseline: the whole flattened trace in one prompt, no tools (spec §4.5).

Budgeting fixes the reference (spec §12.13): ``full_log_token_limit`` bounds the whole task
prompt (system prompt, instructions, case, evidence *and* trace, separators included); the
operations that touch the source evidence are always kept; the remaining budget is filled with the
newest operations; every run of dropped operations is marked in the text, and a header says how
much was shown.
"""

from __future__ import annotations

import bisect
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graphtrace.prompts import (
    LONG_CONTEXT_SYSTEM_PROMPT,
    TRACE_ATTRIBUTION_INSTRUCTIONS,
    build_task_prompt,
    format_source_evidence,
)
from obstrace._flatten import BLOCK_SEPARATOR, EMPTY_LOG, FlatBlock, render_operation_blocks
from obstrace._tokens import TokenCounter, default_token_counter

__all__ = [
    "BudgetedTrace",
    "attribute_case_long_context",
    "budget_trace",
    "build_long_context_agent",
    "build_long_context_task",
    "elision_marker",
    "evidence_op_ids",
    "render_source_evidence",
]

_COMPRESSION_TRIGGER = 0.8  # the long-context agent's prompt must stay under agentscope's trigger


@dataclass(frozen=True, kw_only=True)
class BudgetedTrace:
    """A trace cut down to a token budget."""

    text: str
    """The trace text (header and elision markers included)."""
    kept_op_ids: tuple[str, ...]
    """Operations shown, in execution order."""
    elided_op_ids: tuple[str, ...]
    """Operations dropped, in execution order."""
    tokens: int
    """Token count of ``text``."""
    over_budget: bool
    """True when the evidence operations alone exceed the budget (they are kept anyway)."""


def elision_marker(count: int) -> str:
    """The line that stands for ``count`` consecutive operations left out of the trace."""
    noun = "operation" if count == 1 else "operations"
    return f"[... {count} {noun} elided here to fit the token budget ...]"


def _header(shown: int, total: int, budget: int) -> str:
    return (
        f"[Trace cut to a budget of {budget} tokens: {shown} of {total} operations are shown. Every "
        "operation that touches the source evidence is kept, the rest are the newest ones, and each "
        "gap is marked.]"
    )


def _assemble(blocks: Sequence[FlatBlock], kept: set[int], header: str | None) -> list[str]:
    pieces = [header] if header else []
    gap = 0
    for i, block in enumerate(blocks):
        if i in kept:
            if gap:
                pieces.append(elision_marker(gap))
                gap = 0
            pieces.append(block.text)
        else:
            gap += 1
    if gap:
        pieces.append(elision_marker(gap))
    return pieces


def budget_trace(
    blocks: Sequence[FlatBlock],
    token_budget: int,
    *,
    pinned_op_ids: Sequence[str] | set[str] = (),
    token_counter: TokenCounter | None = None,
) -> BudgetedTrace:
    """Cut a chronological list of blocks down to ``token_budget`` tokens.

    Pinned blocks are always kept. The rest of the budget is filled newest first with a
    contiguous recent window (it stops at the first block that does not fit). Separators, the
    header and the elision markers are counted.

    Args:
        blocks: Blocks in execution order (``render_operation_blocks``).
        token_budget: Tokens available for the whole trace text.
        pinned_op_ids: Operations that must stay (those touching the source evidence).
        token_counter: Token counter (default tiktoken ``o200k_base`` or its offline estimate).

    Returns:
        The budgeted trace. If everything fits, the text is the plain flattened log.
    """
    count = token_counter or default_token_counter()
    n = len(blocks)
    costs = [count(block.text) for block in blocks]
    sep = count(BLOCK_SEPARATOR)
    if n == 0:
        return BudgetedTrace(text=EMPTY_LOG, kept_op_ids=(), elided_op_ids=(), tokens=count(EMPTY_LOG), over_budget=False)
    full_total = sum(costs) + sep * (n - 1)
    if full_total <= token_budget:
        text = BLOCK_SEPARATOR.join(block.text for block in blocks)
        ids = tuple(block.op_id for block in blocks)
        return BudgetedTrace(text=text, kept_op_ids=ids, elided_op_ids=(), tokens=full_total, over_budget=False)

    pinned_set = set(pinned_op_ids)
    pinned = sorted(i for i, block in enumerate(blocks) if block.op_id in pinned_set)
    marker_cost = max(count(elision_marker(k)) for k in (1, 2, n))
    header_cost = count(_header(n, n, token_budget))

    suffix_sum = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix_sum[i] = suffix_sum[i + 1] + costs[i]
    pinned_prefix = [0]
    for i in pinned:
        pinned_prefix.append(pinned_prefix[-1] + costs[i])

    def total(suffix_start: int) -> int:
        # Kept = pinned blocks before suffix_start + every block in [suffix_start, n).
        k = bisect.bisect_left(pinned, suffix_start)
        anchors = pinned[:k] + ([suffix_start] if suffix_start < n else [])
        gaps, prev = 0, -1
        for i in anchors:
            gaps += i - prev > 1
            prev = i
        last_kept = n - 1 if suffix_start < n else prev
        gaps += last_kept < n - 1
        pieces = 1 + k + (n - suffix_start) + gaps
        kept_cost = pinned_prefix[k] + suffix_sum[suffix_start]
        return header_cost + kept_cost + gaps * marker_cost + sep * (pieces - 1)

    start = n
    over_budget = total(n) > token_budget
    if over_budget:
        warnings.warn(
            f"the {len(pinned)} operations touching the source evidence need more than the trace budget of "
            f"{token_budget} tokens; they are kept anyway and no other operation is shown",
            RuntimeWarning,
            stacklevel=2,
        )
    else:
        while start > 0 and total(start - 1) <= token_budget:
            start -= 1
    kept = set(pinned) | set(range(start, n))
    header = _header(len(kept), n, token_budget)
    text = BLOCK_SEPARATOR.join(_assemble(blocks, kept, header))
    return BudgetedTrace(
        text=text,
        kept_op_ids=tuple(blocks[i].op_id for i in sorted(kept)),
        elided_op_ids=tuple(blocks[i].op_id for i in range(n) if i not in kept),
        tokens=count(text),
        over_budget=over_budget,
    )


def _node_id(item: Any) -> str:
    return item if isinstance(item, str) else item.full_node_id


def evidence_op_ids(graph: Any, evidence_nodes: Sequence[Any] | None) -> set[str]:
    """Ids of the operations whose edges touch any evidence variable (unknown ids are skipped)."""
    ops: set[str] = set()
    for item in evidence_nodes or ():
        try:
            ops.update(op.op_id for op in graph.get_operations_by_variable(_node_id(item)))
        except (KeyError, LookupError):
            continue
    return ops


def render_source_evidence(graph: Any, evidence_nodes: Sequence[Any] | None) -> str:
    """Render the evidence list of the long-context prompt (unknown ids: warning, skipped)."""
    variables = []
    for item in evidence_nodes or ():
        node_id = _node_id(item)
        try:
            variables.append(graph.get_variable(node_id))
        except (KeyError, LookupError):
            warnings.warn(f"source evidence {node_id!r} is not in the graph; skipped", stacklevel=2)
    return format_source_evidence(variables)


def build_long_context_task(
    graph: Any,
    case: Any,
    *,
    evidence_nodes: Sequence[Any] | None = None,
    full_log_token_limit: int = 600_000,
    include_variable_ids: bool = True,
    system_prompt: str = LONG_CONTEXT_SYSTEM_PROMPT,
    token_counter: TokenCounter | None = None,
) -> tuple[str, BudgetedTrace]:
    """Render the long-context task prompt, with the trace budgeted to fit the token limit.

    Args:
        graph: The execution graph.
        case: The ``FailedQueryCase``.
        evidence_nodes: Source-evidence full node ids (or handles); their operations are kept.
        full_log_token_limit: Token budget of the whole prompt (system prompt included).
        include_variable_ids: Show variable ids in the trace.
        system_prompt: Counted against the budget.
        token_counter: Token counter (default tiktoken ``o200k_base`` or its offline estimate).

    Returns:
        ``(task_text, budgeted_trace)``.

    Raises:
        ValueError: If ``full_log_token_limit`` < 1.
    """
    if full_log_token_limit < 1:
        raise ValueError(f"full_log_token_limit must be >= 1, got {full_log_token_limit}")
    count = token_counter or default_token_counter()
    fields = {
        "instructions": TRACE_ATTRIBUTION_INSTRUCTIONS,
        "question": case.query,
        "golden_answer": case.golden_answer,
        "prediction": case.prediction,
        "source_evidence": render_source_evidence(graph, evidence_nodes),
    }
    overhead = count(build_task_prompt("long_context", **fields)) + count(system_prompt)
    budget = max(0, full_log_token_limit - overhead)
    blocks = render_operation_blocks(graph, include_variable_ids=include_variable_ids)
    trace = budget_trace(
        blocks, budget, pinned_op_ids=evidence_op_ids(graph, evidence_nodes), token_counter=count
    )
    return build_task_prompt("long_context", **fields, execution_trace=trace.text), trace


def build_long_context_agent(*, model: Any, max_iters: int = 200, system_prompt: str = LONG_CONTEXT_SYSTEM_PROMPT) -> Any:
    """Build the tool-less long-context agent (it only gives the structured answer)."""
    from agentscope.agent import Agent, InjectionConfig, ReActConfig

    if max_iters < 1:
        raise ValueError(f"max_iters must be >= 1, got {max_iters}")
    return Agent(
        name="memtrace",
        system_prompt=system_prompt,
        model=model,
        react_config=ReActConfig(max_iters=max_iters),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )


async def attribute_case_long_context(
    graph: Any,
    case: Any,
    *,
    model: Any,
    evidence_nodes: Sequence[Any] | None = None,
    full_log_token_limit: int = 600_000,
    max_iters: int = 200,
    timeout: float | None = None,
    token_counter: TokenCounter | None = None,
) -> Any:
    """Attribute one failed case with the long-context baseline; never raises for model misbehaviour.

    The prompt budget is ``min(full_log_token_limit, 0.8 × model.context_size)`` so that
    agentscope never compresses the trace away (a warning says when the limit was lowered).

    Args:
        graph: The case's execution graph (read only).
        case: The ``FailedQueryCase``.
        model: An agentscope 2.x chat model, one per case.
        evidence_nodes: Source-evidence full node ids; rendered in the prompt and always kept in
            the trace.
        full_log_token_limit: Token budget of the whole prompt.
        max_iters: ReAct iterations (the answer normally comes in the first).
        timeout: Wall-clock limit in seconds (None: none).
        token_counter: Token counter override.

    Returns:
        ``graphtrace.AttributionOutcome`` (op ids are checked against the graph; the
        reason must explain the local fault, as in ``CCTraceNotebook.finish_attribution``).
    """
    from obstrace.agent import run_checked_attribution

    limit = full_log_token_limit
    model_cap = int(_COMPRESSION_TRIGGER * getattr(model, "context_size", limit / _COMPRESSION_TRIGGER))
    if model_cap < limit:
        warnings.warn(
            f"full_log_token_limit {limit} exceeds 80% of the model's context ({model_cap} tokens); using {model_cap}",
            RuntimeWarning,
            stacklevel=2,
        )
        limit = model_cap
    task_text, trace = build_long_context_task(
        graph, case, evidence_nodes=evidence_nodes, full_log_token_limit=limit, token_counter=token_counter
    )
    agent = build_long_context_agent(model=model, max_iters=max_iters)
    # Answers are checked against the operations of the whole graph, shown or not.
    op_ids = frozenset(op.op_id for op in graph.get_all_operations())
    return await run_checked_attribution(agent, task_text, op_ids.__contains__, timeout=timeout)
