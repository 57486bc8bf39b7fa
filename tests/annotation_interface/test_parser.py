"""The raw-JSON parser: messages, questions, statuses and the per-message op windows."""

from __future__ import annotations

import json

import pytest

from annotation_interface.loader import GraphFileError, load_graph, read_graph_json
from annotation_interface.parser import NotAGraphError, build_graph_index

from .conftest import load_json

OP_EXTRACT_D1_3 = "op-088305e9a69b49c6b8f9d79d0f2074ea"
OP_UPDATE_D1_2 = "op-3104e92929e04b1bb0e5752ab5a7adea"
OP_UPDATE_D1_3 = "op-4efb39bb5b9146ae87bbb38f1fcd592e"


def test_messages_are_read_in_execution_order_with_speaker_and_clean_text(bench_like):
    ix = build_graph_index(bench_like)
    assert [m.message_id for m in ix.messages] == ["U1:D1:1", "U1:D1:2", "U1:D1:3", "U1:D2:1", "U1:D2:2"]
    first = ix.messages[0]
    assert (first.speaker, first.role, first.timestamp) == ("Caroline", "user", "2023-05-08T13:56:00")
    # Mem0 appends the metadata after a marker line: the viewer shows the message itself
    assert first.text == "Hey Mel! Good to see you!"
    assert all("metadata" not in m.text for m in ix.messages)


def test_questions_link_prediction_judge_golden_and_retrieval(bench_like):
    ix = build_graph_index(bench_like)
    by_id = {q.qa_id: q for q in ix.qas}
    right, wrong = by_id["locomo-qa-1-1"], by_id["locomo-qa-1-2"]
    assert right.status == "correct" and wrong.status == "wrong"
    assert wrong.question == "Where did Caroline move from four years ago?"  # repr() undone
    assert (wrong.golden_answer, wrong.prediction, wrong.judge_score) == ("Sweden", "Norway", "0.0")
    assert wrong.evidence_ids == ("U1:D2:2@1",)
    assert wrong.retrieval_op_ids == ("op-d3cffc1336f44ad2a3916aaab6a536bc",)
    assert all(r.startswith("memory-unit") for r in wrong.retrieved_ids)
    assert wrong.qa_op_id and wrong.judge_op_id
    # MemTraceBench annotations (dropped by ExecNetwork import) are attached from the raw JSON
    assert wrong.annotation["final_error_type"] == "ExtractionError"
    assert right.annotation is None
    assert ix.qa("query:locomo-qa-1-2@1") is wrong


def test_adversarial_and_abstention_questions_are_skipped(bench_like):
    for node in bench_like["data"]["nodes"]:
        if node["full_node_id"] == "query:locomo-qa-1-1@1":
            node["metadata"]["question_type"] = "adversarial"
    ix = build_graph_index(bench_like)
    assert [q.qa_id for q in ix.qas] == ["locomo-qa-1-2"]
    assert ix.skipped_questions == 1


def test_abs_question_ids_are_skipped(bench_like):
    nodes = bench_like["data"]["nodes"]
    q = next(n for n in nodes if n["full_node_id"] == "query:locomo-qa-1-2@1")
    q["name"] = "0a1b_abs"
    q["full_name"], q["node_id"], q["full_node_id"] = "query:0a1b_abs", "0a1b_abs@1", "query:0a1b_abs@1"
    assert [x.qa_id for x in build_graph_index(bench_like).qas] == ["locomo-qa-1-1"]


def test_questions_without_a_judge_are_unjudged(sc_fixtures):
    ix = build_graph_index(load_json(sc_fixtures / "sc012_toy_search.json"))
    assert len(ix.qas) == 2
    assert {q.status for q in ix.qas} == {"unjudged"}


def test_message_window_is_taken_in_recording_order_not_by_millisecond(bench_like):
    """U1:D1:3 is recorded in the same millisecond as the update op of U1:D1:2; that op must not
    appear among the ops that processed U1:D1:3."""
    ix = build_graph_index(bench_like)
    ops = ix.message_op_ids("U1:D1:3@1")
    assert set(ops) == {OP_EXTRACT_D1_3, OP_UPDATE_D1_3}
    assert OP_UPDATE_D1_2 in ix.message_op_ids("U1:D1:2@1")


@pytest.mark.parametrize("split", ["long_context", "rag", "mem0", "evermemos"])
def test_every_construction_op_belongs_to_some_message_window(faultbench, split):
    """Windows tile the construction sessions: the message views together show every op that
    processed the conversation (finalisation sessions aside)."""
    for path in sorted((faultbench / split).glob("*.json")):
        ix = build_graph_index(load_json(path))
        covered = {op for m in ix.messages for op in ix.message_op_ids(m.full_node_id)}
        message_sessions = {m.session_id for m in ix.messages}
        expected = {op for op, info in ix.ops.items()
                    if ix.is_construction_op(op) and info.session_id in message_sessions and ix.op_edges.get(op)}
        assert expected <= covered, path.name


@pytest.mark.parametrize("split", ["long_context", "rag", "mem0", "evermemos"])
def test_a_message_window_holds_its_own_op_and_no_other_message(faultbench, split):
    """The window starts at the op that reads the message and ends before the op that reads the
    next one: it never shows another message's ingestion (ops in between, such as an injected
    deletion, belong to it)."""
    for path in sorted((faultbench / split).glob("*.json")):
        ix = build_graph_index(load_json(path))
        messages = {m.full_node_id for m in ix.messages}
        for m in ix.messages:
            ops = ix.message_op_ids(m.full_node_id)
            readers = {e.op_id for e in ix.out_edges.get(m.full_node_id, ()) if ix.is_construction_op(e.op_id)}
            assert readers <= set(ops), (path.name, m.message_id)
            others = {e.source for o in ops for e in ix.op_edges[o] if e.source in messages} - {m.full_node_id}
            if split != "rag":  # NaiveRAG cuts a document from a buffer that holds earlier messages
                assert not others, (path.name, m.message_id, others)


def test_retrieval_window_reaches_the_memory_units(faultbench):
    """EverMemOS: the query only feeds the first retrieval bundles; the op that returns memory
    units comes later and is found through the time window."""
    checked = 0
    for path in sorted((faultbench / "evermemos").glob("*.json")):
        ix = build_graph_index(load_json(path))
        for qa in ix.qas:
            ops = ix.retrieval_op_ids(qa)
            assert set(qa.retrieval_op_ids) <= set(ops)
            assert all(ix.ops[o].category == "retrieval" for o in ops)
            reach = [o for o in ops if any(ix.nodes[e.target].category == "memory_entry"
                                           for e in ix.op_edges[o] if e.target in ix.nodes)]
            assert reach, (path.name, qa.qa_id)
            assert ops[-1] == reach[-1]  # the window stops at the first memory hit
            checked += 1
    assert checked


def test_evermemos_window_adds_the_rerank_op(faultbench):
    ix = build_graph_index(load_json(sorted((faultbench / "evermemos").glob("*.json"))[0]))
    for qa in ix.qas:
        names = [ix.ops[o].op_name for o in ix.retrieval_op_ids(qa)]
        direct = {ix.ops[o].op_name for o in qa.retrieval_op_ids}
        # a question whose round 1 was judged sufficient has no round 2 and no final rerank
        if "memory_system.agentic_round1_bundle" in direct and "memory_system.agentic_round2_bundle" in names:
            assert names[-1] == "memory_system.agentic_final_rerank"


def test_long_context_retrieval_does_not_borrow_the_previous_question_op(faultbench):
    for path in sorted((faultbench / "long_context").glob("*.json")):
        ix = build_graph_index(load_json(path))
        for qa in ix.qas:
            assert ix.retrieval_op_ids(qa) == list(qa.retrieval_op_ids), (path.name, qa.qa_id)


def test_not_a_graph_is_rejected():
    with pytest.raises(NotAGraphError):
        build_graph_index({"cases": []})


def test_load_graph_errors_name_the_file_in_one_line(tmp_path, bench_like):
    bad = tmp_path / "truncated.json"
    bad.write_text(json.dumps(bench_like)[:5000])
    with pytest.raises(GraphFileError, match=r"^truncated\.json: invalid JSON at line 1 column \d+"):
        load_graph(bad)
    broken = tmp_path / "broken.json"
    bench_like["data"]["nodes"][3]["version"] = "two"
    broken.write_text(json.dumps(bench_like))
    with pytest.raises(GraphFileError) as info:
        load_graph(broken)
    assert "\n" not in str(info.value) and "data.nodes[3]" in str(info.value)
    manifest = tmp_path / "manifest.json"
    manifest.write_text('{"cases": []}')
    with pytest.raises(GraphFileError, match="not a smartcomment graph export"):
        load_graph(manifest)
    with pytest.raises(GraphFileError, match="cannot be read"):
        read_graph_json(tmp_path / "missing.json")


def test_load_graph_builds_the_network_and_the_index(sc_fixtures):
    pg = load_graph(sc_fixtures / "sc012_memtracebench_like.json")
    assert pg.network.node_count == pg.index.node_count == 50
    assert len(pg.index.edges) == pg.network.edge_count
