"""The default mode's starting evidence: which message the flow starts from when nothing is annotated,
and the result saying when that choice is uncertain (``evidence.seed_uncertain``)."""

from __future__ import annotations

import json

from toolkits.evidence_flow import attribute_case_evidence_flow


def _turn(toy, mid: str, text: str, fact: str, name: str) -> tuple[str, str]:
    """A message, its extracted fact and the memory unit it became; returns (message, unit)."""
    msg = toy.message(mid, text, name)
    op = toy.op("memory_system.extract_facts", "extraction")
    facts = toy.node("extracted_facts", [fact], category="llm_response")
    toy.edge(op, msg, facts, "extraction")
    add = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node(f"memory-unit-{mid}", {"id": mid, "memory": fact}, category="memory_entry")
    toy.edge(add, facts, unit, "update")
    return msg, unit


def test_two_messages_that_state_the_answer_alike_make_an_uncertain_seed(toy, case_factory):
    # The reason: with no annotation, two equally good matches leave the seed a coin toss; the
    # result must say so, so that a reader (or an LLM strategy seeded with it) checks the other one.
    first, unit = _turn(toy, "U1:D1:1", "Our choir sings in the old chapel on Fridays after the potluck dinner.",
                        "Wanda's choir sings in the old chapel", "Wanda")
    # another event at the same place, as close to the question's words: not a restatement
    second, _ = _turn(toy, "U1:D2:1", "The choir sang carols at the old chapel with a brass band.",
                      "Wanda's choir sang carols at the old chapel", "Wanda")
    question = "Where does Wanda's choir sing?"
    ids = toy.ask("q1", question, [unit])
    case = case_factory(ids["query"], "old chapel", [first], question=question)
    retrieved = attribute_case_evidence_flow(toy.export(), case, [], evidence_is_pseudo=True)
    evidence = retrieved["evidence"]
    assert evidence["seed_uncertain"] and {first, second} & set(evidence["seeds"])
    assert "also states the golden answer" in evidence["seed_uncertain_because"]
    assert any("uncertain seed" in (step["note"] or "") for step in retrieved["trail"])
    annotated = attribute_case_evidence_flow(toy.export(), case, [first])["evidence"]
    assert not annotated["seed_uncertain"] and annotated["seed_uncertain_because"] == ""
    assert annotated["seed_confidence"] == 1.0 > evidence["seed_confidence"]
    json.dumps(retrieved)  # the fields are plain JSON


def test_one_message_that_states_the_answer_is_a_sure_seed(toy, case_factory):
    msg, unit = _turn(toy, "U1:D1:1", "Our choir sings in the old chapel on Fridays.",
                      "Wanda's choir sings in the old chapel", "Wanda")
    toy.message("U1:D1:2", "I bake rye bread on Sundays.", "Wanda")
    question = "Where does Wanda's choir sing?"
    ids = toy.ask("q1", question, [unit])
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "old chapel", [], question=question),
                                          [], evidence_is_pseudo=True)
    assert result["evidence"]["seeds"] == [msg] and not result["evidence"]["seed_uncertain"]


def test_an_inferred_answer_seeded_by_the_question_alone_is_uncertain(toy, case_factory):
    # no message states "12 March 2023": the seed is only the message closest to the question
    msg, unit = _turn(toy, "U1:D1:1", "We finally planted the apricot tree yesterday.",
                      "Wanda planted an apricot tree", "Wanda")
    question = "When did Wanda plant the apricot tree?"
    ids = toy.ask("q1", question, [unit])
    case = case_factory(ids["query"], "12 March 2023", [], question=question)
    result = attribute_case_evidence_flow(toy.export(), case, [msg], evidence_is_pseudo=True)
    assert result["evidence"]["seeds"] == [msg] and result["evidence"]["mode"] == "evidence"
    assert result["evidence"]["seed_uncertain"]
    assert "no message states the golden answer" in result["evidence"]["seed_uncertain_because"]


def _dated_message(toy, mid: str, text: str, sent: str) -> str:
    return toy.node(mid, {"content": text, "name": "Wanda", "role": "user", "timestamp": sent}, category="message")


def test_a_when_question_follows_the_message_whose_relative_time_points_to_the_golden_date(toy, case_factory):
    # The reason: no message states a date computed from "yesterday", so the question's words alone
    # pick the message that shares most of them, here a wish, not the event. The day each message was
    # sent, read with its relative time, says which one the golden date came from.
    wish = _dated_message(toy, "U1:D1:1", "I want to plant an apricot tree in the garden someday.", "2023-03-01T10:00:00")
    _dated_message(toy, "U1:D1:2", "My neighbour lent me his ladder for the gutters.", "2023-03-01T10:05:00")
    # a number beside the relative time ("yesterday, 3 friends") is read apart from it
    done = _dated_message(toy, "U1:D2:1", "The apricot tree finally went into the ground yesterday, 3 friends helped!",
                          "2023-03-13T18:30:00")
    _dated_message(toy, "U1:D2:2", "Next I am painting the fence green.", "2023-03-13T18:35:00")
    ids = toy.ask("q1", "When did Wanda plant the apricot tree?", [])
    case = case_factory(ids["query"], "12 March 2023", [], question="When did Wanda plant the apricot tree?")
    for given in ([wish], [wish, done], []):
        result = attribute_case_evidence_flow(toy.export(), case, given, evidence_is_pseudo=True)
        assert result["evidence"]["seeds"] == [done], given
        assert any("points to the golden date" in note for note in result["evidence"]["notes"])
    # a golden answer that is no date leaves the choice to the question's words
    other = case_factory(ids["query"], "in spring", [], question="When did Wanda plant the apricot tree?")
    assert attribute_case_evidence_flow(toy.export(), other, [wish], evidence_is_pseudo=True)["evidence"]["seeds"] == [wish]


def test_an_uncertain_seed_is_named_in_the_hint_for_an_llm_strategy(toy, case_factory):
    # an agent seeded with the flow's verdict would otherwise build on a start that may be wrong
    from toolkits.evidence_flow import evidence_flow_seed

    msg, unit = _turn(toy, "U1:D1:1", "We finally planted the apricot tree yesterday.", "Wanda planted an apricot tree",
                      "Wanda")
    ids = toy.ask("q1", "When did Wanda plant the apricot tree?", [unit])
    case = case_factory(ids["query"], "in spring", [], question="When did Wanda plant the apricot tree?")
    uncertain = attribute_case_evidence_flow(toy.export(), case, [msg], evidence_is_pseudo=True)
    assert uncertain["evidence"]["seed_uncertain"]
    assert "The message it started from is itself uncertain (no message states" in evidence_flow_seed(uncertain)["hint"]
    sure = attribute_case_evidence_flow(toy.export(), case, [msg])
    assert "itself uncertain" not in evidence_flow_seed(sure)["hint"]


def test_a_when_question_follows_the_message_that_names_the_golden_date_without_its_year(toy, case_factory):
    # The reason: "on 14 July", said in May 2024, is 14 July 2024, yet it lacks a word of the golden
    # answer ("2024"), so it does not state it word for word; a message that shares more of the
    # question's words but names no date must not win over it.
    planned = _dated_message(toy, "U1:D1:1", "Our pottery stall at the harbour market starts on 14 July!",
                             "2024-05-20T09:00:00")
    _dated_message(toy, "U1:D1:2", "My cousin is visiting from Lisbon next month.", "2024-05-20T09:05:00")
    chores = _dated_message(toy, "U1:D2:1", "I still need to glaze forty mugs before the pottery stall opens.",
                            "2024-06-02T17:00:00")
    _dated_message(toy, "U1:D2:2", "The kiln repair cost more than I hoped.", "2024-06-02T17:05:00")
    question = "When does Wanda's pottery stall open?"
    ids = toy.ask("q1", question, [])
    case = case_factory(ids["query"], "14 July 2024", [], question=question)
    result = attribute_case_evidence_flow(toy.export(), case, [chores, planned], evidence_is_pseudo=True)
    assert result["evidence"]["seeds"] == [planned] and result["evidence"]["mode"] == "evidence"


def test_a_message_that_meets_the_question_only_where_it_asks_hands_over_to_its_reply(toy, case_factory):
    # The reason: "Lovely photo! How long have you kept bees?" shares the question's words only in
    # the sentence that asks them; what it tells ("lovely photo") is no answer. The answer is in the
    # reply, however few of the question's words the reply repeats.
    ask, _ = _turn(toy, "U1:D1:1", "What a lovely garden photo! How long have you kept bees?",
                   "Tomas likes the garden photo", "Tomas")
    # the asker adds a line before the reply comes
    aside, _ = _turn(toy, "U1:D1:2", "Oh, and that frame is gorgeous.", "Tomas likes the frame", "Tomas")
    reply, unit = _turn(toy, "U1:D1:3", "Nine summers now! The first hive came from my uncle.",
                        "Ines got her first hive from her uncle", "Ines")
    question = "How long has Ines kept bees?"
    ids = toy.ask("q1", question, [unit])
    case = case_factory(ids["query"], "since 2014", [], question=question)
    result = attribute_case_evidence_flow(toy.export(), case, [ask, aside, reply], evidence_is_pseudo=True,
                                          triage=False)
    assert result["evidence"]["seeds"] == [reply], result["reason"]
    assert f"its reply {reply} is followed" in result["reason"]


def _dated_turn(toy, mid: str, text: str, sent: str, fact: str, name: str) -> tuple[str, str]:
    """A dated message, its extracted fact and the memory unit it became; returns (message, unit)."""
    msg = toy.node(mid, {"content": text, "name": name, "role": "user", "timestamp": sent}, category="message")
    op = toy.op("memory_system.extract_facts", "extraction")
    facts = toy.node("extracted_facts", [fact], category="llm_response")
    toy.edge(op, msg, facts, "extraction")
    add = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node(f"memory-unit-{mid}", {"id": mid, "memory": fact}, category="memory_entry")
    toy.edge(add, facts, unit, "update")
    return msg, unit


def test_a_golden_span_before_a_day_follows_the_message_sent_that_day_that_points_back(toy, case_factory):
    # The reason: "a few days before 10 April" is what a message sent on 10 April said ("a few days
    # ago"); "now" in a message sent the same day points to 10 April itself, not before it, however
    # many of the question's words that message shares.
    sent = "2023-04-10T18:00:00"
    habit, habit_unit = _dated_turn(toy, "U1:D1:1", "I have been sketching the heron at the pond for years now.", sent,
                                    "Wanda sketches the heron at the pond", "Wanda")
    sighting, unit = _dated_turn(toy, "U1:D1:2", "A few days ago a heron landed right next to me, huge wings!", sent,
                                 "Wanda saw a heron up close", "Wanda")
    question = "When did Wanda first see the heron at the pond?"
    ids = toy.ask("q1", question, [habit_unit, unit])
    case = case_factory(ids["query"], "A few days before 10 April 2023", [], question=question)
    result = attribute_case_evidence_flow(toy.export(), case, [habit, sighting], evidence_is_pseudo=True, triage=False)
    assert result["evidence"]["seeds"] == [sighting], result["reason"]
    # a golden date with no span still takes a message that names or points to that very day
    plain = case_factory(ids["query"], "10 April 2023", [], question=question)
    result = attribute_case_evidence_flow(toy.export(), plain, [habit, sighting], evidence_is_pseudo=True, triage=False)
    assert result["evidence"]["seeds"] == [habit]


def test_the_second_message_of_a_question_is_followed_from_itself(toy, case_factory):
    # The reason: the second hop is the given message about the other person the question names;
    # searched for again by the golden date, the conversation would hand back the first message.
    sent = "2023-03-13T18:00:00"
    first, first_unit = _dated_turn(toy, "U1:D1:1", "We climbed the lighthouse yesterday, the stairs were endless!",
                                    sent, "Ines climbed the lighthouse", "Ines")
    second, second_unit = _dated_turn(toy, "U1:D1:2", "My legs still ache from those lighthouse stairs.", sent,
                                      "Tomas's legs ache", "Tomas")
    question = "When did Ines and Tomas climb the lighthouse?"
    ids = toy.ask("q1", question, [first_unit, second_unit])
    case = case_factory(ids["query"], "12 March 2023", [], question=question)
    result = attribute_case_evidence_flow(toy.export(), case, [first, second], evidence_is_pseudo=True, triage=False)
    seeded = [step["node_id"] for step in result["trail"] if "mode seed" in (step["note"] or "")]
    assert seeded == [first, second], result["trail"]


def test_a_golden_year_follows_the_message_whose_time_counted_in_years_points_to_it(toy, case_factory):
    # The reason: "in 2023" is what "a year ago", said in 2024, comes to; the message that shares
    # more of the question's words tells no time at all. A "yesterday" said in the golden year says
    # nothing about the year (every message of that year would point into it): it is no such seed.
    sent = "2024-02-10T11:00:00"
    photo, photo_unit = _dated_turn(toy, "U1:D1:1", "Pebble, my tortoise, basks under his lamp yesterday, look!",
                                    sent, "Wanda's tortoise Pebble basks under a lamp", "Wanda")
    adopted, unit = _dated_turn(toy, "U1:D1:2", "I adopted him a year ago from a shelter in Ghent.", sent,
                                "Wanda adopted a tortoise from a shelter in Ghent", "Wanda")
    question = "When did Wanda adopt her tortoise Pebble?"
    ids = toy.ask("q1", question, [photo_unit, unit])
    for golden, seed, dated in (("in 2023", adopted, True), ("in 2024", photo, False)):
        case = case_factory(ids["query"], golden, [], question=question)
        result = attribute_case_evidence_flow(toy.export(), case, [photo, adopted], evidence_is_pseudo=True,
                                              triage=False)
        assert result["evidence"]["seeds"] == [seed], (golden, result["reason"])
        assert any("points to the golden date" in note for note in result["evidence"]["notes"]) is dated


def test_a_reply_is_about_what_it_was_asked(toy, case_factory):
    # The reason: two messages state the answer; "Nope, we will bake rye bread at home ..." shares
    # none of the question's words itself, yet it answers "Skipping the pottery class?", which is
    # what the question asks about; the other one, as close to the question by its own words, is
    # about another day.
    weekend, weekend_unit = _turn(toy, "U1:D1:1", "Baked rye bread last weekend!",
                                  "Wanda and her sister baked rye bread", "Wanda")
    _turn(toy, "U1:D2:1", "Skipping the pottery class?", "Tomas asks about pottery", "Tomas")
    reply, unit = _turn(toy, "U1:D2:2", "Nope, we will bake rye bread at home with my sister and her twins.",
                        "Wanda will bake rye bread", "Wanda")
    question = "What will Wanda do instead of the pottery class?"
    ids = toy.ask("q1", question, [weekend_unit, unit])
    case = case_factory(ids["query"], "bake rye bread", [], question=question)
    for given in ([weekend, reply], []):
        result = attribute_case_evidence_flow(toy.export(), case, given, evidence_is_pseudo=True, triage=False)
        assert result["evidence"]["seeds"][0] == reply, (given, result["reason"])


def test_a_reply_to_another_question_about_the_same_thing_is_no_better_match(toy, case_factory):
    # The reason: "How many pumpkins did you pick?" shares "pumpkin" with "How many pumpkin plants
    # did Ines plant?" but asks another thing (the harvest): its reply answers that, so the words it
    # was asked count only as far as what it asks is what the question asks.
    planted, planted_unit = _turn(toy, "U1:D1:1", "They came! I planted 9 pumpkin plants on 2 April.",
                                  "Ines planted 9 pumpkin plants", "Ines")
    _turn(toy, "U1:D3:1", "How many pumpkins did you pick in the end?", "Tomas asks about the harvest", "Tomas")
    harvest, unit = _turn(toy, "U1:D3:2", "About 20 kilos from the 9 plants! The beans gave me 3 kilos.",
                          "Ines picked 20 kilos from 9 plants", "Ines")
    question = "How many pumpkin plants did Ines plant?"
    ids = toy.ask("q1", question, [planted_unit, unit])
    case = case_factory(ids["query"], "9", [], question=question)
    result = attribute_case_evidence_flow(toy.export(), case, [harvest, planted], evidence_is_pseudo=True, triage=False)
    assert result["evidence"]["seeds"][0] == planted, result["reason"]


def test_a_count_tells_no_time_to_a_when_question(toy, case_factory):
    # The reason: evidence mode follows the statement that tells what the question asks for; a
    # when-question asks for a time, and "the 3 dogs" is a count, not a time (a year would be one).
    # Following the count, the memory of the message's other fact would pass for the fact.
    msg = toy.message("U1:D1:1", "We went camping up on the ridge and slept in a tent. The 3 dogs loved it.", "Wanda")
    op = toy.op("memory_system.extract_facts", "extraction")
    facts = toy.node("extracted_facts", ["Wanda's 3 dogs loved the trip"], category="llm_response")
    toy.edge(op, msg, facts, "extraction")
    add = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node("memory-unit-1", {"id": "1", "memory": "Wanda's 3 dogs loved the trip"}, category="memory_entry")
    toy.edge(add, facts, unit, "update")
    question = "When did Wanda go camping?"
    ids = toy.ask("q1", question, [unit])
    case = case_factory(ids["query"], "the weekend before 8 May 2023", [msg], question=question)
    result = attribute_case_evidence_flow(toy.export(), case, triage=False)
    assert (result["error_type"], result["op_id"]) == ("ExtractionError", op), result["reason"]


def test_a_question_handed_over_as_recorded_is_read_as_its_text(toy, case_factory):
    # The reason: the runner hands the query node's value as recorded, a quoted repr
    # ("'When did ...?'"); read as it is, the question would not start with "When" and no rule for
    # when-questions (the seed whose time points to the golden date) would apply.
    wish = _dated_message(toy, "U1:D1:1", "I want to plant an apricot tree in the garden someday.", "2023-03-01T10:00:00")
    done = _dated_message(toy, "U1:D2:1", "The apricot tree finally went into the ground yesterday!", "2023-03-13T18:30:00")
    ids = toy.ask("q1", "When did Wanda plant the apricot tree?", [])
    case = case_factory(ids["query"], "12 March 2023", [], question=repr("When did Wanda plant the apricot tree?"))
    result = attribute_case_evidence_flow(toy.export(), case, [wish, done], evidence_is_pseudo=True)
    assert result["evidence"]["seeds"] == [done], result["reason"]
