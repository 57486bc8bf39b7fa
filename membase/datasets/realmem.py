"""RealMem loader: the persona files of RealMemBench (`<Person>_dialogues_256k.json`).

One persona is one trajectory `realmem-<person>`; its dialogues are the sessions, in file order,
each dated by its `current_time` (a day). Message ids are `realmem-<person>-message-{s}-{t}`
(session s, turn t, 0-based). A user turn with `is_query` is a question asked *online*: the run
searches and answers it at that point of the conversation (the message carries `is_task`), before
the message joins the memory. The question's id is that message's id, its reference answer the
assistant turn right after it, and its evidence the source messages of the memory points that turn
used (`memory_used` -> `extracted_memory[].source_turn`). The gold memory points of each session
stay in the session's metadata (`gold_memory_points`), for the extraction check
(:mod:`membase.datasets.gold_points`).

`source_turn` counts turns from 1; a point listed again with `source_turn` 0 carries the
session's first turn as its snapshot, and -1 marks a point with no source turn. The source is the
turn whose text equals the point's `source_content_snapshot` when there is one, else the counted
turn.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from membase.datasets._io import read_json_file, record_error
from membase.exceptions import DatasetError
from membase.types import MemoryDataset, Message, QuestionAnswerPair, Session, Trajectory

__all__ = ["REALMEM_SESSION_FIELDS", "build_realmem", "load_realmem", "strip_topic"]

logger = logging.getLogger(__name__)

REALMEM_SESSION_FIELDS = ("session_uuid", "current_time", "dialogue_turns")
_SPEAKERS = {"User": "user", "Assistant": "assistant"}
_DATE = re.compile(r"\s*(\d{4}-\d{2}-\d{2})")
_TOPIC = re.compile(r"^\s*【[^】]*】\s*")
_TURN_KEYS_DROPPED = ("speaker", "content", "memory_used", "memory_session_uuids")


def strip_topic(content: str) -> str:
    """A memory point without its `【topic】` prefix."""
    return _TOPIC.sub("", content).strip()


class _Persona:
    """Builds the trajectory and questions of one persona file."""

    def __init__(self, raw: Any, path: Path, issues: list[str]) -> None:
        self.path, self.issues = path, issues
        if not isinstance(raw, dict):
            raise DatasetError(f"RealMem file {str(path)!r} must hold one JSON object (a persona), "
                               f"got a JSON {type(raw).__name__}")
        meta = raw.get("_metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("person_name"), str) or not meta["person_name"]:
            raise record_error(path, "_metadata", "person_name", "missing or not a string")
        if not isinstance(raw.get("dialogues"), list):
            raise record_error(path, "<file>", "dialogues",
                               "missing" if "dialogues" not in raw else "expected a list of sessions")
        self.meta = meta
        self.person = re.sub(r"\s+", "_", meta["person_name"].strip())
        self.display = self.person.replace("_", " ")
        self.dialogues: list[Any] = raw["dialogues"]
        self.by_uuid: dict[str, tuple[int, dict[str, Any]]] = {}

    def error(self, s: int, field: str, problem: str) -> DatasetError:
        return record_error(self.path, f"dialogues[{s}]", field, problem)

    def message_id(self, s: int, t: int) -> str:
        return f"realmem-{self.person}-message-{s}-{t}"

    # -- sessions ---------------------------------------------------------------------------------
    def _check(self, s: int, dialogue: Any) -> None:
        if not isinstance(dialogue, dict):
            raise self.error(s, "<session>", f"expected a JSON object, got {type(dialogue).__name__}")
        for name in REALMEM_SESSION_FIELDS:
            if name not in dialogue:
                raise self.error(s, name, "missing")
        if not isinstance(dialogue["dialogue_turns"], list):
            raise self.error(s, "dialogue_turns", f"expected a list of turns, got {type(dialogue['dialogue_turns']).__name__}")
        if not isinstance(dialogue.get("extracted_memory", []), list):
            raise self.error(s, "extracted_memory", "expected a list of memory points")

    def _date(self, s: int, value: Any) -> str:
        match = _DATE.match(value) if isinstance(value, str) else None
        try:
            if match is None:
                raise ValueError
            return datetime.strptime(match.group(1), "%Y-%m-%d").isoformat()
        except ValueError:
            raise self.error(s, "current_time", f"date {value!r} does not parse "
                                                "(expected like '2025-12-20 (Saturday)')") from None

    def _message(self, s: int, t: int, turn: Any, when: str) -> Message:
        field = f"dialogue_turns[{t}]"
        if not isinstance(turn, dict):
            raise self.error(s, field, f"expected a turn object, got {type(turn).__name__}")
        speaker, content = turn.get("speaker"), turn.get("content")
        if speaker not in _SPEAKERS:
            raise self.error(s, f"{field}.speaker", f"expected 'User' or 'Assistant', got {speaker!r}")
        if not isinstance(content, str):
            raise self.error(s, f"{field}.content", f"expected a string, got {type(content).__name__}")
        metadata = {k: v for k, v in turn.items() if k not in _TURN_KEYS_DROPPED}
        if turn.get("is_query") is True:
            metadata["is_task"] = True
        return Message(id=self.message_id(s, t), name=self.display if speaker == "User" else "Assistant",
                       content=content, role=_SPEAKERS[speaker], timestamp=when, metadata=metadata)

    def _source_turn(self, s: int, turns: list[Any], point: dict[str, Any]) -> int | None:
        snapshot = point.get("source_content_snapshot")
        if isinstance(snapshot, str) and snapshot:
            for t, turn in enumerate(turns):
                if isinstance(turn, dict) and turn.get("content") == snapshot:
                    return t
        counted = point.get("source_turn")
        if isinstance(counted, int) and 0 <= counted <= len(turns):
            return max(counted - 1, 0)
        return None

    def _gold_points(self, s: int, dialogue: dict[str, Any]) -> list[dict[str, Any]]:
        turns = dialogue["dialogue_turns"]
        points = []
        for p, point in enumerate(dialogue.get("extracted_memory", [])):
            if not isinstance(point, dict) or not isinstance(point.get("content"), str):
                raise self.error(s, f"extracted_memory[{p}].content", "missing or not a string")
            t = self._source_turn(s, turns, point)
            points.append({"index": point.get("index"), "type": point.get("type"), "content": point["content"],
                           "source_message_id": None if t is None else self.message_id(s, t),
                           "session_uuid": dialogue["session_uuid"]})
        return points

    def sessions(self) -> list[Session]:
        sessions = []
        for s, dialogue in enumerate(self.dialogues):
            self._check(s, dialogue)
            when = self._date(s, dialogue["current_time"])
            messages = [self._message(s, t, turn, when) for t, turn in enumerate(dialogue["dialogue_turns"])]
            self.by_uuid[str(dialogue["session_uuid"])] = (s, dialogue)
            if not messages:
                self.issues.append(f"{self.person}: session {s} has no turns; skipped")
                continue
            metadata = {"session_identifier": dialogue.get("session_identifier"),
                        "session_uuid": dialogue["session_uuid"], "current_time": dialogue["current_time"],
                        "gold_memory_points": self._gold_points(s, dialogue)}
            sessions.append(Session(id=f"realmem-{self.person}-session-{s}", messages=messages, metadata=metadata))
        return sessions

    # -- questions --------------------------------------------------------------------------------
    def _evidence(self, qid: str, used: list[Any]) -> list[str]:
        evidence: list[str] = []
        for entry in used:
            uuid = str(entry.get("session_uuid")) if isinstance(entry, dict) else None
            content = entry.get("content") if isinstance(entry, dict) else None
            if uuid not in self.by_uuid or not isinstance(content, str):
                self.issues.append(f"{qid}: memory point {str(content)[:60]!r} of session {uuid} is not in the file")
                continue
            s, dialogue = self.by_uuid[uuid]
            points = self._gold_points(s, dialogue)
            match = next((p for p in points if p["content"] == content), None) or next(
                (p for p in points if strip_topic(p["content"]) == strip_topic(content)), None)
            if match is None or match["source_message_id"] is None:
                self.issues.append(f"{qid}: memory point {content[:60]!r} has no source turn")
                continue
            if match["source_message_id"] not in evidence:
                evidence.append(match["source_message_id"])
        return evidence

    def questions(self, sessions: list[Session]) -> list[QuestionAnswerPair]:
        qas = []
        for session in sessions:
            s = int(session.id.rsplit("-", 1)[1])
            turns = self.dialogues[s]["dialogue_turns"]
            for t, message in enumerate(session.messages):
                if not message.metadata.get("is_task"):
                    continue
                reply = turns[t + 1] if t + 1 < len(turns) else None
                if not isinstance(reply, dict) or reply.get("speaker") != "Assistant" or not reply.get("content"):
                    self.issues.append(f"{message.id}: query turn without an assistant reply after it; not asked")
                    message.metadata.pop("is_task")
                    continue
                used = reply.get("memory_used") or []
                metadata = {
                    "question_type": str(message.metadata.get("category_name", "query")),
                    "query_id": message.metadata.get("query_id"),
                    "topic": message.metadata.get("topic"),
                    "session_type": message.metadata.get("session_type"),
                    "evidence": self._evidence(message.id, used if isinstance(used, list) else []),
                    "memory_used": used,
                    "memory_session_uuids": reply.get("memory_session_uuids") or [],
                    "online": True,
                }
                qas.append(QuestionAnswerPair(id=message.id, question=message.content,
                                              golden_answers=[str(reply["content"])], timestamp=message.timestamp,
                                              metadata=metadata))
        return qas

    def trajectory(self, sessions: list[Session]) -> Trajectory:
        return Trajectory(id=f"realmem-{self.person}", sessions=sessions,
                          metadata={"person_name": self.meta["person_name"],
                                    **{k: v for k, v in self.meta.items() if k != "person_name"}})


def build_realmem(raws: list[tuple[Any, Path]]) -> MemoryDataset:
    """Build the dataset from parsed persona files `[(content, path), ...]`.

    Raises:
        DatasetError: naming the file, the record (session) and the field that is missing or malformed.
    """
    trajectories, qa_lists, issues = [], [], []
    for raw, path in raws:
        persona = _Persona(raw, path, issues)
        sessions = persona.sessions()
        qa_lists.append(persona.questions(sessions))
        trajectories.append(persona.trajectory(sessions))
    ids = [t.id for t in trajectories]
    if len(set(ids)) != len(ids):
        raise DatasetError(f"RealMem: two persona files name the same person ({sorted(ids)})")
    for issue in issues:
        logger.info("RealMem: %s", issue)
    return MemoryDataset(name="RealMem", trajectories=trajectories, qa_pair_lists=qa_lists, issues=issues)


def load_realmem(path: str | Path) -> MemoryDataset:
    """Load one RealMem persona file, or every `*.json` persona file of a folder (sorted by name).

    Raises:
        DatasetError: a missing or unreadable file, or a malformed persona (file, record, field named).
    """
    path = Path(path)
    hint = "pass a RealMemBench persona file (<Person>_dialogues_256k.json) or a folder of them"
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise DatasetError(f"RealMem folder {str(path)!r} holds no .json persona file; {hint}")
    return build_realmem([(read_json_file(f, "RealMem file", hint), f) for f in files])
