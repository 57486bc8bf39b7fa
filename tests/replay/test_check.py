"""`python -m membase replay RUN --check`: an unrepaired replay repeats the run with no new call, or says why not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from membase.cli import main as membase_main
from tests.replay import _models
from tests.replay._helpers import make_run
from tests.replay.conftest import RAG_CONFIG


def _check(run: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict, str]:
    capsys.readouterr()
    code = membase_main(["replay", str(run), "--check", "--quiet", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["replay_check"] if out.strip() else {}), err


def test_unrepaired_replay_reproduces_with_zero_new_calls(rag_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = _check(rag_run, capsys, "--offline")
    assert code == 0, report
    assert report["reproduced"] is True
    assert report["new_calls"] == 0
    assert report["questions"] > 0 and report["trajectories"] == 1
    assert report["mismatches"] == [] and report["graph_divergences"] == []


@pytest.mark.parametrize("fixture", ["long_context_run", pytest.param("mem0_run", marks=pytest.mark.slow)])
def test_other_layers_reproduce_with_zero_new_calls(fixture: str, request: pytest.FixtureRequest,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = _check(request.getfixturevalue(fixture), capsys, "--offline")
    assert code == 0, report
    assert report["reproduced"] is True and report["new_calls"] == 0 and report["questions"] > 0


def test_a_judge_that_changes_its_mind_is_reported(tmp_path: Path, locomo_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_models.JUDGE_LABEL, "label", "CORRECT")
    run = make_run(locomo_path, tmp_path / "run", RAG_CONFIG, max_messages=12,
                   judge_model="py:tests.replay._models:switchable_judge", extra=("--no-call-cache",))
    monkeypatch.setitem(_models.JUDGE_LABEL, "label", "WRONG")
    code, report, _ = _check(run, capsys)
    assert code == 1
    assert report["reproduced"] is False
    assert report["mismatches"] and all(m["replay"][1] == 0.0 for m in report["mismatches"])
    assert "not deterministic" in report["hint"] and "switchable_judge" in report["hint"]


def test_calls_missing_from_the_cache_are_counted_and_explained(rag_run: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "copy"
    shutil.copytree(rag_run, run)
    shutil.rmtree(run / "call_cache")
    code, report, _ = _check(run, capsys)
    assert code == 1
    assert report["new_calls"] > 0 and report["reproduced"] is False
    assert "cache" in report["hint"]


def test_a_folder_without_manifest_is_one_error_line(rag_run: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "old-run"
    shutil.copytree(rag_run / "traced_data", run / "traced_data")
    code, report, err = _check(run, capsys)
    assert code == 2 and report == {}
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "replay_manifest.json" in lines[0]


def test_offline_check_refuses_calls_missing_from_the_cache(rag_run: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Fake and py: models would answer anything: offline, a cache miss fails the trajectory's replay instead."""
    run = tmp_path / "copy"
    shutil.copytree(rag_run, run)
    shutil.rmtree(run / "call_cache")
    code, report, _ = _check(run, capsys, "--offline")
    assert code == 1 and report["reproduced"] is False
    assert report["new_calls"] == 0 and report["trajectories"] == 0
    assert "not in the run's call cache" in report["mismatches"][0]["problem"]
    assert not (run / "call_cache").exists() or not any((run / "call_cache").rglob("*.json"))
