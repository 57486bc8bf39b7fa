import asyncio
import json

import pytest

from toolkits import runner as runner_module
from toolkits._base import ApiPool, CredentialError
from toolkits.runner import MemTraceConfig, MemTraceRunner
from toolkits.strategies import available_strategies, get_strategy, register_strategy, unregister_strategy

from .conftest import Case

QUERY = "query:locomo-qa-1-2@1"


class Outcome:
    def __init__(self, prediction=None, failure=None, usage=None):
        self.prediction = prediction
        self.failure = failure
        self.usage = usage or {"input_tokens": 10, "output_tokens": 2, "num_calls": 1}


def answer(op="op-1", etype="ExtractionError"):
    return Outcome({"error_type": etype, "op_id": op, "reason": "because"})


@pytest.fixture
def strategy():
    """Registers a scripted strategy named 'fake'; behaviour per case via `plan[query]`."""
    calls = []
    plan = {}

    async def fake(ctx):
        calls.append(ctx)
        step = plan.get(ctx.case.golden_answer, answer())
        if callable(step):
            step = step(ctx)
            if asyncio.iscoroutine(step):
                step = await step
        if isinstance(step, BaseException):
            raise step
        return step

    register_strategy("fake", fake, needs_model=False, replace=True)
    yield calls, plan
    unregister_strategy("fake")


def run(runner, cases, graph, **kw):
    return asyncio.run(runner.arun(cases, graph, **kw))


def cases_for(n):
    return [Case(QUERY, golden_answer=f"g{i}") for i in range(n)]


def test_results_in_input_order_and_costs(strategy, bench_graph):
    calls, plan = strategy
    plan["g1"] = answer("op-2", "UpdateError")
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake"))
    report = run(runner, cases_for(3), bench_graph, batch_size=2, use_pseudo_source_evidence=False)
    assert [r.index for r in report.results] == [0, 1, 2]
    assert report.results[1].prediction == {"error_type": "UpdateError", "op_id": "op-2", "reason": "because"}
    assert report.costs.executed_cases == 3 and report.costs.failed_cases == 0
    assert report.costs.total_input_tokens == 30 and report.costs.total_model_calls == 3
    assert report.costs.as_reference()["average_input_tokens"] == 10
    assert all(c.evidence_ids is None for c in calls)


def test_one_failing_case_is_recorded_and_others_finish(strategy, bench_graph):
    calls, plan = strategy
    plan["g1"] = ValueError("model exploded")
    plan["g2"] = Outcome(failure="no answer: exceed_max_iters")
    plan["g3"] = answer(etype="NotAType")
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake", max_retries=2))
    report = run(runner, cases_for(5), bench_graph, batch_size=3, use_pseudo_source_evidence=False)
    ok = [r.ok for r in report.results]
    assert ok == [True, False, False, False, True]
    assert report.results[1].failure == "ValueError: model exploded"
    assert report.results[1].attempts == 1  # not transient: no retry
    assert report.results[2].failure.startswith("no answer")
    assert "unknown error type" in report.results[3].failure
    assert report.costs.failed_cases == 3


def rate_limit_error(message):
    import httpx
    import openai

    request = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    return openai.RateLimitError(message, response=httpx.Response(429, request=request), body=None)


def test_transient_errors_are_retried_with_backoff(strategy, bench_graph):
    calls, plan = strategy
    attempts = {"n": 0}

    def flaky(ctx):
        attempts["n"] += 1
        if attempts["n"] < 3:
            return rate_limit_error("429 slow down")
        return answer()

    plan["g0"] = flaky
    delays = []

    async def fake_sleep(d):
        delays.append(d)

    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake", max_retries=3, retry_backoff_s=1.0), sleep=fake_sleep)
    report = run(runner, cases_for(1), bench_graph, use_pseudo_source_evidence=False)
    assert report.results[0].ok and report.results[0].attempts == 3
    assert len(delays) == 2 and 1.0 <= delays[0] <= 1.25 and 2.0 <= delays[1] <= 2.5
    assert report.results[0].usage["num_calls"] == 1


def test_transient_failures_exhaust_retries(strategy, bench_graph):
    calls, plan = strategy
    failed = Outcome(failure="agent error: APIConnectionError: connection refused")
    failed.error = ConnectionRefusedError("connection refused")  # classified by type, not by text
    plan["g0"] = failed

    async def no_sleep(d):
        pass

    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake", max_retries=2), sleep=no_sleep)
    result = run(runner, cases_for(1), bench_graph, use_pseudo_source_evidence=False).results[0]
    assert not result.ok and result.attempts == 3 and "APIConnectionError" in result.failure


def test_case_timeout_is_a_failure(strategy, bench_graph):
    calls, plan = strategy

    async def slow(ctx):
        await asyncio.sleep(5)
        return answer()

    async def polite(ctx):  # honours ctx.timeout like the agent strategies do
        assert ctx.timeout == 0.05
        return Outcome(failure="timeout: the agent did not answer within 0.05 s")

    plan["g0"] = slow
    plan["g1"] = polite
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake", case_timeout_s=0.05, max_retries=2))
    runner_module._TIMEOUT_GRACE_S = 0.05
    try:
        result = run(runner, cases_for(3), bench_graph, use_pseudo_source_evidence=False).results
    finally:
        runner_module._TIMEOUT_GRACE_S = 5.0
    assert result[0].failure.startswith("timeout") and result[0].attempts == 1  # timeouts are not retried
    assert result[1].failure.startswith("timeout") and result[1].attempts == 1
    assert result[2].ok


def test_missing_query_node_fails_without_running_strategy(strategy, bench_graph):
    calls, _ = strategy
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake"))
    report = run(runner, [Case("query:nope@1")], bench_graph)
    assert "not found" in report.results[0].failure and calls == []


def test_concurrency_is_bounded(strategy, bench_graph):
    calls, plan = strategy
    live = {"now": 0, "max": 0}

    async def tracked(ctx):
        live["now"] += 1
        live["max"] = max(live["max"], live["now"])
        await asyncio.sleep(0.01)
        live["now"] -= 1
        return answer()

    for i in range(6):
        plan[f"g{i}"] = tracked
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake"))
    run(runner, cases_for(6), bench_graph, batch_size=2, use_pseudo_source_evidence=False)
    assert live["max"] == 2


def test_cache_skips_finished_cases_and_retries_failed(strategy, bench_graph, tmp_path):
    calls, plan = strategy
    plan["g1"] = RuntimeError("boom")
    cfg = MemTraceConfig(exploration_strategy="fake", cache_dir=str(tmp_path / "cache"))
    first = run(MemTraceRunner(cfg), cases_for(3), bench_graph, use_pseudo_source_evidence=False)
    assert [r.ok for r in first.results] == [True, False, True]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2
    assert not list((tmp_path / "cache").glob("*.tmp"))
    calls.clear()
    plan.pop("g1")
    second = run(MemTraceRunner(cfg), cases_for(3), bench_graph, use_pseudo_source_evidence=False)
    assert [r.cached for r in second.results] == [True, False, True]
    assert [c.case.golden_answer for c in calls] == ["g1"]
    assert second.costs.executed_cases == 1 and second.costs.cached_cases == 2
    assert all(r.ok for r in second.results)
    # any config change that alters the answer misses the cache
    calls.clear()
    run(MemTraceRunner(cfg.model_copy(update={"model": "other"})), cases_for(1), bench_graph, use_pseudo_source_evidence=False)
    assert len(calls) == 1


def test_corrupt_cache_entry_is_a_miss(strategy, bench_graph, tmp_path):
    calls, _ = strategy
    cfg = MemTraceConfig(exploration_strategy="fake", cache_dir=str(tmp_path))
    run(MemTraceRunner(cfg), cases_for(1), bench_graph, use_pseudo_source_evidence=False)
    (entry,) = tmp_path.glob("*.json")
    entry.write_text("{truncated")
    calls.clear()
    report = run(MemTraceRunner(cfg), cases_for(1), bench_graph, use_pseudo_source_evidence=False)
    assert len(calls) == 1 and report.results[0].ok


def test_annotated_evidence_skips_unknown_ids(strategy, bench_graph):
    calls, _ = strategy
    case = Case(QUERY, source_evidence_full_node_ids=["U1:D2:2@1", "U9:D9:9@1"])
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake"))
    with pytest.warns(UserWarning, match="U9:D9:9@1"):
        report = run(runner, [case], bench_graph, use_source_evidence_nodes=True)
    assert calls[0].evidence_ids == ["U1:D2:2@1"] and not calls[0].evidence_is_pseudo
    assert report.results[0].evidence_source == "annotated"


def test_pseudo_evidence_is_retrieved_once_per_graph(strategy, bench_graph, monkeypatch):
    calls, _ = strategy
    closed = []
    original_close = runner_module.GraphRetrieverPool.close

    def close(pool):
        closed.append(pool.builds)
        original_close(pool)

    monkeypatch.setattr(runner_module.GraphRetrieverPool, "close", close)
    cfg = MemTraceConfig(exploration_strategy="fake", embedding_provider="hashing", num_starting_points=2)
    runner = MemTraceRunner(cfg)
    report = run(runner, cases_for(3), bench_graph, batch_size=3)
    assert closed == [1]  # one build for the graph, and the runner closed its pool at the end
    assert all(c.evidence_is_pseudo and len(c.evidence_ids) == 2 for c in calls)
    assert calls[0].evidence_ids[0] == "U1:D2:2@1"  # the message about moving from Sweden
    assert report.results[0].evidence_source == "retrieved"


def test_retrieved_evidence_is_only_what_the_system_had_seen_when_asked(strategy, fixtures_dir):
    """A question asked mid-conversation (an online run) cannot have lacked a message recorded after it."""
    from smartcomment.runtime.network import ExecNetwork

    calls, _ = strategy
    data = json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text())
    cfg = MemTraceConfig(exploration_strategy="fake", embedding_provider="hashing", num_starting_points=2)
    offline = run(MemTraceRunner(cfg), cases_for(1), ExecNetwork.import_graph(data))
    assert offline.results[0].evidence_ids[0] == "U1:D2:2@1"  # asked after the last message: all are candidates
    for node in data["data"]["nodes"]:
        if node.get("name") == "U1:D2:2":
            node["created_at"] = "2999-01-01 00:00:00.000"  # recorded after the question
    online = run(MemTraceRunner(cfg), cases_for(1), ExecNetwork.import_graph(data))
    evidence = online.results[0].evidence_ids
    assert len(evidence) == 2 and "U1:D2:2@1" not in evidence
    assert calls[-1].evidence_ids == evidence


def test_secrets_are_redacted_from_failures(strategy, bench_graph):
    calls, plan = strategy
    plan["g0"] = PermissionError("401 bad key sk-live-0123456789")
    cfg = MemTraceConfig(exploration_strategy="fake", api_keys=["sk-live-0123456789"], base_urls=["http://x/v1"])
    report = run(MemTraceRunner(cfg), cases_for(1), bench_graph, use_pseudo_source_evidence=False)
    assert "sk-live" not in report.results[0].failure and "***" in report.results[0].failure


def test_model_strategies_need_credentials(bench_graph, monkeypatch):
    seen = []

    async def needs(ctx):
        seen.append(ctx.build_model())
        return answer()

    register_strategy("needs-model", needs, replace=True)
    try:
        with pytest.raises(CredentialError, match="no credentials"):
            run(MemTraceRunner(MemTraceConfig(exploration_strategy="needs-model")), cases_for(1), bench_graph)
        factory_calls = []
        runner = MemTraceRunner(
            MemTraceConfig(exploration_strategy="needs-model"),
            model_factory=lambda ctx: factory_calls.append(ctx.case_index) or "model",
        )
        run(runner, cases_for(2), bench_graph, use_pseudo_source_evidence=False)
        assert factory_calls == [0, 1] and seen == ["model", "model"]
        pool = ApiPool(["k1", "k2"], ["http://a/v1", "http://b/v1"])
        runner = MemTraceRunner(MemTraceConfig(exploration_strategy="needs-model", model="m"), api_pool=pool)
        report = run(runner, cases_for(2), bench_graph, use_pseudo_source_evidence=False)
        assert all(r.ok for r in report.results)
        assert [m.credential.base_url for m in seen[2:]] == ["http://a/v1", "http://b/v1"]
    finally:
        unregister_strategy("needs-model")


def test_argument_validation(strategy, bench_graph):
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="fake"))
    with pytest.raises(ValueError, match="no failed cases"):
        run(runner, [], bench_graph)
    with pytest.raises(ValueError, match="batch_size"):
        run(runner, cases_for(1), bench_graph, batch_size=0)
    with pytest.raises(ValueError, match="one per case"):
        run(runner, cases_for(2), [bench_graph])
    with pytest.raises(ValueError, match="unknown exploration strategy"):
        run(MemTraceRunner(MemTraceConfig(exploration_strategy="zzz")), cases_for(1), bench_graph)

    async def inside():
        runner.run(cases_for(1), bench_graph)

    with pytest.raises(RuntimeError, match="running event loop"):
        asyncio.run(inside())


def test_registry():
    assert {"graph_search", "operation_block_search", "long_context", "evidence_flow"} <= set(available_strategies())
    assert get_strategy("evidence_flow").needs_model is False
    with pytest.raises(ValueError, match="already registered"):
        register_strategy("graph_search", lambda ctx: None)


def test_cache_identity_has_no_secrets(bench_graph):
    cfg = MemTraceConfig(api_keys=["sk-hidden-99"], base_urls=["u"], embedding_api_key="sk-emb-99")
    ident = MemTraceRunner(cfg).cache_identifier(
        bench_graph, Case(QUERY), use_source_evidence_nodes=False, use_pseudo_source_evidence=True,
        memory_system=None, custom_prior_knowledge=None,
    )
    blob = json.dumps(ident, default=str)
    assert "sk-hidden" not in blob and "sk-emb" not in blob


def test_prompt_changes_invalidate_the_cache(tmp_path, monkeypatch):
    import sys

    from toolkits.runner import prompts_fingerprint

    module = tmp_path / "fake_prompts_mod.py"
    module.write_text("PROMPT = 'v1'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("fake_prompts_mod", None)
    first = prompts_fingerprint(["fake_prompts_mod"])
    module.write_text("PROMPT = 'v2'\n")
    assert prompts_fingerprint(["fake_prompts_mod"]) != first
    assert prompts_fingerprint(["not_installed_mod_xyz"]) == prompts_fingerprint(["not_installed_mod_xyz"])
