"""Bounded pattern search: size caps and a time budget for patterns that come from a model.

Patterns run through the ``regex`` package (installed with tiktoken), whose matching functions
take a ``timeout``; a pattern with catastrophic backtracking therefore stops with
``PatternTimeoutError`` instead of hanging the agent.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import regex

from obstrace.exceptions import PatternError, PatternTimeoutError

__all__ = ["MAX_PATTERN_CHARS", "DEFAULT_TIMEOUT_S", "compile_pattern", "iter_spans", "Deadline"]

MAX_PATTERN_CHARS = 2_000
DEFAULT_TIMEOUT_S = 2.0


def compile_pattern(pattern: str, *, is_regex: bool, case_sensitive: bool) -> regex.Pattern[str]:
    """Compile a literal or regular-expression pattern.

    Args:
        pattern: The text to look for.
        is_regex: Treat ``pattern`` as a regular expression (else it is matched literally).
        case_sensitive: Match case exactly (else IGNORECASE).

    Returns:
        The compiled pattern.

    Raises:
        PatternError: If the pattern is empty, longer than ``MAX_PATTERN_CHARS`` or invalid.
    """
    if not pattern:
        raise PatternError("the search pattern is empty; pass a non-empty string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(f"the search pattern has {len(pattern)} characters; keep it under {MAX_PATTERN_CHARS}")
    flags = regex.VERSION0 | (0 if case_sensitive else regex.IGNORECASE)
    try:
        return regex.compile(pattern if is_regex else regex.escape(pattern), flags)
    except (regex.error, ValueError, OverflowError) as exc:
        raise PatternError(
            f"invalid regular expression {pattern!r}: {exc}; fix it or search literally with regex=false"
        ) from None


class Deadline:
    """A wall-clock budget shared by several searches."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left, raising ``PatternTimeoutError`` when none are."""
        left = self._end - time.monotonic()
        if left <= 0:
            raise PatternTimeoutError(self.message())
        return left

    def message(self) -> str:
        """The one-line error for an exhausted budget."""
        return (
            f"the pattern search ran past its {self.seconds:g}s budget; use a simpler pattern "
            "(avoid nested quantifiers) or a literal search"
        )


def iter_spans(compiled: regex.Pattern[str], text: str, deadline: Deadline) -> Iterator[tuple[int, int]]:
    """Yield the ``(start, end)`` spans of non-empty matches, bounded by ``deadline``.

    Zero-length matches are skipped: they carry no text and would flood the output.

    Raises:
        PatternTimeoutError: If the budget runs out.
    """
    try:
        for match in compiled.finditer(text, timeout=deadline.remaining()):
            if match.end() > match.start():
                yield match.start(), match.end()
    except TimeoutError:
        raise PatternTimeoutError(deadline.message()) from None
