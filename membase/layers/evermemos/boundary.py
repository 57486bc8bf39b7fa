"""Boundary detection: when does the buffered conversation close into a memcell?

Two stages, as in EverMemOS: hard limits (token or message count, no LLM) force a split; otherwise
an LLM judge reads the history, a time-gap sentence and the new message and answers JSON.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from membase.exceptions import FATAL_ERRORS
from membase.layers.evermemos.config import BoundaryDetectionConfig
from membase.layers.evermemos.llm import ChatModel, ask
from membase.layers.evermemos.memcell import BoundaryDetectionResult, parse_timestamp
from membase.layers.evermemos.prompts import BOUNDARY_DETECTION_PROMPT
from membase.utils.tokens import count_tokens

__all__ = [
    "BoundaryAttempt",
    "BoundaryDecision",
    "check_hard_limits",
    "describe_time_gap",
    "detect_boundary",
    "parse_boundary_reply",
    "render_messages",
]

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 5
_FLAT_OBJECT_RE = re.compile(r"\{[^{}]*\}", re.DOTALL)


def render_messages(messages: Sequence[dict[str, Any]]) -> str:
    """Render buffered messages as `[YYYY-MM-DD HH:MM:SS] speaker: content` lines."""
    lines = []
    for msg in messages:
        ts = parse_timestamp(msg.get("timestamp"))
        stamp = ts.strftime("%Y-%m-%d %H:%M:%S") if ts else "unknown time"
        lines.append(
            f"[{stamp}] {msg.get('speaker_name') or msg.get('speaker_id')}: {msg.get('content', '')}"
        )
    return "\n".join(lines)


def describe_time_gap(previous: str | None, current: str | None) -> str:
    """One sentence describing the pause between two ISO timestamps (floor of the unit)."""
    before, after = parse_timestamp(previous), parse_timestamp(current)
    if before is None or after is None:
        return "Time gap: unknown (timestamps are missing, judge by content only)."
    if (before.tzinfo is None) != (after.tzinfo is None):
        before, after = before.replace(tzinfo=None), after.replace(tzinfo=None)
    seconds = (after - before).total_seconds()
    if seconds < 0:
        return "Time gap: the new message is older than the history (out of order), judge by content only."
    if seconds < 60:
        return f"Time gap: {int(seconds)} seconds (immediate response)"
    if seconds < 3600:
        return f"Time gap: {int(seconds // 60)} minutes (recent conversation)"
    if seconds < 86400:
        return f"Time gap: {int(seconds // 3600)} hours (same day, but significant pause)"
    return f"Time gap: {int(seconds // 86400)} days (long gap, likely new conversation)"


@dataclass(kw_only=True)
class HardLimitCheck:
    """Outcome of the no-LLM stage."""

    reached: bool
    trigger_type: Literal["token_limit", "message_limit"] | None
    total_tokens: int
    total_messages: int
    hard_token_limit: int
    hard_message_limit: int


def check_hard_limits(
    history: Sequence[dict[str, Any]],
    new: Sequence[dict[str, Any]],
    config: BoundaryDetectionConfig,
    token_counter: Callable[[str], int] = count_tokens,
) -> HardLimitCheck:
    """Check the token and message limits over history + new messages."""
    messages = [*history, *new]
    tokens = sum(token_counter(f"{m.get('speaker_name')}: {m.get('content', '')}") for m in messages)
    count = len(history) + 1
    trigger: Literal["token_limit", "message_limit"] | None = None
    if tokens >= config.hard_token_limit:
        trigger = "token_limit"
    elif count >= config.hard_message_limit:
        trigger = "message_limit"
    return HardLimitCheck(
        reached=trigger is not None,
        trigger_type=trigger,
        total_tokens=tokens,
        total_messages=count,
        hard_token_limit=config.hard_token_limit,
        hard_message_limit=config.hard_message_limit,
    )


def parse_boundary_reply(text: str) -> BoundaryDetectionResult | None:
    """Read the judge's JSON verdict; None when the reply holds no usable object.

    The first brace-delimited object without nested braces is parsed; missing keys take the
    defaults of `BoundaryDetectionResult`.
    """
    match = _FLAT_OBJECT_RE.search(text or "")
    if match is None:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        confidence = float(data.get("confidence", 1.0))
    except (TypeError, ValueError):
        confidence = 1.0
    return BoundaryDetectionResult(
        should_end=bool(data.get("should_end", False)),
        should_wait=bool(data.get("should_wait", True)),
        reasoning=str(data.get("reasoning") or "No reason provided"),
        confidence=confidence,
        topic_summary=str(data.get("topic_summary") or ""),
    )


@dataclass(kw_only=True)
class BoundaryAttempt:
    """One LLM attempt: its reply text or the error it raised."""

    response: str | None = None
    error: str | None = None


@dataclass(kw_only=True)
class BoundaryDecision:
    """Everything the LLM stage saw and produced (the tracer records it)."""

    shown_history: list[dict[str, Any]]
    new_messages: list[dict[str, Any]]
    time_gap: str
    prompt: str | None
    attempts: list[BoundaryAttempt] = field(default_factory=list)
    result: BoundaryDetectionResult = field(default_factory=BoundaryDetectionResult)
    fallback: bool = False
    """True when every attempt failed and the conservative "no boundary" verdict was used."""


def detect_boundary(
    llm: ChatModel,
    history: Sequence[dict[str, Any]],
    new: Sequence[dict[str, Any]],
    *,
    smart_mask: bool,
    max_attempts: int = MAX_ATTEMPTS,
) -> BoundaryDecision:
    """Ask the LLM judge whether `new` closes the episode held in `history`.

    With `smart_mask` the newest history message is hidden from the judge (it still belongs to
    the memcell if a boundary is found). Up to `max_attempts` calls are made until a reply
    parses; after that the verdict falls back to "no boundary".
    """
    shown = list(history[:-1]) if smart_mask and history else list(history)
    gap = describe_time_gap(
        shown[-1].get("timestamp") if shown else None, new[0].get("timestamp") if new else None
    )
    decision = BoundaryDecision(shown_history=shown, new_messages=list(new), time_gap=gap, prompt=None)
    if not shown:
        decision.result = BoundaryDetectionResult(should_end=False, reasoning="Empty history.")
        return decision
    decision.prompt = BOUNDARY_DETECTION_PROMPT.substitute(
        history=render_messages(shown), time_gap=gap, new_messages=render_messages(new)
    )
    for _ in range(max_attempts):
        try:
            reply = ask(llm, decision.prompt)
        except FATAL_ERRORS:
            raise
        except Exception as exc:  # a model failure must not stop ingestion
            logger.warning("boundary detection call failed: %s", exc)
            decision.attempts.append(BoundaryAttempt(error=f"({type(exc).__name__}) {exc}"))
            continue
        decision.attempts.append(BoundaryAttempt(response=reply))
        parsed = parse_boundary_reply(reply)
        if parsed is not None:
            decision.result = parsed
            return decision
    decision.fallback = True
    decision.result = BoundaryDetectionResult(
        should_end=False, confidence=0.0, reasoning="Boundary detection failed."
    )
    return decision


def memcell_summary(result: BoundaryDetectionResult, new: Sequence[dict[str, Any]]) -> str:
    """Summary of a closed memcell: the topic summary, else the new message's opening, else a stub."""
    if result.topic_summary:
        return result.topic_summary
    if new and new[0].get("content"):
        return str(new[0]["content"])[:200]
    return "Conversation segment"


def last_timestamp(messages: Sequence[dict[str, Any]]) -> datetime | None:
    """Timestamp of the last message that has one."""
    for msg in reversed(messages):
        ts = parse_timestamp(msg.get("timestamp"))
        if ts is not None:
            return ts
    return None
