"""LoCoMo slices and the deterministic "model" texts the emulated memory systems produce.

A case names a LoCoMo sample, the sessions it keeps (optionally only their first messages) and
hand-written turns to add; :func:`load_slice` turns that into :class:`Turn` records with the
LoCoMo message ids (``U<sample>:<dia_id>``) and session times. The helpers below stand in for
the LLM calls of the memory systems (fact extraction, episodes): they copy the speaker's
sentences in the third person, which is what a faithful model would keep.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["Turn", "load_slice", "render_turn", "sentences", "third_person", "turn_facts"]


@dataclass(frozen=True)
class Turn:
    """One conversation message."""

    mid: str
    """Message id, ``U<sample>:<dia_id>`` as the LoCoMo loader names it."""
    dia_id: str
    speaker: str
    text: str
    session: int
    session_id: str
    timestamp: str
    """ISO time of the message's session."""


_LOCOMO_TIME = "%I:%M %p on %d %B, %Y"


def load_locomo(path: Path) -> list[dict[str, Any]]:
    """Read the LoCoMo file once per path."""
    key = str(path)
    if key not in _CACHE:
        _CACHE[key] = json.loads(path.read_text(encoding="utf-8"))
    return _CACHE[key]


_CACHE: dict[str, list[dict[str, Any]]] = {}


def load_slice(locomo: Path, sample: int, sessions: dict[int, int | None],
               added: list[tuple[str, str, str, str]] = ()) -> tuple[list[Turn], tuple[str, str]]:
    """Turns of a LoCoMo sample.

    Args:
        locomo: path of ``locomo10.json``.
        sample: 0-based sample index.
        sessions: session number → how many of its first messages to keep (None: all).
        added: hand-written turns ``(after_dia_id, new_dia_id, speaker, text)``, each inserted
            right after the named message (in its session).

    Returns:
        The turns in conversation order and the two speakers' names.
    """
    raw = load_locomo(locomo)[sample]["conversation"]
    turns: list[Turn] = []
    for number, keep in sorted(sessions.items()):
        when = datetime.strptime(raw[f"session_{number}_date_time"], _LOCOMO_TIME).isoformat()
        session_id = f"locomo-{sample + 1}-session-{number}"
        messages = raw[f"session_{number}"]
        for message in messages[:keep] if keep else messages:
            turns.append(Turn(mid=f"U{sample + 1}:{message['dia_id']}", dia_id=message["dia_id"],
                              speaker=message["speaker"], text=message["text"], session=number,
                              session_id=session_id, timestamp=when))
            for after, new_id, speaker, text in added:
                if after == message["dia_id"]:
                    turns.append(Turn(mid=f"U{sample + 1}:{new_id}", dia_id=new_id, speaker=speaker, text=text,
                                      session=number, session_id=session_id, timestamp=when))
    return turns, (raw["speaker_a"], raw["speaker_b"])


def render_turn(turn: Turn, text: str | None = None) -> str:
    """How the Long-Context and NaiveRAG layers write a message into their buffers."""
    return f"Speaker {turn.speaker} (role: user) says: {turn.text if text is None else text}\nTimestamp: {turn.timestamp}"


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")
_FIRST_PERSON = (
    (r"\bI'm\b", "{n} is"), (r"\bI've\b", "{n} has"), (r"\bI'd\b", "{n} would"), (r"\bI'll\b", "{n} will"),
    (r"\bI\b", "{n}"), (r"\b[Mm]y\b", "{n}'s"), (r"\bme\b", "{n}"), (r"\bmyself\b", "{n}"), (r"\bmine\b", "{n}'s"),
)


def sentences(text: str) -> list[str]:
    """The sentences of a message."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def third_person(speaker: str, text: str) -> str:
    """A sentence rewritten about its speaker (``I went`` → ``Caroline went``)."""
    first = speaker.split()[0]
    out = text
    for pattern, repl in _FIRST_PERSON:
        out = re.sub(pattern, repl.format(n=first), out)
    if first not in out:
        out = f"{first}: {out}"
    return out


_SMALL_TALK = re.compile(r"^(hey|hi|wow|thanks|thank you|yeah|yep|cool|sounds|congrats|great|awesome|no doubts)\b",
                         re.IGNORECASE)


def turn_facts(turn: Turn, *, named: bool = True) -> list[str]:
    """What a fact extractor keeps of a message: its statements (no questions, no small talk),
    about the speaker by name (``named``) or as the speaker said them (Mem0's own style)."""
    out = []
    for sentence in sentences(turn.text):
        words = re.findall(r"[A-Za-z0-9']+", sentence)
        if sentence.endswith("?") or len(words) < 5:
            continue
        if _SMALL_TALK.match(sentence) and len(words) < 9:
            continue
        out.append(third_person(turn.speaker, sentence) if named else sentence)
    return out
