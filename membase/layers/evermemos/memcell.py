"""Data records of the EverMemOS pipeline: buffered messages, boundary results, memcells."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "BoundaryDetectionResult",
    "MemCell",
    "new_event_id",
    "parse_timestamp",
    "retrieval_projection",
]


def new_event_id() -> str:
    """Return a fresh 24-hex event id (the shape of a MongoDB ObjectId)."""
    return secrets.token_hex(12)


def parse_timestamp(value: str | None) -> datetime | None:
    """Parse an ISO timestamp (`Z` accepted); None or garbage gives None."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def as_aware(ts: datetime) -> datetime:
    """Naive datetimes are read as UTC (the layer never knows the speaker's zone)."""
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


@dataclass(kw_only=True)
class BoundaryDetectionResult:
    """The boundary judge's verdict for one new message."""

    should_end: bool = False
    """True when the new message starts a new episode (the history is closed into a memcell)."""
    should_wait: bool = True
    reasoning: str = "No reason provided"
    confidence: float = 1.0
    topic_summary: str = ""


@dataclass(kw_only=True)
class MemCell:
    """A closed conversation segment and everything extracted from it."""

    event_id: str
    """Identity of the memory unit (`memory-unit-<event_id>` in the graph)."""
    original_data: list[dict[str, Any]]
    """The buffered message dicts the segment was made from."""
    timestamp: datetime
    """Time of the segment's last message (timezone-aware)."""
    summary: str | None = None
    participants: list[str] = field(default_factory=list)
    subject: str | None = None
    episode: str | None = None
    foresights: list[dict[str, Any]] | None = None
    event_log: dict[str, Any] | None = None
    """`{"time": str, "atomic_fact": [str, ...]}` when the event log was extracted."""

    def unit_value(self, *, include_original: bool = True) -> dict[str, Any]:
        """JSON value of the memory-unit node (the traced snapshot of this memcell)."""
        value: dict[str, Any] = {
            "event_id": self.event_id,
            "timestamp": self.timestamp.isoformat(),
            "summary": self.summary,
            "subject": self.subject,
            "episode": self.episode,
            "foresights": self.foresights,
            "event_log": None
            if self.event_log is None
            else {"atomic_fact": list(self.event_log["atomic_fact"])},
        }
        if include_original:
            value["original_data"] = self.original_data
        return value

    def to_dict(self) -> dict[str, Any]:
        """Full record (persistence and index document)."""
        return {
            "event_id": self.event_id,
            "original_data": self.original_data,
            "timestamp": self.timestamp.isoformat(),
            "summary": self.summary,
            "participants": list(self.participants),
            "type": "Conversation",
            "subject": self.subject,
            "episode": self.episode,
            "foresights": self.foresights,
            "event_log": self.event_log,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemCell:
        """Inverse of `to_dict`."""
        return cls(
            event_id=data["event_id"],
            original_data=list(data["original_data"]),
            timestamp=datetime.fromisoformat(data["timestamp"]),
            summary=data.get("summary"),
            participants=list(data.get("participants", [])),
            subject=data.get("subject"),
            episode=data.get("episode"),
            foresights=data.get("foresights"),
            event_log=data.get("event_log"),
        )


def retrieval_projection(doc: dict[str, Any], score: float | None = None) -> dict[str, Any]:
    """The fields a retrieval list node shows per document (plus its score when given)."""
    event_log = doc.get("event_log")
    out = {
        "event_id": doc["event_id"],
        "timestamp": doc["timestamp"],
        "subject": doc.get("subject"),
        "summary": doc.get("summary"),
        "episode": doc.get("episode"),
        "event_log": None if not event_log else {"atomic_fact": list(event_log["atomic_fact"])},
        "foresights": doc.get("foresights"),
    }
    if score is not None:
        out["score"] = score
    return out
