"""Data types shared by datasets, memory layers and runners (spec §4.2).

Pydantic models because these objects cross the JSON boundary: datasets are read from and
saved to JSON, retrieval results are written into the results files.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "MemoryDataset",
    "MemoryEntry",
    "Message",
    "MetricResult",
    "QuestionAnswerPair",
    "Session",
    "Trajectory",
]


def _check_iso(value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"timestamp {value!r} is not an ISO 8601 date-time") from exc
    return value


class Message(BaseModel):
    """One conversational turn fed to a memory layer."""

    id: str = Field(default_factory=lambda: f"message-{uuid.uuid4()}")
    name: str
    """Speaker name."""
    content: str
    role: Literal["user", "assistant", "system"] = "user"
    timestamp: str
    """ISO 8601 date-time of the turn."""
    metadata: dict[str, Any] = Field(default_factory=dict)

    _check_timestamp = field_validator("timestamp")(_check_iso)

    @property
    def time(self) -> datetime:
        """The timestamp parsed as a `datetime`."""
        return datetime.fromisoformat(self.timestamp)

    def __lt__(self, other: Message) -> bool:
        return self.time < other.time


class Session(BaseModel):
    """A run of messages that happened together (one LoCoMo session)."""

    id: str = Field(default_factory=lambda: f"session-{uuid.uuid4()}")
    messages: list[Message] = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _non_decreasing(self) -> Session:
        times = [m.time for m in self.messages]
        if any(b < a for a, b in zip(times, times[1:], strict=False)):
            raise ValueError(f"messages of session {self.id!r} must be in non-decreasing time order")
        return self

    @property
    def started_at(self) -> str:
        """Timestamp of the first message."""
        return self.messages[0].timestamp

    @property
    def ended_at(self) -> str:
        """Timestamp of the last message."""
        return self.messages[-1].timestamp

    def __iter__(self) -> Iterator[Message]:  # type: ignore[override]
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)


class Trajectory(BaseModel):
    """All sessions of one user; one execution graph per trajectory."""

    id: str
    sessions: list[Session]
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __iter__(self) -> Iterator[Session]:  # type: ignore[override]
        return iter(self.sessions)

    def __len__(self) -> int:
        return len(self.sessions)

    @property
    def messages(self) -> list[Message]:
        """Every message of every session, in order."""
        return [m for s in self.sessions for m in s.messages]

    def window(self, start: int, count: int) -> Trajectory:
        """The trajectory cut to ``count`` messages from message ``start`` on (sessions kept in order,
        emptied ones dropped)."""
        sessions, position, end = [], 0, start + count
        for session in self.sessions:
            first, position = position, position + len(session.messages)
            messages = session.messages[max(start - first, 0): max(end - first, 0)]
            if messages:
                sessions.append(session.model_copy(update={"messages": messages}))
        return self.model_copy(update={"sessions": sessions})


class QuestionAnswerPair(BaseModel):
    """A question about a trajectory with its reference answers."""

    id: str = Field(default_factory=lambda: f"qa-{uuid.uuid4()}")
    question: str
    golden_answers: list[str] = Field(min_length=1)
    timestamp: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("timestamp")
    @classmethod
    def _check_timestamp(cls, value: str | None) -> str | None:
        return None if value is None else _check_iso(value)


class MemoryEntry(BaseModel):
    """One retrieved memory.

    Contract: when tracing is on, `metadata["trace_id"]` is the `full_name` of the memory node in
    the execution graph (e.g. `memory-unit-<id>`).
    """

    content: str
    formatted_content: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def trace_id(self) -> str | None:
        """The graph full_name of this memory, if the layer recorded one."""
        return self.metadata.get("trace_id")


class MetricResult(BaseModel):
    """The value of one metric for one question."""

    value: float
    metadata: dict[str, Any] = Field(default_factory=dict)


class MemoryDataset(BaseModel):
    """Trajectories and, per trajectory, the questions asked about it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = "dataset"
    trajectories: list[Trajectory]
    qa_pair_lists: list[list[QuestionAnswerPair]]
    issues: list[str] = Field(default_factory=list)
    """Non-fatal problems found while loading (e.g. malformed evidence ids)."""

    @model_validator(mode="after")
    def _same_length(self) -> MemoryDataset:
        if len(self.trajectories) != len(self.qa_pair_lists):
            raise ValueError(
                f"dataset has {len(self.trajectories)} trajectories but {len(self.qa_pair_lists)} QA lists"
            )
        return self

    def __len__(self) -> int:
        return len(self.trajectories)

    def __getitem__(self, index: int | slice):
        """`dataset[i]` -> `(trajectory, qa_list)`; `dataset[a:b]` -> `(trajectories, qa_lists)`."""
        if isinstance(index, slice):
            return self.trajectories[index], self.qa_pair_lists[index]
        return self.trajectories[index], self.qa_pair_lists[index]

    def __iter__(self):  # type: ignore[override]
        return iter(zip(self.trajectories, self.qa_pair_lists, strict=True))

    def select(self, start: int | None = None, end: int | None = None) -> MemoryDataset:
        """Return the slice `[start:end]` of trajectories as a new dataset."""
        return MemoryDataset(
            name=self.name,
            trajectories=self.trajectories[start:end],
            qa_pair_lists=self.qa_pair_lists[start:end],
            issues=list(self.issues),
        )

    def first_messages(self, count: int) -> MemoryDataset:
        """Each trajectory cut to its first ``count`` messages, keeping the questions whose evidence
        (``metadata["evidence"]`` message ids) all lies inside the cut; questions without evidence go."""
        trajectories, qa_lists = [], []
        for traj, qas in zip(self.trajectories, self.qa_pair_lists, strict=True):
            cut = traj.window(0, count)
            inside = {m.id for m in cut.messages} | {str(m.metadata["dia_id"]) for m in cut.messages
                                                     if m.metadata.get("dia_id")}
            trajectories.append(cut)
            qa_lists.append([q for q in qas if q.metadata.get("evidence")
                             and all(str(e) in inside for e in q.metadata["evidence"])])
        return MemoryDataset(name=self.name, trajectories=trajectories, qa_pair_lists=qa_lists, issues=list(self.issues))

    def sample(
        self,
        size: int | None = None,
        seed: int = 42,
        sample_filter: Callable[[Trajectory], bool] | None = None,
        question_filter: Callable[[QuestionAnswerPair], bool] | None = None,
    ) -> MemoryDataset:
        """Filter trajectories, then questions (dropping trajectories left empty), then sample.

        Args:
            size: number of trajectories to keep; None keeps all (in order).
            seed: seed of the `random.Random` used for sampling.
            sample_filter: keeps a trajectory when it returns True.
            question_filter: keeps a question when it returns True.
        """
        pairs = list(zip(self.trajectories, self.qa_pair_lists, strict=True))
        if sample_filter is not None:
            pairs = [p for p in pairs if sample_filter(p[0])]
        if question_filter is not None:
            pairs = [(t, [q for q in qas if question_filter(q)]) for t, qas in pairs]
            pairs = [p for p in pairs if p[1]]
        if size is not None and size < len(pairs):
            pairs = random.Random(seed).sample(pairs, size)
        return MemoryDataset(
            name=self.name, trajectories=[p[0] for p in pairs], qa_pair_lists=[p[1] for p in pairs]
        )

    def save_dataset(self, path: str | Path) -> Path:
        """Write the dataset as JSON (atomically) and return the path."""
        from membase.utils.io import atomic_write_json

        return atomic_write_json(path, self.model_dump(mode="json"))

    @classmethod
    def read_dataset(cls, path: str | Path) -> MemoryDataset:
        """Read a dataset written by `save_dataset`."""
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))
