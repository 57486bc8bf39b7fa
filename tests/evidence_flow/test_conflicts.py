"""Each of the fourteen named conflict checks (toolkits/evidence_flow/_conflicts.py) on sentences
written for these tests: one that keeps the fact's words and changes its meaning the way the check
covers (the check fires and names its kind) and one that keeps the meaning (it stays silent).

Ines, Tomasz and Nora are the conversation's people; Pixel, Lisbon and Porto its names."""

from __future__ import annotations

from datetime import date

import pytest

from toolkits.evidence_flow import _conflicts as conflicts
from toolkits.evidence_flow._conflicts import CONFLICT_CHECKS, ConflictCase, first_conflict
from toolkits.evidence_flow._facts import merge_statements, statements
from toolkits.evidence_flow._probe import FactProbe
from toolkits.evidence_flow._text import content_tokens

NAMES = frozenset({"ines", "tomasz", "nora"})
PROPER = frozenset({"pixel", "lisbon", "porto", "ines", "tomasz", "nora"})
SUNDAY = date(2023, 10, 22)


def _statement(text: str, speaker: str | None) -> object:
    return merge_statements(statements(text, NAMES, speaker))


def case(fact: str, segment: str, *, answer: str, question: str, speaker: str | None = None,
         segment_speaker: str | None = None, said_on: tuple[date, ...] = (), mode: str = "answer",
         evidence: str = "") -> ConflictCase:
    """The conflict case of one fact and one segment, the probe built as the attributor builds it."""
    fact_statement = _statement(fact, speaker)
    probe = FactProbe.build(mode=mode, facts=[fact_statement], answer_tokens=content_tokens(answer),
                            question_tokens=content_tokens(question), names=NAMES,
                            evidence_tokens=fact_statement.tokens | content_tokens(evidence),
                            document_frequency={}, documents=10, answer_spread=1, answer_threshold=0.75,
                            evidence_threshold=0.5, question=question, golden=answer, proper_names=PROPER,
                            said_on=said_on)
    return ConflictCase(probe=probe, fact=fact_statement, segment=_statement(segment, segment_speaker))


# (check, fact, changed, kept, expected kind, case options)
CASES = [
    ("other_people", "Ines adopted a grey kitten named Pixel.", "Tomasz adopted a grey kitten named Pixel.",
     "Ines took in Pixel, a grey kitten.", "person", dict(answer="a grey kitten", question="What did Ines adopt?")),
    ("other_speaker", "I am moving to Lisbon in spring.", "Tomasz: I am moving to Lisbon in spring.",
     "Tomasz: Ines is moving to Lisbon in spring.", "person",
     dict(answer="Lisbon", question="Where is Ines moving?", speaker="ines")),
    ("other_agent", "Ines donated her old bicycle to the school Nora teaches at.",
     "Tomasz donated his old bicycle to the school Ines teaches at.",
     "Ines gave her old bicycle to the school where Nora teaches.", "person",
     dict(answer="her old bicycle", question="What did Ines donate?")),
    ("other_subject", "I signed up for a pottery class.", "My sister signed up for a pottery class.",
     "Signed up for a pottery class.", "person",
     dict(answer="a pottery class", question="What did Ines sign up for?", speaker="ines")),
    ("number_moved", "I walk 3 miles with my 2 dogs.", "I walk 2 miles with my 3 dogs.",
     "Every day I walk 3 miles with my 2 dogs.", "number",
     dict(answer="3 miles", question="How far does Ines walk?", speaker="ines")),
    ("polarity", "I finished the marathon in Porto.", "I never finished the marathon in Porto.",
     "I finally finished the marathon in Porto.", "negation",
     dict(answer="the marathon", question="What did Ines finish in Porto?", speaker="ines")),
    ("replaced_anchor", "I baked 12 lemon tarts for the fair.", "I baked 20 lemon tarts for the fair.",
     "For the fair I baked 12 lemon tarts.", "number",
     dict(answer="12", question="How many lemon tarts did Ines bake?", speaker="ines")),
    # a word of a longer answer replaced by one the evidence never says; a word of the evidence
    # beside it (a clause told in another order) is no replacement
    ("replaced_answer_word", "I found a lamp shaped like a tulip at the flea market.",
     "I found a lamp shaped like a rocket at the flea market.",
     "At the flea market I found a tulip-shaped lamp.", "answer word",
     dict(answer="a lamp shaped like a tulip", question="What did Ines find at the flea market?", speaker="ines")),
    # the thing the question asks about replaced in its place; the same thing told in other
    # words around it is no replacement
    ("replaced_question_noun", "I bruised my forehead opening the shed on Sunday.",
     "I bruised my kneecap opening the shed on Sunday.", "On Sunday I bruised my forehead while opening the shed.",
     "question word", dict(answer="opening the shed", question="How did Ines bruise her forehead?", speaker="ines")),
    ("other_point_in_time", "We repainted the shed last Friday.", "We repainted the shed in March.",
     "We repainted the shed on 20 October 2023.", "date",
     dict(answer="the shed", question="What did Ines repaint?", speaker="ines", said_on=(SUNDAY,))),
    ("other_proper_noun", "I bought the blue kayak in Porto.", "I bought the blue kayak in Madrid.",
     "I bought the blue kayak in Porto, on sale.", "proper noun",
     dict(answer="the blue kayak", question="What did Ines buy in Porto?", speaker="ines")),
    ("opposite", "I accepted the offer from the bakery.", "I declined the offer from the bakery.",
     "I took the offer from the bakery.", "opposite",
     dict(answer="the bakery", question="Whose offer did Ines accept?", speaker="ines")),
    ("swapped", "Tomasz taught Nora to knit.", "Nora taught Tomasz to knit.",
     "Tomasz taught Nora how to knit.", "swapped",
     dict(answer="Nora", question="Whom did Tomasz teach to knit?")),
    ("answer_rebound", "I will keep swimming but stop cycling.", "I will keep cycling but stop swimming.",
     "I will keep swimming, but I will stop cycling.", "answer bound to other words",
     dict(answer="cycling", question="Which sport will Ines stop?", speaker="ines")),
]


def test_the_fourteen_checks_are_named_and_tried_in_the_declared_order():
    assert [check.__name__ for check in CONFLICT_CHECKS] == [name for name, *_ in CASES]


@pytest.mark.parametrize(("name", "fact", "changed", "kept", "kind", "options"), CASES, ids=[c[0] for c in CASES])
def test_each_check_fires_on_the_changed_meaning_and_not_on_the_kept_one(name, fact, changed, kept, kind, options):
    check = getattr(conflicts, name)
    assert check(case(fact, changed, **options)) == kind
    assert check(case(fact, kept, **options)) is None
    assert check(case(fact, fact, **options)) is None


@pytest.mark.parametrize(("name", "fact", "changed", "kept", "kind", "options"), CASES, ids=[c[0] for c in CASES])
def test_first_conflict_keeps_a_faithful_sentence(name, fact, changed, kept, kind, options):
    probe = case(fact, kept, **options).probe
    assert first_conflict(probe, _statement(fact, options.get("speaker")), _statement(kept, None)) is None


# Edges of single checks: each case below keeps or changes one thing the check reads, so that a
# check that stops reading it (mutation testing, tests/README.md) fails here.
EDGES = [
    # the speaker's own "I" is who the segment is about: another subject than the fact's relation
    ("other_subject", "My sister signed up for a pottery class.", "I signed up for a pottery class.", "person",
     dict(answer="a pottery class", question="What did Ines's sister sign up for?", speaker="ines",
          segment_speaker="ines")),
    # someone the fact's clause names is no swapped subject: the sentence only turned round
    ("other_subject", "I bought a new collar for Pixel.", "Pixel got a new collar.", None,
     dict(answer="a new collar", question="What did Ines buy for Pixel?", speaker="ines")),
    ("other_subject", "I drove my sister to her pottery class.", "My sister went to her pottery class.", None,
     dict(answer="her pottery class", question="Where did Ines drive her sister?", speaker="ines")),
    # polarity is read in the clause that speaks of the answer, on either side
    ("polarity", "I passed the driving exam.", "I passed the driving exam, but I did not celebrate.", None,
     dict(answer="the driving exam", question="Which exam did Ines pass?", speaker="ines")),
    ("polarity", "I passed the driving exam, but I did not celebrate.", "I passed the driving exam.", None,
     dict(answer="the driving exam", question="Which exam did Ines pass?", speaker="ines")),
    # ... and in the sentence of a run that holds the answer
    ("polarity", "I passed the driving exam.", "I passed the driving exam. I did not celebrate.", None,
     dict(answer="the driving exam", question="Which exam did Ines pass?", speaker="ines")),
    # a time dropped is no other time; a weekend is a point in time like a weekday
    ("other_point_in_time", "We repainted the shed last Friday.", "We repainted the shed.", None,
     dict(answer="the shed", question="What did Ines repaint?", speaker="ines")),
    ("other_point_in_time", "We repainted the shed last Friday.", "We repainted the shed last weekend.", "date",
     dict(answer="the shed", question="What did Ines repaint?", speaker="ines")),
    # a proper noun dropped is no other proper noun
    ("other_proper_noun", "I bought the blue kayak in Porto.", "I bought the blue kayak.", None,
     dict(answer="the blue kayak", question="What did Ines buy?", speaker="ines")),
    # "I" is the one who says it, on either side of a swap
    ("swapped", "I taught Nora to knit.", "Nora taught Tomasz to knit.", "swapped",
     dict(answer="Nora", question="Whom did Tomasz teach to knit?", speaker="tomasz")),
    ("swapped", "Tomasz taught Nora to knit.", "Nora taught me to knit.", "swapped",
     dict(answer="Nora", question="Whom did Tomasz teach to knit?", segment_speaker="tomasz")),
    # every number-and-noun pair of the answer is checked, not only the first pair of words
    ("number_moved", "I take a morning walk of 3 miles with my 2 dogs.",
     "I take a morning walk of 2 miles with my 3 dogs.", "number",
     dict(answer="morning walk of 3 miles", question="How long is Ines's morning walk?", speaker="ines")),
]


@pytest.mark.parametrize(("name", "fact", "segment", "kind", "options"), EDGES,
                         ids=[f"{e[0]}-{i}" for i, e in enumerate(EDGES)])
def test_the_edges_of_each_check(name, fact, segment, kind, options):
    assert getattr(conflicts, name)(case(fact, segment, **options)) == kind


def test_two_speakers_trading_places_are_for_other_agent_not_other_subject():
    # when the names are exactly the two speakers, swapping them is still not other_subject's
    names = frozenset({"nora", "anya"})
    fact = merge_statements(statements("I repainted the shed.", names, "nora"))
    segment = merge_statements(statements("Anya repainted the shed.", names, None))
    probe = FactProbe.build(mode="answer", facts=[fact], answer_tokens=content_tokens("the shed"),
                            question_tokens=content_tokens("What did Nora repaint?"), names=names,
                            evidence_tokens=fact.tokens, document_frequency={}, documents=10, answer_spread=1,
                            answer_threshold=0.75, evidence_threshold=0.5, golden="the shed", proper_names=names)
    assert probe.names == names  # no stem differs from its name
    assert conflicts.other_subject(ConflictCase(probe=probe, fact=fact, segment=segment)) is None


def test_a_proper_noun_with_accented_letters_is_one_word():
    # The project's tokenizer keeps "Conceição" whole; a statement's proper nouns must be read the
    # same way, or a faithful copy seems to lose one name ("concei") and bring another.
    options = dict(answer="her neighbour", question="Who looks after Pixel in August?", speaker="ines")
    fact = "In August Pixel stays with my neighbour, Senhora Conceição."
    kept = "Ines says that in August Pixel stays with her neighbour, Senhora Conceição."
    changed = "Ines says that in August Pixel stays with her neighbour, Senhora Estêvão."
    assert first_conflict(case(fact, kept, **options).probe, _statement(fact, "ines"), _statement(kept, None)) is None
    assert conflicts.other_proper_noun(case(fact, changed, **options)) == "proper noun"
