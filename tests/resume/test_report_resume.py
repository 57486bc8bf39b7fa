"""generate_report.py killed for real (SIGKILL, SIGINT) during, between and while saving batches.

The rerun of the same command resumes after the last saved batch: the finished report and its
versions equal an uninterrupted run's (costs and timings aside), no saved batch is asked again,
every saved version has its Markdown copy, and versions of another model or input are not
continued.
"""

from __future__ import annotations

import copy
import json
import signal
from pathlib import Path

import pytest

from tests.report.conftest import attribution_output
from tests.resume import _kill, _process
from tests.resume._report_driver import factory
from toolkits.report import cli as report_cli

BATCHES = ["batch 1", "batch 2", "batch 3"]


@pytest.fixture()
def data_path(tmp_path: Path) -> Path:
    path = tmp_path / "rag attribution é.json"
    path.write_text(json.dumps(attribution_output("rag")), encoding="utf-8")  # 9 attributed cases: 3 batches of 3
    return path


def _args(data: Path, folder: Path, *extra: str) -> list[str]:
    return ["--data-path", str(data), "--save-folder", str(folder), "--batch-size", "3", "--no-png", "--no-progress",
            "--max-retries", "0", *extra]


def _rerun(monkeypatch, tmp_path: Path, args: list[str], name: str = "rerun.log") -> tuple[int, list[str]]:
    log = tmp_path / name
    monkeypatch.setenv(_kill.CALLS, str(log))
    monkeypatch.delenv("MEMTRACE_TEST_HANG", raising=False)
    code = report_cli.main(args, model_factory=factory)
    return code, _kill.calls(log)


def _state(folder: Path) -> dict:
    """The report and every saved version, costs and timings aside."""
    report = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    report = copy.deepcopy(report)
    for key in ("costs", "resumed_batches"):
        report["llm"].pop(key)
    versions = {}
    for path in sorted((folder / "report_versions").glob("version_*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        versions[path.name] = {k: v for k, v in data.items() if k not in ("seconds", "usage")}
        versions[path.with_suffix(".md").name] = path.with_suffix(".md").read_text(encoding="utf-8")
    return {"report": report, "versions": versions}


@pytest.fixture()
def reference(data_path, tmp_path, monkeypatch) -> dict:
    folder = tmp_path / "reference"
    assert _rerun(monkeypatch, tmp_path, _args(data_path, folder), "reference.log") == (0, BATCHES)
    state = _state(folder)
    return json.loads(json.dumps(state).replace(str(folder), "<folder>"))


def _saved(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "report_versions").glob("version_*")) if folder.exists() else []


POINTS = {
    "during the first batch": ({"hang": "1"}, signal.SIGKILL, 0),
    "ctrl-c between batches": ({"hang": "3"}, signal.SIGINT, 2),
    "while saving version 2's markdown": ({"kill": "before:version_002.md:1"}, None, 1),
    "while writing the finished report": ({"kill": "before:error_analysis_report.json:1"}, None, 3),
}


@pytest.mark.parametrize(("how", "sig", "saved"), POINTS.values(), ids=POINTS.keys())
@pytest.mark.slow
def test_a_killed_report_resumes_to_the_uninterrupted_one(data_path, tmp_path, monkeypatch, reference, how, sig, saved):
    folder = tmp_path / "report folder"
    args = _args(data_path, folder)
    calls = tmp_path / "killed.log"
    proc = _process.start("_report_driver", args, tmp_path, calls=calls, **how)
    ended = _process.interrupt_when_hanging(proc, tmp_path, sig) if sig else _process.finish(proc)
    if sig == signal.SIGINT:
        assert ended.returncode == 130, ended.stderr
        lines = [ln for ln in ended.stderr.splitlines() if ln.strip() and not ln.startswith(("warning: ", "note: "))]
        assert len(lines) == 1 and lines[0].startswith(f"interrupted: {saved} of 3 batch(es) are saved"), lines
        partial = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
        assert partial["complete"] is False and partial["report"] == f"report after batch {saved}"
    else:
        assert ended.killed, ended.stderr
    assert [p for p in _saved(folder) if p.endswith(".json")] == [f"version_{k:03d}.json" for k in range(1, saved + 1)]
    assert _kill.calls(calls)[:saved] == BATCHES[:saved]

    code, asked = _rerun(monkeypatch, tmp_path, args)
    assert code == 0
    assert asked == BATCHES[saved:]  # no saved batch is asked again
    state = json.loads(json.dumps(_state(folder)).replace(str(folder), "<folder>"))
    assert state == reference
    assert json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))["llm"]["resumed_batches"] == saved


def test_saved_versions_of_another_model_or_input_are_not_continued(data_path, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "report"

    def stop_at_third(batch_index: int):  # noqa: ANN202
        if batch_index == 2:
            raise KeyboardInterrupt
        return factory(batch_index)

    assert report_cli.main(_args(data_path, folder), model_factory=stop_at_third) == 130
    assert len([p for p in _saved(folder) if p.endswith(".json")]) == 2
    capsys.readouterr()

    for other in (["--model", "another-model"], ["--temperature", "0.2"]):
        code, asked = _rerun(monkeypatch, tmp_path, _args(data_path, folder, *other))
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and asked == [], err
        assert len(err) == 1 and "holds report versions of another input or settings" in err[0], err

    data = json.loads(data_path.read_text(encoding="utf-8"))
    data["results"][0]["error_attribution_result"]["reason"] = "an edited reason"
    data_path.write_text(json.dumps(data), encoding="utf-8")
    code, asked = _rerun(monkeypatch, tmp_path, _args(data_path, folder), "edited.log")
    assert code == 2 and asked == []
    code, asked = _rerun(monkeypatch, tmp_path, _args(data_path, folder, "--restart"), "restart.log")
    assert code == 0 and asked == BATCHES
