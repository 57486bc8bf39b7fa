"""Relative times written as the dates they point to are the same point in time."""

from __future__ import annotations

import json
from datetime import date

import pytest

from toolkits.evidence_flow._binding import chunks
from toolkits.evidence_flow._dates import message_date, relative_points, resolves_relative_time, text_dates
from toolkits.evidence_flow._facts import statements
from toolkits.evidence_flow._probe import FactProbe
from toolkits.evidence_flow._text import content_tokens

SUNDAY = date(2023, 10, 22)


@pytest.mark.parametrize(("raw", "expected"), [
    (json.dumps({"content": "hi", "timestamp": "2023-10-22T17:55:00"}), SUNDAY),
    (json.dumps({"content": "Speaker Rosa says: hi\nTimestamp: 1:56 pm on 8 May, 2023"}), date(2023, 5, 8)),
    (json.dumps({"content": "hi", "date_time": "October 22, 2023"}), SUNDAY),
    (json.dumps({"content": "hi"}), None),
    ("not json at all", None),
])
def test_the_day_a_message_was_sent(raw, expected):
    assert message_date(raw) == expected


@pytest.mark.parametrize(("fact", "text", "resolved"), [
    ("She arrived on Tuesday.", "She arrived on 17 October 2023.", True),
    ("She arrived on Tuesday.", "She arrived on 18 October 2023.", False),  # a Wednesday
    ("She arrived on Tuesday.", "She arrived on 14 November 2023.", False),  # a Tuesday, weeks later
    ("I went yesterday.", "went on October 21, 2023", True),
    ("I went yesterday.", "went on 2023-10-20", False),
    ("We met last week.", "We met on 16 October.", True),  # the year is the message's
    ("We meet next month.", "We meet on 5 November 2023.", True),
    ("We met last year.", "We met on 3 March 2022.", True),
    ("We met last year.", "We met on 3 March 2023.", False),
    ("She arrived on Tuesday.", "She arrived recently.", False),  # no date at all
    # read by dateparser, not by a table of our own
    ("I sold the kayak two days ago.", "sold the kayak on 20 October 2023", True),
    ("I sold the kayak two days ago.", "sold the kayak on 19 October 2023", False),
    ("The pipes froze the day before yesterday.", "The pipes froze on Oct 20.", True),
    ("We repainted the shed three weeks ago.", "repainted on 1 October 2023", True),
    ("We repainted the shed three weeks ago.", "repainted on 10 September 2023", False),
    # vague spans dateparser does not read keep their day ranges
    ("We hiked last weekend.", "We hiked on 14 October 2023.", True),
    ("We hiked last weekend.", "We hiked on 29 October 2023.", False),
])
def test_a_date_resolves_a_relative_time_only_where_it_points(fact, text, resolved):
    assert resolves_relative_time(fact, text, SUNDAY) is resolved


def test_absolute_dates_are_spans_parsed_by_dateparser():
    # search_dates alone would join "2023 and 2" into 2 May 2023; a span is one date
    assert text_dates("ran 7 May 2023 and 2 apples were left", SUNDAY) == [date(2023, 5, 7)]
    assert text_dates("I own 5 apples and 12 dogs", SUNDAY) == []
    assert text_dates("Sept. 3 and 2023-10-20", SUNDAY) == [date(2023, 9, 3), date(2023, 10, 20)]


def test_short_words_alone_are_no_relative_time():
    # dateparser alone reads "We" as Wednesday and "may" as May
    assert relative_points("We may come by.", SUNDAY) == ()
    assert relative_points("We came by yesterday.", SUNDAY) == ((date(2023, 10, 21), "day"),)


def _probe(said_on):
    facts = statements("Yes, a collie mix called Mango, she arrived on Tuesday from Paws and Pines.",
                       frozenset({"rosa"}), "rosa")
    return FactProbe.build(mode="answer", facts=facts, answer_tokens=content_tokens("a collie mix"),
                           question_tokens=content_tokens("What kind of dog is Mango?"), names=frozenset({"rosa"}),
                           evidence_tokens=facts[0].tokens, document_frequency={}, documents=10, answer_spread=1,
                           answer_threshold=0.75, evidence_threshold=0.5, said_on=said_on,
                           proper_names=frozenset({"mango", "paws", "pines"}))


def test_a_resolved_weekday_is_no_date_conflict_but_another_date_is():
    resolved = "Rosa started fostering Mango, a collie mix from Paws and Pines, on 17 October 2023."
    assert _probe([SUNDAY]).assess(resolved).present
    assert not _probe([]).assess(resolved).present  # without the message's day it cannot be checked
    wrong_day = resolved.replace("17 October", "3 October")
    assert _probe([SUNDAY]).assess(wrong_day).why == "conflict: date"


def test_an_apposition_keeps_its_noun_in_the_chunk():
    assert chunks("Rosa fosters Mango, a collie mix, since Tuesday") == (
        ("rosa", "foster", "mango", "collie", "mix"), ("sinc", "tuesday"))


@pytest.mark.parametrize(("fact", "points"), [
    # search_dates joins a count or a clock time to the relative time beside it: that span is
    # still the relative time, and the number no part of it
    ("Yesterday, 4 cousins drove up from the coast.", ((date(2023, 10, 21), "day"),)),
    ("Yesterday 4 cousins drove up from the coast.", ((date(2023, 10, 21), "day"),)),
    ("The ferry left last Thursday at 7 pm sharp.", ((date(2023, 10, 19), "day"),)),
    # an absolute date beside a count is still no relative time
    ("We planted on 9 April, 5 rows of beans.", ()),
    # a count of days or weeks before "ago" (or after "in") is the relative time itself; a count
    # of days without either is a length of time, not a point
    ("The roof was fixed 3 weeks ago and yesterday 2 tiles fell.",
     ((date(2023, 10, 1), "week"), (date(2023, 10, 21), "day"))),
    ("We moved in 2 months ago.", ((date(2023, 8, 22), "month"),)),
    ("The recital is in 3 days, 4 of us play.", ((date(2023, 10, 25), "day"),)),
    ("She took 2 days off.", ()),
])
def test_a_number_beside_a_relative_time_does_not_hide_it(fact, points):
    assert relative_points(fact, SUNDAY) == points


def test_a_relative_word_beside_a_count_is_no_absolute_date():
    # dateparser reads "Yesterday 4" (from 1 January) as 31 December: a date names its own day
    assert text_dates("Yesterday 4 cousins drove up.", SUNDAY) == []
    assert text_dates("Tonight 9 of us eat on the 9th of June.", SUNDAY) == [date(2023, 6, 9)]


def test_a_relative_time_is_read_in_a_sentence_of_several_pieces():
    # dateparser's search_dates finds nothing at all in "I was in Bergen last week, the fish market
    # was amazing." (one piece puzzles it), while it reads "last week" in the first piece alone
    said = date(2024, 2, 12)
    assert relative_points("I was in Bergen last week, the fish market was amazing.", said)
    assert relative_points("Fun! I got back from Tallinn yesterday, the old town was lovely.", said)


def test_a_month_with_its_year_holds_the_relative_time_it_contains():
    # "moved last weekend" said on 30 June 2023 is in "June 2023"; a month with a day is that
    # day's, and another month is another time
    from toolkits.evidence_flow._dates import text_months

    said = date(2023, 6, 30)
    fact = "We moved into the new flat last weekend, it has a garden."
    assert resolves_relative_time(fact, "They moved into a new flat in June 2023", said)
    assert not resolves_relative_time(fact, "They moved into a new flat in May 2023", said)
    assert not resolves_relative_time(fact, "They moved into a new flat on 2 June 2023", said)
    assert text_months("on 7 June 2023 and in August 2023") == [(2023, 8)]
