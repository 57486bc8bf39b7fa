"""run_error_attribution.py killed for real (SIGKILL, SIGINT) at several points, then rerun.

The rerun must write the output an uninterrupted run writes (timings, token counts and the
"reused" flags aside), attribute no finished case again, lose none, and never reuse a case
whose graph or settings changed. The output lives under a path with a space and non-ASCII
letters.
"""

from __future__ import annotations

import copy
import json
import signal

import pytest

from tests.resume import _kill, _process
from tests.resume._attribution_driver import STRATEGY, register
from toolkits._journal import journal_path
from toolkits.attribution import cli as attribution_cli
from toolkits.strategies import unregister_strategy

CASES = ["graph-aaaa ExtractionError", "graph-aaaa RetrievalError", "graph-bbbb UpdateError",
         "graph-bbbb ResponseError"]  # the order in which --batch-size 1 runs them
VOLATILE_RECORD = ("attribution_seconds", "attribution_cached", "attribution_usage", "attribution_attempts")
VOLATILE_METRICS = ("error_attribution_cost", "cost_totals")


def _args(bench, out, *extra):
    return [str(bench), "mem0", "--output-path", str(out), "--exploration-strategy", STRATEGY,
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0",
            "--batch-size", "1", "--max-retries", "0", *extra]


def _comparable(data: dict) -> dict:
    data = copy.deepcopy(data)
    for record in data["results"]:
        for key in VOLATILE_RECORD:
            record.pop(key)
    for key in VOLATILE_METRICS:
        data["metrics"].pop(key)
    return data


def _journalled(out) -> list[str]:
    """The cases whose journal line is whole."""
    path = journal_path(out)
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        try:
            record = json.loads(line)["record"]
        except ValueError:
            continue
        found.append(f"{'graph-aaaa' if record['graph_path'].endswith('a.json') else 'graph-bbbb'} "
                     f"{record['final_error_type']}")
    return found


def _rerun(monkeypatch, tmp_path, args, name="rerun.log") -> list[str]:
    """Run the same command in-process; returns the cases it attributed (called a model for)."""
    log = tmp_path / name
    monkeypatch.setenv(_kill.CALLS, str(log))
    monkeypatch.delenv("MEMTRACE_TEST_HANG", raising=False)
    assert attribution_cli.main(args) == 0
    return _kill.calls(log)


@pytest.fixture(autouse=True)
def _scripted_strategy():
    register()
    yield
    unregister_strategy(STRATEGY)


@pytest.fixture()
def reference(bench_dir, tmp_path, monkeypatch):
    out = tmp_path / "reference.json"
    assert _rerun(monkeypatch, tmp_path, _args(bench_dir, out), "reference.log") == CASES
    return _comparable(json.loads(out.read_text(encoding="utf-8")))


POINTS = {
    "during the first case": ({"hang": "ExtractionError"}, signal.SIGKILL, 0),
    "between cases": ({"hang": "UpdateError"}, signal.SIGKILL, 2),
    "ctrl-c between cases": ({"hang": "UpdateError"}, signal.SIGINT, 2),
    "while journalling case 2": ({"kill": "torn:journal:2"}, None, 1),
    "while writing the output": ({"kill": "before:résumé.json:1"}, None, 4),
    "after the output, before the journal is removed": ({"kill": "after:résumé.json:1"}, None, 4),
}


@pytest.mark.parametrize(("how", "sig", "finished"), POINTS.values(), ids=POINTS.keys())
@pytest.mark.slow
def test_a_killed_run_resumes_to_the_uninterrupted_output(bench_dir, tmp_path, monkeypatch, reference, how, sig,
                                                          finished):
    out = tmp_path / "out dir é" / "résumé.json"
    args = _args(bench_dir, out)
    calls = tmp_path / "killed.log"
    proc = _process.start("_attribution_driver", args, tmp_path, calls=calls, **how)
    ended = _process.interrupt_when_hanging(proc, tmp_path, sig) if sig else _process.finish(proc)

    if sig == signal.SIGINT:
        assert ended.returncode == 130, ended.stderr
        lines = [ln for ln in ended.stderr.splitlines() if ln.strip() and not ln.startswith("warning: ")]
        assert len(lines) == 1 and lines[0].startswith(f"interrupted: {finished} of 4 case(s) finished"), lines
        partial = json.loads(out.read_text(encoding="utf-8"))
        assert partial["complete"] is False and len(partial["results"]) == finished
    else:
        assert ended.killed, ended.stderr
        if out.exists():  # written whole or not at all
            assert _comparable(json.loads(out.read_text(encoding="utf-8"))) == reference
    assert _journalled(out) == CASES[:finished]
    assert _kill.calls(calls)[:finished] == CASES[:finished]

    assert _rerun(monkeypatch, tmp_path, args) == CASES[finished:]  # nothing finished is attributed again
    data = json.loads(out.read_text(encoding="utf-8"))
    assert _comparable(data) == reference  # none lost, none twice, same answers
    assert [r["attribution_cached"] for r in data["results"]] == [i < finished for i in range(4)]
    assert not journal_path(out).exists()


def test_a_resume_never_reuses_a_case_whose_graph_or_settings_changed(bench_dir, tmp_path, monkeypatch):
    out = tmp_path / "o.json"
    proc = _process.start("_attribution_driver", _args(bench_dir, out), tmp_path, calls=tmp_path / "killed.log",
                          hang="UpdateError")
    assert _process.interrupt_when_hanging(proc, tmp_path).killed
    assert _journalled(out) == CASES[:2]  # both cases of graph a
    journal = journal_path(out).read_bytes()

    # other settings: a flag that changes the answer
    assert _rerun(monkeypatch, tmp_path, _args(bench_dir, out, "--use-system-prior"), "flags.log") == CASES

    # the same settings, but graph a was edited after the kill
    journal_path(out).write_bytes(journal)
    graph = bench_dir / "mem0" / "a.json"
    data = json.loads(graph.read_text(encoding="utf-8"))
    data["data"]["edges"][0]["comment"] = "Edited after the run was killed."
    graph.write_text(json.dumps(data), encoding="utf-8")
    assert _rerun(monkeypatch, tmp_path, _args(bench_dir, out), "edited.log") == CASES
