"""argparse types shared by the command lines (membase's and the toolkits' scripts)."""

from __future__ import annotations

import argparse

__all__ = ["bounded_int", "non_negative_float", "non_negative_int", "positive_float", "positive_int"]


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
