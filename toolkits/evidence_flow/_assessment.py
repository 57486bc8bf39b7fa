"""The verdict a presence judge gives on one text (a leaf module: judges and the graph side share it)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONFLICT_PREFIX", "Assessment"]

#: ``why`` of a verdict that found the text contradicting the fact starts with this.
CONFLICT_PREFIX = "conflict"


@dataclass(frozen=True, kw_only=True, slots=True)
class Assessment:
    """The verdict on one text."""

    present: bool
    score: float
    """Best segment's score; 1.0 = threshold."""
    why: str
    """What decided it (``answer+support``, ``answer missing``, ``conflict: person`` ...)."""
    segment: str = ""
    """The best segment's text (cut to 160 characters)."""

    @property
    def contradicts(self) -> bool:
        """The text states something that conflicts with the fact (not merely lacks it)."""
        return self.why.startswith(CONFLICT_PREFIX)
