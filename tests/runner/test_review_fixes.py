"""Regression tests of the runner/CLI review fixes (spec-attribution §5–§6, §12)."""

import asyncio

import pytest

from toolkits import runner as runner_module
from toolkits._base import is_transient_error
from toolkits._case_cache import CaseCache, cache_key
from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.runner import MemTraceConfig, MemTraceRunner
from toolkits.strategies import register_strategy, unregister_strategy

from .conftest import Case

QUERY = "query:locomo-qa-1-2@1"


def _run(runner, cases, graph, **kw):
    return asyncio.run(runner.arun(cases, graph, **kw))


# -- 1. evidence_flow never reads annotations when no starting nodes are given -----------------


def test_attributor_without_annotated_fallback_ignores_annotations(bench_graph):
    # no message states this answer: only the annotated evidence could make it "attributed"
    case = Case(QUERY, golden_answer="Zanzibar-qq", source_evidence_full_node_ids=["U1:D2:2@1"])
    assert attribute_case_evidence_flow(bench_graph, case, None)["status"] == "attributed"
    result = attribute_case_evidence_flow(bench_graph, case, None, allow_annotated_fallback=False)
    assert result["status"] == "evidence_absent"
    assert all(step["node_id"] != "U1:D2:2@1" for step in result["trail"])


def test_evidence_flow_strategy_without_starting_nodes_does_not_use_annotations(bench_graph):
    case = Case(QUERY, golden_answer="Zanzibar-qq", source_evidence_full_node_ids=["U1:D2:2@1"])
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow"))
    none = _run(runner, [case], bench_graph, use_pseudo_source_evidence=False).results[0]
    assert not none.ok and "evidence_absent" in none.failure
    given = _run(runner, [case], bench_graph, use_source_evidence_nodes=True).results[0]
    assert given.ok and given.evidence_source == "annotated"


# -- 2. cache I/O errors never abort the run --------------------------------------------------


@pytest.fixture
def fake_strategy():
    plan = {}

    class Outcome:
        def __init__(self, prediction=None, failure=None, error=None):
            self.prediction, self.failure, self.error = prediction, failure, error
            self.usage = {"input_tokens": 1, "output_tokens": 1, "num_calls": 1}

    async def fake(ctx):
        step = plan.get(ctx.case.golden_answer)
        if callable(step):
            step = step()
        if isinstance(step, BaseException):
            raise step
        return step or Outcome({"error_type": "ExtractionError", "op_id": "op-1", "reason": "r"})

    register_strategy("fake_fix", fake, needs_model=False, replace=True)
    yield plan, Outcome
    unregister_strategy("fake_fix")


def _cfg(**kw):
    return MemTraceConfig(exploration_strategy="fake_fix", **kw)


def test_cache_load_os_error_is_a_miss_and_store_error_warns(fake_strategy, bench_graph, tmp_path, monkeypatch):
    def broken_read(self, *a, **k):
        raise PermissionError("denied")

    def broken_store(self, key, entry):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(CaseCache, "store", broken_store)
    runner = MemTraceRunner(_cfg(cache_dir=str(tmp_path / "c")))
    cases = [Case(QUERY, golden_answer="g0")]
    monkeypatch.setattr("pathlib.Path.read_text", broken_read)
    with pytest.warns(UserWarning, match="could not write the cache entry"):
        report = _run(runner, cases, bench_graph, use_pseudo_source_evidence=False)
    assert report.results[0].ok and not report.results[0].cached


def test_cache_check_writable(tmp_path):
    CaseCache(tmp_path / "new" / "cache").check_writable()
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError):
        CaseCache(blocker / "cache").check_writable()


# -- 4./5. timeouts and transient errors, classified by type --------------------------------


def test_inner_timeout_without_case_limit_is_retried_not_a_type_error(fake_strategy, bench_graph):
    plan, Outcome = fake_strategy
    attempts = []

    def flaky():
        attempts.append(1)
        return TimeoutError("read timed out") if len(attempts) == 1 else None

    plan["g0"] = flaky

    async def no_sleep(_):
        pass

    result = _run(MemTraceRunner(_cfg(max_retries=2), sleep=no_sleep), [Case(QUERY, golden_answer="g0")],
                  bench_graph, use_pseudo_source_evidence=False).results[0]
    assert result.ok and result.attempts == 2


def test_inner_timeout_with_case_limit_is_not_a_whole_case_timeout(fake_strategy, bench_graph):
    plan, _ = fake_strategy
    plan["g0"] = TimeoutError("read timed out")

    async def no_sleep(_):
        pass

    result = _run(MemTraceRunner(_cfg(max_retries=1, case_timeout_s=30), sleep=no_sleep),
                  [Case(QUERY, golden_answer="g0")], bench_graph, use_pseudo_source_evidence=False).results[0]
    assert result.attempts == 2 and result.failure.startswith("TimeoutError")


def test_failure_text_naming_an_error_is_not_transient(fake_strategy, bench_graph):
    plan, Outcome = fake_strategy
    plan["g0"] = Outcome(failure="no answer: the model said RateLimitError and TimeoutError")
    plan["g1"] = ValueError("APIConnectionError in the text only")
    plan["g2"] = Outcome(failure="agent error: boom", error=ConnectionResetError("reset"))

    async def no_sleep(_):
        pass

    results = _run(MemTraceRunner(_cfg(max_retries=2), sleep=no_sleep),
                   [Case(QUERY, golden_answer=f"g{i}") for i in range(3)],
                   bench_graph, use_pseudo_source_evidence=False).results
    assert [r.attempts for r in results] == [1, 1, 3]


def test_is_transient_error_by_type():
    import httpx
    import openai

    request = httpx.Request("POST", "http://x/v1")
    assert is_transient_error(openai.APIConnectionError(request=request))
    assert is_transient_error(openai.APITimeoutError(request=request))
    assert is_transient_error(openai.InternalServerError("x", response=httpx.Response(503, request=request), body=None))
    assert not is_transient_error(openai.BadRequestError("x", response=httpx.Response(400, request=request), body=None))
    assert is_transient_error(httpx.ReadTimeout("x"))
    assert not is_transient_error(ValueError("RateLimitError"))
    try:
        try:
            raise httpx.ConnectError("refused")
        except httpx.ConnectError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert is_transient_error(outer)


def test_agent_timeout_error_without_limit_is_an_agent_error():
    from graphtrace.agent_models import run_attribution_agent

    class Agent:
        async def reply_stream(self, *a, **k):
            raise TimeoutError("read timed out")
            yield  # pragma: no cover

    outcome = asyncio.run(run_attribution_agent(Agent(), "task"))
    assert outcome.failure.startswith("agent error: TimeoutError") and isinstance(outcome.error, TimeoutError)
    outcome = asyncio.run(run_attribution_agent(Agent(), "task", timeout=30))
    assert outcome.failure.startswith("agent error: TimeoutError")


# -- 6. cache identity -------------------------------------------------------------------------


def test_cache_identity_covers_compat_retrieval_fallback_and_sources(bench_graph, monkeypatch):
    case = Case(QUERY)
    kw = {"use_source_evidence_nodes": False, "use_pseudo_source_evidence": True,
          "memory_system": None, "custom_prior_knowledge": None}
    base = MemTraceRunner(MemTraceConfig()).cache_identifier(bench_graph, case, **kw)
    compat = MemTraceRunner(MemTraceConfig(llama_cpp_compat=True)).cache_identifier(bench_graph, case, **kw)
    assert cache_key(base) != cache_key(compat)

    monkeypatch.setattr(runner_module, "_local_embedder_installed", lambda: False)
    with pytest.warns(UserWarning, match="BM25 only"):
        fallback = MemTraceRunner(MemTraceConfig()).cache_identifier(bench_graph, case, **kw)
    assert fallback["config"]["retrieval_type"] == "sparse"
    sparse = MemTraceRunner(MemTraceConfig(retrieval_type="sparse")).cache_identifier(bench_graph, case, **kw)
    assert cache_key(fallback) == cache_key(sparse)

    ef = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow")).cache_identifier(bench_graph, case, **kw)
    assert ef["prompts"] != base["prompts"]  # the evidence_flow sources are fingerprinted too
    assert runner_module.prompts_fingerprint(("graphtrace.hints",)) != runner_module.prompts_fingerprint(())
