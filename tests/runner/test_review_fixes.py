"""Regression tests of the runner/CLI review fixes (spec-attribution §5–§6, §12)."""

import asyncio

from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.runner import MemTraceConfig, MemTraceRunner

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
