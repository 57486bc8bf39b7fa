"""argparse types shared by the command lines (membase's and the toolkits' scripts)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = [
    "bounded_int",
    "non_negative_float",
    "non_negative_int",
    "output_file",
    "output_folder",
    "positive_float",
    "positive_int",
]


def bounded_int(text: str, minimum: int) -> int:
    """An integer >= ``minimum``, or an ``ArgumentTypeError`` argparse prints as a usage error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    return bounded_int(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    return bounded_int(text, 0)


def _bounded_float(text: str, *, strict: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")) or value < 0 or (strict and value == 0):
        raise argparse.ArgumentTypeError(f"expected a number {'>' if strict else '>='} 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _bounded_float(text, strict=True)


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    return _bounded_float(text, strict=False)


def _blocking_file(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is a file (nothing can be created below it)."""
    parent = next((p for p in path.parents if p.exists()), None)
    return parent if parent is not None and not parent.is_dir() else None


def output_file(text: str) -> str:
    """argparse type: a file path that can be written (not a folder, no file where a parent folder goes)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder; give a file path")
    blocker = _blocking_file(path)
    if blocker is not None:
        raise argparse.ArgumentTypeError(f"{text!r} cannot be created: {str(blocker)!r} is a file, not a folder")
    return text


def output_folder(text: str) -> str:
    """argparse type: a folder path that exists as a folder or can be created (no file in its place)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    blocker = _blocking_file(path)
    if blocker is not None:
        raise argparse.ArgumentTypeError(f"{text!r} cannot be created: {str(blocker)!r} is a file, not a folder")
    return text
