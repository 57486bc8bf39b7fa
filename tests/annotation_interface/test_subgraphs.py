"""The candidate subgraphs of the attribution view, related variables and trails."""

from __future__ import annotations

import json

import pytest

from annotation_interface import subgraphs as sg
from annotation_interface.loader import load_graph

from .conftest import split_file


def _faultbench_cases(faultbench):
    manifest = json.loads((faultbench / "faultbench_manifest.json").read_text())
    for case in manifest["cases"]:
        yield faultbench / case["split"] / case["file"], case


@pytest.fixture(scope="module")
def graphs():
    cache = {}

    def get(path):
        if path not in cache:
            cache[path] = load_graph(path)
        return cache[path]

    return get


def test_the_candidate_subgraphs_hold_the_faulty_op_of_each_stage(faultbench, graphs):
    """Extraction faults sit in the construction subgraph of the evidence, retrieval faults in
    the retrieval subgraph, response faults in the response subgraph (ground truth by construction)."""
    where = {"ExtractionError": "construction", "RetrievalError": "retrieval", "ResponseError": "response"}
    checked = 0
    always = 0
    for path, case in _faultbench_cases(faultbench):
        kind = where.get(case["final_error_type"])
        if kind is None:
            continue  # update/deletion faults happen at later messages, outside these subgraphs
        pg = graphs(path)
        qa = pg.index.qa(case["query_id"])
        evidence = set(qa.case_evidence_ids)
        if kind == "construction" and not any(e.source in evidence for e in pg.index.op_edges[case["final_op_id"]]):
            continue  # NaiveRAG cuts the document while ingesting a later message: not this message's window
        subs = [s for s in sg.attribution_subgraphs(pg, qa) if s.kind == kind]
        assert any(case["final_op_id"] in s.op_ids for s in subs), (path.name, case["query_id"])
        checked += 1
        always += kind != "construction"
    assert always and checked >= always


def test_three_kinds_and_candidate_lists(sc_fixtures):
    pg = load_graph(sc_fixtures / "sc012_memtracebench_like.json")
    qa = pg.index.qa("locomo-qa-1-2")
    subs = sg.attribution_subgraphs(pg, qa)
    assert [s.kind for s in subs] == ["construction", "retrieval", "response"]
    response = subs[-1]
    names = {pg.index.ops[o].op_name for o in response.op_ids}
    assert names == {"question-answering", "llm-judge"}
    cands = dict(response.candidates())
    assert set(cands) == set(response.op_ids)
    for op, edges in cands.items():
        assert edges and all(pg.index.edges[e].op_id == op for e in edges)
    assert qa.query_full_node_id in response.graph and qa.prediction_id in response.graph


def test_response_subgraph_says_what_is_missing(sc_fixtures):
    pg = load_graph(sc_fixtures / "sc012_toy_search.json")  # no evaluation session
    qa = pg.index.qas[0]
    sub = sg.response_subgraph(pg, qa)
    assert sub.op_ids == [] and "question-answering" in sub.note and "llm-judge" in sub.note


def test_message_subgraph_is_the_op_union(faultbench):
    pg = load_graph(split_file(faultbench, "mem0"))
    msg = pg.index.messages[2]
    sub = sg.message_subgraph(pg, msg.full_node_id)
    assert [pg.index.ops[o].op_name for o in sub.op_ids] == ["memory_system.extract_facts",
                                                             "memory_system.update_memory_decision"]
    assert msg.full_node_id in sub.graph
    assert sub.graph == pg.network.filter_by_operation(sub.op_ids)


def test_related_variables_one_hop(sc_fixtures):
    pg = load_graph(sc_fixtures / "sc012_memtracebench_like.json")
    node = "U1:D2:2@1"
    fwd = sg.related_variables(pg, node, "forward")
    back = sg.related_variables(pg, node, "backward")
    both = sg.related_variables(pg, node, "both")
    children = {e.target for e in pg.index.out_edges[node]}
    assert {n.full_node_id for n in fwd.graph.nodes} == {node, *children}
    assert {n.full_node_id for n in back.graph.nodes} == {node}  # a message has no inputs
    assert {n.full_node_id for n in both.graph.nodes} == {node, *children}


def test_trail_subgraph_unions_the_trail_ops_and_keeps_loose_nodes(sc_fixtures):
    pg = load_graph(sc_fixtures / "sc012_memtracebench_like.json")
    op = "op-ad912fa103d643e0b4b16a3e9e7169cb"
    trail = [{"stage": "evidence", "node_id": "U1:D1:1@1"}, {"stage": "construction", "op_id": op, "node_id": None},
             {"stage": "x", "op_id": "op-unknown"}, "not a dict"]
    sub = sg.trail_subgraph(pg, trail)
    assert sub.op_ids == [op]
    assert "U1:D1:1@1" in sub.graph  # evidence step without op still drawn
    assert set(sub.graph.ops[i].op_id for i in range(sub.graph.op_count)) == {op}


def test_related_variables_of_a_shared_node_are_capped(faultbench):
    pg = load_graph(split_file(faultbench, "mem0"))
    prompt = "fact-extraction-system-prompt@1"
    full = sg.related_variables(pg, prompt, "forward")
    assert len(full.graph.nodes) > 6 and full.note == ""
    capped = sg.related_variables(pg, prompt, "forward", limit=5)
    assert "edges to neighbours; the first 5" in capped.note
    assert capped.graph.edge_count == 5
    first = sorted(pg.index.out_edges[prompt], key=lambda e: e.order)[:5]
    assert [e.edge_id for e in capped.graph.edges] == [e.edge_id for e in first]
    kept = {n.full_node_id for n in capped.graph.nodes}
    assert kept == {prompt, *(e.target for e in first)}
    assert {op.op_id for op in capped.graph.ops} == {e.op_id for e in first}
