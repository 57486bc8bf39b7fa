"""Small recording helpers shared by the simulated layers (public smartcomment API only)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from unittest import mock

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an the and or of to in on at for with is are was were be been i you he she it we they my your his her "
    "our their me him us them this that what which who whom when where how did do does has have had not no "
    "yes so as by from about after before up out just too".split()
)


def as_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


def named(name: str):
    """An identity strategy that always yields ``name``."""
    return lambda _value: name


def unit_identity(key: str):
    return lambda value: f"memory-unit-{value[key]}"


def tokens(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if t not in _STOP]


def overlap_score(query: str, text: str) -> float:
    """A deterministic lexical relevance score (share of query words found in the text)."""
    q = set(tokens(query))
    if not q:
        return 0.0
    t = set(tokens(text))
    return round(len(q & t) / len(q), 4)


def word_count(text: str) -> int:
    return len(text.split())


def locomo_time(text: str) -> str:
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").isoformat()


@contextlib.contextmanager
def virtual_clock(start: float = 1_733_000_000.0, step: float = 0.004) -> Iterator[None]:
    """Give every record its own creation time (strictly increasing, 4 ms apart).

    A real run spends model-call time between operations; recorded back to back, many records
    would share one millisecond and "earliest" would be a tie. Only the tracer's clock is
    replaced, for the duration of one recording.
    """
    import smartcomment.schema.base as base

    state = {"t": start}

    def fake_time() -> float:
        state["t"] += step
        return state["t"]

    fake = mock.Mock(wraps=base.time)
    fake.time = fake_time
    fake.localtime = base.time.localtime
    with mock.patch.object(base, "time", fake):
        yield
