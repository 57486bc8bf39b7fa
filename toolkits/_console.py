"""The console-script entry point shared by the CLIs: warnings as one line each, main's exit status."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import NoReturn

__all__ = ["run_console"]


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    print(f"warning: {message}", file=sys.stderr)


def run_console(main: Callable[[], int]) -> NoReturn:
    """Run ``main()`` as a console script: each warning prints as ``warning: <message>`` (no file,
    line or source echo), and the process exits with ``main``'s status."""
    warnings.showwarning = _print_warning
    sys.exit(main())
