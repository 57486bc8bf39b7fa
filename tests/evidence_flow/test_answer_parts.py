"""Answers in several parts, told by different messages: each part is followed, the earliest loss decides."""

from __future__ import annotations

import pytest

from tests.evidence_flow.test_attributor import _add_unit, _attr, _mem0_turn, _verdict
from toolkits.evidence_flow._parts import answer_parts


@pytest.mark.parametrize(("golden", "parts"), [
    ("Sweden", ["Sweden"]),
    ("a ryokan near the Kamo river, 14 April", ["a ryokan near the Kamo river", "14 April"]),
    ("pottery; camping and painting", ["pottery", "camping", "painting"]),
    ("a, Sweden", ["a, Sweden"]),  # "a" says nothing: one part
    ("tea, Tea", ["tea, Tea"]),  # the same part twice: one part
    ("a1, b1, c2, d3, e4, f5, g6", ["a1, b1, c2, d3, e4, f5, g6"]),  # a long enumeration is not split
])
def test_answer_parts(golden, parts):
    assert answer_parts(golden) == parts


def test_a_part_the_question_already_says_is_no_part_of_its_own():
    # "Ines" is who the question asks about, not information the answer adds: the whole sentence
    # is one fact (split, "Ines" alone would send the flow after any message naming her)
    question = "How long have Ines and her sister run the bakery?"
    assert answer_parts("Ines and her sister have run the bakery for 7 years.", question=question) == [
        "Ines and her sister have run the bakery for 7 years."]
    # parts the question does not say stay parts
    assert answer_parts("rye bread and plum cake", question="What does Ines bake?") == ["rye bread", "plum cake"]


def _two_messages(toy, *, keep_second: bool):
    """D1:1 tells where she stays, D1:2 when she leaves; both are extracted into units, the second
    only when ``keep_second``."""
    stay, _, stay_facts = _mem0_turn(toy, "U1:D1:1", "We're staying at a ryokan near the Kamo river.",
                                     ["Keiko is staying at a ryokan near the Kamo river"], name="Keiko")
    _, stay_unit = _add_unit(toy, stay_facts, "1", "Keiko is staying at a ryokan near the Kamo river")
    leave, leave_op, leave_facts = _mem0_turn(
        toy, "U1:D1:2", "Our flight home leaves on 14 April.",
        ["Keiko's flight home leaves on 14 April" if keep_second else "Keiko will fly home"], name="Keiko")
    _, leave_unit = _add_unit(toy, leave_facts, "2", "Keiko's flight home leaves on 14 April" if keep_second
                              else "Keiko will fly home")
    ids = toy.ask("q1", "Where is Keiko staying in Kyoto, and when does she leave?", [stay_unit, leave_unit])
    return ids, [stay, leave], leave_op


@pytest.mark.parametrize("evidence", ["annotated", "retrieved", "none"])
def test_a_part_lost_at_extraction_is_blamed_even_when_the_other_part_reaches_the_context(toy, case_factory,
                                                                                          evidence):
    ids, messages, leave_op = _two_messages(toy, keep_second=False)
    case = case_factory(ids["query"], "[a ryokan near the Kamo river, 14 April]", messages,
                        question="Where is Keiko staying in Kyoto, and when does she leave?")
    args = {"annotated": (), "retrieved": (messages,), "none": ([],)}[evidence]
    result = _attr(toy, case, *args, evidence_is_pseudo=evidence != "annotated")
    assert _verdict(result) == ("ExtractionError", leave_op), result["reason"]
    assert "part '14 April' decides" in result["reason"]
    assert any("answer part" in step["note"] for step in result["trail"])


def test_every_part_in_the_context_is_a_response_error(toy, case_factory):
    ids, messages, _ = _two_messages(toy, keep_second=True)
    case = case_factory(ids["query"], "[a ryokan near the Kamo river, 14 April]", messages,
                        question="Where is Keiko staying in Kyoto, and when does she leave?")
    assert _verdict(_attr(toy, case)) == ("ResponseError", ids["qa"])


def test_one_message_that_states_every_part_is_followed_as_one_fact(toy, case_factory):
    msg, op, facts = _mem0_turn(toy, "U1:D1:1", "I love pottery and camping with the kids.",
                                ["Caroline loves pottery"])
    _, unit = _add_unit(toy, facts, "1", "Caroline loves pottery")
    ids = toy.ask("q1", "What does Caroline love?", [unit])
    result = _attr(toy, case_factory(ids["query"], "pottery, camping", [msg], question="What does Caroline love?"))
    assert _verdict(result) == ("ExtractionError", op)
    assert "parts" not in result["reason"]


def test_when_several_parts_are_lost_the_earliest_loss_decides(toy, case_factory):
    stay, stay_op, stay_facts = _mem0_turn(toy, "U1:D1:1", "We're staying at a ryokan near the Kamo river.",
                                           ["Keiko is in Kyoto"], name="Keiko")
    _, stay_unit = _add_unit(toy, stay_facts, "1", "Keiko is in Kyoto")
    leave, _, leave_facts = _mem0_turn(toy, "U1:D1:2", "Our flight home leaves on 14 April.",
                                       ["Keiko will fly home"], name="Keiko")
    _, leave_unit = _add_unit(toy, leave_facts, "2", "Keiko will fly home")
    ids = toy.ask("q1", "Where is Keiko staying in Kyoto, and when does she leave?", [stay_unit, leave_unit])
    case = case_factory(ids["query"], "[14 April, a ryokan near the Kamo river]", [stay, leave],
                        question="Where is Keiko staying in Kyoto, and when does she leave?")
    result = _attr(toy, case)
    assert _verdict(result) == ("ExtractionError", stay_op)
    assert "part 'a ryokan near the Kamo river' decides" in result["reason"]
