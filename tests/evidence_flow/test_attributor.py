"""evidence_flow on hand-built graphs: each stage of loss yields its op and type."""

from __future__ import annotations

import gc
import json

import pytest

from toolkits.evidence_flow import STATUSES, attribute_case_evidence_flow, evidence_flow_seed


def _mem0_turn(toy, mid: str, text: str, facts: list[str], name: str = "Caroline") -> tuple[str, str, str]:
    """Message -> extract_facts op -> extracted facts; returns (message, op, facts node)."""
    msg = toy.message(mid, text, name)
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


def _attr(toy, case, *args, **kwargs):
    return attribute_case_evidence_flow(toy.export(), case, *args, **kwargs)


def _verdict(result) -> tuple[str | None, str | None]:
    return result["error_type"], result["op_id"]


# ---------------------------------------------------------------- the five stages


def test_extraction_drop_blames_the_extracting_op(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden four years ago.", ["Caroline moved"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved four years ago")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg]))
    assert (*_verdict(result), result["status"]) == ("ExtractionError", op, "attributed")
    assert any(step["node_id"] == msg and step["present"] for step in result["trail"])
    assert 0.0 < result["confidence"] <= 1.0


def test_bad_add_decision_is_an_extraction_error_at_the_decision_op(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    add_op, unit = _add_unit(toy, facts, "1", "Caroline moved from Norway")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [msg]))) == ("ExtractionError", add_op)


def test_degrading_update_is_an_update_error(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    upd_op, unit2 = _update_unit(toy, unit, "1", "Caroline moved from Scandinavia")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit2])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [msg]))) == ("UpdateError", upd_op)


def test_information_that_migrates_to_another_unit_is_followed(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit_a = _add_unit(toy, facts, "a", "Caroline moved from Sweden")
    _, unit_b = _add_unit(toy, facts, "b", "Caroline moved here from Sweden and loves it")
    _update_unit(toy, unit_a, "a", "Caroline loves painting")  # a loses it, b still holds it
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg]))
    assert _verdict(result) == ("RetrievalError", ids["search"])
    assert any(s["stage"] == "store" and s["present"] and unit_b in s["note"] for s in result["trail"])


def test_explicit_delete_is_a_deletion_error(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    del_op = toy.op("memory_system.update_memory_decision", "update")
    marker = toy.node("delete_marker", "DELETED", category="marker", class_name="delete_marker")
    toy.edge(del_op, unit, marker, "update")
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [msg]))) == ("DeletionError", del_op)


def test_what_happens_to_memory_after_the_question_does_not_count(toy, case_factory):
    """The store held the fact when the question was asked; a later update and a later deletion
    of that unit (the next sessions of the run) are not the error."""
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    _, other = _add_unit(toy, facts, "2", "Caroline likes tea")
    ids = toy.ask("q1", "Where did Caroline move from?", [other])
    _, later = _update_unit(toy, unit, "1", "Caroline moved")
    del_op = toy.op("memory_system.update_memory_decision", "update")
    toy.edge(del_op, later, toy.node("delete_marker", "DELETED", category="marker", class_name="delete_marker"),
             "update")
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg]))
    assert _verdict(result) == ("RetrievalError", ids["search"])
    assert all(step["op_id"] != del_op for step in result["trail"])


def test_the_context_is_judged_by_the_version_retrieval_served(toy, case_factory):
    """Retrieval served the unit while it held the fact; evaluation links the unit by identity, which
    resolves to a later version without it. The context was built from what retrieval served."""
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    query = toy.node("q1", "Where did Caroline move from?", category="message & query", class_name="query")
    search = toy.op("memory_system.search_vector_store", "retrieval")
    toy.edge(search, query, unit)
    _, later = _update_unit(toy, unit, "1", "Caroline moved")
    qa = toy.op("question-answering", "evaluation")
    context = toy.node("ctx-q1", "Caroline moved from Sweden", category="memory_context", class_name="context")
    toy.link(qa, [later], [context])
    pred = toy.node("pred-q1", "Norway", category="llm_response", class_name="prediction")
    toy.link(qa, [query, context], [pred])
    result = _attr(toy, case_factory(query, "Sweden", [msg], prediction="Norway"))
    assert _verdict(result) == ("ResponseError", qa)


def test_a_fact_told_twice_is_followed_from_both_tellings(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    _update_unit(toy, unit, "1", "Caroline moved")
    _, _, facts2 = _mem0_turn(toy, "U1:D1:2", "Yes, I moved here from Sweden, you know.", ["Caroline moved from Sweden"])
    _, unit2 = _add_unit(toy, facts2, "2", "Caroline moved here from Sweden")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit2])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [msg]))) == ("ResponseError", ids["qa"])


def test_retrieval_that_misses_the_holding_unit(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    _, other = _add_unit(toy, facts, "2", "Caroline likes tea")
    ids = toy.ask("q1", "Where did Caroline move from?", [other])
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg]))
    assert (*_verdict(result), result["status"]) == ("RetrievalError", ids["search"], "attributed")


def test_context_with_the_answer_makes_it_a_response_error(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit], prediction="Norway")
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg], prediction="Norway"))
    assert _verdict(result) == ("ResponseError", ids["qa"])
    assert [s["stage"] for s in result["trail"]][-2:] == ["context", "answer"]


def test_long_context_trimming_is_an_update_error(toy, case_factory):
    unit = toy.node("memory-unit", "", category="memory_entry")
    buffer: list[str] = []
    trim_op = ev = None
    for i, text in enumerate(["I moved here from Sweden.", "Nice weather.", "I paint a lot."]):
        msg = toy.message(f"U1:D1:{i}", text)
        ev = ev or msg
        buffer.append(text)
        if len(buffer) > 2:
            buffer.pop(0)
        op = toy.op("memory_system.memory_update", "update")
        new = toy.node("memory-unit", "\n".join(buffer), category="memory_entry")
        toy.link(op, [unit, msg], [new], "update")
        unit, trim_op = new, op
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [ev]))) == ("UpdateError", trim_op)


def test_evidence_mode_when_the_answer_is_inferred(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I went to an LGBTQ support group yesterday.",
                               ["Caroline went to an LGBTQ support group on 7 May 2023"])
    _, unit = _add_unit(toy, facts, "1", "Caroline went to an LGBTQ support group on 7 May 2023")
    ids = toy.ask("q1", "When did Caroline go to the support group?", [unit], prediction="June")
    result = _attr(toy, case_factory(ids["query"], "7 May 2023", [msg]))
    assert result["evidence"]["mode"] == "evidence"
    assert _verdict(result) == ("ResponseError", ids["qa"])


# ---------------------------------------------------------------- shared words are not the information


def test_a_common_answer_word_in_an_unrelated_unit_does_not_count(toy, case_factory):
    """The fact is dropped at extraction; "happy" also sits in another message's unit."""
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "The adoption meeting made me so happy!", ["Caroline went to a meeting"])
    _add_unit(toy, facts, "1", "Caroline went to a meeting")
    _, _, other = _mem0_turn(toy, "U1:D1:2", "I'm happy for you, that's great news!", ["Melanie is happy for Caroline"],
                             name="Melanie")
    _, happy = _add_unit(toy, other, "2", "Melanie is happy for Caroline")
    _, _, third = _mem0_turn(toy, "U1:D1:3", "Happy birthday to my kid!", ["Melanie's kid had a birthday, happy"],
                             name="Melanie")
    ids = toy.ask("q1", "How did Caroline feel after the adoption meeting?", [happy])
    result = _attr(toy, case_factory(ids["query"], "happy", [msg]))
    assert _verdict(result) == ("ExtractionError", op)


def test_a_long_context_line_of_another_message_does_not_keep_a_trimmed_fact(toy, case_factory):
    unit = toy.node("memory-unit", "", category="memory_entry")
    lines: list[str] = []
    texts = [("Caroline", "The adoption meeting made me so happy!"), ("Melanie", "I'm happy for you!"),
             ("Melanie", "Happy to hear it went well, truly happy.")]
    first = trim_op = None
    for i, (name, text) in enumerate(texts):
        msg = toy.message(f"U1:D1:{i}", f"Speaker {name} (role: user) says: {text}", name)
        first = first or msg
        lines.append(f"Speaker {name} (role: user) says: {text}")
        if i == 2:
            lines.pop(0)  # the update that appends the third message trims the first
        op = toy.op("memory_system.memory_update", "update")
        new = toy.node("memory-unit", "\n".join(lines), category="memory_entry")
        toy.link(op, [unit, msg], [new], "update")
        unit, trim_op = new, op
    ids = toy.ask("q1", "How did Caroline feel after the adoption meeting?", [unit])
    assert _verdict(_attr(toy, case_factory(ids["query"], "happy", [first]))) == ("UpdateError", trim_op)


@pytest.mark.parametrize(
    ("stored", "why"),
    [
        ("Caroline never moved here from Sweden", "negation"),
        ("Melanie: I moved here from Sweden", "person"),
        ("Caroline moved here from Sweden in 2019", "number"),
        ("Caroline moved here from Sweden to Oslo", "proper noun"),
    ],
)
def test_words_that_survive_with_the_meaning_changed_are_a_loss(toy, case_factory, stored, why):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden to Boston in 2021.",
                               ["Caroline moved here from Sweden to Boston in 2021"])
    toy.message("U1:D1:2", "Cool!", "Melanie")
    add_op, unit = _add_unit(toy, facts, "1", stored)
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg]))
    assert _verdict(result) == ("ExtractionError", add_op)
    assert why in result["reason"] or any(why in s["note"] for s in result["trail"])


def test_a_wrong_merge_at_update_is_an_update_error(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I went to the support group on Friday.",
                               ["Caroline went to the support group on Friday"])
    _, unit = _add_unit(toy, facts, "1", "Caroline went to the support group on Friday")
    # merged with another memory: the answer's word survives, attached to another event
    upd_op, merged = _update_unit(toy, unit, "1", "Caroline went to her pottery class on Friday")
    ids = toy.ask("q1", "When did Caroline go to the support group?", [merged])
    result = _attr(toy, case_factory(ids["query"], "Friday", [msg]))
    assert _verdict(result) == ("UpdateError", upd_op)


def test_a_near_duplicate_retrieved_unit_is_not_the_holding_unit(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I went to the support group on Friday.",
                               ["Caroline went to the support group on Friday"])
    _, unit = _add_unit(toy, facts, "1", "Caroline went to the support group on Friday")
    _, _, facts2 = _mem0_turn(toy, "U1:D1:2", "I went to my pottery class on Friday.",
                              ["Caroline went to the pottery class on Friday"])
    _, twin = _add_unit(toy, facts2, "2", "Caroline went to the pottery class on Friday")
    ids = toy.ask("q1", "When did Caroline go to the support group?", [twin])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Friday", [msg]))) == ("RetrievalError", ids["search"])


# ---------------------------------------------------------------- evidence, pseudo evidence, statuses


def test_evidence_that_never_existed_is_reported_not_typed(toy, case_factory):
    _mem0_turn(toy, "U1:D1:1", "I like tea.", ["Caroline likes tea"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    # without triage: no evidence, nothing typed; with it (the default), "Sweden" is said nowhere,
    # so the golden answer itself is suspect (see test_triage.py)
    result = _attr(toy, case_factory(ids["query"], "Sweden", ["U1:D9:9@1"]), triage=False)
    assert result["status"] == "evidence_absent" and result["status"] in STATUSES
    assert result["error_type"] is None and result["op_id"] is None
    assert "cannot be shown to have existed" in result["reason"]
    assert evidence_flow_seed(result)["frontier"] == []
    assert _attr(toy, case_factory(ids["query"], "Sweden", ["U1:D9:9@1"]))["status"] == "annotation_error"


def test_without_evidence_ids_the_message_stating_the_answer_stands_in(toy, case_factory):
    msg, op, _ = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    result = _attr(toy, case_factory(ids["query"], "Sweden", []))
    assert _verdict(result) == ("ExtractionError", op)
    assert msg in result["evidence"]["seeds"]


def test_an_inferred_answer_with_nothing_given_follows_the_message_closest_to_the_question(toy, case_factory):
    """No message states "7 May 2023" and no evidence is given: the conversation is searched by what
    the question asks about (not by the name in it), with lower confidence than given evidence."""
    toy.message("U1:D1:0", "Caroline here, I like tea and long walks.")
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I went to the LGBTQ support group yesterday, it was powerful.",
                                ["Caroline likes powerful talks"])
    _add_unit(toy, facts, "1", "Caroline likes powerful talks")
    ids = toy.ask("q1", "When did Caroline attend the LGBTQ support group?", [])
    case = case_factory(ids["query"], "7 May 2023", [], question="When did Caroline attend the LGBTQ support group?")
    for given in ([], None):
        result = _attr(toy, case, given, evidence_is_pseudo=given is not None)
        assert result["evidence"]["seeds"] == [msg] and result["evidence"]["mode"] == "evidence"
        assert _verdict(result) == ("ExtractionError", op)
        # "yesterday", said on 8 May, points to the golden 7 May: the seed is found by its time
        assert "whose time points to the golden date" in result["reason"]
        assert result["confidence"] < _attr(toy, case, [msg])["confidence"]
        assert any("uncertain seed" in (step.get("note") or "") for step in result["trail"])
    assert not any("uncertain seed" in (step.get("note") or "") for step in _attr(toy, case, [msg])["trail"])
    # a question whose content words no message holds still has no evidence
    other = case_factory(ids["query"], "7 May 2023", [], question="When did Caroline adopt a puppy?")
    assert _attr(toy, other, None)["status"] == "evidence_absent"


def test_pseudo_evidence_is_checked_against_the_golden_answer_and_the_question(toy, case_factory):
    noise = toy.message("U1:D1:0", "I like painting sunsets with my kids.")
    decoy, _, decoy_facts = _mem0_turn(toy, "U1:D1:1", "Sweden has nice summers, I hear.", ["Sweden has nice summers"],
                                       name="Melanie")
    _add_unit(toy, decoy_facts, "9", "Sweden has nice summers")
    msg, op, _ = _mem0_turn(toy, "U1:D1:2", "I moved here from Sweden four years ago.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    case = case_factory(ids["query"], "Sweden", [], question="Where did Caroline move from?")
    result = _attr(toy, case, [noise, decoy], evidence_is_pseudo=True)
    assert result["evidence"]["seeds"] == [msg]
    assert _verdict(result) == ("ExtractionError", op)
    nothing = _attr(toy, case, [], evidence_is_pseudo=True)  # retrieval found nothing: said, then searched
    assert _verdict(nothing) == ("ExtractionError", op) and "retrieval found no starting evidence" in nothing["reason"]


def test_pseudo_mode_never_reads_the_evidence_recorded_on_the_query(toy, case_factory):
    """No message states the (inferred) answer; the gold evidence sits in the query's metadata."""
    gold, op, facts = _mem0_turn(toy, "U1:D1:1", "Went there yesterday, loved it.", ["Caroline went"])
    _add_unit(toy, facts, "1", "Caroline went")
    ids = toy.ask("q1", "When did Caroline go to the support group?", [], evidence=["U1:D1:1"])
    case = case_factory(ids["query"], "7 May 2023", [gold], question="When did Caroline go to the support group?")
    result = _attr(toy, case, [], evidence_is_pseudo=True)
    assert "retrieval found no starting evidence" in result["evidence"]["notes"]
    assert "retrieval found no starting evidence" in result["reason"]
    assert result["status"] == "evidence_absent" and gold not in json.dumps(result)
    # the same evidence handed over as annotated is used
    assert _attr(toy, case)["evidence"]["seeds"] == [gold]


def test_low_confidence_abstains_with_a_best_guess(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden four years ago.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    case = case_factory(ids["query"], "Sweden", [msg])
    result = _attr(toy, case, min_confidence=1.01)
    assert result["status"] == "abstained" and result["error_type"] is None and result["op_id"] is None
    assert result["best_guess"] == {"error_type": "ExtractionError", "op_id": op}
    assert "leans towards ExtractionError" in evidence_flow_seed(result)["hint"]


def test_parameter_nodes_are_ignored(toy, case_factory):
    top_k = toy.parameter("top_k", 10)
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    add_op, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    toy.edge(add_op, toy.parameter("max_facts", 3), unit, "update")
    _, other = _add_unit(toy, facts, "2", "Caroline likes tea")
    ids = toy.ask("q1", "Where did Caroline move from?", [other])
    toy.edge(ids["search"], top_k, other)
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [msg]))) == ("RetrievalError", ids["search"])


# ---------------------------------------------------------------- robustness


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
        assert _verdict(result) == (annotation["final_error_type"], annotation["final_op_id"])


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
    result = _attr(toy, case_factory("query:nope@1", "x", []))
    assert result["status"] == "query_not_found" and result["error_type"] is None
    with pytest.raises(TypeError, match="ExecNetwork or an exported graph dict"):
        attribute_case_evidence_flow(42, case_factory("query:nope@1", "x", []))
    assert gc.isenabled()  # the collector is paused while a graph is indexed, and always switched back on


def test_seed_gives_frontier_and_hint(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    seed = evidence_flow_seed(_attr(toy, case_factory(ids["query"], "Sweden", [msg])))
    assert msg in seed["frontier"]
    assert op in seed["hint"] and "ExtractionError" in seed["hint"]


def test_gold_labels_are_never_read(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved"])
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    plain = case_factory(ids["query"], "Sweden", [msg])
    labelled = case_factory(ids["query"], "Sweden", [msg], final_error_type="DeletionError", final_op_id=ids["qa"],
                            prediction_id="pred-nope@1", fault={"kind": "update/drop", "site": "x"})
    assert _attr(toy, plain) == _attr(toy, labelled)


def test_a_unit_emptied_by_an_update_is_a_deletion(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    del_op, _ = _update_unit(toy, unit, "1", "")
    ids = toy.ask("q1", "Where did Caroline move from?", [])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [msg]))) == ("DeletionError", del_op)


def test_without_recorded_lineage_units_are_judged_by_content(toy, case_factory):
    """A layer that records its units without edges from the messages: content alone decides."""
    msg = toy.message("U1:D1:1", "I moved here from Sweden.")
    held = toy.node("memory-unit-1", {"id": "1", "memory": "Caroline moved here from Sweden"}, category="memory_entry")
    other = toy.node("memory-unit-2", {"id": "2", "memory": "Caroline likes tea"}, category="memory_entry")
    ids = toy.ask("q1", "Where did Caroline move from?", [other])
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg]))
    assert _verdict(result) == ("RetrievalError", ids["search"])
    assert held in json.dumps(result["trail"])


def test_a_message_no_op_reads_blames_the_next_construction_op(toy, case_factory):
    unit = toy.node("memory-unit", "", category="memory_entry")
    skipped = toy.message("U1:D1:1", "I moved here from Sweden.")  # the layer never took it in
    msg = toy.message("U1:D1:2", "Nice weather today.")
    op = toy.op("memory_system.memory_update", "update")
    new = toy.node("memory-unit", "Nice weather today.", category="memory_entry")
    toy.link(op, [unit, msg], [new], "update")
    ids = toy.ask("q1", "Where did Caroline move from?", [new])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [skipped]))) == ("ExtractionError", op)


def test_a_speaker_named_after_a_timestamp_still_owns_the_next_sentences(toy, case_factory):
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "Hey! I moved here from Sweden.", ["Caroline moved here from Sweden"])
    toy.message("U1:D1:2", "Cool!", "Melanie")
    add_op, unit = _add_unit(toy, facts, "1", "[2023-05-08 13:56] Melanie: Hey! I moved here from Sweden.")
    ids = toy.ask("q1", "Where did Caroline move from?", [unit])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Sweden", [msg]))) == ("ExtractionError", add_op)


def test_naming_the_listener_does_not_hide_a_swapped_speaker(toy, case_factory):
    line = "Speaker {a} (role: user) says: Thanks, {b}! My grandma's necklace is from Sweden."
    msg = toy.message("U1:D1:1", line.format(a="Caroline", b="Melanie"))
    toy.message("U1:D1:2", "Speaker Melanie (role: user) says: Lovely!", "Melanie")
    op = toy.op("memory_system.add", "update")
    unit = toy.node("memory-unit-1", {"id": "1", "content": line.format(a="Melanie", b="Caroline")},
                    category="memory_entry")
    toy.edge(op, msg, unit, "update")
    ids = toy.ask("q1", "Where is Caroline's grandma's necklace from?", [unit])
    result = _attr(toy, case_factory(ids["query"], "Sweden", [msg]))
    assert _verdict(result) == ("ExtractionError", op)


def test_an_extraction_op_that_writes_the_content_without_it_is_an_extraction_error(toy, case_factory):
    """A unit's first version only previews its raw segment; the extraction that fills it drops the fact."""
    msg = toy.message("U1:D1:1", "I love listening to Nils Frahm during yoga.")
    init = toy.op("memory_system.finalize_memory_unit", "initialization")
    v1 = toy.node("memory-unit-e1", {"event_id": "e1", "episode": None, "subject": "I love listening to Nils Frahm"},
                  category="memory_entry")
    toy.edge(init, msg, v1, "initialization")
    extract = toy.op("memory_system.extract_memory", "extraction")
    v2 = toy.node("memory-unit-e1", {"event_id": "e1", "episode": "Caroline likes yoga music.", "subject": "Yoga"},
                  category="memory_entry")
    toy.edge(extract, v1, v2, "mutation")
    ids = toy.ask("q1", "Which musician does Caroline listen to during yoga?", [v2])
    assert _verdict(_attr(toy, case_factory(ids["query"], "Nils Frahm", [msg]))) == ("ExtractionError", extract)


def test_a_case_and_a_warm_up_at_once_index_the_graph_once(toy, case_factory, monkeypatch):
    import threading

    from toolkits.evidence_flow import clear_graph_cache, prepare_graph
    from toolkits.evidence_flow._graph_view import GraphView

    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "I moved here from Sweden.", ["Caroline moved from Sweden"])
    _, unit = _add_unit(toy, facts, "1", "Caroline moved from Sweden")
    graph = toy.export()
    case = case_factory(toy.ask("q1", "Where did Caroline move from?", [unit])["query"], "Sweden", [msg])
    clear_graph_cache()
    builds, started = [], threading.Event()
    real_build = GraphView.build.__func__

    def slow_build(cls, g):
        builds.append(g)
        started.set()
        threading.Event().wait(0.2)  # the case arrives while the warm-up is still indexing
        return real_build(cls, g)

    monkeypatch.setattr(GraphView, "build", classmethod(slow_build))
    warm = threading.Thread(target=prepare_graph, args=(graph,))
    warm.start()
    started.wait(5)
    result = attribute_case_evidence_flow(graph, case)
    warm.join(5)
    assert len(builds) == 1
    monkeypatch.undo()
    clear_graph_cache()
    assert result == attribute_case_evidence_flow(graph, case)
    with pytest.raises(TypeError):
        prepare_graph(42)


def test_a_new_fact_decided_none_is_an_extraction_error_at_the_decision_op(toy, case_factory):
    """Extraction kept the fact; the update decision carried it with event NONE and stored no unit:
    the decision op had it last (not the extractor, which did its job)."""
    msg, _, facts = _mem0_turn(toy, "U1:D1:1", "The shelter found homes for twelve dogs in April.",
                               ["The shelter found homes for twelve dogs in April"])
    decide = toy.op("memory_system.update_memory_decision", "update")
    decision = toy.node("raw_memory_update_decision", json.dumps({"memory": [
        {"id": "0", "text": "The shelter found homes for twelve dogs in April", "event": "NONE"}]}),
        category="llm_response")
    toy.edge(decide, facts, decision, "update")
    ids = toy.ask("q1", "How many dogs did the shelter find homes for in April?", [])
    result = _attr(toy, case_factory(ids["query"], "twelve", [msg]))
    assert _verdict(result) == ("ExtractionError", decide)
    assert "went no further" in result["reason"]


@pytest.mark.parametrize("retrieved", [True, False])
def test_a_yes_no_answer_follows_the_reply_to_the_message_that_asks_it(toy, case_factory, retrieved):
    """Golden "No" names nothing; the message that matches the question best only asks it. The
    reply that follows it holds the fact, and its extraction lost it."""
    ask, _, ask_facts = _mem0_turn(toy, "U1:D1:1", "Is Ellie still afraid of dogs?", [], name="Maya")
    reply, reply_op, reply_facts = _mem0_turn(toy, "U1:D1:2", "Not anymore! Last Saturday she helped me walk "
                                              "a beagle at the shelter.", ["Jonah volunteers at a shelter"],
                                              name="Jonah")
    _, unit = _add_unit(toy, reply_facts, "1", "Jonah volunteers at a shelter")
    ids = toy.ask("q1", "Is Ellie still afraid of dogs?", [unit])
    case = case_factory(ids["query"], "No", [reply], question="Is Ellie still afraid of dogs?")
    result = _attr(toy, case, [ask] if retrieved else [], evidence_is_pseudo=True)
    assert _verdict(result) == ("ExtractionError", reply_op), result["reason"]
    assert f"its reply {reply} is followed" in result["reason"]


def test_a_message_that_tells_and_then_asks_back_is_followed_itself(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I went to the support group yesterday. How about you?",
                                ["Caroline went to a group"])
    _mem0_turn(toy, "U1:D1:2", "I stayed home and painted.", ["Melanie painted"], name="Melanie")
    _, unit = _add_unit(toy, facts, "1", "Caroline went to a group")
    ids = toy.ask("q1", "When did Caroline go to the support group?", [unit])
    case = case_factory(ids["query"], "7 May 2023", [msg], question="When did Caroline go to the support group?")
    result = _attr(toy, case, [msg], evidence_is_pseudo=True)
    assert "reply" not in result["reason"] and result["evidence"]["seeds"] == [msg]


def _episode_unit(toy, msg: str, episodes: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """An EverMemOS-like unit: a first version without an episode, then one version per
    ``(op name, op category, episode)``; the last also gets an event log that keeps the fact."""
    raw = [{"content": _STUDIO, "name": "Elif", "role": "user"}]  # the raw segment, bookkeeping for retrieval
    init = toy.op("memory_system.finalize_memory_unit", "initialization")
    unit = toy.node("memory-unit-e1", {"event_id": "e1", "episode": None, "subject": "Elif's move to Lisbon",
                                       "original_data": raw}, category="memory_entry")
    toy.edge(init, msg, unit, "initialization")
    written = []
    for i, (name, category, episode) in enumerate(episodes):
        op = toy.op(name, category)
        value = {"event_id": "e1", "episode": episode, "subject": "Elif's move to Lisbon", "original_data": raw}
        if i == len(episodes) - 1:
            value["event_log"] = {"atomic_fact": ["Elif: The studio is in Chiado.", "Elif: Twenty minutes by tram 28."]}
        unit = toy.node("memory-unit-e1", value, category="memory_entry")
        toy.edge(op, written[-1][1] if written else f"memory-unit-e1@{i + 1}", unit, "mutation")
        written.append((op, unit))
    return written


def _ask_rendered(toy, question: str, unit: str, context_text: str) -> dict[str, str]:
    """A question whose context renders the unit its own way (the subject and the episode only)."""
    query = toy.node("q1", question, category="message & query", class_name="query")
    search = toy.op("memory_system.search_vector_store", "retrieval")
    toy.edge(search, query, unit)
    qa = toy.op("question-answering", "evaluation")
    context = toy.node("ctx-q1", context_text, category="memory_context", class_name="context")
    toy.link(qa, [unit], [context])
    pred = toy.node("pred-q1", "Campo de Ourique", category="llm_response", class_name="prediction")
    toy.link(qa, [query, context], [pred])
    return {"query": query, "qa": qa}


_STUDIO = "Twenty minutes by tram 28. The studio is in Chiado."
_SWAPPED = "Elif said: The studio is twenty minutes by tram 28 from Chiado."


def test_a_unit_that_keeps_the_fact_only_in_a_field_the_context_never_shows(toy, case_factory):
    """The episode (shown) swapped the fact; the event log (not shown) kept it: the episode's op is to blame."""
    msg = toy.message("U1:D2:11", _STUDIO, "Elif")
    (extract, unit), = _episode_unit(toy, msg, [("memory_system.extract_memory", "extraction", _SWAPPED)])
    ids = _ask_rendered(toy, "In which neighbourhood is Elif's studio?", unit, f"Elif's move to Lisbon: {_SWAPPED}")
    result = _attr(toy, case_factory(ids["query"], "Chiado", [msg], question="In which neighbourhood is Elif's studio?"))
    assert _verdict(result) == ("ExtractionError", extract)
    assert "never sees" in result["reason"]


def test_a_shown_field_that_held_the_fact_and_lost_it_is_an_update_error(toy, case_factory):
    msg = toy.message("U1:D2:11", _STUDIO, "Elif")
    (_, _), (rewrite, unit) = _episode_unit(toy, msg, [
        ("memory_system.extract_memory", "extraction", "Elif said: The studio is in Chiado, twenty minutes by tram 28."),
        ("memory_system.update_memory", "update", _SWAPPED),
    ])
    ids = _ask_rendered(toy, "In which neighbourhood is Elif's studio?", unit, f"Elif's move to Lisbon: {_SWAPPED}")
    result = _attr(toy, case_factory(ids["query"], "Chiado", [msg], question="In which neighbourhood is Elif's studio?"))
    assert _verdict(result) == ("UpdateError", rewrite)


def test_a_context_that_shows_the_field_holding_the_fact_is_the_answer_steps_fault(toy, case_factory):
    msg = toy.message("U1:D2:11", _STUDIO, "Elif")
    (_, unit), = _episode_unit(toy, msg, [("memory_system.extract_memory", "extraction", _SWAPPED)])
    shown = f"Elif's move to Lisbon: {_SWAPPED}\nElif: The studio is in Chiado.\nElif: Twenty minutes by tram 28."
    ids = _ask_rendered(toy, "In which neighbourhood is Elif's studio?", unit, shown)
    result = _attr(toy, case_factory(ids["query"], "Chiado", [msg], question="In which neighbourhood is Elif's studio?"))
    assert _verdict(result) == ("ResponseError", ids["qa"])


def test_a_context_whose_text_says_the_fact_elsewhere_is_the_answer_steps_fault(toy, case_factory):
    """The holder's shown fields lack the fact, but another memory in the same context states it."""
    msg = toy.message("U1:D2:11", _STUDIO, "Elif")
    (_, unit), = _episode_unit(toy, msg, [("memory_system.extract_memory", "extraction", _SWAPPED)])
    other_op = toy.op("memory_system.extract_memory", "extraction")
    other = toy.node("memory-unit-e2", {"event_id": "e2", "episode": "Elif said: The studio is in Chiado."},
                     category="memory_entry")
    toy.edge(other_op, msg, other, "extraction")
    ids = _ask_rendered(toy, "In which neighbourhood is Elif's studio?", unit,
                        f"Elif's move to Lisbon: {_SWAPPED}\n\nElif said: The studio is in Chiado.")
    toy.edge(ids["qa"], other, "ctx-q1@1")
    result = _attr(toy, case_factory(ids["query"], "Chiado", [msg], question="In which neighbourhood is Elif's studio?"))
    assert _verdict(result) == ("ResponseError", ids["qa"])


def test_a_speakers_own_words_state_a_who_answer_that_names_them(toy, case_factory):
    """"Who sorts donations?" - "Melanie": her "I sort donations" states it, not another message
    that merely names her; the extraction that gave the fact to Caroline lost it."""
    msg, extract, facts = _mem0_turn(toy, "U1:D1:2", "Right, I sort donations on Thursdays.",
                                     ["Caroline sorts donations on Thursdays"], name="Melanie")
    other, _, other_facts = _mem0_turn(toy, "U1:D1:3", "Melanie is great, she baked for everyone.",
                                       ["Melanie baked for everyone"])
    _, unit = _add_unit(toy, facts, "1", "Caroline sorts donations on Thursdays")
    _, unit2 = _add_unit(toy, other_facts, "2", "Melanie baked for everyone")
    question = "Who sorts donations at the food bank?"
    ids = toy.ask("q1", question, [unit, unit2])
    case = case_factory(ids["query"], "Melanie", [msg], question=question)
    for given in ([msg], [msg, other]):
        result = _attr(toy, case, given, evidence_is_pseudo=True)
        assert _verdict(result) == ("ExtractionError", extract), result["reason"]


def test_a_message_that_tells_beats_one_that_asks_with_the_same_words(toy, case_factory):
    """"Are you buying a car now?" shares the question's words with "I bought a used car"; only the
    second says anything, so the flow starts there and blames the extraction that turned it round."""
    ask, _, _ = _mem0_turn(toy, "U1:D1:1", "Yes!! I told you. Are you buying a car now?", [], name="Nora")
    _mem0_turn(toy, "U1:D1:2", "I sold my old scooter and I'm saving for a car.", ["Omar is saving for a car"],
               name="Omar")
    tell, tell_op, facts = _mem0_turn(toy, "U1:D1:3", "Smart. I bought a used car last week.",
                                      ["Nora sold a used car last week"], name="Nora")
    _, unit = _add_unit(toy, facts, "1", "Nora sold a used car last week")
    ids = toy.ask("q1", "Did Nora buy a car?", [unit])
    case = case_factory(ids["query"], "Yes", [tell], question="Did Nora buy a car?")
    result = _attr(toy, case, [ask, tell], evidence_is_pseudo=True)
    assert result["evidence"]["seeds"] == [tell]
    assert _verdict(result) == ("ExtractionError", tell_op), result["reason"]


def test_the_person_a_message_is_said_to_is_not_what_it_is_about(toy, case_factory):
    told_to, _, _ = _mem0_turn(toy, "U1:D1:1", "Jonas, I have news: Greenfield hired me as a data analyst!",
                               ["Priya was hired by Greenfield"], name="Priya")
    own, own_op, facts = _mem0_turn(toy, "U1:D1:2", "Congratulations! Greenfield rejected me in March.",
                                    ["Greenfield hired Jonas in March"], name="Jonas")
    _, unit = _add_unit(toy, facts, "1", "Greenfield hired Jonas in March")
    ids = toy.ask("q1", "Did Greenfield hire Jonas?", [unit])
    case = case_factory(ids["query"], "No", [own], question="Did Greenfield hire Jonas?")
    result = _attr(toy, case, [told_to, own], evidence_is_pseudo=True)
    assert result["evidence"]["seeds"] == [own]
    assert _verdict(result) == ("ExtractionError", own_op), result["reason"]


@pytest.mark.parametrize("kept", [False, True])
def test_a_comparison_follows_the_second_message_and_blames_where_it_was_lost(toy, case_factory, kept):
    """"How much more does Marcus charge than Ines?" needs both prices. The message closest to the
    question (Ines's) reached the memory intact; Marcus's price was lost at his extraction. With
    his price kept, both reach the context and the answer step is at fault."""
    ines, _, ines_facts = _mem0_turn(toy, "U1:D1:1", "I charge 7 euros a jar of honey at the Saturday market.",
                                     ["Ines charges 7 euros a jar of honey at the Saturday market"], name="Ines")
    # a question holds no price, however many of the question's words it shares
    asks, _, _ = _mem0_turn(toy, "U1:D1:0", "Do you think I charge too much for a jar of honey?", [], name="Marcus")
    marcus_fact = "Marcus sells at the farm shop" + (" for 9 euros a jar" if kept else "")
    marcus, marcus_op, marcus_facts = _mem0_turn(toy, "U1:D1:2", "I sell at the farm shop for 9 euros a jar.",
                                                 [marcus_fact], name="Marcus")
    _, ines_unit = _add_unit(toy, ines_facts, "1", "Ines charges 7 euros a jar of honey at the Saturday market")
    _, marcus_unit = _add_unit(toy, marcus_facts, "2", marcus_fact)
    question = "How much more does Marcus charge for a jar of honey than Ines?"
    ids = toy.ask("q1", question, [ines_unit, marcus_unit])
    case = case_factory(ids["query"], "2 euros", [ines, marcus], question=question)
    result = _attr(toy, case, [ines, asks, marcus], evidence_is_pseudo=True)
    if kept:
        assert _verdict(result) == ("ResponseError", ids["qa"]), result["reason"]
    else:
        assert _verdict(result) == ("ExtractionError", marcus_op), result["reason"]
        assert "two messages" in result["reason"]


def test_the_second_message_must_name_the_one_the_first_leaves_out(toy):
    """Omar's words add more of the question than Marcus's, but only Marcus's message is about
    the one the first message leaves out."""
    from toolkits.evidence_flow._attributor import _view_for
    from toolkits.evidence_flow._hops import second_hop
    from toolkits.evidence_flow._text import content_tokens

    ines = toy.message("U1:D1:1", "My jars go for 7 euros at the Saturday market.", "Ines")
    omar = toy.message("U1:D1:2", "I charge so much for honey, more than anyone.", "Omar")
    marcus = toy.message("U1:D1:3", "I sell at the farm shop for 9 euros a jar.", "Marcus")
    view = _view_for(toy.export())
    first, *candidates = (view.resolve(m) for m in (ines, omar, marcus))
    question = content_tokens("How much more does Marcus charge for a jar of honey than Ines?")
    assert second_hop(view, [first], candidates, question).full_node_id == marcus
    assert second_hop(view, [first], candidates[:1], question) is None  # Omar alone names no one missing


def test_a_when_question_follows_the_statement_that_tells_a_time(toy, case_factory):
    """"Kenji, meet Biscuit!" shares as much with the question as "he arrived on Thursday", but only
    the second can tell when; the extraction kept Biscuit and lost the day."""
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "Kenji, meet Biscuit! He's the beagle I'm fostering, he arrived "
                                "on Thursday.", ["Rosa is fostering a beagle named Biscuit"], name="Rosa")
    _, unit = _add_unit(toy, facts, "1", "Rosa is fostering a beagle named Biscuit")
    later, _, later_facts = _mem0_turn(toy, "U1:D1:2", "I finally met Biscuit at the park today.",
                                       ["Kenji met Biscuit at the park"], name="Kenji")
    _, other = _add_unit(toy, later_facts, "2", "Kenji met Biscuit at the park")
    question = "When did Rosa start fostering Biscuit?"
    ids = toy.ask("q1", question, [unit, other])
    case = case_factory(ids["query"], "3 August 2023", [msg], question=question)
    result = _attr(toy, case, [msg, later], evidence_is_pseudo=True)
    assert _verdict(result) == ("ExtractionError", op), result["reason"]


def test_a_sum_follows_the_second_message_even_when_it_adds_only_a_name(toy, case_factory):
    """"How many jars did Ines and Marcus harvest altogether?": Marcus's message matches the question
    best; Ines's adds nothing of it but her name, and her count was lost at her extraction."""
    ines, ines_op, ines_facts = _mem0_turn(toy, "U1:D1:1", "14 jars from the two hives.",
                                           ["Ines has two hives"], name="Ines")
    marcus, _, marcus_facts = _mem0_turn(toy, "U1:D1:2", "Normally around 30, but this spring only 9 jars of honey "
                                         "because of the swarm.", ["Marcus harvested 9 jars of honey this spring"],
                                         name="Marcus")
    _, ines_unit = _add_unit(toy, ines_facts, "1", "Ines has two hives")
    _, marcus_unit = _add_unit(toy, marcus_facts, "2", "Marcus harvested 9 jars of honey this spring")
    question = "How many jars of honey did Ines and Marcus harvest altogether this spring?"
    ids = toy.ask("q1", question, [ines_unit, marcus_unit])
    case = case_factory(ids["query"], "23 jars", [ines, marcus], question=question)
    result = _attr(toy, case, [marcus, ines], evidence_is_pseudo=True)
    assert _verdict(result) == ("ExtractionError", ines_op), result["reason"]
