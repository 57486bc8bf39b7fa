"""Readable evidence: values as text, marked golden-answer words, the trail's ring legend, label
placement and a trail table that fits the window."""

from __future__ import annotations

from annotation_interface.attribution import run_evidence_flow
from annotation_interface.figures import subgraph_figure
from annotation_interface.loader import load_graph
from annotation_interface.readable import evidence_terms, highlight, op_io, readable_value
from annotation_interface.subgraphs import trail_subgraph

from .conftest import split_file


def test_values_read_as_text():
    assert readable_value("'Line one\\nline two'") == "Line one\nline two"  # a Python repr of a str
    assert readable_value('{"content": "Hi there", "speaker": "Ana"}') == "Hi there\nspeaker: Ana"
    assert readable_value("['first fact', 'second fact']") == "• first fact\n• second fact"
    assert readable_value('\'{"facts": ["a", "b"]}\'') == "facts:\n• a\n• b"
    assert readable_value("<not json") == "<not json"


def test_golden_answer_words_are_marked_and_the_rest_escaped():
    terms = evidence_terms("Helped renovate the community center")
    assert "the" not in terms and {"renovate", "community", "center"} <= set(terms)
    out = highlight("She <b>renovated</b> a community centre; community work.", terms)
    assert "&lt;b&gt;" in out and "<b>" not in out  # escaped, not rendered
    assert out.count("<mark>community</mark>") == 2 and "<mark>renovate" not in out  # whole words only
    assert highlight("x" * 50, [], limit=10) == "x" * 10 + " …"


def test_an_llm_op_reads_as_prompt_inputs_and_outputs(faultbench):
    pg = load_graph(split_file(faultbench, "mem0"))
    op = next(o for o in pg.index.ops.values() if o.op_name == "memory_system.extract_facts")
    nodes = op_io(pg.network, pg.index.op_edges[op.op_id])
    roles = [n.role for n in nodes]
    assert roles == sorted(roles, key=lambda r: r != "input") and "output" in roles
    prompt = next(n for n in nodes if " prompt " in f" {n.title} ")
    assert not prompt.text.startswith("'") and "\\n" not in prompt.text  # unquoted, real line breaks


def test_trail_figure_has_a_ring_legend_and_labels_beside_nodes(faultbench):
    pg = load_graph(split_file(faultbench, "mem0"))
    qa = pg.index.qas[0]
    steps = run_evidence_flow(pg, qa)["trail"]
    states = {s["node_id"]: "present" if s.get("present") else "absent" for s in steps if s.get("node_id")}
    fig = subgraph_figure(trail_subgraph(pg, steps).graph, node_states=states)
    names = [t.name for t in fig.data]
    assert "ring: the information is still there" in names
    labelled = [t for t in fig.data if t.mode == "markers+text"]
    assert labelled and all(t.textposition == "top right" for t in labelled)
    plain = subgraph_figure(trail_subgraph(pg, steps).graph)
    assert not any(str(t.name).startswith("ring:") for t in plain.data)  # no rings, no ring legend


def test_trail_table_has_fixed_columns_and_short_cells(faultbench):
    from annotation_interface.views import _trail_table

    steps = [{"stage": "lineage", "op_id": "op-" + "a" * 32, "op_name": "memory_system.extract_facts",
              "node_id": "U1:D1:1@1", "present": False, "score": 0.25, "note": "n" * 300, "hops": 2}]
    table = _trail_table(steps)
    header, _, row = table.splitlines()
    assert header == "| # | stage | op | present | score | node | note |"
    assert "**no**" in row and "0.25" in row and len(row) < 260
