"""The long-context baseline and its evidence-preserving budget (spec §4.5, reference bug 13)."""

from __future__ import annotations

import asyncio
import re

import pytest

from graphtrace import answer
from graphtrace.prompts import LONG_CONTEXT_SYSTEM_PROMPT, NO_SOURCE_EVIDENCE
from membase.clients import ScriptedChatModel
from obstrace import (
    attribute_case_long_context,
    budget_trace,
    build_long_context_task,
    estimate_tokens,
    flatten_execution_graph,
    render_operation_blocks,
)
from obstrace.long_context import elision_marker, evidence_op_ids, render_source_evidence

REASON = (
    "The extraction op read the Sweden message; the decision that followed wrote Norway into "
    "memory, and no earlier operation handled this message at all."
)


@pytest.fixture()
def blocks(bench_case):
    return render_operation_blocks(bench_case[0], include_variable_ids=True)


def _ops_in(text: str) -> list[str]:
    return re.findall(r"^### Operation (\S+)$", text, flags=re.MULTILINE)


def test_everything_fits_gives_the_plain_log(blocks, bench_case):
    trace = budget_trace(blocks, 10**9, token_counter=estimate_tokens)
    assert trace.text == flatten_execution_graph(bench_case[0], include_variable_ids=True)
    assert not trace.elided_op_ids and not trace.over_budget and len(trace.kept_op_ids) == 16


def test_tight_budget_keeps_evidence_ops_and_newest_ops_and_marks_gaps(blocks):
    pinned = blocks[2].op_id
    budget = sum(estimate_tokens(b.text) for b in blocks) // 3
    trace = budget_trace(blocks, budget, pinned_op_ids={pinned}, token_counter=estimate_tokens)
    kept = _ops_in(trace.text)
    assert kept == list(trace.kept_op_ids) and pinned in kept
    assert kept[-1] == blocks[-1].op_id and trace.elided_op_ids
    assert estimate_tokens(trace.text) <= budget and trace.tokens == estimate_tokens(trace.text)
    # The kept newest ops form one contiguous window ending with the newest block.
    order = [b.op_id for b in blocks]
    tail = kept[1:]
    assert tail == order[order.index(tail[0]):]
    # Gaps: ops 0-1 before the pinned op, then the ops between it and the window.
    markers = re.findall(r"^\[\.\.\. (\d+) operations? elided here", trace.text, flags=re.MULTILINE)
    assert [int(m) for m in markers] == [2, order.index(tail[0]) - 3]
    assert trace.text.startswith(f"[Trace cut to a budget of {budget} tokens: {len(kept)} of 16 operations")
    # One more block (plus its separator) would not have fitted.
    assert trace.tokens + estimate_tokens(blocks[order.index(tail[0]) - 1].text) + 1 > budget


def test_budget_without_evidence_is_a_newest_window(blocks):
    trace = budget_trace(blocks, 3_000, token_counter=estimate_tokens)
    kept = _ops_in(trace.text)
    assert kept == [b.op_id for b in blocks[-len(kept):]]
    assert trace.text.count("elided here") == 1 and elision_marker(16 - len(kept)) in trace.text


def test_evidence_ops_over_the_budget_are_kept_with_a_warning(blocks):
    with pytest.warns(RuntimeWarning, match="kept anyway"):
        trace = budget_trace(blocks, 10, pinned_op_ids={blocks[0].op_id}, token_counter=estimate_tokens)
    assert trace.over_budget and _ops_in(trace.text) == [blocks[0].op_id]
    assert trace.text.endswith(elision_marker(15))


def test_task_prompt_fits_the_limit_and_keeps_the_evidence_operation(bench_case):
    graph, case, _ = bench_case
    evidence_ops = evidence_op_ids(graph, case.source_evidence_full_node_ids)
    assert evidence_ops == {op.op_id for op in graph.get_operations_by_variable("U1:D2:2@1")}
    limit = 6_000
    task, trace = build_long_context_task(
        graph, case, evidence_nodes=case.source_evidence_full_node_ids, full_log_token_limit=limit,
        token_counter=estimate_tokens)
    assert estimate_tokens(task) + estimate_tokens(LONG_CONTEXT_SYSTEM_PROMPT) <= limit
    assert evidence_ops <= set(trace.kept_op_ids) and trace.elided_op_ids
    assert "Source evidence:\n### Source Evidence 1\nFull Node Identifier: U1:D2:2@1\n" in task
    assert task.index("Golden answer:\nSweden") < task.index("Execution trace:\n[Trace cut to a budget")
    # The evidence op is old: with plain newest-first budgeting it would have been dropped.
    assert not evidence_ops & set(_ops_in(flatten_execution_graph(
        graph, token_limit=trace.tokens, include_variable_ids=True, token_counter=estimate_tokens)))


def test_evidence_rendering_placeholders(bench_case):
    graph, _, _ = bench_case
    assert render_source_evidence(graph, []) == NO_SOURCE_EVIDENCE
    with pytest.warns(UserWarning, match="'ghost@1' is not in the graph"):
        assert render_source_evidence(graph, ["ghost@1"]) == NO_SOURCE_EVIDENCE
    with pytest.raises(ValueError, match="full_log_token_limit"):
        build_long_context_task(graph, bench_case[1], full_log_token_limit=0, token_counter=estimate_tokens)


def test_long_context_agent_answers_in_one_call(bench_case):
    graph, case, annotation = bench_case
    model = ScriptedChatModel([answer("ExtractionError", annotation["final_op_id"], REASON)])
    outcome = asyncio.run(attribute_case_long_context(
        graph, case, model=model, evidence_nodes=case.source_evidence_full_node_ids,
        full_log_token_limit=100_000, token_counter=estimate_tokens))
    assert outcome.failure is None and outcome.prediction.op_id == annotation["final_op_id"]
    (call,) = model.calls
    assert call.tools == ["GenerateStructuredOutput"]
    task = call.messages[1]["content"][0]["text"]
    assert task.endswith(flatten_execution_graph(graph, include_variable_ids=True))


def test_long_context_rejects_unknown_operations(bench_case):
    graph, case, _ = bench_case
    model = ScriptedChatModel([answer("ExtractionError", "op-ghost", REASON)] * 10)
    outcome = asyncio.run(attribute_case_long_context(
        graph, case, model=model, max_iters=2, token_counter=estimate_tokens))
    assert outcome.prediction is None and outcome.failure


def test_limit_is_lowered_to_fit_the_model_context(bench_case):
    graph, case, annotation = bench_case
    model = ScriptedChatModel([answer("ResponseError", annotation["final_op_id"], REASON)], context_size=10_000)
    with pytest.warns(RuntimeWarning, match="using 8000"):
        outcome = asyncio.run(attribute_case_long_context(
            graph, case, model=model, full_log_token_limit=600_000, token_counter=estimate_tokens))
    assert outcome.prediction is not None
    task = model.calls[0].messages[1]["content"][0]["text"]
    assert estimate_tokens(task) <= 8_000
