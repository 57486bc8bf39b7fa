"""Fixtures of the Mem0v3 tests (helpers in `_helpers.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.membase_mem0v3._helpers import TracedQuestion


@pytest.fixture
def traced_question(tmp_path: Path) -> Iterator[TracedQuestion]:
    """Runs one traced question end to end; its layers are cleaned up afterwards."""
    runner = TracedQuestion(tmp_path)
    yield runner
    runner.close()
