"""The data a simulated memory system reads: dialogues, their turns, and the questions asked later.

A dialogue is LoCoMo-shaped (two speakers, dated sessions, ``D<session>:<turn>`` ids). Each turn
also carries what the simulated models would answer for it — the facts an extraction model would
write in the third person, the topic title that opens a new episode, and the rare memory decision
that is not a plain ADD — so that the traced pipelines are deterministic without a language model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

MEM0_EVENTS = ("UPDATE", "DELETE", "NONE")


@dataclass(frozen=True)
class Turn:
    speaker: str
    text: str
    facts: tuple[str, ...] = ()
    topic: str | None = None
    """Title of the episode this turn opens (a boundary before it)."""
    decisions: tuple[tuple[str, str, str], ...] = ()
    """Non-ADD memory decisions for this turn's facts: ``(event, old fact, new fact)``."""


@dataclass(frozen=True)
class DialogueSession:
    date_time: str
    """LoCoMo style, e.g. ``1:14 pm on 8 May, 2023``."""
    turns: tuple[Turn, ...]

    @property
    def timestamp(self) -> str:
        return datetime.strptime(self.date_time, "%I:%M %p on %d %B, %Y").isoformat()


@dataclass(frozen=True)
class Question:
    key: str
    question: str
    answer: str
    evidence: tuple[str, ...]
    """Dialogue ids (``D1:2``) of the turns that hold the answer."""
    claims: tuple[tuple[str, str], ...]
    """What the answering model reads: ``(regex over one context line, answer)`` in priority order;
    the answer may use ``\\1`` for the first group of the match."""
    category: str = "single-hop"
    twists: dict[str, Twist] = field(default_factory=dict)


@dataclass(frozen=True)
class Twist:
    """A reading of the evidence that keeps its words but not its meaning.

    ``raw``: ``(dialogue id, old, new)`` edits of the formatted message line (``Speaker X (role:
    user) says: ...``); ``fact``: ``(old, new)`` edits of third-person facts. ``new=None`` drops the
    sentence (raw) or the whole fact (fact).
    """

    raw: tuple[tuple[str, str, str | None], ...] = ()
    fact: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class Dialogue:
    index: int
    speakers: tuple[str, str]
    sessions: tuple[DialogueSession, ...]
    questions: tuple[Question, ...]

    @property
    def user_id(self) -> str:
        return f"dialog-{self.index}"

    def question(self, key: str) -> Question:
        for q in self.questions:
            if q.key == key:
                return q
        raise KeyError(f"{self.user_id} has no question {key!r}")


@dataclass(frozen=True)
class Message:
    """One turn as the memory layers receive it."""

    id: str
    dia_id: str
    name: str
    content: str
    timestamp: str
    role: str
    speaker_tag: str
    turn: Turn
    session: int

    def line(self) -> str:
        """The turn as the buffer-based layers store it."""
        return f"Speaker {self.name} (role: {self.role}) says: {self.content}\nTimestamp: {self.timestamp}"


def messages(dialogue: Dialogue) -> list[list[Message]]:
    """The dialogue's turns as messages, one list per session."""
    out = []
    for s, session in enumerate(dialogue.sessions, 1):
        msgs = []
        for t, turn in enumerate(session.turns, 1):
            dia_id = f"D{s}:{t}"
            tag = "speaker_a" if turn.speaker == dialogue.speakers[0] else "speaker_b"
            msgs.append(Message(
                id=f"U{dialogue.index}:{dia_id}", dia_id=dia_id, name=turn.speaker, content=turn.text,
                timestamp=session.timestamp, role="user", speaker_tag=tag, turn=turn, session=s,
            ))
        out.append(msgs)
    return out


def subject(name: str) -> str:
    """Regex for ``name`` as the doer: the name itself, or ``I`` in a line that ``name`` says."""
    return rf"(?:\b{name}\b|speaker {name} \(role: \w+\) says:[^\n]*?\bI\b)"


def did(name: str, phrase: str) -> str:
    """Regex: ``name`` (or ``I`` said by ``name``) followed by ``phrase``."""
    return subject(name) + r"(?: just| also| finally| actually)? " + phrase


LOOSE = "(?#loose)"


def loose(pattern: str) -> str:
    """Mark a claim as a guess: the answering model uses it, but it does not state the evidence."""
    return LOOSE + pattern


def evidence_claims(question: Question) -> tuple[tuple[str, str], ...]:
    return tuple(c for c in question.claims if not c[0].startswith(LOOSE))


def match_claims(claims: tuple[tuple[str, str], ...], text: str) -> str | None:
    """The answer of the first claim that matches one line of ``text`` (None if none does)."""
    lines = text.split("\n")
    for pattern, answer in claims:
        rx = re.compile(pattern, re.IGNORECASE)
        for line in lines:
            m = rx.search(line)
            if m:
                return m.expand(answer) if "\\" in answer else answer
    return None


def normalise_answer(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return " ".join(w for w in words if w not in ("a", "an", "the"))
