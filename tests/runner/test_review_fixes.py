"""Regression tests of the runner/CLI review fixes (spec-attribution §5–§6, §12)."""

import asyncio
import json
from argparse import Namespace

import pytest

from toolkits import runner as runner_module
from toolkits._base import is_transient_error
from toolkits._case_cache import CaseCache, cache_key
from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.runner import CaseResult, MemTraceConfig, MemTraceRunner, RunCosts
from toolkits.strategies import register_strategy, unregister_strategy

from .conftest import Case, interrupt_after_the_run

QUERY = "query:locomo-qa-1-2@1"


def _run(runner, cases, graph, **kw):
    return asyncio.run(runner.arun(cases, graph, **kw))


# -- 1. evidence_flow never reads annotations when no starting nodes are given -----------------


def test_attributor_without_annotated_fallback_ignores_annotations(bench_graph):
    # no message states this answer nor shares the question's words: only the annotated evidence
    # could make it "attributed"
    case = Case(QUERY, query="'Which xylophone brand did Quentin endorse?'", golden_answer="Zanzibar-qq",
                source_evidence_full_node_ids=["U1:D2:2@1"])
    # (triage off: a golden answer said nowhere would be reported as an AnnotationError candidate)
    assert attribute_case_evidence_flow(bench_graph, case, None, triage=False)["status"] == "attributed"
    result = attribute_case_evidence_flow(bench_graph, case, None, allow_annotated_fallback=False, triage=False)
    assert result["status"] == "evidence_absent"
    assert all(step["node_id"] != "U1:D2:2@1" for step in result["trail"])


def test_evidence_flow_strategy_without_starting_nodes_does_not_use_annotations(bench_graph):
    case = Case(QUERY, query="'Which xylophone brand did Quentin endorse?'", golden_answer="Zanzibar-qq",
                source_evidence_full_node_ids=["U1:D2:2@1"])
    runner = MemTraceRunner(MemTraceConfig(exploration_strategy="evidence_flow", evidence_flow_triage=False))
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
    from graphtrace import run_attribution_agent

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


# -- CLI: 2./3. folders checked up front, checkpoints, 8. failed records, 9. redaction, 11. prior


def _cli_args(bench_dir, out, *extra):
    return [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0", *extra]


def test_unwritable_output_or_cache_exits_2_before_any_case(bench_dir, tmp_path, capsys, monkeypatch):
    from toolkits.attribution import cli as attribution_cli

    ran = []
    monkeypatch.setattr(MemTraceRunner, "arun", lambda *a, **k: ran.append(1))
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")
    assert attribution_cli.main(_cli_args(bench_dir, blocker / "out.json")) == 2
    assert "cannot write --output-path" in capsys.readouterr().err
    args = _cli_args(bench_dir, tmp_path / "o.json", "--cache-dir", str(blocker / "cache"))
    assert attribution_cli.main(args) == 2
    assert "--cache-dir" in capsys.readouterr().err and not ran


def test_interrupt_writes_every_finished_case_and_keeps_the_journal(bench_dir, tmp_path, capsys, monkeypatch):
    from toolkits._journal import journal_path
    from toolkits.attribution import cli as attribution_cli

    out = tmp_path / "out" / "ck.json"
    interrupt_after_the_run(monkeypatch)  # Ctrl-C right after the last case finished
    assert attribution_cli.main(_cli_args(bench_dir, out, "--batch-size", "1")) == 130
    err = capsys.readouterr().err.strip()
    assert err.startswith("interrupted: 4 of 4 case(s)") and "\n" not in err and "rerun the same command" in err
    data = json.loads(out.read_text())
    assert data["complete"] is False and data["metrics"]["total_cases"] == 4  # every finished case is there
    assert len(journal_path(out).read_text().splitlines()) == 5  # header + 4 cases, kept to resume


def test_failed_records_have_a_placeholder_and_count_as_failed():
    from toolkits.metrics import AttributionRecord, attribution_metrics

    record = {"final_error_type": "ExtractionError", "final_op_id": "op-1", "attribution_failure": "boom",
              "error_attribution_result": {"error_type": "", "op_id": "", "reason": "boom"}}
    scored = AttributionRecord.from_result(record)
    assert scored.failed and not scored.type_correct and not scored.op_correct
    assert attribution_metrics([scored], bootstrap_samples=0)["failed_cases"] == 1


def test_redaction_touches_only_our_free_text(bench_dir, tmp_path):
    from toolkits.attribution import OutputSettings, build_output

    secret = "sk-live-REAL-0123456789"
    a = bench_dir / "mem0" / "a.json"
    data = json.loads(a.read_text())
    data["data"]["annotations"][0]["query"] = f"'Where is test {secret}?'"  # benchmark text
    a.write_text(json.dumps(data))
    args = OutputSettings(dataset_dir=str(bench_dir), split="mem0", bootstrap_samples=0, seed=0,
                          exploration_strategy="evidence_flow", model="m")
    from toolkits.bench_utils import load_memtracebench

    _, cases = load_memtracebench(str(bench_dir), "mem0", filter_non_memory_errors=True)
    results = [CaseResult(index=i, prediction=None, failure=f"401 bad key {secret} (test)") for i in range(len(cases))]
    results[1] = CaseResult(index=1, prediction={"error_type": "UpdateError", "op_id": "op", "reason": f"echo {secret}"})
    report = Namespace(results=results, costs=RunCosts())
    output = build_output(args, cases, report, secrets=[secret, "test", "EMPTY"])
    query = next(r["query"] for r in output["results"] if "Where is" in r["query"])
    assert secret in query and "test" in query  # the benchmark's own text is copied unchanged
    assert output["results"][0]["attribution_failure"] == "401 bad key *** (test)"
    assert output["results"][1]["error_attribution_result"]["reason"] == "echo ***"
    assert secret not in json.dumps(output["metrics"])


def test_custom_prior_path_that_does_not_exist_exits_2(bench_dir, tmp_path, capsys):
    from toolkits.attribution import cli as attribution_cli

    for prior in ("priors/mem0.txt", "notes.md", str(tmp_path / "missing")):
        code = attribution_cli.main(_cli_args(bench_dir, tmp_path / "p.json", "--custom-prior", prior))
        assert code == 2 and "looks like a path" in capsys.readouterr().err
    from toolkits.attribution.inputs import read_prior

    assert read_prior("Mem0 rewrites facts on update.") == "Mem0 rewrites facts on update."
    f = tmp_path / "prior.txt"
    f.write_text("from a file")
    assert read_prior(str(f)) == "from a file"


# -- 12. one definition of the error types and split names ------------------------------------


def test_error_types_and_splits_have_one_definition():
    import graphtrace
    from toolkits import bench_utils, metrics, retrieval_cli
    from toolkits.attribution import cli as attribution_cli

    assert metrics.ERROR_TYPES is bench_utils.ERROR_TYPES
    assert tuple(graphtrace.ERROR_TYPES) == bench_utils.ERROR_TYPES
    assert attribution_cli.SPLITS is retrieval_cli.SPLITS is bench_utils.MEMTRACEBENCH_SPLITS


def test_runner_refuses_an_unwritable_cache_before_any_case(fake_strategy, bench_graph, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    runner = MemTraceRunner(_cfg(cache_dir=str(blocker / "cache")))
    with pytest.raises(OSError):
        _run(runner, [Case(QUERY, golden_answer="g0")], bench_graph, use_pseudo_source_evidence=False)


def test_agent_api_errors_are_retried_by_type_end_to_end(bench_dir, tmp_path):
    import httpx

    from graphtrace import answer
    from membase.clients import ScriptedChatModel
    from toolkits.attribution import cli as attribution_cli

    from .conftest import OP_EXTRACT_5
    from .test_cli_attribution import REASON

    built = []

    def factory(ctx):
        built.append(ctx.case_index)
        if built.count(ctx.case_index) == 1:  # first attempt of every case: the endpoint drops
            return ScriptedChatModel([httpx.ConnectError("connection reset by peer")])
        return ScriptedChatModel([answer("ExtractionError", OP_EXTRACT_5, REASON)])

    out = tmp_path / "retry.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "long_context",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0",
            "--max-retries", "1", "--retry-backoff", "0", "--max-iters", "3"]
    assert attribution_cli.main(args, model_factory=factory) == 0
    data = json.loads(out.read_text())
    assert data["metrics"]["failed_cases"] == 0
    assert [r["attribution_attempts"] for r in data["results"]] == [2, 2, 2, 2]
