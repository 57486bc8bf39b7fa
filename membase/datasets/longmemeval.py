"""LongMemEval loader (the official S, M and oracle files share one format).

The file is a JSON list of questions; each question brings its own haystack of chat sessions, so
each question is one trajectory `longmemeval-<question_id>` holding one question. Ids: messages
`longmemeval-message-{i}-{j}-{k}` (question i, haystack session j, turn k; all 0-based positions in
the file), sessions = the `haystack_session_ids`, question = `question_id`. A question's evidence is
the messages marked `has_answer`. Abstention questions (`_abs` in the id) stay in the data; the
attribution tools skip them.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from membase.datasets._io import read_json_file, record_error
from membase.exceptions import DatasetError
from membase.types import MemoryDataset, Message, QuestionAnswerPair, Session, Trajectory

__all__ = ["LONGMEMEVAL_FIELDS", "LONGMEMEVAL_TIME_FORMAT", "build_longmemeval", "is_abstention", "load_longmemeval"]

logger = logging.getLogger(__name__)

LONGMEMEVAL_TIME_FORMAT = "%Y/%m/%d (%a) %H:%M"
LONGMEMEVAL_FIELDS = ("question_id", "question_type", "question", "answer", "question_date",
                      "haystack_session_ids", "haystack_dates", "haystack_sessions")
"""Fields every record must have (`answer_session_ids` is optional: it is kept when present)."""
_ROLES = {"user": "User", "assistant": "Assistant"}


def is_abstention(question_id: str) -> bool:
    """LongMemEval marks questions whose answer is not in the haystack with `_abs` in the id."""
    return "_abs" in question_id


class _Record:
    """One question of the file, with the coordinates that error messages name."""

    def __init__(self, path: Path, index: int, raw: Any) -> None:
        self.path, self.index, self.raw = path, index, raw
        qid = raw.get("question_id") if isinstance(raw, dict) else None
        self.name = f"record {index}" + (f" (question_id {qid!r})" if isinstance(qid, str) else "")

    def error(self, field: str, problem: str) -> DatasetError:
        return record_error(self.path, self.name, field, problem)

    def time(self, value: Any, field: str) -> str:
        if isinstance(value, str):
            for parse in (lambda v: datetime.strptime(v, LONGMEMEVAL_TIME_FORMAT), datetime.fromisoformat):
                try:
                    return parse(value.strip()).isoformat()
                except ValueError:
                    continue
        raise self.error(field, f"date {value!r} does not parse (expected like '2023/05/20 (Sat) 02:21')")


def _check_record(rec: _Record) -> None:
    raw = rec.raw
    if not isinstance(raw, dict):
        raise record_error(rec.path, rec.name, "<record>", f"expected a JSON object, got {type(raw).__name__}")
    for name in LONGMEMEVAL_FIELDS:
        if name not in raw:
            raise rec.error(name, "missing")
    for name in ("question_id", "question"):
        if not isinstance(raw[name], str) or not raw[name].strip():
            raise rec.error(name, f"expected a non-empty string, got {raw[name]!r}")
    for name in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        if not isinstance(raw[name], list):
            raise rec.error(name, f"expected a list, got {type(raw[name]).__name__}")
    counts = {n: len(raw[n]) for n in ("haystack_session_ids", "haystack_dates", "haystack_sessions")}
    if len(set(counts.values())) != 1:
        raise rec.error("haystack_sessions", f"the three haystack lists differ in length {counts}")


def _turn_message(rec: _Record, j: int, k: int, turn: Any, when: str, session_id: str) -> Message:
    field = f"haystack_sessions[{j}][{k}]"
    if not isinstance(turn, dict):
        raise rec.error(field, f"expected a turn object {{role, content}}, got {type(turn).__name__}")
    role, content = turn.get("role"), turn.get("content")
    if role not in _ROLES:
        raise rec.error(f"{field}.role", f"expected 'user' or 'assistant', got {role!r}")
    if not isinstance(content, str):
        raise rec.error(f"{field}.content", f"expected a string, got {type(content).__name__}")
    metadata = {k2: v for k2, v in turn.items() if k2 not in ("role", "content")}
    metadata["haystack_session_id"] = session_id
    return Message(id=f"longmemeval-message-{rec.index}-{j}-{k}", name=_ROLES[role], content=content,
                   role=role, timestamp=when, metadata=metadata)


def _sessions(rec: _Record, issues: list[str]) -> list[Session]:
    raw = rec.raw
    sessions: list[Session] = []
    seen: set[str] = set()
    for j, (sid, date, turns) in enumerate(zip(raw["haystack_session_ids"], raw["haystack_dates"],
                                              raw["haystack_sessions"], strict=True)):
        if not isinstance(turns, list):
            raise rec.error(f"haystack_sessions[{j}]", f"expected a list of turns, got {type(turns).__name__}")
        when = rec.time(date, f"haystack_dates[{j}]")
        session_id = str(sid)
        if session_id in seen:  # a graph needs unique session ids
            issues.append(f"{raw['question_id']}: haystack session id {session_id!r} repeats; renamed {session_id}#{j}")
            session_id = f"{session_id}#{j}"
        seen.add(session_id)
        messages = [_turn_message(rec, j, k, turn, when, str(sid)) for k, turn in enumerate(turns)]
        if not messages:
            issues.append(f"{raw['question_id']}: haystack session {j} ({sid!r}) is empty; skipped")
            continue
        sessions.append(Session(id=session_id, messages=messages,
                                metadata={"haystack_session_id": str(sid), "haystack_index": j, "date": date}))
    sessions.sort(key=lambda s: s.messages[0].time)  # stable: equal dates keep the file order
    return sessions


def _question(rec: _Record, sessions: list[Session]) -> QuestionAnswerPair:
    raw = rec.raw
    qid = raw["question_id"]
    evidence = [m.id for s in sessions for m in s.messages if m.metadata.get("has_answer") is True]
    answer = raw["answer"]
    metadata: dict[str, Any] = {
        "question_type": str(raw["question_type"]),
        "evidence": evidence,
        "answer_session_ids": list(raw.get("answer_session_ids") or []),
        "question_date": raw["question_date"],
        "abstention": is_abstention(qid),
    }
    return QuestionAnswerPair(id=qid, question=raw["question"], golden_answers=[str(answer)],
                              timestamp=rec.time(raw["question_date"], "question_date"), metadata=metadata)


def build_longmemeval(raw: Any, path: str | Path) -> MemoryDataset:
    """Build the dataset from the parsed file content (`path` only names the file in messages).

    Raises:
        DatasetError: naming the file, the record and the field that is missing or malformed.
    """
    path = Path(path)
    if not isinstance(raw, list):
        raise DatasetError(f"LongMemEval file {str(path)!r} must hold a JSON list of questions, "
                           f"got a JSON {type(raw).__name__}")
    trajectories, qa_lists, issues = [], [], []
    ids: set[str] = set()
    for index, item in enumerate(raw):
        rec = _Record(path, index, item)
        _check_record(rec)
        qid = item["question_id"]
        if qid in ids:
            raise rec.error("question_id", f"{qid!r} repeats an earlier record; ids name trajectories")
        ids.add(qid)
        sessions = _sessions(rec, issues)
        qa = _question(rec, sessions)
        if not qa.metadata["evidence"] and not qa.metadata["abstention"]:
            issues.append(f"{qid}: no turn has has_answer; the question has no evidence")
        trajectories.append(Trajectory(id=f"longmemeval-{qid}", sessions=sessions,
                                       metadata={"question_id": qid, "question_type": qa.metadata["question_type"]}))
        qa_lists.append([qa])
    for issue in issues:
        logger.info("LongMemEval: %s", issue)
    return MemoryDataset(name="LongMemEval", trajectories=trajectories, qa_pair_lists=qa_lists, issues=issues)


def load_longmemeval(path: str | Path) -> MemoryDataset:
    """Load a LongMemEval JSON file (`longmemeval_s.json`, `_m` or `_oracle`).

    Raises:
        DatasetError: the file is missing or not JSON, or a record lacks or mangles a field.
    """
    raw = read_json_file(path, "LongMemEval file", "pass the path to longmemeval_s.json (or _m / _oracle)")
    return build_longmemeval(raw, path)
