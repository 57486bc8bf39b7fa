"""evidence_flow on unit cases: each stage of loss yields its op and type."""

from __future__ import annotations

import json

import pytest

from toolkits.evidence_flow import attribute_case_evidence_flow, evidence_flow_seed


def _mem0_turn(toy, mid: str, text: str, facts: list[str]) -> tuple[str, str, str]:
    """Message -> extract_facts op -> extracted facts; returns (message, op, facts node)."""
    msg = toy.message(mid, text)
    op = toy.op("memory_system.extract_facts", "extraction")
    prompt = toy.node("fact-extraction-system-prompt", "Extract facts.", category="prompt")
    raw = toy.node("raw_fact_extraction_response", json.dumps({"facts": facts}), category="llm_response")
    toy.link(op, [msg, prompt], [raw], "extraction")
    out = toy.node("extracted_facts", facts, category="llm_response")
    toy.edge(op, raw, out, "extraction")
    return msg, op, out


def _add_unit(toy, facts_node: str, uid: str, text: str) -> tuple[str, str]:
    op = toy.op("memory_system.update_memory_decision", "update")
    action = toy.node("update_action", {"memory": [{"event": "ADD", "text": text}]}, category="llm_response")
    toy.edge(op, facts_node, action, "update")
    unit = toy.node(f"memory-unit-{uid}", {"id": uid, "memory": text, "timestamp": "2023"}, category="memory_entry")
    toy.edge(op, action, unit, "update")
    return op, unit


def _update_unit(toy, before: str, uid: str, text: str) -> tuple[str, str]:
    op = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node(f"memory-unit-{uid}", {"id": uid, "memory": text, "timestamp": "2023"}, category="memory_entry")
    toy.edge(op, before, unit, "llm_response")
    return op, unit


def test_extraction_drop_blames_the_extracting_op(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden four years ago.", ["Caroline moved"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved four years ago")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"], result["status"]) == ("ExtractionError", op, "attributed")
    assert any(step["node_id"] == msg and step["present"] for step in result["trail"])


def test_bad_add_decision_is_an_extraction_error_at_the_decision_op(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    add_op, unit = _add_unit(toy, facts, "1", "Caroline moved from Norway")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"]) == ("ExtractionError", add_op)


def test_degrading_update_is_an_update_error(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    upd_op, unit2 = _update_unit(toy, unit, "1", "Caroline moved from Scandinavia")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit2])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"]) == ("UpdateError", upd_op)


def test_information_that_migrates_to_another_unit_is_followed(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit_a = _add_unit(toy, facts, "a", "Caroline moved from Sweden")
    _, unit_b = _add_unit(toy, facts, "b", "Caroline is from Sweden and loves it")
    _update_unit(toy, unit_a, "a", "Caroline loves painting")  # a loses it, b still holds it
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"]) == ("RetrievalError", ids["search"])
    assert any(s["stage"] == "store" and s["present"] and unit_b in s["note"] for s in result["trail"])


def test_explicit_delete_is_a_deletion_error(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    del_op = toy.op("memory_system.update_memory_decision", "update")
    marker = toy.node("delete_marker", "DELETED", category="marker")
    toy.edge(del_op, unit, marker, "update")
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"]) == ("DeletionError", del_op)


def test_loss_that_is_repaired_later_is_not_blamed(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    _update_unit(toy, unit, "1", "Caroline moved")
    msg2, _, facts2 = _mem0_turn(toy, "U1:D1:2", "Sweden was home.", ["Caroline is from Sweden"])
    _, unit2 = _add_unit(toy, facts2, "2", "Caroline is from Sweden")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit2])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"]) == ("ResponseError", ids["qa"])


def test_retrieval_that_misses_the_holding_unit(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    _, other = _add_unit(toy, facts, "2", "Caroline likes tea")
    ids = toy.ask("q1", "Where did Caroline move from?", [other])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"], result["status"]) == ("RetrievalError", ids["search"], "attributed")


def test_context_with_the_answer_makes_it_a_response_error(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit], prediction="Norway")
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    assert (result["error_type"], result["op_id"]) == ("ResponseError", ids["qa"])
    assert [s["stage"] for s in result["trail"]][-2:] == ["context", "answer"]


def test_evidence_that_never_existed_is_reported_not_typed(toy, case_factory):
    _mem0_turn(toy, "U1:D1:1", "I like tea.", ["Caroline likes tea"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", ["U1:D9:9@1"]))
    assert result["status"] == "evidence_absent"
    assert result["error_type"] is None and result["op_id"] is None
    assert "never existed" in result["reason"]
    assert evidence_flow_seed(result)["frontier"] == []


def test_without_evidence_ids_the_message_stating_the_answer_stands_in(toy, case_factory):
    msg, op, _ = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", []))
    assert (result["error_type"], result["op_id"]) == ("ExtractionError", op)
    assert result["trail"][0]["node_id"] == msg


def test_long_context_trimming_is_an_update_error(toy, case_factory):
    unit = toy.node("memory-unit", "", category="memory_entry")
    buffer: list[str] = []
    trim_op = None
    ev = None
    for i, text in enumerate(["I moved here from Sweden.", "Nice weather.", "I paint a lot."]):
        msg = toy.message(f"U1:D1:{i}", text)
        ev = ev or msg
        buffer.append(text)
        if len(buffer) > 2:
            buffer.pop(0)
        op = toy.op("memory_system.memory_update", "update")
        new = toy.node("memory-unit", "\n".join(buffer), category="memory_entry")
        toy.link(op, [unit, msg], [new], "update")
        unit = new
        trim_op = op
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [ev]))
    assert (result["error_type"], result["op_id"]) == ("UpdateError", trim_op)


def test_evidence_mode_when_the_answer_is_inferred(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I went to an LGBTQ support group yesterday.",
                                ["Caroline went to an LGBTQ support group on 7 May 2023"])
    _, unit = _add_unit(toy, facts, "1", "Caroline went to an LGBTQ support group on 7 May 2023")
    ids = toy.ask("q1", "When did Caroline go to the support group?", [unit], prediction="June")
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "7 May 2023", [msg]))
    assert result["trail"][0]["note"].startswith("evidence mode")
    assert (result["error_type"], result["op_id"]) == ("ResponseError", ids["qa"])


def test_works_on_an_imported_exec_network_and_the_shared_fixture(fixtures_dir):
    network_mod = pytest.importorskip("smartcomment.runtime.network")
    data = json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text())
    annotation = data["data"]["annotations"][0]
    case = {"query_full_node_id": annotation["query_id"], "golden_answer": "Sweden",
            "prediction": annotation["prediction"],
            "source_evidence_full_node_ids": annotation["source_evidence_ids"],
            "metadata": {"annotation": annotation}}
    for graph in (data, network_mod.ExecNetwork.import_graph(data)):
        result = attribute_case_evidence_flow(graph, case)
        assert (result["error_type"], result["op_id"]) == (annotation["final_error_type"], annotation["final_op_id"])


def test_deterministic_and_json_serialisable(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    graph = toy.export()
    case = case_factory(ids["query"], "Sweden", [msg])
    first = attribute_case_evidence_flow(graph, case)
    assert json.dumps(first) == json.dumps(attribute_case_evidence_flow(json.loads(json.dumps(graph)), case))


def test_unknown_query_and_bad_graph(toy, case_factory):
    toy.message("U1:D1:1", "hello")
    result = attribute_case_evidence_flow(toy.export(), case_factory("query:nope@1", "x", []))
    assert result["status"] == "query_not_found" and result["error_type"] is None
    with pytest.raises(TypeError, match="ExecNetwork or an exported graph dict"):
        attribute_case_evidence_flow(42, case_factory("query:nope@1", "x", []))


def test_seed_gives_frontier_and_hint(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [msg]))
    seed = evidence_flow_seed(result)
    assert msg in seed["frontier"]
    assert op in seed["hint"] and "ExtractionError" in seed["hint"]


def test_pseudo_evidence_that_misses_the_answer_is_replaced_by_the_stating_message(toy, case_factory):
    noise = toy.message("U1:D1:0", "I like painting sunsets with my kids.")
    msg, op, _ = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden four years ago.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Sweden", [noise]))
    assert (result["error_type"], result["op_id"]) == ("ExtractionError", op)
    assert any("stand in" in step["note"] for step in result["trail"])


def test_unverifiable_pseudo_evidence_is_reported_absent(toy, case_factory):
    noise = toy.message("U1:D1:0", "I like painting sunsets with my kids.")
    toy.message("U1:D1:1", "The weather was lovely today.")
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    case = case_factory(ids["query"], "Sweden", [])
    result = attribute_case_evidence_flow(toy.export(), case, [noise], evidence_is_pseudo=True)
    assert (result["status"], result["error_type"]) == ("evidence_absent", None)
    # the same ids given as annotated evidence are trusted (evidence mode)
    assert attribute_case_evidence_flow(toy.export(), case, [noise])["status"] != "evidence_absent"
