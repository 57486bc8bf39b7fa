"""The promises of the attribution runner and CLI (issue 16): nothing lost, keys never written,
one clear error, per-case isolation, resume. Each test here failed on the code before the fix."""

import asyncio
import json
import os
import stat
import warnings

import pytest

from membase.clients import ScriptedChatModel
from toolkits._case_cache import CaseCache
from toolkits.attribution import cli as attribution_cli
from toolkits.runner import MemTraceConfig, MemTraceRunner
from toolkits.strategies import register_strategy, unregister_strategy

from .conftest import OP_EXTRACT_5, Case, interrupt_after_the_run

QUERY = "query:locomo-qa-1-2@1"
SECRET = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _run(runner, cases, graph, **kw):
    return asyncio.run(runner.arun(cases, graph, **kw))


def _ef_args(bench_dir, out, *extra):
    return [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0", *extra]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err, err
    return err


# -- 1. keys: masked first, then cut ----------------------------------------------------------


@pytest.mark.parametrize("offset", [470, 480, 490, 495])
def test_a_key_straddling_the_cut_is_never_written_half_masked(bench_dir, tmp_path, offset):
    """The failure text is cut at 500 characters; a key crossing that point must still be masked."""
    cfg = tmp_path / "api.json"
    cfg.write_text(json.dumps({"api_keys": [SECRET], "base_urls": ["http://127.0.0.1:9/v1"]}))
    # "agent error: RuntimeError: " precedes the message in the failure text
    message = "x" * (offset - len("agent error: RuntimeError: ")) + f" {SECRET} tail"

    def factory(ctx):
        return ScriptedChatModel([RuntimeError(message)])

    out = tmp_path / "o.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--api-config-path", str(cfg),
            "--exploration-strategy", "long_context", "--starting-nodes-type", "source_evidence", "--no-progress",
            "--bootstrap-samples", "0", "--max-retries", "0", "--max-iters", "2", "--cache-dir", str(tmp_path / "c")]
    assert attribution_cli.main(args, model_factory=factory) == 0
    text = out.read_text()
    assert SECRET[:8] not in text  # not even the start of the key survives the cut
    failure = json.loads(text)["results"][0]["attribution_failure"]
    assert len(failure) <= 500 and failure.startswith("agent error: RuntimeError: x")


def test_runner_masks_before_cutting_strategy_exceptions(bench_graph):
    api_keys = [SECRET]

    async def boom(ctx):
        raise ValueError("y" * 485 + SECRET)

    register_strategy("boom_key", boom, needs_model=False, replace=True)
    try:
        runner = MemTraceRunner(MemTraceConfig(exploration_strategy="boom_key", api_keys=api_keys,
                                               base_urls=["http://127.0.0.1:9/v1"]))
        result = _run(runner, [Case(QUERY)], bench_graph, use_pseudo_source_evidence=False).results[0]
    finally:
        unregister_strategy("boom_key")
    assert SECRET[:6] not in result.failure and len(result.failure) <= 500


def test_agent_failure_text_keeps_the_whole_key_for_the_caller_to_mask():
    from graphtrace import run_attribution_agent

    class Agent:
        async def reply_stream(self, *a, **k):
            raise RuntimeError("z" * 600 + SECRET)
            yield  # pragma: no cover

    outcome = asyncio.run(run_attribution_agent(Agent(), "task"))
    assert SECRET in outcome.failure  # a cut here would leave half a key that no mask can match


# -- 2. stale answers: the cache is keyed by the graph's content -------------------------------


def test_editing_a_graph_invalidates_its_cached_answers(bench_dir, tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "o.json"
    assert attribution_cli.main(_ef_args(bench_dir, out, "--cache-dir", str(cache))) == 0
    assert not any(r["attribution_cached"] for r in json.loads(out.read_text())["results"])
    assert attribution_cli.main(_ef_args(bench_dir, out, "--cache-dir", str(cache))) == 0
    assert all(r["attribution_cached"] for r in json.loads(out.read_text())["results"])
    # same file, same graph_id, one message reworded: graph a's cases must run again
    a = bench_dir / "mem0" / "a.json"
    data = json.loads(a.read_text())
    node = next(n for n in data["data"]["nodes"] if n["category"] == "message")
    node["value"] = node["value"].replace("Caroline", "Carolyn")
    a.write_text(json.dumps(data))
    assert attribution_cli.main(_ef_args(bench_dir, out, "--cache-dir", str(cache))) == 0
    results = json.loads(out.read_text())["results"]
    assert [r["attribution_cached"] for r in results] == [False, False, True, True]  # a.json's, then b.json's


def test_graph_digest_is_computed_once_per_graph(bench_graph, monkeypatch):
    from toolkits import runner as runner_module

    calls = []
    real = runner_module.graph_fingerprint
    monkeypatch.setattr(runner_module, "graph_fingerprint", lambda g: calls.append(g) or real(g))
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow"))
    _run(runner, [Case(QUERY, golden_answer=f"g{i}") for i in range(5)], bench_graph, use_pseudo_source_evidence=False)
    assert len(calls) == 1


# -- 3. per-case failures never stop the run ----------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        {"time": None},
        {"time": "slow"},
        {"time": True},
        {"error_attribution_result": {"error_type": "Bogus", "op_id": "op", "reason": "r"}},
        {"error_attribution_result": {"error_type": "UpdateError", "op_id": 7, "reason": "r"}},
        {"error_attribution_result": "UpdateError"},
        {"evidence_ids": "U1:D2:2@1"},
        {"usage": {"input_tokens": -1}},
    ],
)
def test_a_damaged_cache_entry_is_a_miss_not_a_crash(bench_graph, tmp_path, damage):
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow", cache_dir=str(tmp_path)))
    cases = [Case(QUERY, source_evidence_full_node_ids=["U1:D2:2@1"]),
             Case("query:locomo-qa-1-1@1", query="'When did Caroline go to the LGBTQ support group?'",
                  golden_answer="7 May 2023", source_evidence_full_node_ids=["U1:D1:3@1"])]
    first = _run(runner, cases, bench_graph, use_source_evidence_nodes=True)
    assert all(r.ok for r in first.results)
    entries = sorted(tmp_path.glob("*.json"))
    assert len(entries) == 2
    for path in entries:
        path.write_text(json.dumps({**json.loads(path.read_text()), **damage}))
    with pytest.warns(UserWarning, match="ignoring the stored result"):
        again = _run(MemTraceRunner(runner.config), cases, bench_graph, use_source_evidence_nodes=True)
    assert [r.cached for r in again.results] == [False, False]  # attributed again
    assert [r.prediction for r in again.results] == [r.prediction for r in first.results]
    assert all(json.loads(p.read_text())["time"] is not None for p in entries)  # and rewritten whole


def test_a_cache_lookup_that_raises_only_costs_that_case_its_reuse(bench_graph, tmp_path, monkeypatch):
    def broken_load(self, key):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(CaseCache, "load", broken_load)
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow", cache_dir=str(tmp_path)))
    with pytest.warns(UserWarning, match="no cache lookup"):
        report = _run(runner, [Case(QUERY), Case(QUERY, golden_answer="x")], bench_graph, use_pseudo_source_evidence=False)
    assert len(report.results) == 2 and report.costs.executed_cases == 2


def test_annotations_without_final_op_id_are_attributed_and_scored_wrong(bench_dir, tmp_path):
    a = bench_dir / "mem0" / "a.json"
    data = json.loads(a.read_text())
    del data["data"]["annotations"][1]["final_op_id"]
    data["data"]["annotations"][0]["final_op_id"] = None
    a.write_text(json.dumps(data))
    out = tmp_path / "o.json"
    with pytest.warns(UserWarning, match="2 annotation\\(s\\) have no final_op_id"):
        assert attribution_cli.main(_ef_args(bench_dir, out)) == 0
    data = json.loads(out.read_text())
    assert data["metrics"]["total_cases"] == 4
    assert [r["is_op_id_correct"] for r in data["results"][:2]] == [False, False]
    assert all(r["attribution_failure"] is None for r in data["results"])


def test_metrics_never_raise_on_missing_gold_labels():
    from toolkits.metrics import MISSING_LABEL, AttributionRecord, attribution_metrics

    pred = {"error_type": "UpdateError", "op_id": "", "reason": "r"}
    records = [
        AttributionRecord.from_result({"final_error_type": "UpdateError", "error_attribution_result": pred}),
        AttributionRecord.from_result({"final_op_id": "", "error_attribution_result": pred}),
        AttributionRecord.from_result({"final_error_type": ["UpdateError"], "final_op_id": 3,
                                       "error_attribution_result": pred}),
    ]
    m = attribution_metrics(records, bootstrap_samples=0)
    assert m["total_cases"] == 3 and m["operation_identifier_prediction_accuracy"] == 0.0  # "" never matches ""
    assert m["error_type_prediction_accuracy"] == pytest.approx(1 / 3)
    assert m["confusion_matrix"][MISSING_LABEL]["UpdateError"] == 2


def test_unknown_error_types_from_a_strategy_are_rejected(bench_graph):
    class Out:
        prediction = {"error_type": "Bogus", "op_id": "op-1", "reason": "r"}
        failure = None
        usage = {}

    register_strategy("bogus", lambda ctx: Out(), needs_model=False, replace=True)
    try:
        result = _run(MemTraceRunner(MemTraceConfig(exploration_strategy="bogus")), [Case(QUERY)], bench_graph,
                      use_pseudo_source_evidence=False).results[0]
    finally:
        unregister_strategy("bogus")
    assert not result.ok and "Bogus" in result.failure


# -- per-case isolation: every kind of exception stays with its case ----------------------------


class _CustomError(Exception):
    pass


@pytest.mark.parametrize(
    "exc",
    [KeyError("k"), AttributeError("a"), TypeError("t"), ZeroDivisionError("z"), OSError("o"), RecursionError("r"),
     LookupError("l"), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), AssertionError("a"), _CustomError("c")],
    ids=lambda e: type(e).__name__,
)
def test_any_exception_of_a_strategy_is_that_cases_failure(bench_graph, exc):
    async def strategy(ctx):
        if ctx.case.golden_answer == "bad":
            raise exc
        return type("O", (), {"prediction": {"error_type": "UpdateError", "op_id": "op", "reason": "r"},
                              "failure": None, "usage": {}})()

    register_strategy("raiser", strategy, needs_model=False, replace=True)
    try:
        report = _run(MemTraceRunner(MemTraceConfig(exploration_strategy="raiser", max_retries=0)),
                      [Case(QUERY), Case(QUERY, golden_answer="bad"), Case(QUERY)], bench_graph,
                      use_pseudo_source_evidence=False, batch_size=2)
    finally:
        unregister_strategy("raiser")
    assert [r.ok for r in report.results] == [True, False, True]
    assert report.results[1].failure.startswith(type(exc).__name__)


@pytest.mark.parametrize("exc", [ConnectionResetError("reset by peer"), OSError(104, "reset"), TimeoutError("read")])
def test_a_transient_exception_of_a_strategy_is_retried_then_succeeds(bench_graph, exc):
    calls = []

    async def flaky(ctx):
        calls.append(1)
        if len(calls) == 1:
            raise exc
        return type("O", (), {"prediction": {"error_type": "UpdateError", "op_id": "op", "reason": "r"},
                              "failure": None, "usage": {}})()

    async def no_sleep(_):
        pass

    register_strategy("flaky", flaky, needs_model=False, replace=True)
    try:
        result = _run(MemTraceRunner(MemTraceConfig(exploration_strategy="flaky", max_retries=2), sleep=no_sleep),
                      [Case(QUERY)], bench_graph, use_pseudo_source_evidence=False).results[0]
    finally:
        unregister_strategy("flaky")
    assert result.ok and result.attempts == 2


@pytest.mark.parametrize("exc", [KeyError("no such node"), RuntimeError("index broken"), ValueError("bad query")])
def test_a_failing_evidence_retrieval_stays_with_its_case(bench_graph, exc):
    class Pool:
        def get(self, graph):
            raise exc

        def close(self):
            pass

    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow"), retriever_pool=Pool())
    report = _run(runner, [Case(QUERY), Case(QUERY)], bench_graph, use_pseudo_source_evidence=True)
    assert [r.ok for r in report.results] == [False, False]
    assert all(type(exc).__name__ in r.failure for r in report.results)


# -- 4./5. bad inputs: one clear line, exit 2, before any case runs ------------------------------


def test_an_output_path_that_is_a_folder_exits_2_before_any_case(bench_dir, tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(MemTraceRunner, "arun", lambda *a, **k: ran.append(1))
    folder = tmp_path / "out.json"
    folder.mkdir()
    assert attribution_cli.main(_ef_args(bench_dir, folder)) == 2
    assert "is a folder" in _one_error_line(capsys) and not ran


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda anns: anns.__setitem__(0, "not an object"), "data.annotations[0]: expected an object"),
        (lambda anns: anns[1].__setitem__("source_evidence_ids", "U1:D1:3@1"), "data.annotations[1].source_evidence_ids"),
        (lambda anns: anns[0].__setitem__("query_id", 42), "data.annotations[0].query_id"),
        (lambda anns: anns[0].__setitem__("query_id", ["query:x@1"]), "data.annotations[0].query_id"),
        (lambda anns: anns[0].__setitem__("golden_answers", {"a": 1}), "data.annotations[0].golden_answers"),
        (lambda anns: anns[0].pop("prediction"), "data.annotations[0]: missing key(s) prediction"),
    ],
)
def test_malformed_annotations_are_one_line_naming_file_and_field(bench_dir, tmp_path, capsys, edit, field):
    a = bench_dir / "mem0" / "a.json"
    data = json.loads(a.read_text())
    edit(data["data"]["annotations"])
    a.write_text(json.dumps(data))
    assert attribution_cli.main(_ef_args(bench_dir, tmp_path / "o.json")) == 2
    err = _one_error_line(capsys)
    assert str(a) in err and field in err


def test_annotations_that_are_not_a_list_are_one_line(bench_dir, tmp_path, capsys):
    a = bench_dir / "mem0" / "a.json"
    data = json.loads(a.read_text())
    data["data"]["annotations"] = {"query_id": "x"}
    a.write_text(json.dumps(data))
    assert attribution_cli.main(_ef_args(bench_dir, tmp_path / "o.json")) == 2
    assert "data.annotations: expected a list" in _one_error_line(capsys)


def test_a_node_without_class_name_names_the_real_problem(bench_dir, tmp_path, capsys):
    a = bench_dir / "mem0" / "a.json"
    data = json.loads(a.read_text())
    index = next(i for i, n in enumerate(data["data"]["nodes"]) if n["class_name"])
    del data["data"]["nodes"][index]["class_name"]
    a.write_text(json.dumps(data))
    assert attribution_cli.main(_ef_args(bench_dir, tmp_path / "o.json")) == 2
    err = _one_error_line(capsys)
    assert f"data.nodes[{index}]" in err and "missing key 'class_name'" in err and "missing node" not in err


def test_annotations_without_final_error_type_are_skipped_with_a_count(bench_dir, tmp_path):
    a = bench_dir / "mem0" / "a.json"
    data = json.loads(a.read_text())
    del data["data"]["annotations"][0]["final_error_type"]
    data["data"]["annotations"][1]["final_error_type"] = ""
    a.write_text(json.dumps(data))
    out = tmp_path / "o.json"
    with pytest.warns(UserWarning, match="2 annotation\\(s\\) without a final_error_type were skipped"):
        assert attribution_cli.main(_ef_args(bench_dir, out)) == 0
    assert json.loads(out.read_text())["metrics"]["total_cases"] == 2


@pytest.mark.parametrize(
    "flag, value",
    [("--bootstrap-samples", "-5"), ("--keep-recent", "-1"), ("--max-retries", "-2"), ("--num-starting-points", "-3"),
     ("--case-timeout", "0"), ("--retry-backoff", "-1"), ("--temperature", "nan"), ("--batch-size", "0")],
)
def test_negative_counts_are_usage_errors(bench_dir, tmp_path, capsys, flag, value):
    with pytest.raises(SystemExit) as exit_info:
        attribution_cli.main(_ef_args(bench_dir, tmp_path / "o.json", flag, value))
    assert exit_info.value.code == 2 and flag in capsys.readouterr().err


def test_ctrl_c_while_graphs_load_is_one_line_and_exit_130(bench_dir, tmp_path, capsys, monkeypatch):
    import toolkits.bench_utils as bench_utils

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench_utils, "load_memtracebench", interrupted)
    assert attribution_cli.main(_ef_args(bench_dir, tmp_path / "o.json")) == 130
    err = capsys.readouterr().err.strip()
    assert err.startswith("interrupted") and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "o.json").exists()


# -- 6. checkpointing is linear: one journal line per case, one output write per run ------------


def test_each_case_is_journalled_once_and_the_output_written_once(bench_dir, tmp_path, monkeypatch):
    from toolkits import _case_cache
    from toolkits._journal import journal_path

    out = tmp_path / "o.json"
    writes = []
    real = _case_cache.atomic_write_json
    monkeypatch.setattr(_case_cache, "atomic_write_json", lambda path, payload, **k: (writes.append(path),
                                                                                      real(path, payload, **k)))
    seen_lines = []

    def count_journal(ctx):
        # by the time case k runs (batch size 1), the k earlier cases are already on disk
        seen_lines.append(len(journal_path(out).read_text().splitlines()) - 1)
        return type("O", (), {"prediction": {"error_type": "UpdateError", "op_id": "op", "reason": "r"},
                              "failure": None, "usage": {}})()

    register_strategy("count_journal", count_journal, needs_model=False, replace=True)
    try:
        args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "count_journal",
                "--no-provide-starting-nodes", "--no-progress", "--bootstrap-samples", "0", "--batch-size", "1"]
        assert attribution_cli.main(args) == 0
    finally:
        unregister_strategy("count_journal")
    assert seen_lines == [0, 1, 2, 3]
    assert [str(p) for p in writes] == [str(out)]  # not once per finished case
    assert not journal_path(out).exists()


def test_a_damaged_or_torn_journal_line_is_attributed_again(bench_dir, tmp_path, monkeypatch):
    from toolkits._journal import journal_path

    out = tmp_path / "o.json"
    journal = journal_path(out)
    real_run = asyncio.run
    interrupt_after_the_run(monkeypatch)  # a run whose every case finished, then Ctrl-C
    assert attribution_cli.main(_ef_args(bench_dir, out, "--batch-size", "1")) == 130
    monkeypatch.setattr(asyncio, "run", real_run)
    first = json.loads(out.read_text())
    header, *lines = journal.read_text().splitlines()
    assert len(lines) == 4
    third = json.loads(lines[2])
    third["entry"]["time"] = None  # damaged
    journal.write_text("\n".join([header, lines[0], lines[1], json.dumps(third), lines[3][: len(lines[3]) // 2]]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert attribution_cli.main(_ef_args(bench_dir, out)) == 0
    messages = [str(w.message) for w in caught]
    assert any("1 unreadable line(s)" in m for m in messages)
    assert any("ignoring the stored result" in m for m in messages)
    data = json.loads(out.read_text())
    assert data["complete"] is True
    assert [r["attribution_cached"] for r in data["results"]] == [True, True, False, False]
    assert [r["error_attribution_result"] for r in data["results"]] == [
        r["error_attribution_result"] for r in first["results"]]
    assert not journal.exists()


def test_no_resume_ignores_an_old_journal(bench_dir, tmp_path):
    from toolkits._journal import journal_path

    out = tmp_path / "o.json"
    journal_path(out).write_text('{"format": "memtrace-attribution-journal", "version": 1}\n')
    assert attribution_cli.main(_ef_args(bench_dir, out, "--no-resume")) == 0
    assert not journal_path(out).exists()


# -- 7. file modes follow the umask -------------------------------------------------------------


def test_output_cache_and_journal_follow_the_umask(bench_dir, tmp_path):
    from toolkits._journal import ResultJournal

    old = os.umask(0o027)
    try:
        out = tmp_path / "o.json"
        cache = tmp_path / "cache"
        assert attribution_cli.main(_ef_args(bench_dir, out, "--cache-dir", str(cache))) == 0
        journal = ResultJournal(tmp_path / "j.jsonl")
        journal.open(keep_existing=False)
        journal.close()
        files = [out, journal.path, *cache.glob("*.json")]
        assert len(files) == 6
        for f in files:
            assert stat.S_IMODE(f.stat().st_mode) == 0o640, f
    finally:
        os.umask(old)


# -- issue-14 item: the two records of a split are scored from the same labels the loader read ----


def test_build_output_keeps_the_reference_layout(bench_dir):
    from argparse import Namespace

    from toolkits.bench_utils import load_memtracebench
    from toolkits.runner import CaseResult, RunCosts

    graphs, cases = load_memtracebench(str(bench_dir), "mem0")
    from toolkits.attribution import OutputSettings, build_output

    args = OutputSettings(dataset_dir=str(bench_dir), split="mem0", bootstrap_samples=0, seed=0,
                          exploration_strategy="evidence_flow", model="m")
    results = [CaseResult(index=i, prediction={"error_type": "ExtractionError", "op_id": OP_EXTRACT_5, "reason": "r"})
               for i in range(len(cases))]
    output = build_output(args, cases, Namespace(results=results, costs=RunCosts()), graphs=graphs)
    assert {"split", "sampled_graph_paths", "results", "metrics"} <= set(output)
    assert output["metrics"]["error_type_prediction_accuracy"] == 0.25
    assert output["results"][0]["attributed_operation"]["op_name"] == "memory_system.extract_facts"
