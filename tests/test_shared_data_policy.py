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


def test_skip_reasons_about_shared_data_are_recognised():
    from tests.conftest import SHARED, is_shared_data_skip

    for reason in ("shared fixtures not available", "LoCoMo data not found at " + str(SHARED / "data"),
                   "needs ../shared", "Skipped: shared smartcomment fixtures not found at /x"):
        assert is_shared_data_skip(reason), reason
    for reason in ("Chromium is not installed", "llama-cpp-python is not installed", "RLIMIT_FSIZE is POSIX"):
        assert not is_shared_data_skip(reason), reason


pytest_plugins = ["pytester"]


def test_a_module_skipif_on_shared_data_fails_under_ci(pytester, monkeypatch):
    from pathlib import Path

    pytester.makeconftest(Path(__file__).with_name("conftest.py").read_text(encoding="utf-8"))
    pytester.makepyfile(test_inner="""
        import pytest

        @pytest.mark.skipif(True, reason="shared fixtures not available")
        def test_needs_shared():
            pass

        @pytest.mark.skipif(True, reason="Chromium is not installed")
        def test_needs_a_browser():
            pass
    """)
    monkeypatch.setenv("CI", "true")
    outcomes = pytester.runpytest("-p", "no:cacheprovider").parseoutcomes()
    assert outcomes.get("failed", 0) + outcomes.get("errors", 0) == 1 and outcomes["skipped"] == 1  # red, not skipped
    monkeypatch.setenv("CI", "false")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(skipped=2)
