"""Shared fixtures of the optimization tests: LoCoMo slices and small traced Mem0 graphs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import LOCOMO_PATH


@pytest.fixture(scope="session")
def locomo_file() -> Path:
    """The shared LoCoMo file; missing data fails under CI (CI=true) instead of skipping."""
    if not LOCOMO_PATH.is_file():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"LoCoMo data not found at {LOCOMO_PATH} (CI must provide ../shared/data)")
        pytest.skip(f"LoCoMo data not found at {LOCOMO_PATH}")
    return LOCOMO_PATH
