"""Shared fixtures of the optimization tests: LoCoMo slices and small traced Mem0 graphs."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def locomo_file(locomo_path) -> Path:
    """The shared LoCoMo file (``tests/conftest.py``: missing data fails under CI, skips elsewhere)."""
    return locomo_path
