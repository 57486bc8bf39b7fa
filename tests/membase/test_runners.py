"""Runner robustness: per-item failures are recorded, the run goes on, outputs stay valid."""

from __future__ import annotations

import json
import socket

import pytest

from membase.clients import ChatClient, CredentialPool, FunctionChatModel
from membase.clients.guard import allow_model_requests
from membase.exceptions import ConfigError, DatasetError, ModelUnreachableError
from membase.layers.long_context import LongContextLayer
from membase.runners import (
    ConstructionRunner,
    ConstructionRunnerConfig,
    EvaluationRunner,
    EvaluationRunnerConfig,
    SearchRunner,
    SearchRunnerConfig,
)
from tests.membase._helpers import FIXED_ANSWER, conv26_two_sessions, judge_by_reference, run_pipeline


@pytest.fixture(scope="module")
def dataset(locomo_path):
    return conv26_two_sessions(locomo_path, max_questions=4)


def _common(tmp_path, **extra):
    return {"layer_type": "Long-Context", "save_dir": str(tmp_path / "memory"),
            "traced_data_save_dir": str(tmp_path / "traced"), "show_progress": False, **extra}


def test_a_failing_message_is_recorded_and_construction_goes_on(dataset, tmp_path, monkeypatch):
    original = LongContextLayer.add_message

    def flaky(self, message, **kw):
        if message.id == "U1:D1:2":
            raise RuntimeError("simulated ingestion failure")
        return original(self, message, **kw)

    monkeypatch.setattr(LongContextLayer, "add_message", flaky)
    report = ConstructionRunner(ConstructionRunnerConfig(**_common(tmp_path))).run(dataset)
    assert [(f.item_id, f.error) for f in report.failures] == [("U1:D1:2", "RuntimeError: simulated ingestion failure")]
    assert report.users_done == ["locomo-1"]
    assert report.items_done == len(dataset.trajectories[0].messages) - 1
    saved = json.loads((tmp_path / "memory" / "construction_report.json").read_text())
    assert saved["failures"][0]["item_id"] == "U1:D1:2"
    graph = json.loads((tmp_path / "traced" / "locomo-1" / "graph_construction.json").read_text())
    assert "U1:D1:3" in {n["name"] for n in graph["data"]["nodes"]}


def test_saved_users_are_skipped_unless_rerun(dataset, tmp_path):
    config = ConstructionRunnerConfig(**_common(tmp_path))
    assert ConstructionRunner(config).run(dataset).users_done == ["locomo-1"]
    again = ConstructionRunner(config).run(dataset)
    assert (again.users_done, again.users_skipped) == ([], ["locomo-1"])
    rerun = ConstructionRunner(config.model_copy(update={"rerun": True})).run(dataset)
    assert rerun.users_done == ["locomo-1"]


def test_rerun_starts_from_an_empty_store(dataset, tmp_path):
    common = _common(tmp_path, layer_type="NaiveRAG",
                     memory_config={"retriever_name_or_path": "fake:32", "retriever_dim": 32})
    config = ConstructionRunnerConfig(**common)
    ConstructionRunner(config).run(dataset)
    ConstructionRunner(config.model_copy(update={"rerun": True})).run(dataset)
    from membase.layers import build_layer

    layer = build_layer("NaiveRAG", user_id="locomo-1", save_dir=str(tmp_path / "memory" / "locomo-1"),
                        **common["memory_config"])
    assert layer.load_memory()
    assert layer.store.count() == len(dataset.trajectories[0].messages)  # not twice as many
    layer.cleanup()


def test_search_without_memory_fails_that_user_clearly(dataset, tmp_path):
    runner = SearchRunner(SearchRunnerConfig(**_common(tmp_path)))
    report = runner.run(dataset)
    assert "run construction first" in report.users_failed["locomo-1"]
    assert json.loads(runner.results_path.read_text()) == []


def test_failing_questions_are_recorded_and_evaluation_goes_on(dataset, tmp_path):
    target = dataset.qa_pair_lists[0][1].question

    def qa(messages, **_kw):
        if target in messages[-1]["content"]:
            raise TimeoutError("simulated QA failure")
        return FIXED_ANSWER

    (_, _, evaluation), _, runner = run_pipeline("Long-Context", {}, dataset, tmp_path,
                                                 qa_model=FunctionChatModel(qa))
    results = json.loads(runner.output_path.read_text())
    failed = [r for r in results if "error" in r]
    assert len(failed) == 1 and failed[0]["prediction"] is None and failed[0]["metrics"] == {}
    assert "simulated QA failure" in failed[0]["error"]
    assert [f.item_id for f in evaluation.failures] == [dataset.qa_pair_lists[0][1].id]
    graph = json.loads((tmp_path / "traced" / "locomo-1" / "graph_evaluation.json").read_text())
    qa_ops = [o for o in graph["data"]["operations"] if o["op_name"] == "question-answering"]
    assert len(qa_ops) == len(results) - 1


def test_tracing_off_writes_results_but_no_graphs(dataset, tmp_path):
    common = _common(tmp_path, tracing=False)
    ConstructionRunner(ConstructionRunnerConfig(**common)).run(dataset)
    search = SearchRunner(SearchRunnerConfig(**common))
    search.run(dataset)
    records = json.loads(search.results_path.read_text())
    assert records and records[0]["retrieved_memories"][0]["metadata"]["trace_id"] == "memory-unit"
    assert not (tmp_path / "traced").exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_endpoint_stops_with_one_error_and_valid_partial_output(dataset, tmp_path):
    (_, _, _), search, _ = run_pipeline("Long-Context", {}, dataset, tmp_path)
    pool = CredentialPool(["k"], [f"http://127.0.0.1:{_closed_port()}/v1"])
    runner = EvaluationRunner(
        EvaluationRunnerConfig(search_results_path=str(search.results_path), traced_data_save_dir=str(tmp_path / "t2"),
                               show_progress=False),
        qa_model=ChatClient("m", credentials=pool, max_retries=1, backoff_base=0.01, timeout=2),
        judge_model=FunctionChatModel(judge_by_reference),
    )
    runner.output_path.unlink()
    with allow_model_requests(), pytest.raises(ModelUnreachableError, match="unreachable after 2 attempts"):
        runner.run()
    assert json.loads(runner.output_path.read_text()) == []


def test_bad_evaluation_input(tmp_path):
    config = EvaluationRunnerConfig(search_results_path=str(tmp_path / "nope.json"), show_progress=False)
    with pytest.raises(DatasetError, match="run the search stage first"):
        EvaluationRunner(config, qa_model=FunctionChatModel(lambda *_a, **_k: "x"),
                         judge_model=FunctionChatModel(lambda *_a, **_k: "x")).run()
    with pytest.raises(ConfigError, match="needs a judge model"):
        EvaluationRunner(config, qa_model=FunctionChatModel(lambda *_a, **_k: "x"))


def test_layer_token_usage_is_saved_per_user(dataset, tmp_path, monkeypatch):
    monkeypatch.setattr(LongContextLayer, "token_usage", lambda self: {"llm": {"requests": 3}})
    report = ConstructionRunner(ConstructionRunnerConfig(**_common(tmp_path))).run(dataset)
    assert report.usage == {"locomo-1": {"llm": {"requests": 3}}}
    saved = json.loads((tmp_path / "memory" / "locomo-1" / "token_cost.json").read_text())
    assert saved == {"llm": {"requests": 3}}


def test_parallel_users_get_separate_graphs(locomo_path, tmp_path):
    from membase.datasets import load_locomo
    from membase.types import MemoryDataset

    full = load_locomo(locomo_path)
    trajs = [t.model_copy(update={"sessions": t.sessions[:1]}) for t in full.trajectories[:3]]
    dataset = MemoryDataset(trajectories=trajs, qa_pair_lists=[[], [], []])
    report = ConstructionRunner(ConstructionRunnerConfig(**_common(tmp_path, num_workers=3))).run(dataset)
    assert sorted(report.users_done) == ["locomo-1", "locomo-2", "locomo-3"] and report.failures == []
    for traj in trajs:
        graph = json.loads((tmp_path / "traced" / traj.id / "graph_construction.json").read_text())
        assert graph["user_id"] == traj.id
        names = [n["name"] for n in graph["data"]["nodes"] if n["category"] == "message"]
        assert names == [m.id for m in traj.messages]


def test_bounded_map_keeps_order_and_stops_at_the_first_escaping_error():
    import threading
    import time

    from membase.runners._common import bounded_map

    assert bounded_map(lambda x: x * 2, [3, 1, 2], 2) == [6, 2, 4]
    started = []
    lock = threading.Lock()

    def work(x):
        with lock:
            started.append(x)
        if x == 0:
            raise ModelUnreachableError("down")
        time.sleep(0.05)
        return x

    with pytest.raises(ModelUnreachableError):
        bounded_map(work, list(range(50)), 2)
    assert len(started) < 50


def _three_users(locomo_path):
    from membase.datasets import load_locomo
    from membase.types import MemoryDataset

    full = load_locomo(locomo_path)
    trajs = [t.model_copy(update={"sessions": t.sessions[:1]}) for t in full.trajectories[:3]]
    return MemoryDataset(trajectories=trajs, qa_pair_lists=[[], [], []])


def test_a_user_that_cannot_be_built_or_cleaned_up_fails_alone(locomo_path, tmp_path, monkeypatch):
    import membase.runners.construction as construction

    dataset = _three_users(locomo_path)
    real_build = construction.build_layer

    def build(layer_type, *, user_id, **kw):
        if user_id == "locomo-1":
            raise RuntimeError("simulated build failure")
        layer = real_build(layer_type, user_id=user_id, **kw)
        if user_id == "locomo-2":
            def broken_cleanup():
                raise OSError("simulated cleanup failure")
            layer.cleanup = broken_cleanup
        return layer

    monkeypatch.setattr(construction, "build_layer", build)
    report = ConstructionRunner(ConstructionRunnerConfig(**_common(tmp_path, num_workers=2))).run(dataset)
    assert report.users_done == ["locomo-3"]
    assert "simulated build failure" in report.users_failed["locomo-1"]
    assert "simulated cleanup failure" in report.users_failed["locomo-2"]
    assert (tmp_path / "memory" / "construction_report.json").is_file()


def test_saved_users_are_skipped_without_building_a_layer(dataset, tmp_path, monkeypatch):
    import membase.runners.construction as construction

    config = ConstructionRunnerConfig(**_common(tmp_path))
    ConstructionRunner(config).run(dataset)
    monkeypatch.setattr(construction, "build_layer", lambda *a, **k: pytest.fail("layer built for a saved user"))
    assert ConstructionRunner(config).run(dataset).users_skipped == ["locomo-1"]


def test_failures_a_layer_records_reach_the_report(dataset, tmp_path, monkeypatch):
    original_add, original_flush = LongContextLayer.add_message, LongContextLayer.flush

    def add(self, message, **kw):
        self.failures = getattr(self, "failures", [])
        if message.id == "U1:D1:3":
            self.failures.append({"message_id": message.id, "error": "ExtractionFailed: bad JSON\ndetails"})
            return None
        return original_add(self, message, **kw)

    def flush(self):
        self.failures.append({"message_id": "<flush>", "error": "TimeoutError: late"})
        return original_flush(self)

    monkeypatch.setattr(LongContextLayer, "add_message", add)
    monkeypatch.setattr(LongContextLayer, "flush", flush)
    report = ConstructionRunner(ConstructionRunnerConfig(**_common(tmp_path))).run(dataset)
    assert [(f.item_id, f.error) for f in report.failures] == [
        ("U1:D1:3", "ExtractionFailed: bad JSON"), ("<flush>", "TimeoutError: late")]
    assert report.items_done == len(dataset.trajectories[0].messages) - 1
    saved = json.loads((tmp_path / "memory" / "construction_report.json").read_text())
    assert [f["item_id"] for f in saved["failures"]] == ["U1:D1:3", "<flush>"]


def _naive_rag(tmp_path):
    return _common(tmp_path, layer_type="NaiveRAG",
                   memory_config={"retriever_name_or_path": "fake:32", "retriever_dim": 32})


def _stored_count(tmp_path, common):
    from membase.layers import build_layer

    layer = build_layer("NaiveRAG", user_id="locomo-1", save_dir=str(tmp_path / "memory" / "locomo-1"),
                        **common["memory_config"])
    try:
        assert layer.load_memory()
        return layer.store.count()
    finally:
        layer.cleanup()


def test_a_crashed_build_is_rebuilt_from_scratch(dataset, tmp_path):
    common = _naive_rag(tmp_path)
    config = ConstructionRunnerConfig(**common)
    ConstructionRunner(config).run(dataset)
    (tmp_path / "memory" / "locomo-1" / "config.json").unlink()  # as if it crashed before saving
    for rerun in (False, True):
        report = ConstructionRunner(config.model_copy(update={"rerun": rerun})).run(dataset)
        assert report.users_done == ["locomo-1"]
        assert _stored_count(tmp_path, common) == len(dataset.trajectories[0].messages)  # not twice as many
        (tmp_path / "memory" / "locomo-1" / "config.json").unlink()


def test_a_user_id_outside_the_save_dir_is_refused(dataset, tmp_path):
    traj = dataset.trajectories[0].model_copy(update={"id": ".."})
    from membase.types import MemoryDataset

    bad = MemoryDataset(trajectories=[traj], qa_pair_lists=[[]])
    (tmp_path / "keep.txt").write_text("x")
    report = ConstructionRunner(ConstructionRunnerConfig(**_common(tmp_path, rerun=True))).run(bad)
    assert "does not name a folder" in report.users_failed[".."]
    assert (tmp_path / "keep.txt").is_file()


def test_tracing_switch_is_scoped_to_the_run():
    import threading

    import smartcomment
    from membase.runners._common import tracing_switch

    assert smartcomment.is_tracing_enabled()
    seen = []
    with tracing_switch(False):
        assert not smartcomment.is_tracing_enabled()
        worker = threading.Thread(target=lambda: seen.append(smartcomment.is_tracing_enabled()))
        worker.start()
        worker.join()
    assert seen == [True]  # another thread (another run) keeps recording
    assert smartcomment.is_tracing_enabled()


def test_search_of_an_empty_slice_writes_an_empty_results_file(dataset, tmp_path):
    runner = SearchRunner(SearchRunnerConfig(**_common(tmp_path), start_idx=5, end_idx=5))
    report = runner.run(dataset.select(5, 5))
    assert json.loads(runner.results_path.read_text()) == []
    assert report.outputs == [str(runner.results_path)]
    assert (tmp_path / "memory" / "search_report.json").is_file()


def test_search_report_is_saved_when_a_fatal_error_stops_the_run(dataset, tmp_path, monkeypatch):
    common = _common(tmp_path)
    ConstructionRunner(ConstructionRunnerConfig(**common)).run(dataset)

    def down(self, query, k=10, **kw):
        raise ModelUnreachableError("endpoint down")

    monkeypatch.setattr(LongContextLayer, "retrieve", down)
    runner = SearchRunner(SearchRunnerConfig(**common))
    with pytest.raises(ModelUnreachableError):
        runner.run(dataset)
    assert json.loads((tmp_path / "memory" / "search_report.json").read_text())["stage"] == "search"
    assert json.loads(runner.results_path.read_text()) == []


def test_evaluation_means_count_failed_questions_as_zero(dataset, tmp_path):
    target = dataset.qa_pair_lists[0][0].question

    def qa(messages, **_kw):
        if target in messages[-1]["content"]:
            raise TimeoutError("simulated QA failure")
        return FIXED_ANSWER

    (_, _, evaluation), _, runner = run_pipeline("Long-Context", {}, dataset, tmp_path,
                                                 qa_model=FunctionChatModel(qa))
    results = json.loads(runner.output_path.read_text())
    overall = evaluation.metrics["all"]
    assert (overall["n"], overall["failed"]) == (len(results), 1)
    judged = [r["metrics"]["llm_judge"]["value"] for r in results if "llm_judge" in r["metrics"]]
    assert overall["llm_judge"] == pytest.approx(sum(judged) / len(results))
    assert overall["mean_over_scored"]["llm_judge"] == pytest.approx(sum(judged) / len(judged))
