"""membase test fixtures: real model requests are switched off for every test."""

from __future__ import annotations

import pytest

from membase.clients import guard


@pytest.fixture(autouse=True)
def _no_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "ALLOW_MODEL_REQUESTS", False)
