"""`--executor ray` on a local Ray instance (2 CPUs) started here: a membase run and an attribution
run give what one process gives, and an interrupted Ray attribution resumes from its journal."""

from __future__ import annotations

import json

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'memtrace-llm[ray]')")

from membase.cli import main as membase_main  # noqa: E402
from membase.runners._canonical import run_differences  # noqa: E402
from tests.membase._fanout_data import write_dataset  # noqa: E402
from toolkits.attribution import cli as attribution_cli  # noqa: E402

pytestmark = pytest.mark.slow  # a Ray instance takes ~10-20 s to start on a 2-core box

ATTRIBUTION = ["--exploration-strategy", "evidence_flow", "--retrieval-type", "sparse", "--batch-size", "2",
               "--no-progress", "--bootstrap-samples", "0"]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def membase_runs(local_ray, tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-runs")
    (root / "lc.json").write_text(json.dumps({"layer_type": "Long-Context", "context_window": 4000}))
    data = write_dataset(root / "synthetic.json", 3)
    for name, extra in (("local", []), ("ray", ["--executor", "ray"])):
        code = membase_main(["run", "--layer-config", str(root / "lc.json"), "--dataset", str(data),
                             "--dataset-type", "LoCoMo", "--output-dir", str(root / name), "--quiet",
                             "--qa-model", "fake:I do not know", "--judge-model", 'fake:{"label": "WRONG"}',
                             "--metrics", "f1,llm_judge", *extra])
        assert code == 0
    return root


def test_a_membase_run_on_ray_is_the_run_of_one_process(membase_runs):
    assert len(list((membase_runs / "ray" / "traced_data").glob("*/graph_evaluation.json"))) == 3
    assert run_differences(membase_runs / "local", membase_runs / "ray") == []


def _comparable(path):
    """The output without the wall-clock fields and what tells a reused case (flag, attempts)."""
    out = json.loads(path.read_text())
    for record in out["results"]:
        record.pop("attribution_seconds")
        record.pop("attribution_cached")
        record.pop("attribution_attempts")
    for key in ("error_attribution_cost", "cost_totals"):
        out["metrics"].pop(key)
    return out


def test_attribution_on_ray_matches_local_and_an_interrupted_run_resumes(membase_runs, tmp_path, monkeypatch, capsys):
    run = str(membase_runs / "local")
    local, on_ray = tmp_path / "local.json", tmp_path / "ray.json"
    assert attribution_cli.main([run, "--output-path", str(local), *ATTRIBUTION]) == 0

    import toolkits._fanout as fanout

    real = fanout.fan_out

    def stop_after_first_task(task, payloads, plan):
        tasks = real(task, payloads, plan)
        yield next(tasks)
        tasks.close()  # cancels the Ray tasks still running
        raise KeyboardInterrupt

    monkeypatch.setattr(fanout, "fan_out", stop_after_first_task)
    argv = [run, "--output-path", str(on_ray), *ATTRIBUTION, "--executor", "ray"]
    assert attribution_cli.main(argv) == 130
    assert "interrupted: 2 of 6 case(s) finished" in capsys.readouterr().err
    journal = tmp_path / "ray.json.journal.jsonl"
    assert len(journal.read_text().splitlines()) == 1 + 2  # header and the finished task's two cases

    monkeypatch.setattr(fanout, "fan_out", real)
    assert attribution_cli.main(argv) == 0
    assert not journal.exists()
    assert _comparable(on_ray) == _comparable(local)
    cached = [r["attribution_cached"] for r in json.loads(on_ray.read_text())["results"]]
    assert sorted(cached) == [False] * 4 + [True] * 2  # the journaled cases were not attributed again

