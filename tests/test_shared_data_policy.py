"""Missing ../shared data skips a test on a developer machine and fails it on CI (CI=true)."""

from __future__ import annotations

import pytest

from tests.conftest import require_shared


@pytest.mark.parametrize("value", ["true", "TRUE", "1", "yes"])
def test_missing_shared_data_fails_under_ci(tmp_path, monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match="CI must provide"):
        require_shared(tmp_path / "missing", "LoCoMo data")


@pytest.mark.parametrize("value", [None, "", "false", "0"])
def test_missing_shared_data_skips_elsewhere(tmp_path, monkeypatch, value):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.skip.Exception, match="not found"):
        require_shared(tmp_path / "missing", "LoCoMo data")
    assert require_shared(tmp_path, "a folder") == tmp_path
