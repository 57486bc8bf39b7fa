"""The word lists the rules judge still needs, read from data files (``wordlists/*.txt``).

Each file opens with a comment saying which general phenomenon its words cover; lines starting
with ``#`` and blank lines are skipped.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

__all__ = ["word_lines", "words"]


@cache
def word_lines(name: str) -> tuple[str, ...]:
    """The non-comment lines of ``wordlists/<name>.txt``, stripped."""
    text = resources.files(__package__).joinpath("wordlists", f"{name}.txt").read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def words(name: str) -> frozenset[str]:
    """Every word of ``wordlists/<name>.txt``."""
    return frozenset(word for line in word_lines(name) for word in line.split())
