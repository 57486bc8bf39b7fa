"""Meaning changes that keep the words: opposites put in a word's place, two words trading places."""

from __future__ import annotations

import pytest

from toolkits.evidence_flow._facts import statements
from toolkits.evidence_flow._meaning import opposite_word, swapped_pair
from toolkits.evidence_flow._probe import FactProbe
from toolkits.evidence_flow._text import content_tokens

NAMES = frozenset({"mia", "ana", "priya", "karl", "nora", "omar", "jonas", "leo"})
PROPER = NAMES | {"prague", "vienna", "max", "greenfield", "brightline", "harbor", "labs", "north", "wind"}


def _probe(fact: str, answer: str, question: str, *, speaker: str | None = None, mode: str = "answer") -> FactProbe:
    facts = statements(fact, NAMES, speaker)
    return FactProbe.build(mode=mode, facts=facts, answer_tokens=content_tokens(answer),
                           question_tokens=content_tokens(question), names=NAMES, evidence_tokens=content_tokens(fact),
                           document_frequency={}, documents=10, answer_spread=1, answer_threshold=0.75,
                           evidence_threshold=0.5, question=question, golden=answer)


@pytest.mark.parametrize(
    ("fact", "changed", "question"),
    [
        ("Greenfield rejected me in March.", "Greenfield hired me in March.", "Did Greenfield hire Jonas?"),
        ("I bought a used car last week for 6000 dollars.", "I sold a used car last week for 6000 dollars.",
         "Did Nora buy a car?"),
        ("Elena loved North Wind.", "Elena disliked North Wind.", "Did Elena like North Wind?"),
        ("I accepted the offer from Harbor Labs and I declined the offer from Brightline.",
         "I accepted the offer from Harbor Labs and I accepted the offer from Brightline.",
         "Did Mia accept the offer from Brightline?"),
        ("Mia quit the choir in May.", "Mia started the choir in May.", "What did Mia quit in May?"),
        # two opposites trading places: each clause holds the other's
        ("We lost the cup final 2-1, but we won the league on goal difference.",
         "We won the cup final 2-1, but we lost the league on goal difference.", "Did Leo's team win the cup final?"),
    ],
)
def test_an_opposite_in_a_words_place_is_found(fact, changed, question):
    assert opposite_word(fact, changed, content_tokens(question)) is not None
    assert opposite_word(fact, fact, content_tokens(question)) is None


@pytest.mark.parametrize(
    "faithful",
    [
        "Greenfield turned Jonas down in March.",  # other words, same meaning
        "Jonas was rejected by Greenfield in March.",
        "Jonas applied to Greenfield and got rejected in March.",
    ],
)
def test_a_paraphrase_is_no_opposite(faithful):
    assert opposite_word("Greenfield rejected me in March.", faithful, content_tokens("Did Greenfield hire Jonas?")) \
        is None


def test_an_opposite_in_a_clause_the_question_is_not_about_does_not_count():
    fact = "I went to Prague in August and I loved the food."
    changed = "I went to Prague in August and I hated the food."
    assert opposite_word(fact, changed, content_tokens("Where did Sam go in August?")) is None
    assert opposite_word(fact, changed, content_tokens("Did Sam like the food?")) == ("lov", "hat")  # stemmed


def test_an_opposite_needs_the_rest_of_the_clause():
    # the clause shares nothing else: another statement, not the fact turned round
    assert opposite_word("I bought a car.", "Max sold his flat and a bike in town.", content_tokens("Did Nora buy a car?")) \
        is None


@pytest.mark.parametrize(
    ("fact", "speaker", "swapped", "question", "answer"),
    [
        ("Yes, I invited 12 guests, but only 8 guests confirmed.", "nora",
         "Yes, I invited 8 guests, but only 12 guests confirmed.", "How many guests did Nora invite?", "12"),
        ("I went to Prague in August and I skipped Vienna because of the floods.", "sam",
         "I went to Vienna in August and I skipped Prague because of the floods.", "Where did Sam go in August?",
         "Prague"),
        ("Priya beat Karl in the final of the chess club tournament.", None,
         "Karl beat Priya in the final of the chess club tournament.", "Who won the final, Priya or Karl?", "Priya"),
        ("For me it was the opposite, I liked the ramen more than the takoyaki.", "nora",
         "For me it was the opposite, I liked the takoyaki more than the ramen.",
         "Who liked ramen more than takoyaki?", "Nora"),
    ],
)
def test_two_words_trading_places_are_found(fact, speaker, swapped, question, answer):
    keys = content_tokens(question) | content_tokens(answer)
    assert swapped_pair(fact, swapped, keys=keys, fact_speaker=speaker, text_speaker=speaker, proper=PROPER) is not None
    assert swapped_pair(fact, fact, keys=keys, fact_speaker=speaker, text_speaker=speaker, proper=PROPER) is None


def test_first_person_words_are_their_speaker():
    fact, memory = "I taught your sister Ana to surf last summer.", "Your sister Ana taught me to surf last summer."
    keys = content_tokens("Who was the surfing teacher, Mia or Ana?")
    assert swapped_pair(fact, memory, keys=keys, fact_speaker="mia", text_speaker="mia", proper=PROPER) == ("mia", "ana")
    # said by Ana, "me" is Ana: the same roles
    assert swapped_pair(fact, "Ana taught Mia to surf last summer.", keys=keys, fact_speaker="ana", proper=PROPER) is None


@pytest.mark.parametrize(
    "faithful",
    [
        "We won the league on goal difference but lost the cup final 2-1.",  # clauses in the other order
        "Karl was beaten by Priya in the final of the chess club tournament.",  # passive
        "Of the 12 guests Nora invited, 8 confirmed.",
        # verbs turned round their object
        "My mother rented a yellow kimono and loved it.",
    ],
)
def test_reordered_paraphrases_are_no_swap(faithful):
    facts = {
        "We": "We lost the cup final 2-1, but we won the league on goal difference.",
        "Karl": "Priya beat Karl in the final of the chess club tournament.",
        "Of": "Yes, I invited 12 guests, but only 8 guests confirmed.",
        "My": "My mother loved the yellow kimono she rented.",
    }
    fact = facts[faithful.split()[0]]
    keys = content_tokens("Who won? Did they lose? How many guests did Nora invite? Priya Karl 12 yellow rent")
    assert swapped_pair(fact, faithful, keys=keys, fact_speaker="nora", text_speaker="nora", proper=PROPER) is None


def test_a_swap_needs_an_answer_or_question_word():
    fact = "I play the bass and our singer Max plays the drums."
    swapped = "I play the drums and our singer Max plays the bass."
    assert swapped_pair(fact, swapped, keys=content_tokens("What instrument does Priya play? bass"), proper=PROPER) is not None
    assert swapped_pair(fact, swapped, keys=content_tokens("Where does the band rehearse?"), proper=PROPER) is None


@pytest.mark.parametrize(
    ("fact", "speaker", "changed", "question", "answer", "mode"),
    [
        ("Speaker Nora (role: user) says: Yes, I invited 12 guests, but only 8 guests confirmed.", "nora",
         "Speaker Nora (role: user) says: Yes, I invited 8 guests, but only 12 guests confirmed.",
         "How many guests did Nora invite to her dinner?", "12", "answer"),
        ("Priya beat Karl in the final of the chess club tournament.", "priya",
         "Karl beat Priya in the final of the chess club tournament.",
         "Who won the chess club tournament final, Priya or Karl?", "Priya", "answer"),
        ("Speaker Jonas (role: user) says: Congratulations! Greenfield rejected me in March.", "jonas",
         "Speaker Jonas (role: user) says: Congratulations! Greenfield hired me in March.",
         "Did Greenfield hire Jonas?", "No", "evidence"),
    ],
)
def test_the_probe_calls_a_meaning_change_a_conflict(fact, speaker, changed, question, answer, mode):
    probe = _probe(fact, answer, question, speaker=speaker, mode=mode)
    probe.facts = [f for f in probe.facts if (f.tokens - probe.names) & probe.question_tokens]  # as the attributor
    assert probe.assess(fact).present
    verdict = probe.assess(changed)
    assert not verdict.present and verdict.why.startswith("conflict"), verdict


def test_an_opposite_is_read_in_the_clause_that_stands_in_the_facts_place():
    fact = "I accepted the offer from Harbor Labs and I declined the offer from Brightline."
    question = content_tokens("Which company's offer did Mia accept? Harbor Labs")
    # a memory of the first clause alone: the second clause's "declined" has no counterpart here
    assert opposite_word(fact, "Mia accepted the offer from Harbor Labs", question) is None
    assert opposite_word(fact, "Mia declined the offer from Harbor Labs", question) == ("accept", "declin")


def test_a_swap_is_also_found_in_the_part_after_a_colon():
    # "me" twice in the sentence; the part after the colon holds the pair once
    fact = "She paid me back: Ana taught me to climb at the bouldering gym."
    keys = content_tokens("Who was the climbing teacher, Mia or Ana?")
    assert swapped_pair(fact, "Mia taught Ana to climb at the bouldering gym", keys=keys, fact_speaker="mia",
                        proper=PROPER) == ("ana", "mia")
    assert swapped_pair(fact, "Ana taught Mia to climb at the bouldering gym", keys=keys, fact_speaker="mia",
                        proper=PROPER) is None
    # a buffer's "Speaker X says:" lead names the speaker once more
    framed = "Speaker Mia (role: user) says: Oh, and your sister Ana taught me to surf last summer."
    assert swapped_pair("Oh, and I taught your sister Ana to surf last summer.", framed, keys=keys | {"surf"},
                        fact_speaker="mia", text_speaker="mia", proper=PROPER) == ("mia", "ana")


def test_clauses_told_in_the_other_order_are_no_swap():
    fact = "Nora flew to Rome and Omar flew to Paris."
    keys = content_tokens("Where did Nora fly? Rome")
    proper = PROPER | {"rome", "paris"}
    assert swapped_pair(fact, "Omar flew to Paris and Nora flew to Rome.", keys=keys, proper=proper) is None
    assert swapped_pair(fact, "Nora flew to Paris and Omar flew to Rome.", keys=keys, proper=proper) == ("rom", "paris")


@pytest.mark.parametrize(("fact", "text"), [
    ("Ana taught Mia to climb.", "Mia was taught to climb by Ana."),
    ("Mia was taught to climb by Ana.", "Ana taught Mia to climb."),
])
def test_a_passive_turns_the_roles_round_without_changing_them(fact, text):
    keys = content_tokens("Who taught Mia to climb? Ana")
    assert swapped_pair(fact, text, keys=keys, proper=PROPER) is None


def test_a_person_and_a_thing_trading_roles_is_a_swap():
    keys = content_tokens("Who fed the cat? Priya")
    assert swapped_pair("Priya fed the cat at noon.", "The cat fed Priya at noon.", keys=keys, proper=PROPER) \
        == ("priya", "cat")


def test_an_opposite_needs_the_clause_to_keep_most_of_its_other_words():
    focus = content_tokens("Did Nora buy a car?")
    assert opposite_word("I bought a red car at the Saturday market in Leeds.", "Nora sold the car.", focus) is None
    assert opposite_word("I bought a red car at the Saturday market in Leeds.",
                         "Nora sold a red car at the Saturday market in Leeds.", focus) == ("buy", "sell")


def test_dis_and_un_forms_are_opposites():
    focus = content_tokens("Did Mia lock the door?")
    assert opposite_word("Mia locked the door at night.", "Mia unlocked the door at night.", focus) == ("lock", "unlock")


def test_a_memory_that_drops_the_articles_still_shows_a_swap():
    fact = "For me it was the opposite, I liked the ramen more than the takoyaki."
    keys = content_tokens("Who liked ramen more than takoyaki? Nora")
    assert swapped_pair(fact, "Nora liked takoyaki more than ramen.", keys=keys, fact_speaker="nora",
                        proper=PROPER) is not None
    assert swapped_pair(fact, "Nora liked ramen more than takoyaki.", keys=keys, fact_speaker="nora",
                        proper=PROPER) is None
