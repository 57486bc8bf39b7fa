"""Compare two run folders byte for byte, less what differs between any two runs.

Two runs of the same command never write the same bytes: graph, op, edge and session ids are
fresh uuids, records carry the wall-clock time they were made, and files name the run folder.
:func:`canonical_run` rewrites exactly those three things in every JSON file of a run — the
folder's path becomes ``<run>``, each uuid-based id becomes ``<id-N>`` numbered by first
appearance in its file, each clock time becomes ``<time>`` — and leaves every other byte as
written. Two runs that did the same work (one process, worker processes or Ray) then compare
equal; any other difference (a missing message, another order, another answer) still shows.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["canonical_file", "canonical_run", "run_differences"]

_IDS = re.compile(
    r"\b(?:(?:graph|op|edge|session)-[0-9a-f]{32}"
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"
)
_CLOCK = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}\.\d{3,6}(?:[+-]\d{2}:\d{2}|Z)?"
)
"""Times with fractions of a second: the tracer's record times and stores' insertion times (dataset
timestamps have none)."""


def canonical_file(text: str, root: Path) -> str:
    """One file's text with the run folder, fresh ids and clock times replaced."""
    for spelling in {str(root), str(root.resolve())}:
        text = text.replace(spelling, "<run>")
    numbers: dict[str, int] = {}

    def number(match: re.Match[str]) -> str:
        return f"<id-{numbers.setdefault(match.group(0), len(numbers) + 1)}>"

    return _CLOCK.sub("<time>", _IDS.sub(number, text))


def canonical_run(root: str | Path) -> dict[str, str]:
    """Every JSON file under ``root`` (relative path → canonical text)."""
    root = Path(root)
    return {
        str(path.relative_to(root)): canonical_file(path.read_text(encoding="utf-8"), root)
        for path in sorted(root.rglob("*.json"))
    }


def run_differences(first: str | Path, second: str | Path) -> list[str]:
    """The relative paths whose canonical text differs, or that only one run has (empty: same)."""
    a, b = canonical_run(first), canonical_run(second)
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))
