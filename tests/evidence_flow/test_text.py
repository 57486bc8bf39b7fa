"""How texts are normalised, cut into statements and judged against a fact."""

from __future__ import annotations

import json

import pytest

from toolkits.evidence_flow._facts import anchors_of, is_negated, segments, statements
from toolkits.evidence_flow._probe import FactProbe
from toolkits.evidence_flow._text import content_tokens, decode_value, memory_text, message_text

NAMES = frozenset({"caroline", "melanie"})


def test_tokens_drop_stop_words_keep_dates_and_numbers():
    assert content_tokens("On 07 May, 2023 the kids went!") == {"7", "may", "2023", "kid", "go"}


def test_light_stemming_and_number_words_meet_on_both_sides():
    assert content_tokens("four years") == content_tokens("4 year")
    assert content_tokens("painted") == content_tokens("painting") == content_tokens("paints")
    assert content_tokens("researching adoption agencies") >= content_tokens("research adoption agency")
    # irregular past forms meet their verb, and stay apart from its opposite
    assert content_tokens("I bought a used car") == content_tokens("buy used car")
    assert content_tokens("sold") != content_tokens("bought") and content_tokens("won") == content_tokens("win")
    assert content_tokens("gave") == content_tokens("give") == content_tokens("gives")
    assert content_tokens("went") == content_tokens("go") == content_tokens("gone")
    # a final silent "e" and a doubled consonant do not keep the forms of a verb apart
    assert content_tokens("invited") == content_tokens("invite") == content_tokens("inviting")
    assert content_tokens("skipped") == content_tokens("skip") == content_tokens("skipping")
    assert content_tokens("planned") == content_tokens("plan") and content_tokens("running") == content_tokens("run")
    # ... while "ll", "ss" and "dd" ends stay, and "agreed" is not cut to "agre"
    assert content_tokens("called passed added agreed") == frozenset({"call", "pass", "add", "agreed"})
    assert content_tokens("free tree") == frozenset({"free", "tree"})  # no silent "e" to drop


def test_calendar_words_are_anchors_in_their_stemmed_form():
    assert anchors_of(content_tokens("15 minutes on a June morning")) == {
        "number": frozenset({"15"}), "unit": content_tokens("minute morning"), "month": frozenset({"jun"})}
    assert "unit" not in anchors_of(content_tokens("I did not even go"))  # "evening" is no unit: it stems to "even"


def test_values_are_decoded_and_unit_bookkeeping_is_ignored():
    assert decode_value("'hello'") == "hello"
    raw = '{"id": "Sweden-1", "memory": "likes tea", "original_data": "Sweden"}'
    assert "Sweden" not in memory_text(raw)
    assert "Sweden" in memory_text(raw, unit=False)
    suffixed = '{"content": "From Sweden\\nBelow is this message\'s metadata:\\nSpeaker Name: X"}'
    assert message_text(suffixed) == "From Sweden"


def test_statements_keep_who_they_are_about_across_sentences():
    found = statements("Speaker Caroline (role: user) says: Hey Melanie! I went to the group yesterday.", NAMES)
    assert [s.persons for s in found] == [{"caroline", "melanie"}, {"caroline"}]
    episode = statements("Melanie said: Been busy. Just started aerial yoga. Caroline said: Cool!", NAMES)
    assert [sorted(s.persons) for s in episode] == [["melanie"], ["melanie"], ["caroline"]]
    assert statements("Caroline: I moved from Sweden.", NAMES)[0].persons == {"caroline"}
    assert statements("I moved from Sweden.", NAMES, speaker="caroline")[0].persons == {"caroline"}
    assert statements("Memory: Moved from Sweden.", NAMES)[0].persons == frozenset()


def test_negation_anchors_and_proper_nouns():
    assert is_negated("I never went there") and is_negated("I didn't go") and not is_negated("No, I went there!")
    assert anchors_of(content_tokens("last Friday in May 2022, 3 kids")) == {
        "weekday": {"friday"}, "month": {"may"}, "number": {"2022", "3"}, "relative": {"last"}}
    assert statements("I flew to Sweden with Melanie.", NAMES)[0].proper == {"sweden"}


def test_segments_pair_adjacent_sentences_of_a_line_only():
    texts = [s.text for s in segments("A one. B two.\nC three.")]
    assert texts == ["A one.", "B two.", "A one. B two.", "C three."]


def _probe(fact: str, answer: str, *, spread: int = 1, speaker: str = "caroline", question: str = "") -> FactProbe:
    facts = statements(fact, NAMES, speaker)
    evidence = content_tokens(fact)
    return FactProbe.build(mode="answer", facts=facts, answer_tokens=content_tokens(answer),
                           question_tokens=content_tokens(question), names=NAMES, evidence_tokens=evidence,
                           document_frequency={}, documents=10, answer_spread=spread, answer_threshold=0.75,
                           evidence_threshold=0.5)


def test_the_answer_must_come_with_its_fact():
    probe = _probe("I moved here from Sweden four years ago.", "Sweden")
    assert probe.assess("Caroline moved from Sweden 4 years ago").present
    assert not probe.assess("Caroline moved 4 years ago").present  # answer gone
    assert not probe.assess("Sweden won the match").present  # the answer word alone, another fact
    assert not probe.assess("We talked about moving.\nSweden is cold.").present  # scattered over lines


def test_a_common_answer_needs_more_of_its_fact_around_it():
    # ("made" is a light verb: no word of the fact's own, so the fact's words are adoption, agency, meeting)
    rare = _probe("The adoption agency meeting made me so happy!", "happy", spread=1)
    common = _probe("The adoption agency meeting made me so happy!", "happy", spread=4)
    text = "Caroline was happy after the meeting"
    assert rare.assess(text).present and not common.assess(text).present
    assert common.assess("Caroline: the adoption meeting made me so happy").present


def test_changed_meaning_is_a_conflict():
    probe = _probe("I moved here from Sweden to Boston in 2021.", "Sweden")
    assert probe.assess("Caroline moved here from Sweden to Boston in 2021").present
    for text, why in [("Caroline never moved here from Sweden to Boston", "negation"),
                      ("Melanie: I moved here from Sweden to Boston", "person"),
                      ("Caroline moved here from Sweden to Boston in 2019", "number"),
                      ("Caroline moved here from Sweden to Lisbon", "proper noun")]:
        verdict = probe.assess(text)
        assert not verdict.present and verdict.why == f"conflict: {why}", text
    date = _probe("I went to the support group on 7 May 2023.", "7 May 2023")
    assert not date.assess("Caroline went to the support group on 8 May 2023").present


class _Embedder:
    def __init__(self, similar: bool) -> None:
        self.similar, self.calls = similar, 0

    def embed(self, texts):
        self.calls += 1
        return [[1.0, 0.0] if self.similar or i == 0 else [0.0, 1.0] for i, _ in enumerate(texts)]


def test_the_embedding_second_opinion_only_rescues_paraphrased_context():
    facts = statements("The adoption agency meeting yesterday evening made me so happy!", NAMES, "caroline")
    def probe(embedder):
        from toolkits.evidence_flow.judges import EmbeddingJudge

        rules = FactProbe.build(mode="answer", facts=facts, answer_tokens=content_tokens("happy"),
                                question_tokens=frozenset(), names=NAMES, evidence_tokens=facts[0].tokens,
                                document_frequency={}, documents=10, answer_spread=4, answer_threshold=0.75,
                                evidence_threshold=0.5)
        return EmbeddingJudge(rules=rules, embedder=embedder)
    paraphrase = "Caroline felt happy after the adoption meeting"  # 2 of its 5 own words: short of half
    assert not probe(None).assess(paraphrase).present
    assert probe(_Embedder(similar=True)).assess(paraphrase).present
    no_answer = _Embedder(similar=True)
    assert not probe(no_answer).assess("Caroline felt fine after the adoption agency meeting").present
    assert no_answer.calls == 0  # a missing answer word is never overruled


def test_token_sequence_keeps_order_and_normalises_like_content_tokens():
    from toolkits.evidence_flow._text import token_sequence

    text = "Ran 03 miles with the 2 dogs, then 3 more miles"
    assert token_sequence(text) == ["run", "3", "mil", "2", "dog", "3", "mil"]  # "then", "more" are stop words
    assert content_tokens(text) == frozenset(token_sequence(text))


def test_a_number_counts_what_stands_next_to_it():
    from toolkits.evidence_flow._conflicts import bound_alike as _bound_alike
    from toolkits.evidence_flow._text import token_sequence

    answer = token_sequence("2 miles")
    fact = token_sequence("I ran 2 miles this morning")
    assert _bound_alike(answer, fact, token_sequence("She ran 2 miles today"))
    assert not _bound_alike(answer, fact, token_sequence("I ran 3 miles with my 2 dogs"))
    # a fact that does not bind them asks nothing of the segment
    assert _bound_alike(answer, token_sequence("2 of us ran; miles later"), token_sequence("3 miles, 2 dogs"))


def test_polarity_is_read_in_the_clause_that_states_the_fact():
    probe = _probe("I signed with the Wolves last week.", "Wolves")
    # a negation in another clause ("can't wait" is no negation at all) keeps the fact
    assert probe.assess("Caroline signed with the Wolves last week, but she can't wait to play").present
    assert probe.assess("Caroline signed with the Wolves last week; she didn't sign anywhere else").present
    assert probe.assess("Caroline signed with the Wolves last week and can't wait to play").present  # an idiom
    negated = probe.assess("Caroline did not sign with the Wolves last week")
    assert not negated.present and negated.why == "conflict: negation"


def test_a_clause_about_someone_else_is_not_the_fact():
    names = NAMES | {"john", "maria"}
    facts = statements("I donated my old car to the shelter.", names, "maria")
    probe = FactProbe.build(mode="answer", facts=facts, answer_tokens=content_tokens("old car"),
                            question_tokens=frozenset(), names=names, evidence_tokens=content_tokens(facts[0].text),
                            document_frequency={}, documents=10, answer_spread=1, answer_threshold=0.75,
                            evidence_threshold=0.5)
    assert probe.assess("Maria donated her old car to the shelter").present
    swapped = probe.assess("John donated his old car to the shelter Maria volunteers at")
    assert not swapped.present and swapped.why == "conflict: person"


def test_another_messages_statement_of_the_answer_is_not_this_fact():
    fact = statements("We finally adopted a puppy named Bailey in June.", NAMES, "caroline")
    rival = statements("Melanie adopted a parrot named Bailey, it sings all day long.", NAMES, "melanie")

    def probe(rivals):
        return FactProbe.build(mode="answer", facts=fact, answer_tokens=content_tokens("Bailey"),
                               question_tokens=frozenset(), names=NAMES, evidence_tokens=content_tokens(fact[0].text),
                               document_frequency={}, documents=10, answer_spread=2, answer_threshold=0.75,
                               evidence_threshold=0.5, rivals=rivals)

    # a buffer that copied the other message: it shares "adopted ... named Bailey" with the fact
    copy = "adopted a parrot named Bailey, it sings all day long"
    assert probe([]).assess(copy).present
    copied = probe(rival).assess(copy)
    assert not copied.present and copied.why == "another message's statement of the answer"
    assert probe(rival).assess("Caroline adopted a puppy named Bailey in June").present


def test_a_contrast_negates_the_alternative_not_the_statement():
    from toolkits.evidence_flow._facts import is_negated_about

    text = "No, it's at Anya's flat in Brighton, not at my place."
    assert not is_negated_about(text, content_tokens("Anya's flat in Brighton"))
    assert is_negated_about(text, content_tokens("my place"))
    assert is_negated_about("It isn't at Anya's flat in Brighton, it is at my place.", content_tokens("Anya's flat"))
    probe = _probe(text, "Anya's flat in Brighton", question="Where is the party?")
    assert probe.assess("The party is at Anya's flat in Brighton").present
    # without the question's words to lean on, the alternative ("my place") is still no part of the fact
    assert _probe(text, "Anya's flat in Brighton").assess("The party is at Anya's flat in Brighton").present


@pytest.mark.parametrize(("fact", "speaker", "answer", "faithful", "swapped"), [
    ("Big news: I signed up for the Lisbon half marathon on 18 June.", "caroline", "18 June",
     "Caroline signed up for the Lisbon half marathon on 18 June", "Anya signed up for the Lisbon half marathon on 18 June"),
    ("My mother loved the yellow kimono she rented.", "caroline", "yellow",
     "Caroline's mother loved the yellow kimono she rented", "Caroline loved the yellow kimono she rented"),
    ("Yes, Miso still scratches the green sofa, but Pepper prefers the red armchair.", "caroline", "the red armchair",
     "Pepper prefers the red armchair", "Miso prefers the red armchair"),
    ("My daughter Ellie started violin lessons.", "caroline", "violin",
     "Ellie started violin lessons", "Anya started violin lessons"),
])
def test_a_swapped_subject_is_a_conflict(fact, speaker, answer, faithful, swapped):
    from toolkits.evidence_flow._probe import FactProbe

    probe = FactProbe.build(mode="answer", facts=statements(fact, NAMES, speaker),
                            answer_tokens=content_tokens(answer), question_tokens=frozenset(), names=NAMES,
                            evidence_tokens=content_tokens(fact), document_frequency={}, documents=10, answer_spread=1,
                            answer_threshold=0.75, evidence_threshold=0.5, golden=answer,
                            proper_names=frozenset({"anya", "miso", "pepper", "ellie", "lisbon"}))
    assert probe.assess(faithful).present
    verdict = probe.assess(swapped)
    assert not verdict.present and verdict.why == "conflict: person"


def test_a_memory_without_a_subject_contradicts_no_one():
    from toolkits.evidence_flow._probe import FactProbe

    fact = "Big news: I signed up for the Lisbon half marathon on 18 June."
    probe = FactProbe.build(mode="answer", facts=statements(fact, NAMES, "caroline"),
                            answer_tokens=content_tokens("18 June"), question_tokens=frozenset(), names=NAMES,
                            evidence_tokens=content_tokens(fact), document_frequency={}, documents=10, answer_spread=1,
                            answer_threshold=0.75, evidence_threshold=0.5, golden="18 June",
                            proper_names=frozenset({"anya", "lisbon"}))
    assert probe.assess("Signed up for the Lisbon half marathon on 18 June").present
    assert probe.assess("She signed up for the Lisbon half marathon on 18 June").present


def test_the_conversation_names_are_read_from_mid_sentence_capitals():
    from tests.evidence_flow.conftest import ToyGraph
    from toolkits.evidence_flow._graph_view import GraphView

    toy = ToyGraph()
    toy.message("U1:D1:1", "Big news: my sister Anya and I ran in Lisbon on 18 June. Then we rested.")
    assert GraphView.build(toy.export()).proper_names == {"anya", "lisbon"}


def test_speakers_named_as_subjects_are_left_to_the_agent_check():
    """"We went camping" told by Melanie may well be "Caroline joined Melanie camping": who "we" are
    is for the agent check of known people to judge, not for the subject check."""
    probe = _probe("We went camping in July.", "camping", speaker="melanie")
    assert probe.assess("Caroline and Melanie went camping in July").present
    assert probe.assess("Caroline joined Melanie camping in July").present


@pytest.mark.parametrize("paraphrase", [
    "Anya's birthday is on 12 July",  # the subject is a thing, not someone
    "Anya will get a portrait from Caroline for her birthday on 12 July",  # turned round: Anya is in the fact
])
def test_a_paraphrase_that_turns_the_sentence_round_is_no_subject_swap(paraphrase):
    from toolkits.evidence_flow._probe import FactProbe

    fact = "Amazing. I started a portrait of Anya for her birthday on 12 July."
    probe = FactProbe.build(mode="answer", facts=statements(fact, NAMES, "caroline"),
                            answer_tokens=content_tokens("12 July"), question_tokens=frozenset(), names=NAMES,
                            evidence_tokens=content_tokens(fact), document_frequency={}, documents=10, answer_spread=1,
                            answer_threshold=0.75, evidence_threshold=0.5, golden="12 July",
                            proper_names=frozenset({"anya"}))
    assert probe.assess(paraphrase).present


def test_what_is_owned_is_no_one():
    """"Caroline's thesis" names a thing of the speaker's, not someone other than her."""
    probe = _probe("I finally submitted it on 12 July.", "12 July")
    assert probe.assess("Caroline's thesis was finally submitted on 12 July").present


def test_a_rival_that_says_nothing_but_the_answer_is_no_rival():
    fact = statements("My cousin Marta is getting married in Porto, I just got the invitation.", NAMES, "caroline")
    exclaim = statements("Porto! Isn't her sister the one who got married in Braga?", NAMES, "melanie")
    probe = FactProbe.build(mode="answer", facts=fact, answer_tokens=content_tokens("Porto"),
                            question_tokens=frozenset(), names=NAMES, evidence_tokens=content_tokens(fact[0].text),
                            document_frequency={}, documents=10, answer_spread=2, answer_threshold=0.75,
                            evidence_threshold=0.5, rivals=exclaim)
    assert probe.assess("Caroline's cousin Marta is getting married in Porto").present


def test_a_relative_clause_has_its_own_polarity():
    probe = _probe("Nani started physiotherapy this week and she enjoyed her physiotherapy, which nobody expected.",
                   "She enjoyed it", question="How did Caroline's grandmother feel about physiotherapy?")
    assert probe.assess("Caroline's grandmother enjoyed her physiotherapy").present
    assert probe.assess("Caroline's grandmother did not enjoy her physiotherapy").why == "conflict: negation"


def test_an_answer_only_the_evidence_states_may_come_in_the_questions_terms():
    """A paraphrase that keeps the answer and the question's words but none of the evidence's
    other words ("Garden update: the runner beans are in, along the back fence")."""
    fact, question = "Garden update: the runner beans are in, along the back fence.", "What has Caroline planted?"
    assert _probe(fact, "runner beans", question=question).assess("Caroline planted runner beans").present
    # the same words where other messages state the answer too are not enough
    assert not _probe(fact, "runner beans", question=question, spread=3).assess("Caroline planted runner beans").present


def test_a_point_in_time_replaced_by_one_of_another_kind_is_a_conflict():
    probe = _probe("I went camping last Friday.", "camping", question="When did Caroline go camping?")
    assert probe.assess("Caroline went camping last Friday").present
    assert probe.assess("Caroline went camping last weekend").why == "conflict: date"


def test_a_title_does_not_end_the_sentence():
    said = [s.text for s in statements("Big news, I handed in my notice at St. Aidan's pharmacy last Friday. "
                                       "Dr. Rivera was sad.")]
    assert said == ["Big news, I handed in my notice at St. Aidan's pharmacy last Friday.", "Dr. Rivera was sad."]


@pytest.mark.parametrize(
    ("fact", "question", "answer", "swapped"),
    [
        ("My midwife told me to keep swimming but stop hot yoga.", "What did the midwife tell Caroline to stop?",
         "hot yoga", "My midwife told me to keep hot yoga but stop swimming."),
        ("We did the Oceanario and a day trip to Sintra, but the Belem bakery line was too long.",
         "Did Caroline go to the Belem bakery?", "No, the line was too long",
         "We did the Belem bakery and a day trip to Sintra, but the Oceanario line was too long."),
        ("Twenty minutes by tram 28. The studio is in Chiado.", "In which neighbourhood is the studio?", "Chiado",
         "The studio is twenty minutes by tram 28 from Chiado."),
        # "offer" is in both clauses: only "accepted" binds the answer
        ("I accepted the offer from Harbor Labs and I declined the offer from Brightline.",
         "Which company's offer did Caroline accept?", "Harbor Labs",
         "I accepted the offer from Brightline and I declined the offer from Harbor Labs."),
    ],
)
def test_the_same_words_with_the_answer_bound_elsewhere_are_a_conflict(fact, question, answer, swapped):
    probe = _probe(fact, answer, question=question)
    probe.facts = [f for f in probe.facts if f.tokens & probe.answer_tokens]  # as the attributor keeps them
    assert probe.assess(fact).present
    # the binding check sees it; the opposite and swap checks (test_meaning.py) may see it first
    assert probe.assess(swapped).why.startswith("conflict: ")
    from toolkits.evidence_flow._binding import rebinds_answer

    asked = probe.question_tokens - probe.answer_tokens - probe.names
    assert rebinds_answer(fact, swapped, answer=probe.answer_tokens, question=asked,
                          movable=probe.evidence_tokens - probe.answer_tokens - asked - probe.names)


@pytest.mark.parametrize(
    "faithful",
    [
        "Caroline should stop hot yoga and keep swimming, her midwife said.",  # clauses turned round
        "Midwife's advice: stop doing hot yoga; keep swimming.",  # words in between, own punctuation
        "Caroline: my midwife told me to keep swimming but stop hot yoga.",  # the fact itself
    ],
)
def test_a_paraphrase_that_keeps_the_answer_with_its_question_words_is_no_rebinding(faithful):
    probe = _probe("My midwife told me to keep swimming but stop hot yoga.", "hot yoga",
                   question="What did the midwife tell Caroline to stop?")
    assert probe.assess(faithful).present, probe.assess(faithful)


def test_a_reordered_memory_that_moves_nothing_in_is_no_rebinding():
    from toolkits.evidence_flow._binding import rebinds_answer

    fact, memory = "In March I finally adopted the puppy.", "Adopted the puppy (March)."
    kwargs = {"answer": frozenset({"march"}), "question": frozenset({"adopt", "puppy"}),
              "movable": frozenset({"finally"})}
    assert not rebinds_answer(fact, memory, **kwargs)  # bindings lost, nothing of another clause moved in
    fact = "In March I adopted the puppy; in May the kitten."
    kwargs["movable"] = frozenset({"kitten", "may"})
    assert not rebinds_answer(fact, fact, **kwargs)
    assert rebinds_answer(fact, "In May I adopted the puppy; in March the kitten.", **kwargs)


def test_a_rebinding_needs_the_answer_and_is_seen_from_either_side():
    from toolkits.evidence_flow._binding import rebinds_answer

    fact = "The midwife said to stop hot yoga, keep swimming."
    kwargs = {"answer": frozenset({"hot", "yoga"}), "question": frozenset({"midwife", "say", "stop"}),
              "movable": content_tokens("said keep swimming")}
    # only the question word's clause took another word in; the answer's own clause is bare
    assert rebinds_answer(fact, "The midwife said to stop swimming. Hot yoga, keep.", **kwargs)
    # without the answer it is a loss, not a rebinding
    assert not rebinds_answer(fact, "The midwife said to stop swimming.", **kwargs)


def test_a_speaker_lead_inside_a_quoted_list_item_is_still_the_speaker():
    """Mem0 hands the update step its facts as a Python list: ``["Caroline: Lucy is ..."]``."""
    fact = statements("Lucy is Deshawn's cousin, by the way.", NAMES, "caroline")
    probe = FactProbe.build(mode="answer", facts=fact, answer_tokens=content_tokens("Yes, she is his cousin"),
                            question_tokens=content_tokens("Is Lucy related to Deshawn?"), names=NAMES,
                            evidence_tokens=content_tokens(fact[0].text), document_frequency={}, documents=10,
                            answer_spread=1, answer_threshold=0.75, evidence_threshold=0.5,
                            proper_names=frozenset({"lucy", "deshawn"}))
    listed = """['Caroline: Deshawn and Lucy ran everything.', "Caroline: Lucy is Deshawn's cousin, by the way."]"""
    assert probe.assess(listed).present, probe.assess(listed)
    assert probe.assess("""["Melanie: Lucy is Deshawn's cousin."]""").why == "conflict: person"


def test_a_paraphrase_that_merges_clauses_and_names_the_object_keeps_the_binding():
    probe = _probe("I'm selling mine at the Saturday market in Dunmore, 7 euros a jar.",
                   "At the Saturday market in Dunmore", question="Where does Caroline sell her honey?")
    text = "Caroline sells her honey at the Saturday market in Dunmore for 7 euros a jar."
    assert probe.assess(text).present, probe.assess(text)


@pytest.mark.parametrize("opening", ["Bad news, Melanie: one", "Thanks, Melanie! One", "Melanie, guess what, one"])
def test_the_person_spoken_to_is_not_the_one_the_fact_is_about(opening):
    fact = f"{opening} of my hives swarmed last Tuesday and I lost half the colony."
    assert statements(fact, NAMES, "caroline")[-1].speaker == "caroline"
    probe = _probe(fact, "half the colony", question="What did Caroline lose when her hive swarmed?")
    probe.facts = [f for f in probe.facts if f.tokens & probe.answer_tokens]  # as the attributor keeps them
    text = "Caroline lost half the colony when one of her hives swarmed last Tuesday."
    assert probe.assess(text).present, probe.assess(text)
    assert probe.assess("Melanie lost half the colony when one of her hives swarmed last Tuesday.").why == "conflict: person"


@pytest.mark.parametrize("sentence", ["Bad news, Melanie: one of my hives swarmed last Tuesday.",
                                      "Oh Melanie, one of my hives swarmed last Tuesday.",
                                      "One of my hives swarmed last Tuesday, Melanie!"])
def test_a_clause_that_addresses_someone_is_about_its_speaker(sentence):
    from toolkits.evidence_flow._facts import agent_of

    statement = statements(sentence, NAMES, "caroline")[0]
    assert agent_of(statement, NAMES, content_tokens("last Tuesday")) == "caroline"
    told = statements("Melanie's hive swarmed last Tuesday.", NAMES, "caroline")[0]
    assert agent_of(told, NAMES, content_tokens("last Tuesday")) == "melanie"


def test_a_yes_no_answer_needs_the_claim_the_question_makes_not_a_look_alike():
    fact = statements("Melanie, guess what: I passed my driving test on 13 May!", NAMES, "caroline")
    question = "Did Caroline pass her driving test?"
    probe = FactProbe.build(mode="evidence", facts=fact, answer_tokens=content_tokens("Yes"),
                            question_tokens=content_tokens(question), names=NAMES,
                            evidence_tokens=content_tokens(fact[0].text), document_frequency={}, documents=10,
                            answer_spread=0, answer_threshold=0.75, evidence_threshold=0.5, question=question)
    assert probe.assess("Caroline passed her driving test on 13 May.").present
    look_alike = "I failed my first driving test in January, so I'm retaking it in May."
    assert probe.assess(look_alike).why in ("the evidence's answer words missing", "conflict: opposite")


def test_a_buffered_message_keeps_its_speaker_on_its_line():
    buffer = [{"content": "I liked the ramen more than the takoyaki.", "speaker_name": "Nora", "role": "user"},
              {"content": "Every night.\nSo good.", "name": "Omar", "role": "user"}]
    lines = memory_text(json.dumps(buffer), unit=False).splitlines()
    assert lines[0] == "Nora: I liked the ramen more than the takoyaki."
    assert lines[2:4] == ["Omar: Every night.", "Omar: So good."]
    said = statements(memory_text(json.dumps(buffer), unit=False), frozenset({"nora", "omar"}))
    assert said[0].speaker == "nora" and said[0].persons == {"nora"}
    # a memory unit without a message's "content" is read as before
    assert memory_text(json.dumps({"memory": "Nora likes ramen", "name": "x"})) == "Nora likes ramen\nx"


def test_a_light_verb_alone_is_no_support_for_a_fact():
    # Light verbs (go, get, make, take, ...) carry little meaning of their own: a text that shares only
    # "went" with the fact and states another place is another fact, whatever it shares besides the answer.
    probe = _probe("I went to the museum on Sunday.", "Sunday")
    assert not probe.assess("Caroline went to the lake on Sunday").present
    assert probe.assess("Caroline visited the museum on Sunday").present
