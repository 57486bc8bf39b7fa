"""`--workers N`: worker processes write the same run as one process; a failure or a dead worker
costs only its trajectory; a rerun skips finished trajectories; bad flags are one-line errors."""

from __future__ import annotations

import json
import os
import pickle
import time

import pytest

from membase.cli import main
from membase.exceptions import ConfigError
from membase.runners._canonical import canonical_file, run_differences
from membase.runners._executors import FanOut, TaskCrash, fan_out, shared_workers
from membase.runners._portable_models import model_recipe
from tests.membase._fanout_data import write_dataset

LAYER = {"layer_type": "Long-Context", "context_window": 4000}
USERS = ["locomo-1", "locomo-2", "locomo-3", "locomo-4"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fanout-inputs")
    (folder / "lc.json").write_text(json.dumps(LAYER))
    return folder / "lc.json", write_dataset(folder / "synthetic.json", 4)


def _membase(command, inputs, out, *extra):
    layer, data = inputs
    argv = [command, "--layer-config", str(layer), "--dataset", str(data), "--dataset-type", "LoCoMo",
            "--output-dir", str(out), "--quiet", *extra]
    if command == "run":
        argv += ["--qa-model", "fake:I do not know", "--judge-model", 'fake:{"label": "WRONG"}',
                 "--metrics", "f1,llm_judge"]
    return main(argv)


def _summary(capsys):
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_two_workers_write_the_same_run_as_one_process(inputs, tmp_path, capsys):
    assert _membase("run", inputs, tmp_path / "one") == 0
    one = _summary(capsys)
    assert _membase("run", inputs, tmp_path / "two", "--workers", "2") == 0
    two = _summary(capsys)
    graphs = sorted(p.relative_to(tmp_path / "two").as_posix() for p in (tmp_path / "two").rglob("graph_*.json"))
    assert len(graphs) == 3 * len(USERS)
    assert run_differences(tmp_path / "one", tmp_path / "two") == []
    assert two["evaluation"]["users_done"] == one["evaluation"]["users_done"] == len(USERS)
    assert two["evaluation"]["metrics"] == one["evaluation"]["metrics"]
    usage = json.loads((tmp_path / "two" / "memory" / "10_None_None_evaluation_report.json").read_text())["usage"]
    assert usage["qa_model"]["requests"] == 2 * len(USERS)  # summed over the workers


def test_the_comparison_ignores_ids_clocks_and_the_folder_but_nothing_else(tmp_path):
    root = tmp_path / "run"
    first = f'{{"op": "op-{"a" * 32}", "at": "2026-01-02 03:04:05.678", "in": "{root}/x", "text": "kite"}}'
    second = f'{{"op": "op-{"b" * 32}", "at": "2026-02-03 04:05:06.789", "in": "<run>/x", "text": "kite"}}'
    assert canonical_file(first, root) == canonical_file(second, root)
    assert canonical_file(first, root) != canonical_file(first.replace("kite", "banjo"), root)
    dataset_time = '{"timestamp": "2024-03-03T09:15:00"}'  # a dataset's own time is data, kept
    assert canonical_file(dataset_time, root) == dataset_time


@pytest.mark.slow
def test_a_failing_trajectory_is_recorded_and_the_others_finish(inputs, tmp_path, capsys):
    foreign = tmp_path / "out" / "memory" / "locomo-2"
    foreign.mkdir(parents=True)
    (foreign / "config.json").write_text(json.dumps({"user_id": "somebody-else"}))
    assert _membase("construct", inputs, tmp_path / "out", "--workers", "2") == 0
    summary = _summary(capsys)
    assert list(summary["users_failed"]) == ["locomo-2"]
    assert "belongs to user 'somebody-else'" in summary["users_failed"]["locomo-2"]
    report = json.loads((tmp_path / "out" / "memory" / "construction_report.json").read_text())
    assert report["users_done"] == ["locomo-1", "locomo-3", "locomo-4"]  # input order, all finished


@pytest.mark.slow
def test_a_rerun_skips_the_trajectories_already_built(inputs, tmp_path, capsys):
    assert _membase("construct", inputs, tmp_path / "out", "--workers", "2") == 0
    assert _summary(capsys)["users_done"] == len(USERS)
    (tmp_path / "out" / "memory" / "locomo-3" / "config.json").unlink()  # as if its build had crashed
    assert _membase("construct", inputs, tmp_path / "out", "--workers", "2") == 0
    report = json.loads((tmp_path / "out" / "memory" / "construction_report.json").read_text())
    assert (report["users_done"], report["users_skipped"]) == (["locomo-3"], ["locomo-1", "locomo-2", "locomo-4"])


def _tenfold_or_die(value: int) -> int:
    if value == 2:
        os._exit(3)  # a worker killed under this task
    return value * 10


def _refuse_three(value: int) -> int:
    if value == 3:
        raise ConfigError("three is refused")
    return value


@pytest.mark.slow
def test_a_worker_that_dies_fails_only_its_task():
    results = dict(fan_out(_tenfold_or_die, [(v,) for v in range(5)], FanOut(workers=2)))
    assert {k: v for k, v in results.items() if k != 2} == {0: 0, 1: 10, 3: 30, 4: 40}
    assert isinstance(results[2], TaskCrash) and "died" in results[2].error


def _sleep_or_refuse(value: int) -> int:
    if value == 0:
        time.sleep(120)
    return _refuse_three(value)


def test_an_error_raised_by_a_task_reaches_the_caller_at_once():
    started = time.monotonic()
    with pytest.raises(ConfigError, match="three is refused"):
        list(fan_out(_sleep_or_refuse, [(v,) for v in range(5)], FanOut(workers=2)))
    assert time.monotonic() - started < 60  # the sleeping task was stopped, not waited for


def _pid(_value: int) -> int:
    return os.getpid()


@pytest.mark.slow
def test_the_stages_of_a_run_share_their_worker_processes_and_a_crash_replaces_them():
    with shared_workers(FanOut(workers=2)):
        first = {pid for _, pid in fan_out(_pid, [(v,) for v in range(6)], FanOut(workers=2))}
        second = {pid for _, pid in fan_out(_pid, [(v,) for v in range(6)], FanOut(workers=2))}
        assert len(first | second) <= 2 and os.getpid() not in first  # the same two workers, no new ones
        crashed = dict(fan_out(_tenfold_or_die, [(v,) for v in range(4)], FanOut(workers=2)))
        assert isinstance(crashed[2], TaskCrash) and crashed[3] == 30
        after = {pid for _, pid in fan_out(_pid, [(v,) for v in range(4)], FanOut(workers=2))}
        assert after.isdisjoint(first | second)  # the broken pool was replaced


def test_one_local_worker_runs_inline_in_input_order():
    assert FanOut().inline and not FanOut(workers=2).inline and not FanOut(executor="ray").inline
    assert list(fan_out(_refuse_three, [(v,) for v in range(3)], FanOut())) == [(0, 0), (1, 1), (2, 2)]


def test_bad_fan_out_flags_are_one_line_errors(inputs, tmp_path, capsys, monkeypatch):
    with pytest.raises(SystemExit) as stop:
        _membase("construct", inputs, tmp_path / "out", "--workers", "0")
    assert stop.value.code == 2 and "--workers: expected an integer >= 1, got 0" in capsys.readouterr().err
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    assert _membase("construct", inputs, tmp_path / "out", "--executor", "ray") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "error: --executor ray needs the Ray package: pip install 'memtrace-llm[ray]'"
    assert not (tmp_path / "out" / "memory" / "construction_report.json").exists()


def test_models_travel_to_workers_as_recipes(tmp_path):
    from membase.clients import ChatClient, CredentialPool, FunctionChatModel

    client = ChatClient("model-x", credentials=CredentialPool(["sk-test"], ["http://127.0.0.1:9/v1"]),
                        timeout=7.0, max_retries=1, cache_dir=str(tmp_path / "cache"))
    copy = pickle.loads(pickle.dumps(model_recipe(client, role="qa model", needs_pickle=True)))()
    assert (copy.model, copy.timeout, copy.max_retries, copy.cache.root) == ("model-x", 7.0, 1, tmp_path / "cache")
    assert copy is not client and copy.usage.requests == 0
    closure = FunctionChatModel(lambda _m, **_k: "yes", model="fake:yes")
    with pytest.raises(ConfigError, match="the judge model 'fake:yes' cannot be sent to worker processes"):
        model_recipe(closure, role="judge model", needs_pickle=True)
    assert model_recipe(closure, role="judge model", needs_pickle=False)().complete([]).text == "yes"  # Ray


def test_no_graph_of_a_finished_trajectory_stays_in_memory(inputs, tmp_path, capsys):
    import gc

    from smartcomment.runtime.network import ExecNetwork

    gc.collect()
    before = {id(o) for o in gc.get_objects() if isinstance(o, ExecNetwork)}  # other tests' fixtures may hold some
    assert _membase("run", inputs, tmp_path / "out") == 0  # one process: every graph was built here
    gc.collect()
    assert [o for o in gc.get_objects() if isinstance(o, ExecNetwork) and id(o) not in before] == []
