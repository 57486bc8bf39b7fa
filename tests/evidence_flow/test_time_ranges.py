"""The days a time expression names: a computed golden answer and a memory's resolved date compared as days."""

from __future__ import annotations

from datetime import date

import pytest

from toolkits.evidence_flow._time_ranges import named_ranges, named_spans


def _days(first: tuple[int, int, int], last: tuple[int, int, int] | None = None) -> tuple[date, date]:
    return date(*first), date(*(last or first))


@pytest.mark.parametrize(("text", "expected"), [
    # a weekday before / after a date: the nearest one strictly before / after it
    ("The Tuesday before 14 November 2024", [_days((2024, 11, 12))]),  # the 14th is a Thursday
    ("the Thursday before 14 November 2024", [_days((2024, 11, 7))]),  # the same weekday: a week back
    ("Sunday after 8 November, 2024", [_days((2024, 11, 10))]),
    ("the second Monday", []),  # no date to count from
    # a week, a weekend, a few days, counted
    ("The week before 14 November 2024", [_days((2024, 11, 7), (2024, 11, 13))]),
    ("two weeks after 1 March 2024", [_days((2024, 3, 9), (2024, 3, 15))]),
    ("the weekend before 14 November 2024", [_days((2024, 11, 9), (2024, 11, 10))]),
    ("the weekend after 14 November 2024", [_days((2024, 11, 16), (2024, 11, 17))]),
    ("Two weekends before 14 November 2024", [_days((2024, 11, 2), (2024, 11, 3))]),
    ("a few days before 20 April 2024", [_days((2024, 4, 15), (2024, 4, 18))]),
    ("the day after 29 February 2024", [_days((2024, 3, 1))]),
    # the week, month or year that holds a date
    ("the week of 14 November 2024", [_days((2024, 11, 11), (2024, 11, 17))]),
    ("the month before 10 January 2024", [_days((2023, 12, 1), (2023, 12, 31))]),
    ("the year after 3 May 2022", [_days((2023, 1, 1), (2023, 12, 31))]),
    # plain dates, a span of days, a month with its year, a year alone
    ("on 14 November 2024", [_days((2024, 11, 14))]),
    ("on November 14th, 2024", [_days((2024, 11, 14))]),
    ("over 8-10 June 2024", [_days((2024, 6, 8), (2024, 6, 10))]),
    ("in June 2024", [_days((2024, 6, 1), (2024, 6, 30))]),
    ("in 2021", [_days((2021, 1, 1), (2021, 12, 31))]),
    # counts and clock times name no day, nor does a count of none or of thousands (no crash either)
    ("she ran 12 km in 58 minutes at 7:30", []),
    ("0 days before 1 May 2024", [_days((2024, 5, 1))]),
    ("99999 years before 1 May 2024", [_days((2024, 5, 1))]),
    ("999999 days after 1 May 2024", [_days((2024, 5, 1))]),
])
def test_the_days_an_expression_names(text, expected):
    assert named_ranges(text, 2024) == expected


def test_the_date_a_relation_counts_from_is_not_a_day_of_its_own():
    # "the Friday before 15 March" names the 8th only: reading the 15th too would let a memory of the
    # 15th pass for the answer
    assert named_spans("the Friday before 15 March 2024 and then 20 March 2024", 2024) == [
        (_days((2024, 3, 8)), "the Friday before 15 March 2024"), (_days((2024, 3, 20)), "20 March 2024")]


def test_a_date_without_its_year_is_in_the_year_given():
    assert named_ranges("the Friday before 15 March", 2024) == [_days((2024, 3, 8))]
    assert named_ranges("the Friday before 15 March", 2023) == [_days((2023, 3, 10))]
