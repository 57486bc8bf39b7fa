"""Fixtures of the parameter-loop tests: the shared LoCoMo file (missing under CI fails)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LOCOMO_PATH, require_shared


@pytest.fixture(scope="session")
def locomo_file() -> Path:
    """The shared LoCoMo file."""
    return require_shared(LOCOMO_PATH, "LoCoMo data")
