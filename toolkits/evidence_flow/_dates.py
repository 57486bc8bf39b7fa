"""Relative times resolved to dates: "she arrived on Tuesday", said on Sunday 22 October 2023, is
"she arrived on 17 October 2023".

Memory layers write facts with explicit dates (EverMemOS resolves relative dates against the
message's time by design; a Mem0 prompt may too). Such a date replaces the fact's weekday or
"yesterday" with a month and a day: the same point in time, not another one. A date in the text
counts as the fact's relative time when it falls where that time points from the day the message
was sent, within the reach of the expression's grain (a day: that day; a weekday: the one before
or after; "last week": that week; "next month": that month; "last year": that year).

``dateparser`` (offline, it ships its language data) reads every date and relative time. Two
things are still done here, each for a reason:

* where the absolute dates of a text are: ``dateparser.search.search_dates`` joins neighbouring
  numbers into one wrong date ("7 May 2023 and 2 apples" becomes 2 May 2023), so three shapes of
  span (day first, month first, ISO) are cut by regexes and each span is parsed by ``dateparser``
  (which also decides whether its word is a month at all);
* vague spans ``dateparser`` 1.5 does not read ("the other day", "a few days ago", "last
  weekend", "next weekend"): a small table of day ranges.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import date, datetime, timedelta
from functools import lru_cache
from types import SimpleNamespace

__all__ = ["DATE_SPANS", "message_date", "relative_points", "resolves_relative_time", "span_date", "text_dates",
           "text_months"]

_ORDINAL = r"(?:st|nd|rd|th)?"
# spans that may be dates; dateparser decides whether the word is a month ("5 May" yes, "5 apples" no)
DATE_SPANS = (
    re.compile(r"\b\d{1,2}" + _ORDINAL + r"\s+(?:of\s+)?[a-z]{3,9}\.?(?:,?\s+\d{4})?\b", re.IGNORECASE),
    re.compile(r"\b[a-z]{3,9}\.?\s+\d{1,2}" + _ORDINAL + r"(?:,?\s+\d{4})?\b", re.IGNORECASE),
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
)
# a month and its year without a day ("in June 2023"); dateparser decides whether the word is a month
_MONTH_SPAN = re.compile(r"\b[a-z]{3,9}\.?,?\s+\d{4}\b", re.IGNORECASE)
# "1:56 pm on 8 May, 2023" (LoCoMo) and ISO timestamps
_TIMESTAMP_LINE = re.compile(r"^Timestamp:\s*(?P<when>.+)$", re.MULTILINE)
# What dateparser 1.5 does not read: (expression, lowest and highest day offset from the day it was said)
_VAGUE = (
    (re.compile(r"\blast weekend\b|\bthe other day\b|\ba few days ago\b", re.I), -14, -1),
    (re.compile(r"\bnext weekend\b", re.I), 1, 14),
)
# how far from the point dateparser names a date may fall, by the grain of the expression
_REACH_DAYS = {"day": 0, "week": 7, "month": 31}
# dateparser reads short words as abbreviations ("We" as Wednesday, "We may" as May): a span
# with no word longer than this is no relative time
_TOO_SHORT = 3
# a word with a digit in it ("6", "5pm", "10:30") and the cut left by an absolute date
# the day of a day-first or month-first span (an ISO date's day is checked by its own shape)
_DAY_NUMBER = re.compile(r"(?<![\d-])\d{1,2}(?![\d-])")
# a counted relative time, which keeps its number: "3 weeks ago", "in 2 days"
_COUNTED_TIME = re.compile(r"\b\d+\s+(?:day|week|month|year)s?\s+ago\b|\bin\s+\d+\s+(?:day|week|month|year)s?\b(?!\s+ago)",
                           re.IGNORECASE)
_NUMBER_WORD = re.compile(r"\S*\d\S*|\|")
# where a sentence's pieces end: punctuation before a space or the end ("10:30" and "7.5" stay whole)
_PIECE_END = re.compile(r"[,;:!?.](?=\s|$)")


_IMPORT_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _dateparser() -> SimpleNamespace:
    """dateparser's entry points, imported once under a lock: the attributor judges cases in threads,
    and two threads importing dateparser's modules at the same time deadlock on its import locks
    (``_DeadlockError`` on ``dateparser.custom_language_detection.language_mapping``)."""
    with _IMPORT_LOCK:
        import dateparser
        from dateparser.date import DateDataParser
        from dateparser.search import search_dates

        # the English data and the search modules load on first use: load them here, still locked
        dateparser.parse("1 May 2023", languages=["en"])
        search_dates("on 1 May 2023 and last week", languages=["en"])
        DateDataParser(languages=["en"]).get_date_data("yesterday")
        return SimpleNamespace(parse=dateparser.parse, search_dates=search_dates, DateDataParser=DateDataParser)


def _parse(text: str, settings: dict) -> date | None:
    found = _dateparser().parse(text, languages=["en"], settings=settings)
    return found.date() if found else None


def _parse_when(text: str) -> date | None:
    text = text.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    return _parse(text, {"REQUIRE_PARTS": ["day", "month", "year"]})


def message_date(raw: str) -> date | None:
    """The day a message was sent: its ``timestamp`` (or ``date_time``) field, else a
    ``Timestamp: ...`` line; None when it does not say."""
    try:
        value = json.loads(raw)
    except (TypeError, ValueError):
        value = raw
    if isinstance(value, dict):
        for key in ("timestamp", "date_time", "time", "date"):
            if isinstance(value.get(key), str):
                found = _parse_when(value[key])
                if found:
                    return found
        value = value.get("content", "")
    if isinstance(value, str):
        line = _TIMESTAMP_LINE.search(value)
        if line:
            return _parse_when(line.group("when"))
    return None


@lru_cache(maxsize=8192)
def span_date(span: str, year: int) -> date | None:
    """The day a date span names (None when dateparser reads no month and day there, or another day)."""
    # the year a date without one is in: the year it was said in
    found = _parse(span, {"REQUIRE_PARTS": ["day", "month"], "RELATIVE_BASE": datetime(year, 1, 1),
                          "PREFER_DATES_FROM": "current_period"})
    # a date names its own day: dateparser also reads a relative word beside a count ("yesterday 6",
    # from 1 January: 31 December) or a weekday and a count as some date, which is not this span's
    day = _DAY_NUMBER.search(span)
    if found is None or (day is not None and int(day.group(0)) != found.day):
        return None
    return found


def text_dates(text: str, said_on: date) -> list[date]:
    """The absolute dates ``text`` names (a date without a year is in ``said_on``'s year)."""
    found = []
    for pattern in DATE_SPANS:
        for match in pattern.finditer(text):
            day = span_date(match.group(0), said_on.year)
            if day is not None:
                found.append(day)
    return found


@lru_cache(maxsize=4096)
def relative_points(fact: str, said_on: date) -> tuple[tuple[date, str], ...]:
    """Where the relative times of ``fact`` point from ``said_on``: (day, grain) pairs read by
    dateparser, a weekday both as the last and as the next one. Absolute dates and spans of short
    words only are not relative times; a number ``search_dates`` joined to a relative time
    ("yesterday, 6 students", "last Friday at 5 pm") is cut off and the rest is read alone, while a
    count of days, weeks, months or years before "ago" or after "in" is part of one."""
    search_dates = _dateparser().search_dates
    points: set[tuple[date, str]] = set()
    base = datetime(said_on.year, said_on.month, said_on.day)
    for prefer in ("past", "future"):
        settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": prefer}
        # piece by piece: search_dates finds nothing at all in a sentence where one piece puzzles it
        # ("I was in Bergen last week, the fish market was amazing.")
        for piece in _PIECE_END.split(fact):
            if not piece.strip():
                continue
            for span, _ in search_dates(piece, languages=["en"], settings=settings) or ():
                for relative in _relative_spans(span, said_on, settings):
                    if not all(len(word) <= _TOO_SHORT for word in relative.split()):
                        points.update(_grained(relative, settings))
    return tuple(sorted(points))


def _relative_spans(span: str, said_on: date, settings: dict) -> list[str]:
    """The relative times in a span found by ``search_dates``: the span itself when it holds no digit;
    else what ``search_dates`` finds again in its pieces once its absolute dates and its other words
    with a digit (a count, a clock time joined to a neighbour) are cut out."""
    search_dates = _dateparser().search_dates
    if not any(ch.isdigit() for ch in span):
        return [span]
    for pattern in DATE_SPANS:
        span = pattern.sub(lambda m: " | " if span_date(m.group(0), said_on.year) else m.group(0), span)
    pieces, last = [], 0
    for match in _COUNTED_TIME.finditer(span):
        pieces += [*_NUMBER_WORD.split(span[last:match.start()]), match.group(0)]
        last = match.end()
    pieces += _NUMBER_WORD.split(span[last:])
    return [found for piece in pieces if piece.strip(" ,;:.|")
            for found, _ in search_dates(piece, languages=["en"], settings=settings) or ()]


def _grained(span: str, settings: dict) -> list[tuple[date, str]]:
    data = _dateparser().DateDataParser(languages=["en"], settings=settings).get_date_data(span)
    return [(data.date_obj.date(), data.period)] if data.date_obj is not None else []


def _within(day: date, point: date, grain: str) -> bool:
    if grain == "year":
        return day.year == point.year
    return abs((day - point).days) <= _REACH_DAYS.get(grain, 0)


def text_months(text: str) -> list[tuple[int, int]]:
    """The ``(year, month)`` of each month ``text`` names with its year and no day ("in June 2023")."""
    days = [m.span() for pattern in DATE_SPANS for m in pattern.finditer(text)]
    found = []
    for match in _MONTH_SPAN.finditer(text):
        if any(start < match.end() and match.start() < end for start, end in days):
            continue  # the month of a date with its day ("7 June 2023") is that day's
        month = _parse(match.group(0), {"REQUIRE_PARTS": ["month", "year"]})
        if month is not None:
            found.append((month.year, month.month))
    return found


def _in_months(fact: str, said_on: date, points: tuple[tuple[date, str], ...], months: list[tuple[int, int]]) -> bool:
    """A relative time of ``fact`` (read, or one of the vague spans) falls in one of ``months``."""
    if any((point.year, point.month) in months for point, grain in points if grain != "year"):
        return True
    for pattern, low, high in _VAGUE:
        if pattern.search(fact):
            ends = (said_on + timedelta(days=low), said_on + timedelta(days=high))
            if any((end.year, end.month) in months for end in ends):
                return True
    return False


def resolves_relative_time(fact: str, text: str, said_on: date) -> bool:
    """True when ``text`` names a date where a relative time of ``fact`` points from ``said_on``, or
    the month (with its year) that holds it."""
    found = text_dates(text, said_on)
    months = text_months(text) if not found else []
    if not found and not months:
        return False
    points = relative_points(fact, said_on)
    if months and _in_months(fact, said_on, points, months):
        return True
    for day in found:
        if any(_within(day, point, grain) for point, grain in points):
            return True
        offset = (day - said_on).days
        if any(pattern.search(fact) and low <= offset <= high for pattern, low, high in _VAGUE):
            return True
    return False
