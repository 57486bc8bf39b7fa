"""Each text corruption, hand-checked on the forms a fact takes in each layer."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from toolkits.evidence_flow import content_tokens
from toolkits.faultbench import CORRUPTIONS, Corruptor, Target, degrade
from toolkits.faultbench._corrupt import merge_texts

FACT = "I moved here from Sweden 4 years ago, in May 2019."


def _target(answer: str = "Sweden", sentence: str = FACT, question: str = "Where did Caroline move from?") -> Target:
    qa = SimpleNamespace(id="locomo-qa-1-1", question=question, golden_answers=[answer])
    fact = SimpleNamespace(id="U1:D1:1", name="Caroline", content=f"Hi Melanie! {sentence}")
    return Target(qa=qa, fact=fact, fact_index=0, answer_tokens=content_tokens(answer), fact_sentences=(sentence,),
                  speaker="Caroline", others=("Melanie",), spread=1)


# The fact as the layers hold it: a Long-Context / RAG line, a Mem0 fact, an EverMemOS episode.
FORMS = {
    "line": f"Speaker Caroline (role: user) says: Hi Melanie! {FACT}\nTimestamp: 2023-05-08T13:56:00",
    "fact": f"Caroline: {FACT}",
    "episode": f"Melanie said: How are you? Caroline said: Hi Melanie! {FACT} Melanie said: Wow!",
}

EXPECTED = {
    "drop": "I moved here from 4 years ago, in May 2019.",
    "partial": "I moved here from some things.",
    "negate": "I never moved here from Sweden 4 years ago, in May 2019.",
    "swap_date": "I moved here from Sweden 4 years ago, in May 2018.",
    "swap_number": "I moved here from Sweden 5 years ago, in May 2019.",
    "swap_place": "I moved here from Oslo 4 years ago, in May 2019.",
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_corruption_rewrites_only_the_fact_sentence(kind, form):
    corruptor = Corruptor(kind=kind, target=_target(), seed=3, known_words=frozenset({"sweden", "boston"}))
    assert corruptor.applicable()
    out = corruptor.apply(FORMS[form])
    rewritten = corruptor.rewrite(FACT)
    assert out == FORMS[form].replace(FACT, rewritten)
    if kind in ("drop", "partial", "negate"):
        assert rewritten == EXPECTED[kind]
    else:  # a seeded draw: the same kind of thing, another value
        changed = set(rewritten.split()) ^ set(FACT.split())
        assert len(changed) == 2 and rewritten != FACT
    assert corruptor.apply(FORMS[form]) == out  # deterministic


@pytest.mark.parametrize("form", sorted(FORMS))
def test_swap_person_attaches_the_fact_to_the_other_speaker(form):
    corruptor = Corruptor(kind="swap_person", target=_target(), seed=0)
    out = corruptor.apply(FORMS[form])
    expected = {
        "line": f"Speaker Melanie (role: user) says: Hi Caroline! {FACT}\nTimestamp: 2023-05-08T13:56:00",
        "fact": f"Melanie: {FACT}",
        "episode": f"Melanie said: How are you? Melanie said: Hi Caroline! {FACT} Melanie said: Wow!",
    }[form]
    assert out == expected


def test_the_words_can_survive_while_the_meaning_changes():
    for kind in ("negate", "swap_person", "swap_number"):
        out = Corruptor(kind=kind, target=_target(), seed=1).apply(FORMS["fact"])
        assert "Sweden" in out and out != FORMS["fact"]


def test_corruptions_that_do_not_apply_say_so():
    plain = _target(answer="tea", sentence="I like green tea a lot.", question="What does Caroline drink?")
    assert not Corruptor(kind="swap_date", target=plain, seed=0).applicable()
    assert not Corruptor(kind="swap_number", target=plain, seed=0).applicable()
    assert Corruptor(kind="swap_date", target=plain, seed=0).apply("Caroline: I like green tea a lot.") is None
    # the question must name the speaker for a swapped speaker to matter
    anonymous = _target(question="Where did they move from?")
    assert not Corruptor(kind="swap_person", target=anonymous, seed=0).applicable()


def test_negation_is_removed_from_a_negated_fact():
    target = _target(answer="cats", sentence="I don't like cats at all.", question="What does Caroline not like?")
    assert Corruptor(kind="negate", target=target, seed=0).rewrite("I don't like cats at all.") == "I do like cats at all."


def test_merge_keeps_the_first_topic_and_takes_the_second_detail():
    merged = merge_texts("Caroline: I moved here from Sweden", "Melanie: I signed up for a pottery class",
                         content_tokens("Sweden"))
    assert merged == "Caroline: I moved here from for a pottery class"
    assert merge_texts("no answer here", "other text", content_tokens("Sweden")) is None


def test_degrade_and_unknown_kinds():
    assert degrade("I moved here from Sweden four years ago.", content_tokens("Sweden")) == (
        "I moved here from four years ago.")
    assert set(CORRUPTIONS) == set(EXPECTED) | {"swap_person"}
    with pytest.raises(ValueError, match="unknown corruption"):
        Corruptor(kind="bogus", target=_target(), seed=0).rewrite(FACT)


def test_a_swapped_place_is_never_a_pronoun_or_a_possessive():
    sentence = "Recently, I've been to Jon's shop in Boston."
    target = _target(answer="Boston", sentence=sentence, question="Where is the shop?")
    for seed in range(20):
        out = Corruptor(kind="swap_place", target=target, seed=seed).rewrite(sentence)
        assert out is not None and "I've" in out and "Jon's" in out and "Boston" not in out
