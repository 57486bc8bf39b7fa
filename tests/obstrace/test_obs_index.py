"""TraceIndex parsing and grep (spec-attribution §4.2, reference bug 12)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from obstrace import PatternError, PatternTimeoutError, TraceIndex, block_preview, flatten_execution_graph

FIXTURES = ("sc012_toy_evaluation.json", "sc012_edge_cases.json", "sc012_memtracebench_like.json")
ADVERSARIAL = [
    "### Operation op-forged\ncreated_at: 1999-01-01 00:00:00.000\nop_name: forged",
    "Input variables:\nOutput variables:\nIntermediate variables:\nInputs:\nOutputs:",
    "</value></variable>\n### Operation op-x\n<comment>fake</comment>",
    "op-looks-like-an-id and & < > entities &lt;",
]


def _sorted_ops(graph):
    return sorted(graph.get_all_operations(), key=lambda op: (op.created_at, op.op_id))


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("with_ids", [False, True])
def test_blocks_round_trip_ids_ranges_and_fields(load_graph, name, with_ids):
    graph = load_graph(name)
    text = flatten_execution_graph(graph, include_variable_ids=with_ids)
    index = TraceIndex(text)
    ops = _sorted_ops(graph)
    assert index.op_ids == [op.op_id for op in ops]
    assert index.blocks[0].char_start == 1 and index.blocks[-1].char_end == len(text)
    for block, op in zip(index.blocks, ops, strict=True):
        assert index.text[block.char_start - 1 : block.char_end] == block.full_text
        assert block.full_text.startswith(f"### Operation {op.op_id}\n")
        assert (block.created_at, block.op_name, block.category) == (op.created_at, str(op.op_name), op.category)
        assert block.comment == (op.comment or "")
        assert index.get(op.op_id) is block and index.has_op(op.op_id)
    assert not index.has_op("op-missing")


def test_sections_hold_exactly_their_variables(load_graph):
    graph = load_graph("sc012_memtracebench_like.json")
    index = TraceIndex(flatten_execution_graph(graph, include_variable_ids=True))
    for block in index.blocks:
        edges = [e for e in graph.get_all_edges() if e.op_id == block.op_id]
        sources = {e.source_full_node_id for e in edges}
        targets = {e.target_full_node_id for e in edges}
        ids = {s: re.findall(r"<full_node_id>(.*?)</full_node_id>", block.section_text(s))
               for s in ("input", "output", "intermediate")}
        assert set(ids["input"]) == sources - targets
        assert set(ids["output"]) == targets - sources
        assert set(ids["intermediate"]) == sources & targets
        for section, offset in block.section_offsets.items():
            text = block.section_text(section)
            assert block.full_text[offset : offset + len(text)] == text


def _adversarial_graph(make_graph, value: str, comment: str):
    return make_graph([
        {"op_id": "op-1", "created_at": "2026-01-01 00:00:01.000", "comment": comment, "edges": [("a@1", "b@1")],
         "values": {"a@1": value, "b@1": value}, "comments": {"a@1": comment}},
        {"op_id": "op-2", "created_at": "2026-01-01 00:00:02.000", "edges": [("b@1", "c@1")],
         "values": {"c@1": "tail " + value}},
    ])


@pytest.mark.parametrize("value", ADVERSARIAL)
def test_values_with_markers_and_labels_do_not_corrupt_the_index(make_graph, value):
    graph = _adversarial_graph(make_graph, value, comment=value)
    index = TraceIndex(flatten_execution_graph(graph, include_variable_ids=True))
    assert index.op_ids == ["op-1", "op-2"]
    first = index.blocks[0]
    assert first.created_at == "2026-01-01 00:00:01.000" and first.op_name == "None"
    assert first.comment == value  # unescaped and de-indented back to the stored text
    assert re.findall(r"<full_node_id>(.*?)</full_node_id>", first.input_text) == ["a@1"]
    assert re.findall(r"<full_node_id>(.*?)</full_node_id>", first.output_text) == ["b@1"]
    assert first.intermediate_text == ""


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.lists(
        st.sampled_from(list("ab#:<>&/ \n\t") + ["### Operation ", "Input variables:", "Outputs:", "op-"]),
        max_size=40,
    ).map("".join),
    comment=st.lists(st.sampled_from(list("xy\n<>&") + ["### Operation op-z", "Inputs:"]), max_size=20).map("".join),
)
def test_round_trip_holds_for_arbitrary_values(make_graph, value, comment):
    graph = _adversarial_graph(make_graph, value, comment)
    index = TraceIndex(flatten_execution_graph(graph, include_variable_ids=True))
    assert index.op_ids == ["op-1", "op-2"]
    assert index.blocks[0].comment == comment.strip()
    for block in index.blocks:
        assert index.text[block.char_start - 1 : block.char_end] == block.full_text


def test_text_without_markers_and_preamble_blocks():
    assert [b.op_id for b in TraceIndex("just some notes about op-123abc").blocks] == ["op-123abc"]
    assert TraceIndex("free text").blocks[0].op_id == "UNKNOWN_OP_0"
    index = TraceIndex("  preamble\n\n### Operation op-a\ncreated_at: t1\n\n### Operation op-b\ncategory: c  ")
    assert index.op_ids == ["UNKNOWN_OP_0", "op-a", "op-b"]
    assert [(b.char_start, b.char_end) for b in index.blocks] == [(1, 8), (11, 43), (46, 75)]
    assert index.blocks[2].category == "c"
    assert block_preview(index.blocks[1]) == {
        "op_id": "op-a", "order": 1, "char_start": 11, "char_end": 43, "created_at": "t1",
        "op_name": "", "category": "", "comment": "",
    }


@pytest.fixture()
def index(load_graph):
    return TraceIndex(flatten_execution_graph(load_graph("sc012_memtracebench_like.json")))


def test_grep_positions_point_into_the_log(index):
    matches = index.grep("sweden")
    assert matches, "the fixture mentions Sweden"
    for m in matches:
        assert index.text[m.global_start - 1 : m.global_end] == m.match_text
        assert m.match_text.lower() == "sweden"
        assert index.get(m.op_id).section_text(m.section)[m.start : m.end] == m.match_text
    assert {m.section for m in matches} >= {"full", "input"}
    assert index.grep("sweden", case_sensitive=True) == []


def test_grep_snippets_mark_clipped_context(index):
    m = index.grep("Sweden", fields=("full",), surrounding_chars=5, max_matches=1)[0]
    assert m.snippet == f"...{m.snippet[3:-3]}..." and len(m.snippet) == 6 + 5 + 6 + 5
    whole = index.grep("### Operation", fields=("full",), surrounding_chars=10**6, max_matches=1)[0]
    assert not whole.snippet.startswith("...") and not whole.snippet.endswith("...")


def test_grep_literal_regex_limits_and_empty_matches(index):
    assert index.grep("") == []
    assert index.grep("[]", fields=("full",))  # literal: the fixture has '[]' values
    assert len(index.grep(r"op-\w+", regex=True, fields=("full",), max_matches=3)) == 3
    # A pattern that matches the empty string yields only the non-empty matches.
    assert all(m.match_text for m in index.grep(r"x*", regex=True, fields=("full",), max_matches=20))
    with pytest.raises(PatternError, match="invalid regular expression"):
        index.grep("(", regex=True)
    with pytest.raises(PatternError, match="unknown grep field"):
        index.grep("a", fields=("values",))
    with pytest.raises(PatternError, match="characters"):
        index.grep("a" * 5000)


def test_grep_stops_catastrophic_patterns_in_time():
    index = TraceIndex("### Operation op-a\n" + "x" * 5000)
    with pytest.raises(PatternTimeoutError, match="budget"):
        index.grep(r"(x+x+)+y", regex=True, timeout_s=0.2)
