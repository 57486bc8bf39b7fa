"""Relative times resolved to dates: "she arrived on Tuesday", said on Sunday 22 October 2023, is
"she arrived on 17 October 2023".

Memory layers write facts with explicit dates (EverMemOS resolves relative dates against the
message's time by design; a Mem0 prompt may too). Such a date replaces the fact's weekday or
"yesterday" with a month and a day: the same point in time, not another one. A date in the text
counts as the fact's relative time when it falls where that time points from the day the message
was sent (a weekday: the nearest such day within eight days either side; "yesterday": the day
before; "last week": within the fortnight before; ...).
"""

from __future__ import annotations

import json
import re
from datetime import date, datetime

__all__ = ["message_date", "resolves_relative_time"]

_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), start=1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_FIRST = re.compile(r"\b(?P<day>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r",?(?:\s+(?P<year>\d{4}))?\b",
                        re.IGNORECASE)
_MONTH_FIRST = re.compile(r"\b" + _MONTH + r"\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{4}))?\b",
                          re.IGNORECASE)
_ISO = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
# "1:56 pm on 8 May, 2023" (LoCoMo) and ISO timestamps
_TIMESTAMP_LINE = re.compile(r"^Timestamp:\s*(?P<when>.+)$", re.MULTILINE)
# (expression, lowest and highest day offset from the day it was said)
_RELATIVE = (
    (re.compile(r"\byesterday\b", re.I), -1, -1),
    (re.compile(r"\b(?:today|tonight|this morning|this afternoon|this evening)\b", re.I), 0, 0),
    (re.compile(r"\btomorrow\b", re.I), 1, 1),
    (re.compile(r"\blast (?:week|weekend)\b|\bthe other day\b|\ba few days ago\b", re.I), -14, -1),
    (re.compile(r"\bnext (?:week|weekend)\b", re.I), 1, 14),
    (re.compile(r"\blast month\b", re.I), -62, -1),
    (re.compile(r"\bnext month\b", re.I), 1, 62),
)
# (expression, years from the year it was said)
_YEARS = ((re.compile(r"\blast year\b", re.I), -1), (re.compile(r"\bnext year\b", re.I), 1))
_WEEKDAY_WORD = re.compile(r"\b(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.I)
_WEEKDAY_REACH = 8


def _parse_when(text: str) -> date | None:
    text = text.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    found = _dates(text, default_year=None)
    return found[0] if found else None


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


def _dates(text: str, default_year: int | None) -> list[date]:
    out = []
    for pattern in (_DAY_FIRST, _MONTH_FIRST, _ISO):
        for match in pattern.finditer(text):
            month = match.group("month")
            month_number = int(month) if month.isdigit() else _MONTHS.get(month.lower().rstrip("."))
            year = int(match.group("year")) if match.group("year") else default_year
            if month_number is None or year is None:
                continue
            try:
                out.append(date(year, month_number, int(match.group("day"))))
            except ValueError:
                continue
    return out


def resolves_relative_time(fact: str, text: str, said_on: date) -> bool:
    """True when ``text`` names a date where a relative time of ``fact`` points from ``said_on``."""
    found = _dates(text, default_year=said_on.year)
    if not found:
        return False
    for day in found:
        offset = (day - said_on).days
        for pattern, low, high in _RELATIVE:
            if pattern.search(fact) and low <= offset <= high:
                return True
        for pattern, years in _YEARS:
            if pattern.search(fact) and day.year - said_on.year == years:
                return True
        for match in _WEEKDAY_WORD.finditer(fact):
            if day.weekday() == _WEEKDAYS[match.group("day").lower()] and abs(offset) <= _WEEKDAY_REACH:
                return True
    return False
