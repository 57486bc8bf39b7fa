"""Plotly figures: the boustrophedon timeline and the layered op-subgraph graph."""

from __future__ import annotations

import pytest

from annotation_interface import figures
from annotation_interface import subgraphs as sg
from annotation_interface.loader import load_graph

from .conftest import split_file


def test_boustrophedon_positions():
    pos = figures.timeline_positions(7, 3)
    assert pos == [(0, 0), (1, 0), (2, 0), (2, -1), (1, -1), (0, -1), (0, -2)]


@pytest.fixture(scope="module")
def mem0_graph(faultbench):
    return load_graph(split_file(faultbench, "mem0"))


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_timeline_marks_messages_evidence_and_selection(mem0_graph):
    msgs = mem0_graph.index.messages
    fig = figures.timeline_figure(msgs, per_row=5, evidence_ids={msgs[3].full_node_id},
                                  selected_id=msgs[7].full_node_id)
    speakers = {m.speaker for m in msgs}
    points = [c for t in fig.data if t.name in speakers for c in t.customdata]
    assert sorted(points) == sorted(["node", m.full_node_id] for m in msgs)
    handles = _trace(fig, "processing (click)")
    assert [c[1] for c in handles.customdata] == [m.full_node_id for m in msgs]
    assert all(c[0] == "edge" for c in handles.customdata)
    star = _trace(fig, "evidence")
    assert list(star.customdata) == [["node", msgs[3].full_node_id]] and star.marker.symbol == "star"
    ring = _trace(fig, "selected")
    assert (ring.x[0], ring.y[0]) == figures.timeline_positions(len(msgs), 5)[7]
    assert fig.layout.height == max(220, 90 * -(-len(msgs) // 5) + 110)  # one row per 5 messages


def test_session_changes_are_drawn_dashed(mem0_graph):
    msgs = mem0_graph.index.messages
    sessions = [m.session_id for m in msgs]
    fig = figures.timeline_figure(msgs)
    breaks = sum(1 for a, b in zip(sessions, sessions[1:], strict=False) if a != b)
    names = [t.name for t in fig.data]
    if not breaks:
        assert "next session" not in names
        return
    dashed = _trace(fig, "next session")
    assert len(dashed.x) == 3 * breaks and dashed.line.dash == "dot"
    solid = _trace(fig, "message flow")
    assert len(solid.x) == 3 * (len(msgs) - 1 - breaks)


def test_subgraph_figure_draws_every_node_and_edge(mem0_graph):
    qa = mem0_graph.index.qas[0]
    sub = sg.response_subgraph(mem0_graph, qa)
    fig = figures.subgraph_figure(sub.graph, focus_ids=sub.focus_ids, highlight_ops=[qa.qa_op_id])
    node_ids = {c[1] for t in fig.data if t.customdata is not None for c in t.customdata if c[0] == "node"}
    assert node_ids == {n.full_node_id for n in sub.graph.nodes}
    edge_marks = _trace(fig, "edges (click)")
    assert sorted(c[1] for c in edge_marks.customdata) == sorted(e.edge_id for e in sub.graph.edges)
    widths = {t.legendgroup: t.line.width for t in fig.data if t.legendgroup}
    assert widths[qa.qa_op_id] > widths[qa.judge_op_id]
    assert len(fig.layout.annotations) == sub.graph.edge_count  # one arrow per edge


def test_node_states_ring_the_trail(mem0_graph):
    qa = mem0_graph.index.qas[0]
    sub = sg.response_subgraph(mem0_graph, qa)
    fig = figures.subgraph_figure(sub.graph, node_states={qa.query_full_node_id: "absent"})
    for t in fig.data:
        if t.customdata is None or t.mode == "lines" or t.name == "edges (click)":
            continue
        for data, color in zip(t.customdata, t.marker.line.color, strict=True):
            if data[1] == qa.query_full_node_id:
                assert color == "#d62728"
                return
    pytest.fail("query node not drawn")


def test_layered_layout_puts_targets_right_of_sources_and_survives_cycles():
    pos = figures.layered_layout(["a", "b", "c", "d", "e"],
                                 [("a", "b"), ("b", "c"), ("c", "b"), ("d", "d"), ("a", "e"), ("c", "e")])
    assert [pos[n][0] for n in "abcde"] == [0, 1, 2, 0, 3]  # e after its furthest predecessor c
    assert len(set(pos.values())) == 5


def test_empty_and_huge_subgraphs_give_no_figure(mem0_graph):
    empty = mem0_graph.network.filter_by_operation([])
    assert figures.subgraph_figure(empty) is None
    sub = sg.message_subgraph(mem0_graph, mem0_graph.index.messages[0].full_node_id)
    assert figures.subgraph_figure(sub.graph, max_nodes=2) is None


def test_clicked_reads_the_first_selected_point():
    event = {"selection": {"points": [{"x": 1}, {"customdata": ["edge", "edge-1", "op-1"]}]}}
    assert figures.clicked(event) == ("edge", "edge-1", "op-1")
    assert figures.clicked({"selection": {"points": []}}) is None
    assert figures.clicked(None) is None
