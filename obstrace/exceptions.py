"""Errors raised by the flat-log attribution package."""

from __future__ import annotations

from smartcomment.runtime.errors import MemTraceError

__all__ = ["ObstraceError", "PatternError", "PatternTimeoutError"]


class ObstraceError(MemTraceError, ValueError):
    """Base class for bad input to the flat-log tools (a subclass of ``ValueError``)."""


class PatternError(ObstraceError):
    """A search pattern is empty, too long or not a valid regular expression."""


class PatternTimeoutError(ObstraceError):
    """A regular expression ran past its time budget over the log."""
