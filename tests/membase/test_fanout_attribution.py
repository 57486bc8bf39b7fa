"""`run_error_attribution.py --workers 2`: cases attributed in worker processes give the local output;
a task whose worker dies fails only its cases; cached cases never leave the caller."""

from __future__ import annotations

import json

import pytest

from membase.cli import main as membase_main
from membase.runners._executors import TaskCrash
from tests.membase._fanout_data import write_dataset
from toolkits.attribution import cli as attribution_cli

ATTRIBUTION = ["--exploration-strategy", "evidence_flow", "--retrieval-type", "sparse", "--batch-size", "2",
               "--no-progress", "--bootstrap-samples", "0"]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("attribution-fanout")
    (root / "lc.json").write_text(json.dumps({"layer_type": "Long-Context", "context_window": 4000}))
    data = write_dataset(root / "synthetic.json", 2)
    assert membase_main(["run", "--layer-config", str(root / "lc.json"), "--dataset", str(data), "--dataset-type",
                         "LoCoMo", "--output-dir", str(root / "run"), "--quiet", "--qa-model", "fake:I do not know",
                         "--judge-model", 'fake:{"label": "WRONG"}', "--metrics", "f1,llm_judge"]) == 0
    return root / "run"


def _records(path):
    return [{k: v for k, v in r.items() if k not in ("attribution_seconds", "attribution_cached")}
            for r in json.loads(path.read_text())["results"]]


@pytest.mark.slow
def test_worker_processes_attribute_like_one_process(run_folder, tmp_path, monkeypatch):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    assert attribution_cli.main([str(run_folder), "--output-path", str(one), *ATTRIBUTION]) == 0
    cache = tmp_path / "cache"
    argv = [str(run_folder), "--output-path", str(two), *ATTRIBUTION, "--workers", "2", "--cache-dir", str(cache)]
    assert attribution_cli.main(argv) == 0
    assert _records(two) == _records(one)
    assert len(_records(one)) == 4 and all(r["attribution_failure"] is None for r in _records(one))

    import toolkits._fanout as fanout

    def nothing_may_leave(task, payloads, plan):
        assert payloads == []  # every case was found in the cache by the caller
        yield from ()

    monkeypatch.setattr(fanout, "fan_out", nothing_may_leave)
    assert attribution_cli.main([*argv[:2], str(tmp_path / "again.json"), *argv[3:]]) == 0
    assert json.loads((tmp_path / "again.json").read_text())["metrics"]["cost_totals"]["cached_cases"] == 4


@pytest.mark.slow
def test_a_task_whose_worker_died_fails_its_cases_and_the_rest_finish(run_folder, tmp_path, monkeypatch):
    import toolkits._fanout as fanout

    real = fanout.fan_out

    def first_task_lost(task, payloads, plan):
        for index, outcome in real(task, payloads, plan):
            yield index, TaskCrash(error="the worker process running this task died") if index == 0 else outcome

    monkeypatch.setattr(fanout, "fan_out", first_task_lost)
    out = tmp_path / "out.json"
    assert attribution_cli.main([str(run_folder), "--output-path", str(out), *ATTRIBUTION, "--workers", "2"]) == 0
    failures = [r["attribution_failure"] for r in json.loads(out.read_text())["results"]]
    assert failures == ["the worker process running this task died"] * 2 + [None, None]


def test_ray_without_ray_installed_is_one_line_and_writes_nothing(run_folder, tmp_path, monkeypatch, capsys):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    out = tmp_path / "out.json"
    assert attribution_cli.main([str(run_folder), "--output-path", str(out), *ATTRIBUTION, "--executor", "ray"]) == 2
    assert capsys.readouterr().err.strip() == "error: --executor ray needs the Ray package: pip install 'memtrace-llm[ray]'"
    assert list(tmp_path.iterdir()) == []  # no output, no journal


def test_no_ray_cluster_to_join_is_one_line_and_writes_nothing(run_folder, tmp_path, capsys, monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'memtrace-llm[ray]')")
    if ray.is_initialized():
        pytest.skip("a Ray instance is already up in this process: nothing to join")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = tmp_path / "out.json"
    argv = [str(run_folder), "--output-path", str(out), *ATTRIBUTION, "--executor", "ray", "--ray-address", "auto"]
    assert attribution_cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --executor ray: cannot start or join the Ray cluster at 'auto': ")
    assert list(tmp_path.iterdir()) == []
