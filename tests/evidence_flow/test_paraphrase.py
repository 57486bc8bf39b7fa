"""The rules judge on memories a real model writes: paraphrases keep the fact, corruptions lose it.

Each test names the general reason of the rule it guards, on sentences written for it (none from
the dev set of ``benchmarks/evidence_flow_paraphrase.py``, whose rates the last tests hold).
"""

from __future__ import annotations

import json

from benchmarks.evidence_flow_paraphrase import load_pairs, main, measure, rates
from toolkits.evidence_flow._case_facts import conversation_judge
from toolkits.evidence_flow._meaning import swapped_pair
from toolkits.evidence_flow._text import content_tokens


def _chat(*lines: tuple[str, str], day: str = "2024-02-12") -> list[dict[str, str]]:
    return [{"speaker": who, "text": text, "time": f"{day}T09:{i:02d}:00"} for i, (who, text) in enumerate(lines)]


def test_a_phrase_moved_whole_is_no_swap():
    # A time or count phrase told at another place of the sentence keeps its own neighbours; words
    # trade roles only when one takes the other's place.
    fact = "My cousin is opening a bakery in April, she saved for 3 years."
    keys = content_tokens("How long did Ines's cousin save for the bakery? 3 years")
    assert swapped_pair(fact, "Ines's cousin saved for 3 years for the April bakery opening", keys=keys,
                        fact_speaker="ines") is None
    counted = "I baked 20 scones but only 9 sold."
    keys = content_tokens("How many scones did Ines bake? 20")
    assert swapped_pair(counted, "I baked 9 scones but only 20 sold.", keys=keys, fact_speaker="ines") is not None
    assert swapped_pair(counted, "Of the 20 scones I baked, only 9 sold.", keys=keys, fact_speaker="ines") is None


def test_a_capitalised_article_names_nobody():
    # "The" opening a title after a comma is capitalised mid-sentence, but a stop word is no name:
    # read as one, it became the subject of the fact's clause and every restatement "swapped" it.
    chat = _chat(("Ines", "Any plans?"),
                 ("Tomas", "My favourite podcast, The Night Shift, is recording live in Porto in May, I got seats."))
    judge = conversation_judge(chat, evidence=[1], question="Where is The Night Shift recording live?", golden="Porto")
    assert judge.assess("Tomas got seats for his favourite podcast The Night Shift recording live in Porto in May").present
    assert not judge.assess("Ines got seats for The Night Shift recording live in Porto in May").present


def test_the_company_of_a_we_fact_is_no_other_person():
    # "We"/"let's" said to someone may include them: a memory that keeps the plan and names the
    # one spoken to as company ("... with Ines") is its speaker's memory of the same plan.
    chat = _chat(("Ines", "I need a break from revising."),
                 ("Tomas", "Let's go bouldering on Saturday at the new gym by the canal."))
    judge = conversation_judge(chat, evidence=[1], question="Where will Ines and Tomas go bouldering?",
                               golden="the new gym by the canal")
    assert judge.assess("Bouldering with Ines on Saturday at the new gym by the canal").present
    # someone named as the one who does it is still another person
    assert not judge.assess("Ines goes bouldering on Saturday at the new gym by the canal").present


def test_a_vague_time_of_the_same_direction_replaces_nothing():
    # "recently" is what "last month" becomes when a memory drops the exact time: the same
    # direction, less precise. "soon" would point the other way.
    chat = _chat(("Ines", "How was the coast?"),
                 ("Tomas", "I got back from Tallinn last month, the old town was wonderful."))
    judge = conversation_judge(chat, evidence=[1], question="Which city did Tomas visit last month?", golden="Tallinn")
    assert judge.assess("Tomas recently got back from a trip to Tallinn and loved the old town").present
    assert not judge.assess("Tomas will soon travel to Tallinn to see the old town").present


def test_a_number_moved_with_the_word_it_counts_is_no_swap():
    # "41 seconds" told before "the harbour swim" instead of after it is the same count of the same
    # thing; a number that takes another's place counts the other's word.
    fact = "I swam the harbour mile on Sunday and finished in 41 minutes, my best time."
    keys = content_tokens("How long did Ines take to swim the harbour mile? 41 minutes")
    assert swapped_pair(fact, "Ines set her best time of 41 minutes in the harbour mile on Sunday", keys=keys,
                        fact_speaker="ines", proper=frozenset({"ines"})) is None
    counted = "I swam 2 laps before work and 6 laps after lunch."
    keys = content_tokens("How many laps did Ines swim before work? 2")
    assert swapped_pair(counted, "I swam 6 laps before work and 2 laps after lunch.", keys=keys,
                        fact_speaker="ines") is not None


def test_the_parts_of_a_compound_word_name_nothing_alone():
    # "a bag shaped like a pear" is "a pear-shaped bag": the compound modifies its noun, so its part
    # "pear" takes no role that could trade places with the bag.
    fact = "At the market I bought a bag shaped like a pear."
    keys = content_tokens("What did Ines buy at the market? a bag shaped like a pear")
    assert swapped_pair(fact, "Ines bought a pear-shaped bag at the market", keys=keys, fact_speaker="ines") is None
    assert swapped_pair(fact, "At the market I bought a pear shaped like a bag.", keys=keys,
                        fact_speaker="ines") is not None


def test_a_terse_memory_of_an_answer_only_its_message_states_keeps_it():
    # A memory LLM often keeps only the answer ("Ines is a vet"). When no other message states the
    # answer and the memory adds no word of its own, it cannot be about another event.
    chat = _chat(("Tomas", "What do you do these days?"),
                 ("Ines", "Well, I've been working as a vet at the city zoo for about ten years."),
                 ("Tomas", "I'm still teaching maths at the secondary school."))
    judge = conversation_judge(chat, evidence=[1], question="What is Ines's job?", golden="vet")
    assert judge.assess("Ines is a vet").present
    assert judge.assess("Works as a vet").present
    # a word of another event, another person, or no answer: not this fact
    assert not judge.assess("Ines took her cat to the vet").present
    assert not judge.assess("Tomas is a vet").present
    assert not judge.assess("Ines works at the city zoo").present


def test_an_ordinal_is_its_number():
    # Memory models write dates as "June 9th" and ages as "her 5th birthday": the same number as
    # "9 June" and "turns 5".
    chat = _chat(("Tomas", "Any news?"), ("Ines", "My nephew Leo turns 5 on 9 June, we're planning a picnic."))
    age = conversation_judge(chat, evidence=[1], question="How old is Leo turning?", golden="5")
    assert age.assess("Leo's 5th birthday is on June 9th; Ines is planning a picnic").present
    assert not age.assess("Leo's 6th birthday is on June 9th; Ines is planning a picnic").present
    day = conversation_judge(chat, evidence=[1], question="When is Leo's birthday?", golden="9 June")
    assert day.assess("Ines's nephew Leo turns five on June 9th").present
    assert not day.assess("Ines's nephew Leo turns five on June 19th").present


def test_a_memory_that_resolved_the_time_states_a_computed_when_answer():
    # No message states a computed golden answer ("the Thursday before 14 November 2024"): only a
    # memory that resolved the message's "last Thursday" to its day can say it, so a day inside the
    # golden answer's, beside a few of the fact's or the question's words, is the fact however the
    # rest is reworded; another day is another number, another person another fact.
    chat = _chat(("Tomas", "You look tired."),
                 ("Ines", "I handed in my notice at the bookshop last Thursday, it felt strange."),
                 ("Tomas", "Big step. My sister moved to Ghent last year."), day="2024-11-14")
    judge = conversation_judge(chat, evidence=[1], question="When did Ines resign from the bookshop?",
                               golden="The Thursday before 14 November 2024")
    assert judge.assess("Ines quit her job at the bookshop on 7 November 2024").present
    assert judge.assess("Ines resigned from the bookshop on Thursday, November 7th, 2024").present
    assert not judge.assess("Ines quit her job at the bookshop on 8 November 2024").present
    assert not judge.assess("Tomas quit his job at the bookshop on 7 November 2024").present
    assert not judge.assess("Ines adopted a kitten on 7 November 2024").present
    year = conversation_judge(chat, evidence=[2], question="When did Tomas's sister move to Ghent?", golden="2023")
    assert year.assess("Tomas's sister relocated to Ghent in 2023").present
    assert not year.assess("Tomas's sister relocated to Ghent in 2022").present
    assert not year.assess("Tomas bought a van in 2023").present


def test_a_merged_or_turned_round_memory_keeps_the_facts_subject():
    # A memory that merges two clauses of one message ("… and Ines still thinks of him") is compared
    # clause for clause: its other clause's subject is no swapped person. One that tells the event
    # from the speaker's side ("Ines lost her grandfather" for "my grandfather passed away") keeps
    # the relative the fact is about.
    chat = _chat(("Tomas", "You seem quiet today."),
                 ("Ines", "My grandfather passed away last year, I still think of him every day."),
                 ("Tomas", "I'm sorry. I started a pottery course."), day="2024-02-12")
    judge = conversation_judge(chat, evidence=[1], question="When did Ines's grandfather die?", golden="2023")
    assert judge.assess("Ines's grandfather died in 2023 and Ines still thinks of him every day").present
    assert judge.assess("Ines lost her grandfather in 2023; she thinks of him daily").present
    assert not judge.assess("Tomas lost his grandfather in 2023").present
    assert not judge.assess("Ines's grandmother died in 2023").present


def test_a_negation_said_with_an_opposite_is_the_same_polarity():
    # "not the best habit" and "a bad habit" say one thing: a memory that drops the negation and
    # takes the opposite word (read through its inflection: "best" is "good") keeps the fact, while
    # dropping the negation alone, or keeping it around the opposite, turns the meaning round.
    chat = _chat(("Tomas", "Any new year resolutions?"),
                 ("Ines", "Nope. Still eating crisps every night, although I know it's not the best habit."))
    judge = conversation_judge(chat, evidence=[1], question="What habit is Ines trying to change about her diet?",
                               golden="consuming crisps at night")
    assert judge.assess("Ines still eats crisps every night although she knows it is a bad habit").present
    assert not judge.assess("Ines still eats crisps every night although she knows it is a good habit").present
    assert not judge.assess("Ines eats crisps every night and knows it is not a bad habit").present


def test_a_memory_of_the_context_alone_has_lost_the_evidences_share_of_the_answer():
    # No message states "rescued greyhounds", but the evidence says "greyhounds": a memory that keeps
    # the message's other sentence ("won over by its patient volunteers") and swaps that word has
    # lost the evidence's part of the answer, though it matches a sentence that carries none.
    chat = _chat(("Tomas", "Which shelter did you pick?"),
                 ("Ines", "I went with the shelter that rehomes greyhounds. Their patient volunteers really won me over."),
                 ("Tomas", "Nice, I adopted a cat last spring."))
    judge = conversation_judge(chat, evidence=[1], golden="rescued greyhounds",
                               question="What animals does the shelter with patient volunteers that Ines chose rehome?")
    assert judge.assess("Ines picked a shelter that rehomes greyhounds, won over by its patient volunteers").present
    assert not judge.assess("Ines picked a shelter that rehomes parrots, won over by its patient volunteers").present


def test_a_reply_remembered_in_the_terms_of_the_question_it_answers():
    # A reply often holds only the answer ("9 years already!") and small talk; the memory states
    # the golden answer with the question's words, which the reply never says.
    chat = _chat(("Tomas", "Happy anniversary! How long have you and Jonas been married?"),
                 ("Ines", "9 years already! Time flies, thank you Tomas!"),
                 ("Tomas", "I started a pottery course."))
    judge = conversation_judge(chat, evidence=[0, 1], question="How long have Ines and Jonas been married?",
                               golden="Ines and Jonas have been married for 9 years.")
    assert judge.assess("Ines and Jonas have been married for nine years").present
    assert not judge.assess("Ines and Jonas have been married for 4 years").present
    assert not judge.assess("Tomas has been doing pottery for nine years").present


def test_the_light_verbs_of_a_long_answer_may_be_reworded():
    # A description of many words keeps its content words when a memory rewords it; "get" and
    # "make" are the first to go ("get judges to rate it" becomes "hoping judges score it").
    chat = _chat(("Tomas", "What now that the novel is done?"),
                 ("Ines", "I'll enter it in writing contests and get judges to rate it."))
    judge = conversation_judge(chat, evidence=[1], question="What are Ines's plans for her finished novel?",
                               golden="enter it in contests and get judges to rate it")
    assert judge.assess("Ines will enter the novel in contests, hoping judges score it").present
    assert not judge.assess("Ines will show the novel to her family, hoping they like it").present


def test_a_hedge_of_the_answer_is_not_the_answer():
    # "every", "around" qualify a golden answer: "on Friday nights" keeps "every Friday night",
    # "about 40 minutes" keeps "around 40 minutes"; the day and the number are still needed.
    chat = _chat(("Tomas", "Still doing the quiz?"),
                 ("Ines", "Yes, the pub quiz team meets every Friday night, the drive there takes around 40 minutes."))
    when = conversation_judge(chat, evidence=[1], question="When does Ines's pub quiz team meet?",
                              golden="every Friday night")
    assert when.assess("Ines's pub quiz team meets on Friday nights").present
    assert not when.assess("Ines's pub quiz team meets on Monday nights").present
    long = conversation_judge(chat, evidence=[1], question="How long is the drive to Ines's pub quiz?",
                              golden="around 40 minutes")
    assert long.assess("The drive to Ines's pub quiz takes about 40 minutes").present
    assert not long.assess("The drive to Ines's pub quiz takes about 25 minutes").present


def test_a_relative_time_resolved_to_its_date_is_the_facts_own_words():
    # Memory models resolve "yesterday" against the day it was said (EverMemOS does by design): the
    # date stands for the fact's time words, so the fact's context is not short by them.
    chat = _chat(("Tomas", "Where have you been hiding?"),
                 ("Ines", "I flew home from Bergen yesterday, the fish market there was amazing."),
                 ("Tomas", "I stayed home and painted the kitchen."), day="2024-02-12")
    judge = conversation_judge(chat, evidence=[1], question="Which city did Ines visit?", golden="Bergen")
    assert judge.assess("Ines flew back from Bergen on 11 February 2024").present
    assert not judge.assess("Ines flew back from Bergen on 2 August 2021").present


def test_a_replaced_word_of_a_longer_answer_is_a_conflict():
    # Three of four answer words kept pass the answer's recall, but a word the evidence never says
    # in the place of the fourth ("rocket" for "tulip", "vase" for "lamp") is another answer.
    chat = _chat(("Tomas", "Find anything good?"),
                 ("Ines", "I found a lamp shaped like a tulip at the flea market on Sunday."))
    judge = conversation_judge(chat, evidence=[1], question="What did Ines find at the flea market?",
                               golden="a lamp shaped like a tulip")
    assert judge.assess("Ines found a tulip-shaped lamp at the flea market").present
    assert judge.assess("Ines found a lamp shaped like a tulip at the Sunday flea market").present
    for changed in ("Ines found a lamp shaped like a rocket at the flea market",
                    "Ines found a vase shaped like a tulip at the flea market"):
        verdict = judge.assess(changed)
        assert not verdict.present and verdict.contradicts, changed
    # a longer answer is a description a memory may reword: "taking" for "winning" is no other answer
    chat = _chat(("Tomas", "Best race ever?"),
                 ("Ines", "My favourite race was when our crew won the silver medal at the national rowing finals."))
    judge = conversation_judge(chat, evidence=[1], question="What was Ines's favourite race?",
                               golden="winning the silver medal at the national rowing finals")
    assert judge.assess("Ines's favourite race: her crew taking the silver medal at the national rowing finals").present


def test_a_number_written_as_a_compound_word_is_its_number():
    # "forty-five" is 45, not the two numbers 40 and 5.
    chat = _chat(("Tomas", "How was the ride?"), ("Ines", "Brutal, I cycled 45 kilometres along the coast."))
    judge = conversation_judge(chat, evidence=[1], question="How far did Ines cycle?", golden="45 kilometres")
    assert judge.assess("Ines cycled forty-five kilometres along the coast").present
    assert not judge.assess("Ines cycled forty-six kilometres along the coast").present
    assert content_tokens("well-known twenty-one") == content_tokens("well known 21")


def test_two_names_joined_by_and_are_one_subject():
    # "Ines and Pico walk ..." names who walks; its "and" opens no clause about Pico alone (read as
    # one, the subject became Pico and the memory seemed to be about someone else).
    chat = _chat(("Tomas", "How is your dog Pico settling in?"),
                 ("Ines", "Pico is a darling. We walk along the river every evening now."))
    judge = conversation_judge(chat, evidence=[1], question="Where do Ines and her dog walk?", golden="along the river")
    assert judge.assess("Ines and Pico walk along the river every evening").present
    assert not judge.assess("Tomas and Pico walk along the river every evening").present


def test_words_of_one_relation_name_the_same_person():
    # "my mum" is "her mother", "my puppy" her dog: a memory that writes the other word keeps
    # the subject; another relation ("her sister") does not.
    chat = _chat(("Tomas", "Busy month?"), ("Ines", "Very! My mum is visiting from Gdansk for ten days in May."))
    judge = conversation_judge(chat, evidence=[1], question="Where is Ines's mum visiting from?", golden="Gdansk")
    assert judge.assess("Ines's mother is visiting from Gdansk for 10 days in May").present
    assert not judge.assess("Ines's sister is visiting from Gdansk for 10 days in May").present


def test_a_year_added_to_the_facts_date_replaces_no_count():
    # Memory models date what they store ("in March 2024"); the year is no count in the place of a
    # number the memory left out (the other child's age), but another year than the fact's is.
    chat = _chat(("Tomas", "How are the kids?"), ("Ines", "Oskar is 9 and Mila turned 4 in March."))
    judge = conversation_judge(chat, evidence=[1], question="How old is Mila?", golden="4")
    assert judge.assess("Ines's daughter Mila turned four in March 2024").present
    assert not judge.assess("Ines's daughter Mila turned 7 in March 2024").present
    dated = _chat(("Tomas", "When did you move?"), ("Ines", "We moved to Gdansk in 2019, Oskar was 3."))
    judge = conversation_judge(dated, evidence=[1], question="When did Ines move to Gdansk?", golden="2019")
    assert not judge.assess("Ines moved to Gdansk in 2021").present


def test_a_word_written_with_or_without_its_hyphen_is_one_word():
    # "start-up" and "startup", "e-mail" and "email" are one word; a memory that writes the other
    # spelling keeps the answer (and replaces no word of it).
    chat = _chat(("Tomas", "New job?"), ("Ines", "Yes! I'm a data engineer at a biotech startup in Basel now."))
    judge = conversation_judge(chat, evidence=[1], question="Where does Ines work?", golden="a biotech startup in Basel")
    assert judge.assess("Ines works as a data engineer at a biotech start-up in Basel").present
    assert not judge.assess("Ines works as a data engineer at a biotech lab in Basel").present


def test_an_answer_of_several_words_only_its_message_states_is_its_own_context():
    # "a ceramics teacher at the art school" held whole is the fact, however the memory words the
    # rest; one word of it ("teacher") in another setting is not.
    chat = _chat(("Tomas", "What are you up to these days?"),
                 ("Ines", "Honestly, since last autumn I've been a ceramics teacher at the art school, I adore it."))
    judge = conversation_judge(chat, evidence=[1], question="What is Ines's job?",
                               golden="ceramics teacher at the art school")
    assert judge.assess("Works as a ceramics teacher at an art school and loves it").present
    assert not judge.assess("Ines had a strict teacher at school").present



def test_an_answer_given_after_a_colon_is_bound_to_its_label():
    # "label: value" memories ("their big trip this year: Peru") bind the answer to everything the
    # label says, however far the question's words stand from it.
    chat = _chat(("Tomas", "Holiday plans?"),
                 ("Ines", "My brother and I are booking a trip to Peru in May, our first big trip in ages."))
    judge = conversation_judge(chat, evidence=[1], question="Where are Ines and her brother booking a trip to?",
                               golden="Peru")
    assert judge.assess("Ines and her brother are booking their first big trip in ages: Peru, in May").present
    assert not judge.assess("Ines and her brother are booking their first big trip in ages: Chile, in May").present


def test_the_two_ends_of_a_change_trade_places():
    # "switched from tea to cocoa" and "from cocoa to tea" keep every word and reverse the change;
    # the ends of a change or a preference name things as much as "the tea" does.
    fact = "I switched from tea to cocoa in the evenings, I sleep much better."
    keys = content_tokens("What does Ines drink in the evenings now? cocoa")
    assert swapped_pair(fact, "Ines switched from cocoa to tea in the evenings", keys=keys, fact_speaker="ines") \
        is not None
    assert swapped_pair(fact, "Ines switched from tea to cocoa in the evenings and sleeps better", keys=keys,
                        fact_speaker="ines") is None
    assert swapped_pair("I prefer the cocoa over tea.", "Ines prefers the tea over cocoa.", keys=keys,
                        fact_speaker="ines") is not None


def test_a_possessive_name_names_its_person():
    # "Tomas's dog Pico" is about Tomas as much as "Tomas walks Pico": the possessive is no other
    # word than the name.
    chat = _chat(("Tomas", "How is Pico?"), ("Ines", "Our dog Pico had his stitches out on Monday, he is fine now."))
    judge = conversation_judge(chat, evidence=[1], question="What happened to Pico on Monday?",
                               golden="he had his stitches out")
    assert judge.assess("Ines's dog Pico had his stitches out on Monday").present
    assert not judge.assess("Tomas's dog Pico had his stitches out on Monday").present


def test_a_comma_before_so_opens_a_clause_of_its_own_polarity():
    # "..., so no climbing for now" negates the consequence, not the sprain before it.
    chat = _chat(("Tomas", "Climbing on Friday?"),
                 ("Ines", "I sprained my ankle hiking on Ben Nevis last week, so no climbing for now."))
    judge = conversation_judge(chat, evidence=[1], question="How did Ines sprain her ankle?",
                               golden="hiking on Ben Nevis")
    assert judge.assess("Ines sprained her ankle hiking on Ben Nevis").present
    assert not judge.assess("Ines did not sprain her ankle hiking on Ben Nevis").present


# ---------------------------------------------------------------- the dev set's rates


def test_the_rules_judge_keeps_its_rates_on_the_paraphrase_dev_set():
    # Measured at the commit that added this test (benchmarks/evidence_flow_paraphrase.py): faithful
    # memories read as present 141/157, corrupted ones as not present 112/112 (before this work
    # 113/157 and 108/112). A change may cost a pair or two for a general reason, not more.
    outcomes = measure(load_pairs())
    table = rates(outcomes)
    faithful, corrupted = table["faithful"]["all"], table["corrupted"]["all"]
    assert faithful[1] >= 150 and corrupted[1] >= 100, table
    assert faithful[0] / faithful[1] >= 0.85, table
    assert corrupted[0] / corrupted[1] >= 0.97, table


def test_the_benchmark_names_a_malformed_dev_set_and_exits_2(tmp_path, capsys):
    bad = tmp_path / "pairs.json"
    bad.write_text(json.dumps({"conversations": [{"messages": [], "items": [
        {"id": "x-1", "evidence": [0], "question": "Q?", "golden": "a",
         "memories": [{"text": "t", "label": "maybe", "kind": "synonym"}]}]}]}), encoding="utf-8")
    assert main(["--pairs", str(bad), "--judge", "rules"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "'x-1'" in err and "'maybe'" in err
    assert main(["--pairs", str(tmp_path / "missing.json"), "--judge", "rules"]) == 2
