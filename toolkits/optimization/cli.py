"""The body of ``run_optimization.py``: argument checks, preflight, the loop, the final evaluation."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["run_from_args"]


def run_from_args(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    *,
    attribution_model_factory: Callable[[Any], Any] | None = None,
    optimizer_model_factory: Callable[[int], Any] | None = None,
) -> int:
    """Run the loop described by parsed arguments; returns the exit code."""
    print("error: the optimization loop is not wired yet (work in progress)", file=sys.stderr)
    return 2
