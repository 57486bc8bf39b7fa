"""Flattening graphs into the operation-block log (spec-attribution §4.1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from obstrace import estimate_tokens, flatten_execution_graph, render_operation_blocks
from obstrace._flatten import EMPTY_LOG, xml_field

UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
GOLDEN_DIR = Path(__file__).parent / "golden"
FIXTURE_NAMES = (
    "sc012_toy_construction.json",
    "sc012_toy_search.json",
    "sc012_toy_evaluation.json",
    "sc012_edge_cases.json",
    "sc012_memtracebench_like.json",
)


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN_DIR / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden {path}; run with UPDATE_GOLDEN=1 once"
    assert text == path.read_text(encoding="utf-8")


def test_edge_cases_log_matches_golden(load_graph):
    _check_golden("sc012_edge_cases.log", flatten_execution_graph(load_graph("sc012_edge_cases.json")))


def test_first_blocks_with_variable_ids_match_golden(load_graph):
    blocks = render_operation_blocks(load_graph("sc012_memtracebench_like.json"), include_variable_ids=True)
    _check_golden("sc012_memtracebench_like.head3.log", "\n\n".join(b.text for b in blocks[:3]))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_operation_appears_once_in_execution_order(load_graph, name):
    graph = load_graph(name)
    text = flatten_execution_graph(graph)
    expected = [op.op_id for op in sorted(graph.get_all_operations(), key=lambda op: (op.created_at, op.op_id))]
    assert re.findall(r"^### Operation (\S+)$", text, flags=re.MULTILINE) == expected


def test_variable_roles_follow_in_and_out_degree_within_the_op(make_graph):
    graph = make_graph([
        {"op_id": "op-1", "created_at": "2026-01-01 00:00:01.000",
         "edges": [("a@1", "m@1"), ("m@1", "z@1"), ("b@1", "z@1"), ("s@1", "s@1")]},
    ])
    text = flatten_execution_graph(graph, include_variable_ids=True)
    sections = re.split(r"^(Input variables:|Output variables:|Intermediate variables:)$", text, flags=re.MULTILINE)
    by_label = {sections[i]: re.findall(r"<full_node_id>(.*?)</full_node_id>", sections[i + 1])
                for i in range(1, len(sections), 2)}
    # Sorted by full node id, not by time; a self-loop is intermediate.
    assert by_label == {"Input variables:": ["a@1", "b@1"], "Output variables:": ["z@1"],
                        "Intermediate variables:": ["m@1", "s@1"]}
    assert list(by_label) == ["Input variables:", "Output variables:", "Intermediate variables:"]


def test_documented_layout_has_no_variable_identity(load_graph):
    graph = load_graph("sc012_toy_evaluation.json")
    text = flatten_execution_graph(graph)
    assert "<full_node_id>" not in text
    assert "U1:D1:1@1" not in text
    assert "<full_node_id>U1:D1:1@1</full_node_id>" in flatten_execution_graph(graph, include_variable_ids=True)


def test_metadata_identity_keys_are_removed_recursively(make_graph):
    graph = make_graph([{
        "op_id": "op-1", "created_at": "2026-01-01 00:00:01.000", "edges": [("a@1", "b@1")],
        "metadata": {"name": "x", "keep": {"full_node_id": "a@1", "node_id": "a@1", "v": "é"}, "full_name": "a"},
    }])
    text = flatten_execution_graph(graph)
    assert '<metadata>{"keep": {"v": "é"}}</metadata>' in text


def test_ops_without_edges_render_header_only_and_empty_graph_has_placeholder(make_graph):
    graph = make_graph([{"op_id": "op-lonely", "created_at": "2026-01-01 00:00:01.000", "edges": [],
                         "op_name": "solo", "comment": "line one\nline two"}])
    assert flatten_execution_graph(graph) == (
        "### Operation op-lonely\ncreated_at: 2026-01-01 00:00:01.000\nop_name: solo\ncategory: operation\n"
        "<comment>\n  line one\n  line two\n</comment>"
    )
    assert flatten_execution_graph(make_graph([])) == EMPTY_LOG


def test_xml_field_escapes_and_indents_multiline_values():
    assert xml_field("value", None) == []
    assert xml_field("value", "a<b>&c") == ["<value>a&lt;b&gt;&amp;c</value>"]
    assert xml_field("value", "x\n</value>", 2) == ["  <value>", "    x", "    &lt;/value&gt;", "  </value>"]


def test_header_fields_cannot_forge_lines(make_graph):
    graph = make_graph([{"op_id": "op-1", "created_at": "2026-01-01 00:00:01.000", "edges": [],
                         "op_name": "evil\n### Operation op-forged", "category": "x\nInput variables:"}])
    text = flatten_execution_graph(graph)
    assert "op_name: evil\\n### Operation op-forged" in text
    assert re.findall(r"^### Operation", text, flags=re.MULTILINE) == ["### Operation"]


def test_token_limit_keeps_newest_blocks_and_stops_at_first_overflow(load_graph):
    graph = load_graph("sc012_toy_evaluation.json")
    blocks = render_operation_blocks(graph)
    budget = estimate_tokens(blocks[-1].text) + estimate_tokens("\n\n") + estimate_tokens(blocks[-2].text)
    text = flatten_execution_graph(graph, token_limit=budget, token_counter=estimate_tokens)
    assert text == blocks[-2].text + "\n\n" + blocks[-1].text
    assert flatten_execution_graph(graph, token_limit=budget - 1, token_counter=estimate_tokens) == blocks[-1].text
    assert flatten_execution_graph(graph, token_limit=0, token_counter=estimate_tokens) == EMPTY_LOG
    with pytest.raises(ValueError, match="token_limit"):
        flatten_execution_graph(graph, token_limit=-1)
