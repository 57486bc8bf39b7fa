"""The stretch of days a time expression names: "the Saturday before 20 March 2023" is 18 March
2023, "the week before 9 June 2023" is 2–8 June, "2022" is the whole year.

A golden answer to a "when" question is often computed from the message's time and written
relative to a date ("the Friday before 23 January 2022"), while a memory layer resolves the
message's "last Friday" to the day itself ("on 21 January 2022"), or copies the relative form.
Both name the same day; comparing their words would read the second as a different number.
:func:`named_ranges` turns either into days, so the judge compares the days.

The anchor dates are read by :func:`._dates.text_dates` (``dateparser``); what is read here is
the relation in front of one: an optional count, a unit (day, week, weekend, month, year or a
weekday), and ``before``/``after``/``of``.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from ._dates import DATE_SPANS, span_date

__all__ = ["DayRange", "named_ranges", "named_spans"]

DayRange = tuple[date, date]
"""First and last day, both included."""

_WEEKDAYS = tuple(name.lower() for name in calendar.day_name)  # monday ... sunday
_COUNTS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a couple of": 2}
# "a few days before": no exact count; the days it may mean
_VAGUE_COUNTS = {"a few": (2, 5), "few": (2, 5), "several": (3, 9)}
_RELATION = re.compile(
    r"\b(?:the\s+)?(?:(?P<count>\d+|a couple of|a few|few|several|one|two|three|four|five|six|a)\s+)?"
    r"(?P<unit>days?|weeks?|weekends?|months?|years?|" + "|".join(_WEEKDAYS) + r")\s+"
    r"(?P<relation>before|after|prior to|of)\s+(?:the\s+)?",
    re.IGNORECASE,
)
# "20-21 May 2023", "3–5 June": days of one month
_DAY_RANGE = re.compile(r"\b(?P<first>\d{1,2})\s*[-–]\s*(?P<last>\d{1,2})\s+(?P<rest>[a-z]{3,9}\.?(?:,?\s+\d{4})?)\b",
                        re.IGNORECASE)
_MAX_COUNT = 366
_YEAR = re.compile(r"(?<![\d/-])(?:19|20)\d{2}(?![\d/-])")


def named_ranges(text: str, year: int) -> list[DayRange]:
    """Every stretch of days ``text`` names: relations to a date, dates, months with their year
    and bare years (a date without a year is in ``year``). The date a relation counts from is not
    a range of its own."""
    return [stretch for stretch, _ in named_spans(text, year)]


def named_spans(text: str, year: int) -> list[tuple[DayRange, str]]:
    """:func:`named_ranges` with the words that name each stretch."""
    found: list[tuple[DayRange, str]] = []
    used: list[tuple[int, int]] = []

    def take(stretch: DayRange, start: int, end: int) -> None:
        found.append((stretch, text[start:end]))
        used.append((start, end))

    for match in _DAY_RANGE.finditer(text):
        first, last = (span_date(f"{match.group(n)} {match.group('rest')}", year) for n in ("first", "last"))
        if first and last and first <= last:
            take((first, last), *match.span())
    for match in _RELATION.finditer(text):
        if _inside(match.span(), used):
            continue
        anchor = _date_at(text, match.end(), year)
        stretch = _relative_range(match, anchor[0]) if anchor else None
        if anchor and stretch:
            take(stretch, match.start(), anchor[1])
    for pattern in DATE_SPANS:
        for match in pattern.finditer(text):
            day = None if _inside(match.span(), used) else span_date(match.group(0), year)
            if day is not None:
                take((day, day), *match.span())
    for match in _MONTH_YEAR.finditer(text):
        month = _month_number(match.group("month"))
        if month and not _inside(match.span(), used):
            y = int(match.group("year"))
            take((date(y, month, 1), date(y, month, calendar.monthrange(y, month)[1])), *match.span())
    for match in _YEAR.finditer(text):
        if not _inside(match.span(), used):
            y = int(match.group(0))
            take((date(y, 1, 1), date(y, 12, 31)), *match.span())
    return found


_MONTH_YEAR = re.compile(r"\b(?P<month>[a-z]{3,9})\.?,?\s+(?P<year>(?:19|20)\d{2})\b", re.IGNORECASE)


def _month_number(word: str) -> int:
    word = word.lower()
    for number in range(1, 13):
        if word in (calendar.month_name[number].lower(), calendar.month_abbr[number].lower()):
            return number
    return 0


def _inside(span: tuple[int, int], used: list[tuple[int, int]]) -> bool:
    return any(start < span[1] and span[0] < end for start, end in used)


def _date_at(text: str, position: int, year: int) -> tuple[date, int] | None:
    """The date that starts at ``position`` and where it ends."""
    for pattern in DATE_SPANS:
        match = pattern.match(text, position)
        if match:
            day = span_date(match.group(0), year)
            if day is not None:
                return day, match.end()
    return None


def _relative_range(match: re.Match[str], day: date) -> DayRange | None:
    unit = match.group("unit").lower()
    unit = "weekday:" + unit if unit in _WEEKDAYS else unit.removesuffix("s")
    relation = match.group("relation").lower()
    count = (match.group("count") or "").lower()
    low, high = _VAGUE_COUNTS.get(count, (_COUNTS.get(count, int(count) if count.isdigit() else 1),) * 2)
    if not 1 <= low <= high <= _MAX_COUNT:
        return None  # "0 days before", "99999 years before": no day a memory would name
    if relation == "of":
        return _containing(unit, day) if low == high == 1 else None
    sign = -1 if relation in ("before", "prior to") else 1
    first, last = _nth(unit, day, sign, low), _nth(unit, day, sign, high)
    if first is None or last is None:
        return None
    return (min(first[0], last[0]), max(first[1], last[1]))


def _nth(unit: str, day: date, sign: int, n: int) -> DayRange | None:
    """The ``n``-th ``unit`` before (``sign`` -1) or after (+1) ``day``."""
    if unit.startswith("weekday:"):
        target = _WEEKDAYS.index(unit.split(":", 1)[1])
        step = (day.weekday() - target) % 7 or 7 if sign < 0 else (target - day.weekday()) % 7 or 7
        found = day + timedelta(days=sign * (step + 7 * (n - 1)))
        return found, found
    if unit == "day":
        found = day + timedelta(days=sign * n)
        return found, found
    if unit == "week":
        near = day + timedelta(days=sign * (7 * (n - 1) + 1))
        far = day + timedelta(days=sign * 7 * n)
        return min(near, far), max(near, far)
    if unit == "weekend":
        sunday = day - timedelta(days=(day.weekday() + 1) % 7 or 7) if sign < 0 \
            else day + timedelta(days=(5 - day.weekday()) % 7 or 7) + timedelta(days=1)
        sunday += timedelta(days=sign * 7 * (n - 1))
        return sunday - timedelta(days=1), sunday
    if unit == "month":
        index = day.year * 12 + day.month - 1 + sign * n
        y, m = divmod(index, 12)
        return date(y, m + 1, 1), date(y, m + 1, calendar.monthrange(y, m + 1)[1])
    if unit == "year":
        y = day.year + sign * n
        return date(y, 1, 1), date(y, 12, 31)
    return None


def _containing(unit: str, day: date) -> DayRange | None:
    """The week (Monday to Sunday), month or year that holds ``day``."""
    if unit == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=6)
    if unit == "month":
        return date(day.year, day.month, 1), date(day.year, day.month, calendar.monthrange(day.year, day.month)[1])
    if unit == "year":
        return date(day.year, 1, 1), date(day.year, 12, 31)
    return None
