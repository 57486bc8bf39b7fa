"""How one case's attempts end (written where mutation testing found the suite blind): the failure
text of each way a strategy can fail, usage summed over attempts, no backoff after the last attempt,
outcomes that lack attributes, and the strategy details written beside a prediction."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pytest

from toolkits import runner as runner_module
from toolkits.runner import MemTraceConfig, MemTraceRunner
from toolkits.strategies import register_strategy, unregister_strategy

from .conftest import Case

GOOD = {"error_type": "UpdateError", "op_id": "op-1", "reason": "r"}


@pytest.fixture()
def strategy():
    """Register a scripted no-model strategy whose attempts return or raise the given items."""
    names = []

    def register(*items):
        script = list(items)

        def run(ctx):
            item = script.pop(0) if len(script) > 1 else script[0]
            if isinstance(item, BaseException):
                raise item
            return item

        name = f"scripted_{len(names)}"
        register_strategy(name, run, needs_model=False, replace=True)
        names.append(name)
        return name

    yield register
    for name in names:
        unregister_strategy(name)


def _run(name, graph, *, retries=0):
    sleeps = []

    async def sleep(delay):
        sleeps.append(delay)

    runner = MemTraceRunner(MemTraceConfig(exploration_strategy=name, max_retries=retries), sleep=sleep)
    report = runner.run([Case("query:locomo-qa-1-2@1")], graph, use_pseudo_source_evidence=False)
    return report.results[0], sleeps


def test_a_strategy_timeout_without_a_case_limit_is_retried_and_named(strategy, bench_graph):
    result, sleeps = _run(strategy(TimeoutError("read timed out")), bench_graph, retries=1)
    assert result.failure == "TimeoutError: read timed out"
    assert result.attempts == 2 and len(sleeps) == 1  # no backoff after the last attempt


def test_usage_is_summed_over_attempts(strategy, bench_graph):
    retry = SimpleNamespace(prediction=None, failure="rate limited", transient=True,
                            usage={"input_tokens": 10, "output_tokens": 2, "num_calls": 1})
    done = SimpleNamespace(prediction=GOOD, failure=None,
                           usage=SimpleNamespace(input_tokens=5, num_calls=1))  # no output_tokens attribute
    result, sleeps = _run(strategy(retry, done), bench_graph, retries=2)
    assert result.ok and result.attempts == 2 and len(sleeps) == 1
    assert result.usage == {"input_tokens": 15, "output_tokens": 2, "num_calls": 2}


def test_outcomes_without_prediction_or_failure_attributes(strategy, bench_graph):
    result, _ = _run(strategy(SimpleNamespace(usage={})), bench_graph)
    assert result.failure == "no answer: the strategy returned no prediction"
    result, _ = _run(strategy(SimpleNamespace(prediction=GOOD)), bench_graph)
    assert result.ok and result.prediction == GOOD


def test_a_prediction_of_the_wrong_shape_is_an_invalid_answer(strategy, bench_graph):
    result, _ = _run(strategy(SimpleNamespace(prediction=42, failure=None)), bench_graph)
    assert result.failure.startswith("invalid answer: ") and result.prediction is None


def test_details_are_plain_json_copies_or_nothing():
    details = {"evidence_flow": {"trail": [{"stage": "evidence"}], "confidence": 0.5}}
    copied = runner_module._details_of(SimpleNamespace(details=details))
    assert copied == details and copied is not details
    details["evidence_flow"]["trail"].append({"stage": "later"})
    assert copied["evidence_flow"]["trail"] == [{"stage": "evidence"}]
    for absent in (SimpleNamespace(), SimpleNamespace(details={}), SimpleNamespace(details=[{"a": 1}])):
        assert runner_module._details_of(absent) is None
    for bad in ({"x": {"v": float("nan")}}, {"x": {"v": object()}}):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert runner_module._details_of(SimpleNamespace(details=bad)) is None
        assert [str(w.message) for w in caught] == ["strategy details that are not plain JSON are not written"]


def test_details_reach_the_result_also_when_the_case_fails(strategy, bench_graph):
    flow = {"evidence_flow": {"status": "abstained", "confidence": 0.1}}
    result, _ = _run(strategy(SimpleNamespace(prediction=None, failure="abstained", details=flow)), bench_graph)
    assert result.failure == "abstained" and result.details == flow
    assert result.cache_entry() is None
