"""Per-memcell LLM extraction: episode (always), event log and foresight (optional).

Each extractor retries up to five times until the reply parses and returns an
`ExtractionOutcome` holding the prompt, every reply and the parsed value, so that the tracer can
record exactly what happened; after five failures it raises `ExtractionFailed` with the outcome.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from membase.exceptions import FATAL_ERRORS
from membase.layers.evermemos.llm import ChatModel, ask
from membase.layers.evermemos.memcell import MemCell, as_aware, parse_timestamp
from membase.layers.evermemos.prompts import (
    EPISODE_CUSTOM_INSTRUCTIONS,
    EPISODE_EXTRACTION_PROMPT,
    EVENT_LOG_PROMPT,
    FORESIGHT_PROMPT,
)
from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "ExtractionFailed",
    "ExtractionOutcome",
    "extract_episode",
    "extract_event_log",
    "extract_foresight",
    "parse_episode_reply",
    "parse_event_log_reply",
    "parse_foresight_reply",
]

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
_FENCED_JSON_RE = re.compile(r"```json\s*(.*?)```", re.DOTALL)
_FENCED_ANY_RE = re.compile(r"```[a-zA-Z0-9]*\s*(.*?)```", re.DOTALL)

T = TypeVar("T")


@dataclass(kw_only=True)
class ExtractionOutcome(Generic[T]):
    """Prompt, replies and parsed value of one extraction."""

    kind: str
    prompt: str
    responses: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    value: T | None = None


class ExtractionFailed(MemTraceError, RuntimeError):
    """Every attempt of an extraction failed; carries the outcome for the trace."""

    def __init__(self, outcome: ExtractionOutcome[Any]) -> None:
        last = outcome.errors[-1] if outcome.errors else "no reply"
        super().__init__(f"{outcome.kind} extraction failed after {MAX_ATTEMPTS} attempts: {last}")
        self.outcome = outcome


def _json_candidates(text: str) -> list[str]:
    candidates = [m.group(1) for m in _FENCED_JSON_RE.finditer(text)]
    candidates += [m.group(1) for m in _FENCED_ANY_RE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    candidates.append(text)
    return candidates


def _first_json(text: str, accept: Callable[[Any], bool]) -> Any:
    for candidate in _json_candidates(text or ""):
        try:
            data = json.loads(candidate.strip())
        except json.JSONDecodeError:
            continue
        if accept(data):
            return data
    raise ValueError(f"no acceptable JSON in reply: {text[:200]!r}")


def parse_episode_reply(text: str) -> dict[str, str]:
    """Parse `{"title", "content"}`; both must be non-empty. `summary` defaults to content[:200]."""
    data = _first_json(
        text,
        lambda d: (
            isinstance(d, dict)
            and bool(str(d.get("title", "")).strip())
            and bool(str(d.get("content", "")).strip())
        ),
    )
    content = str(data["content"]).strip()
    return {
        "title": str(data["title"]).strip(),
        "content": content,
        "summary": str(data.get("summary") or content[:200]),
    }


def parse_event_log_reply(text: str) -> dict[str, Any]:
    """Parse `{"event_log": {"time", "atomic_fact": [...]}}`; time and a non-empty fact list are required."""

    def ok(d: Any) -> bool:
        log = d.get("event_log") if isinstance(d, dict) else None
        return (
            isinstance(log, dict)
            and bool(str(log.get("time", "")).strip())
            and isinstance(log.get("atomic_fact"), list)
            and len(log["atomic_fact"]) > 0
        )

    log = _first_json(text, ok)["event_log"]
    return {"time": str(log["time"]), "atomic_fact": [str(f) for f in log["atomic_fact"] if str(f).strip()]}


def parse_foresight_reply(text: str) -> list[dict[str, Any]]:
    """Parse a non-empty JSON array of foresight items (at most 10 kept)."""
    items = _first_json(text, lambda d: isinstance(d, list) and len(d) > 0)
    out = []
    for item in items[:10]:
        if not isinstance(item, dict) or not item.get("content"):
            continue
        start = item.get("start_time")
        end = item.get("end_time")
        duration = item.get("duration_days")
        try:
            if start and not end and duration is not None:
                end = (datetime.fromisoformat(start) + timedelta(days=int(duration))).date().isoformat()
            elif start and end and duration is None:
                duration = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).days
        except (TypeError, ValueError):
            pass
        out.append(
            {
                "foresight": str(item["content"]),
                "evidence": item.get("evidence"),
                "start_time": start,
                "end_time": end,
                "duration_days": duration,
            }
        )
    if not out:
        raise ValueError("foresight reply holds no usable item")
    return out


def _conversation_blocks(memcell: MemCell) -> str:
    return "\n".join(
        f'{{timestamp: {m.get("timestamp")}, speaker: "{m.get("speaker_name")}", content: "{m.get("content", "")}"}}'
        for m in memcell.original_data
    )


def _conversation_lines(memcell: MemCell) -> str:
    lines = []
    for m in memcell.original_data:
        ts = parse_timestamp(m.get("timestamp"))
        stamp = as_aware(ts).strftime("%Y-%m-%d %H:%M:%S%z") if ts else "unknown time"
        lines.append(f"[{stamp}] {m.get('speaker_name')}: {m.get('content', '')}")
    return "\n".join(lines)


def _run(kind: str, llm: ChatModel, prompt: str, parse: Callable[[str], T]) -> ExtractionOutcome[T]:
    outcome: ExtractionOutcome[T] = ExtractionOutcome(kind=kind, prompt=prompt)
    for _ in range(MAX_ATTEMPTS):
        try:
            reply = ask(llm, prompt)
        except FATAL_ERRORS:
            raise
        except Exception as exc:  # model failures are retried, then reported
            outcome.errors.append(f"({type(exc).__name__}) {exc}")
            continue
        outcome.responses.append(reply)
        try:
            outcome.value = parse(reply)
            return outcome
        except ValueError as exc:
            outcome.errors.append(f"(ValueError) {exc}")
    raise ExtractionFailed(outcome)


def episode_time_text(memcell: MemCell) -> str:
    """The episode's reference time as the prompt shows it."""
    return as_aware(memcell.timestamp).strftime("%B %d, %Y (%A) at %I:%M %p UTC")


def extract_episode(llm: ChatModel, memcell: MemCell) -> ExtractionOutcome[dict[str, str]]:
    """Write the memcell's episode (title + content)."""
    prompt = EPISODE_EXTRACTION_PROMPT.substitute(
        time=episode_time_text(memcell),
        conversation=_conversation_blocks(memcell),
        instructions=EPISODE_CUSTOM_INSTRUCTIONS,
    )
    return _run("episode", llm, prompt, parse_episode_reply)


def extract_event_log(llm: ChatModel, memcell: MemCell) -> ExtractionOutcome[dict[str, Any]]:
    """Write the memcell's atomic-fact event log."""
    prompt = EVENT_LOG_PROMPT.substitute(
        time=as_aware(memcell.timestamp).strftime("%B %d, %Y(%A) at %I:%M %p"),
        conversation=_conversation_lines(memcell),
    )
    return _run("event_log", llm, prompt, parse_event_log_reply)


def extract_foresight(llm: ChatModel, memcell: MemCell) -> ExtractionOutcome[list[dict[str, Any]]]:
    """Predict future behaviour changes implied by the memcell."""
    prompt = FORESIGHT_PROMPT.substitute(
        time=as_aware(memcell.timestamp).strftime("%Y-%m-%d"), conversation=_conversation_lines(memcell)
    )
    return _run("foresight", llm, prompt, parse_foresight_reply)
