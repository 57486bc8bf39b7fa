"""A benchmark as data: hand-written conversations and a fault plan, read from one JSON file.

The file (``format: attribution-benchmark-v1``) holds ``conversations`` — each with ``id``,
``sessions`` (``time`` as ISO 8601, ``turns`` as ``[speaker, text]`` pairs) and ``questions``
(``key``, ``question``, ``answers`` — the parts of the answer, all needed — ``evidence`` as
1-based message numbers, and optional ``keys``, the texts the evidence reader looks for) — a
``reader`` (``extractive`` or ``evidence``, :mod:`benchmarks.attribution.reader`) and ``cases``:
one planned fault each, on one question of one conversation in one split (``long_context``,
``rag``, ``mem0``, ``evermemos``). A case's ``fault`` names faultbench's terms: the ``error``
kind (``extraction``, ``update``, ``deletion``, ``retrieval``, ``response``), a ``corruption``
and the ``site`` (the layer's op that does it), plus the plan's own texts (see
:class:`FaultPlan`). Message ids are ``<conversation>:D<session>:<n>`` with ``n`` counted over
the whole conversation, question ids ``<conversation>-qa-<key>``.

A conversation may also carry ``memories``, a paraphrase table: message (its number, or
``D<session>:<turn>`` counted from 1 in the file's sessions) → the memory texts a careful memory
LLM writes for it (third person, resolved dates, merged or split facts). The Mem0 split's fact
extraction returns those texts for that message instead of copying its sentences, and the
evidence reader and the faults read them there (:mod:`.build`, :mod:`.faults`). A conversation
may name a LoCoMo sample instead of holding its turns (:mod:`.locomo`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Benchmark", "BenchmarkError", "Case", "Conversation", "FaultPlan", "load_benchmark"]

FORMAT = "attribution-benchmark-v1"
SPLITS = ("long_context", "rag", "mem0", "evermemos")
ERRORS = ("extraction", "update", "deletion", "retrieval", "response")
READERS = ("extractive", "evidence")


class BenchmarkError(ValueError):
    """A benchmark data file is missing or malformed (the message names the file, record and field)."""


@dataclass(frozen=True, kw_only=True)
class FaultPlan:
    """What one case's fault does, in faultbench's terms plus the authors' texts."""

    error: str
    corruption: str
    site: str
    message: int | None = None
    """1-based number of the message whose information the fault acts on (default: the question's first evidence)."""
    after: int | None = None
    """Update and deletion faults act at the first message from this number on."""
    edits: tuple[tuple[str | None, str], ...] = ()
    """``(old, new)`` pairs: what the faulty op writes instead (``old`` None: the whole unit becomes ``new``).
    The file gives one pair as ``edit: {old, new}`` or several as ``edits: [[old, new], ...]``; a
    response fault with edits makes the answer model read its context so edited."""
    holds: tuple[str, ...] = ()
    """Texts that carry the information (default: the fact message's sentences that state the answer)."""
    span: tuple[int, int] | None = None
    """Long-Context compaction: the messages (first, last) that the summary replaces."""
    summary: str = ""
    layer: dict[str, Any] = field(default_factory=dict)
    """Layer options the case needs (e.g. a Long-Context ``context_window``)."""


@dataclass(frozen=True, kw_only=True)
class Case:
    """One planned case."""

    number: int
    conversation: str
    split: str
    question: str
    fault: FaultPlan
    prediction: str = ""
    """The authors' wrong answer: what the answer model says under a response fault."""
    origin: str = ""
    """The authors' name for the fault kind."""


@dataclass(frozen=True, kw_only=True)
class Conversation:
    """One conversation: sessions of ``(speaker, text)`` turns and keyed questions."""

    id: str
    sessions: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    questions: dict[str, dict[str, Any]]
    memories: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Message number → the memory texts the Mem0 extraction writes for it (the paraphrase table)."""

    def memory_table(self) -> dict[str, list[str]]:
        """Message text → its memory texts, as ``Mem0FakeBrain(memories=...)`` reads them."""
        texts = [text for _id, _who, text, _time in self.messages()]
        return {texts[n - 1].strip(): list(memories) for n, memories in self.memories.items()}

    def messages(self) -> list[tuple[str, str, str, str]]:
        """``(id, speaker, text, time)`` of every message, in order."""
        out, n = [], 0
        for s, (time, turns) in enumerate(self.sessions, start=1):
            for speaker, text in turns:
                n += 1
                out.append((f"{self.id}:D{s}:{n}", speaker, text, time))
        return out

    def trajectory(self) -> Any:
        """The conversation as a ``membase.types.Trajectory``."""
        from membase.types import Message, Session, Trajectory

        rows, sessions, n = self.messages(), [], 0
        for s, (_time, turns) in enumerate(self.sessions, start=1):
            msgs = [Message(id=i, name=who, content=text, timestamp=t) for i, who, text, t in rows[n:n + len(turns)]]
            n += len(turns)
            sessions.append(Session(id=f"{self.id}:D{s}", messages=msgs))
        return Trajectory(id=self.id, sessions=sessions)

    def qa(self, key: str) -> Any:
        """Question ``key`` as a ``membase.types.QuestionAnswerPair`` (evidence as message ids)."""
        from membase.types import QuestionAnswerPair

        q, ids = self.questions[key], [m[0] for m in self.messages()]
        parts = [str(a) for a in q["answers"]]
        # The parts of a list answer are all needed: the judge reads them as one answer.
        return QuestionAnswerPair(id=f"{self.id}-qa-{key}", question=q["question"],
                                  golden_answers=[" and ".join(parts)] if len(parts) > 1 else parts,
                                  metadata={"evidence": [ids[n - 1] for n in q["evidence"]], "answer_parts": parts})


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """A benchmark read from its data file."""

    name: str
    path: Path
    description: str
    conversations: dict[str, Conversation]
    cases: tuple[Case, ...]
    reader: str = "extractive"
    """The answer model: faultbench's ``extractive`` reader, or the ``evidence`` reader
    (:mod:`benchmarks.attribution.reader`: right exactly when the context holds the evidence)."""


def _need(record: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in record:
        raise BenchmarkError(f"{where}: field {key!r} is missing")
    value = record[key]
    if not isinstance(value, kind):
        raise BenchmarkError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    return value


def _conversation(record: Any, where: str) -> Conversation:
    if not isinstance(record, dict):
        raise BenchmarkError(f"{where}: not an object")
    conv_id = _need(record, "id", str, where)
    sessions = []
    for i, session in enumerate(_need(record, "sessions", list, where)):
        at = f"{where} session {i}"
        time = _need(session, "time", str, at) if isinstance(session, dict) else None
        turns = _need(session, "turns", list, at) if isinstance(session, dict) else None
        if time is None or turns is None or not all(isinstance(t, list) and len(t) == 2 for t in turns):
            raise BenchmarkError(f"{at}: turns must be [speaker, text] pairs")
        sessions.append((time, tuple((str(a), str(b)) for a, b in turns)))
    count = sum(len(t) for _s, t in sessions)
    questions = {}
    for i, q in enumerate(_need(record, "questions", list, where)):
        at = f"{where} question {i}"
        key = _need(q, "key", str, at) if isinstance(q, dict) else ""
        _need(q, "question", str, at)
        if not _need(q, "answers", list, at):
            raise BenchmarkError(f"{at}: field 'answers' is empty")
        evidence = _need(q, "evidence", list, at)
        if not evidence or any(not isinstance(n, int) or not 1 <= n <= count for n in evidence):
            raise BenchmarkError(f"{at}: field 'evidence' must name messages 1..{count}")
        questions[key] = q
    memories = _memories(record.get("memories") or {}, sessions, f"{where} field 'memories'")
    return Conversation(id=conv_id, sessions=tuple(sessions), questions=questions, memories=memories)


def _message_number(key: str, sessions: list[tuple[str, tuple[tuple[str, str], ...]]], where: str) -> int:
    count = sum(len(t) for _s, t in sessions)
    if key.isdigit() and 1 <= int(key) <= count:
        return int(key)
    session, _sep, turn = key.removeprefix("D").partition(":")
    if key.startswith("D") and session.isdigit() and turn.isdigit() and 1 <= int(session) <= len(sessions) \
            and 1 <= int(turn) <= len(sessions[int(session) - 1][1]):
        return sum(len(t) for _s, t in sessions[:int(session) - 1]) + int(turn)
    raise BenchmarkError(f"{where}: key {key!r} names no message (a number 1..{count} or D<session>:<turn>)")


def _memories(raw: Any, sessions: list[tuple[str, tuple[tuple[str, str], ...]]],
              where: str) -> dict[int, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise BenchmarkError(f"{where}: must map a message to a list of memory texts")
    texts = [text.strip() for _time, turns in sessions for _who, text in turns]
    table: dict[int, tuple[str, ...]] = {}
    for key, memories in raw.items():
        number = _message_number(str(key), sessions, where)
        if not isinstance(memories, list) or not memories or not all(isinstance(m, str) and m.strip()
                                                                     for m in memories):
            raise BenchmarkError(f"{where}: message {key!r} needs a non-empty list of memory texts")
        if texts.count(texts[number - 1]) > 1:  # the extraction knows a message by its text only
            raise BenchmarkError(f"{where}: message {key!r} says what another message says word for word")
        if number in table:
            raise BenchmarkError(f"{where}: message {key!r} is given twice")
        table[number] = tuple(m.strip() for m in memories)
    return table


def _fault(record: Any, where: str) -> FaultPlan:
    if not isinstance(record, dict):
        raise BenchmarkError(f"{where}: field 'fault' must be an object")
    error = _need(record, "error", str, where)
    if error not in ERRORS:
        raise BenchmarkError(f"{where}: field 'error' is {error!r}; choose from {ERRORS}")
    edit, edits = record.get("edit"), record.get("edits") or []
    if edit is not None and not (isinstance(edit, dict) and isinstance(edit.get("new"), str)):
        raise BenchmarkError(f"{where}: field 'edit' must be {{'old': text or null, 'new': text}}")
    if not isinstance(edits, list) or not all(isinstance(e, list) and len(e) == 2 and isinstance(e[1], str)
                                              for e in edits):
        raise BenchmarkError(f"{where}: field 'edits' must be [[old, new], ...] pairs of texts")
    pairs = ([(edit.get("old"), edit["new"])] if edit else []) + [(e[0], e[1]) for e in edits]
    span = record.get("span")
    return FaultPlan(error=error, corruption=_need(record, "corruption", str, where),
                     site=_need(record, "site", str, where), message=record.get("message"),
                     after=record.get("after"), edits=tuple(pairs),
                     holds=tuple(record.get("holds") or ()), span=tuple(span) if span else None,  # type: ignore[arg-type]
                     summary=record.get("summary", ""), layer=dict(record.get("layer") or {}))


def _case(number: int, record: Any, conversations: dict[str, Conversation], where: str) -> Case:
    if not isinstance(record, dict):
        raise BenchmarkError(f"{where}: not an object")
    conv = _need(record, "conversation", str, where)
    if conv not in conversations:
        raise BenchmarkError(f"{where}: field 'conversation' names unknown conversation {conv!r}")
    split = _need(record, "split", str, where)
    if split not in SPLITS:
        raise BenchmarkError(f"{where}: field 'split' is {split!r}; choose from {SPLITS}")
    question = _need(record, "question", str, where)
    if question not in conversations[conv].questions:
        raise BenchmarkError(f"{where}: field 'question' names unknown question {question!r} of {conv!r}")
    return Case(number=number, conversation=conv, split=split, question=question,
                fault=_fault(record.get("fault"), f"{where} fault"), prediction=str(record.get("prediction", "")),
                origin=str(record.get("origin", "")))


def load_benchmark(path: str | Path, *, locomo: str | Path | None = None) -> Benchmark:
    """Read and check a benchmark data file (``locomo``: the LoCoMo file its references read).

    Raises:
        BenchmarkError: the file is missing, not JSON, or a record lacks a field (the message names them).
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchmarkError(f"{path}: cannot read it ({exc.strerror or exc})") from exc
    except ValueError as exc:
        raise BenchmarkError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise BenchmarkError(f"{path}: field 'format' must be {FORMAT!r}")
    from benchmarks.attribution.locomo import resolve_locomo

    conversations = {}
    for i, record in enumerate(_need(raw, "conversations", list, str(path))):
        where = f"{path}: conversation {i}"
        conv = _conversation(resolve_locomo(record, where, locomo) if isinstance(record, dict) else record, where)
        conversations[conv.id] = conv
    cases = tuple(_case(i, record, conversations, f"{path}: case {i}")
                  for i, record in enumerate(_need(raw, "cases", list, str(path)), start=1))
    reader = raw.get("reader", "extractive")
    if reader not in READERS:
        raise BenchmarkError(f"{path}: field 'reader' is {reader!r}; choose from {READERS}")
    return Benchmark(name=str(raw.get("name") or path.stem), path=path, description=str(raw.get("description", "")),
                     conversations=conversations, cases=cases, reader=reader)
