"""Prompt assembly: instructions, priors, template choice and evidence rendering."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from graphtrace import ERROR_TYPES
from graphtrace.prompts import (
    GRAPH_ATTRIBUTION_INSTRUCTIONS,
    NO_SOURCE_EVIDENCE,
    SYSTEM_PRIOR_INSTRUCTIONS,
    TASK_PROMPT_TEMPLATES,
    TRACE_ATTRIBUTION_INSTRUCTIONS,
    build_instructions,
    build_task_prompt,
    choose_template,
    format_query_node,
    format_source_evidence,
)


def test_instructions_cover_every_error_type_and_differ_by_medium():
    for error_type in ERROR_TYPES:
        assert f"- {error_type}:" in GRAPH_ATTRIBUTION_INSTRUCTIONS
        assert f"- {error_type}:" in TRACE_ATTRIBUTION_INSTRUCTIONS
    assert "## Reading the execution graph" in GRAPH_ATTRIBUTION_INSTRUCTIONS
    assert "## Reading the execution graph" not in TRACE_ATTRIBUTION_INSTRUCTIONS
    assert "add its final outputs to the to-explore frontier" not in TRACE_ATTRIBUTION_INSTRUCTIONS
    assert "grounded in trace evidence" in TRACE_ATTRIBUTION_INSTRUCTIONS
    assert "grounded in graph evidence" in GRAPH_ATTRIBUTION_INSTRUCTIONS


def test_priors_are_added_to_graph_instructions_only():
    assert set(SYSTEM_PRIOR_INSTRUCTIONS) == {"rag", "mem0", "evermemos", "long_context"}
    with_prior = build_instructions(memory_system="rag")
    assert with_prior == f"{GRAPH_ATTRIBUTION_INSTRUCTIONS}\n\n{SYSTEM_PRIOR_INSTRUCTIONS['rag']}"
    assert build_instructions(graph=False, memory_system="rag") == TRACE_ATTRIBUTION_INSTRUCTIONS
    assert build_instructions(custom_prior="P", memory_system="rag").endswith("\n\nP")
    assert build_instructions() == GRAPH_ATTRIBUTION_INSTRUCTIONS
    with pytest.warns(UserWarning, match="no built-in system prior"):
        assert build_instructions(memory_system="letta") == GRAPH_ATTRIBUTION_INSTRUCTIONS


@pytest.mark.parametrize(
    ("strategy", "kind", "key"),
    [
        ("graph_search", None, "without_initial_nodes"),
        ("graph_search", "real", "with_source_evidence_initial_nodes"),
        ("graph_search", "pseudo", "with_pseudo_source_evidence_initial_nodes"),
        ("operation_block_search", "real", "operation_block_search"),
        ("long_context", None, "long_context"),
    ],
)
def test_template_choice(strategy, kind, key):
    assert choose_template(exploration_strategy=strategy, evidence_kind=kind) == key


def test_template_choice_rejects_unknown_values():
    with pytest.raises(ValueError, match="unknown exploration_strategy"):
        choose_template(exploration_strategy="bfs")
    with pytest.raises(ValueError, match="unknown evidence_kind"):
        choose_template(evidence_kind="fake")


def test_evidence_and_query_rendering():
    a = SimpleNamespace(
        full_node_id="U1:D1:1@1", created_at="2026-01-01 00:00:00.000", raw_value='{"content": "{x}"}'
    )
    b = SimpleNamespace(full_node_id="U1:D1:2@1", created_at="2026-01-02 00:00:00.000", raw_value="hi")
    assert format_source_evidence([a, b]) == (
        "### Source Evidence 1\nFull Node Identifier: U1:D1:1@1\n"
        'Creation Timestamp In Execution Graph: 2026-01-01 00:00:00.000\nValue: {"content": "{x}"}\n\n'
        "### Source Evidence 2\nFull Node Identifier: U1:D1:2@1\n"
        "Creation Timestamp In Execution Graph: 2026-01-02 00:00:00.000\nValue: hi"
    )
    assert format_source_evidence([]) == NO_SOURCE_EVIDENCE
    assert format_query_node(b) == "Full Node Identifier: U1:D1:2@1\nValue: hi"


def test_task_prompt_keeps_braces_in_values_and_orders_sections():
    text = build_task_prompt(
        "long_context",
        instructions="I",
        question="{q}",
        golden_answer="G",
        prediction="P",
        source_evidence="E",
        execution_trace="T {x}",
    )
    assert (
        text.index("Question:\n{q}")
        < text.index("Golden answer:\nG")
        < text.index("Model's wrong answer:\nP")
    )
    assert text.endswith("Source evidence:\nE\n\nExecution trace:\nT {x}")
    assert set(TASK_PROMPT_TEMPLATES) >= {"operation_block_search", "long_context"}
    with pytest.raises(ValueError, match="unknown task template"):
        build_task_prompt("nope", instructions="", question="", golden_answer="", prediction="")
