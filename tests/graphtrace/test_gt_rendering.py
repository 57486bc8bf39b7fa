"""Pagination, regex listings and operation-subgraph renderings."""

from __future__ import annotations

import pytest

from graphtrace.rendering import RegexSearchError, find_matches, paginate, render_operation_subgraph

QUERY = "query:locomo-qa-1-2@1"
SEARCH_OP = "op-d3cffc1336f44ad2a3916aaab6a536bc"
UNIT_2 = "memory-unit-00000000-0000-0000-0000-000000000002@1"


def test_paginate_windows_and_status_lines():
    page = paginate("abcdefghij", 1, 4)
    assert (page.window, page.start, page.end, page.truncated) == ("abcd", 1, 4, True)
    assert page.status == (
        "Characters 1-4 of 10 are returned. Content is truncated. Call this tool again with `offset=5` to continue."
    )
    last = paginate("abcdefghij", 9, 4)
    assert last.window == "ij"
    assert (
        last.status
        == "Characters 9-10 of 10 are returned. All content has been returned. No further read is needed."
    )
    beyond = paginate("abc", 4, 10)
    assert beyond.window == ""
    assert (
        beyond.status == "No content is available from the 4-th character; the full content has 3 characters."
    )
    with pytest.raises(ValueError):
        paginate("abc", 0, 1)


def test_find_matches_positions_ellipses_and_empty_matches():
    value = "Caroline moved from Norway four years ago; Norway again"
    matches, capped = find_matches(value, "Norway", surrounding_chars=5)
    assert matches == ["21:26: ...from Norway four...", "44:49: ...ago; Norway agai..."]
    assert not capped
    assert value[20:26] == "Norway"
    # zero-length matches are skipped instead of listing every position
    assert find_matches("abc", "x*", surrounding_chars=0) == ([], False)
    assert find_matches("ABC abc", "abc", surrounding_chars=0, ignore_case=True)[0] == [
        "1:3: ABC...",
        "5:7: ...abc",
    ]
    assert find_matches("aaaa", "a", surrounding_chars=0, max_matches=2) == (
        ["1:1: a...", "2:2: ...a..."],
        True,
    )
    with pytest.raises(RegexSearchError, match="invalid regular expression"):
        find_matches("abc", "(", surrounding_chars=0)


def test_operation_subgraph_rendering_of_a_retrieval(bench_graph):
    op = bench_graph.get_operation(SEARCH_OP)
    text = render_operation_subgraph(bench_graph, op, QUERY, include_value=False)
    head, xml = text.split("## Canonical Subgraph\n")
    assert head == (
        f"# Operation `{SEARCH_OP}`\n\n"
        "- Name: `memory_system.search_vector_store`\n"
        "- Category: `retrieval`\n"
        "- Created At: `2026-11-29 08:28:54.879`\n"
        "- Comment: A task query searches the memory store for top-2 memories.\n"
        f"- Focus Variable: `{QUERY}`\n"
        "- Focus Role: input read by the operation\n\n"
        "## Direct Successor Variables\n"
        "There are 2 direct successor variables; their identifiers are: "
        f"`memory-unit-00000000-0000-0000-0000-000000000001@2`, `{UNIT_2}`.\n\n"
        "## Leaf Variables In Operation Subgraph\n"
        "There are 2 leaf variables; their identifiers are: "
        f"`memory-unit-00000000-0000-0000-0000-000000000001@2`, `{UNIT_2}`.\n\n"
    )
    assert xml.startswith("<graph>\n  <nodes>\n")
    assert "<value>" not in xml
    # nodes ordered by creation time: the memory units (08:28:54.873) before the query (.879)
    assert xml.index(UNIT_2) < xml.index(f'full_node_id="{QUERY}"')
    role = render_operation_subgraph(bench_graph, op, UNIT_2)
    assert "- Focus Role: output produced by the operation" in role
    assert "There is no direct successor variable." in role


def test_operation_subgraph_rejects_focus_outside_the_operation(bench_graph):
    op = bench_graph.get_operation(SEARCH_OP)
    with pytest.raises(ValueError, match="is not part of the subgraph"):
        render_operation_subgraph(bench_graph, op, "U1:D1:1@1")
