"""Automatic attribution from the viewer: evidence_flow offline, an LLM strategy with credentials."""

from __future__ import annotations

import json

import pytest

from annotation_interface import attribution as auto
from annotation_interface.loader import load_graph

OP_EXTRACT_D2_2 = "op-ad912fa103d643e0b4b16a3e9e7169cb"


@pytest.fixture(scope="module")
def bench_graph(sc_fixtures):
    return load_graph(sc_fixtures / "sc012_memtracebench_like.json")


def test_case_uses_the_benchmark_annotation(bench_graph):
    qa = bench_graph.index.qa("locomo-qa-1-2")
    case = auto.case_for(qa, "x.json")
    assert case.query_full_node_id == "query:locomo-qa-1-2@1"
    assert case.golden_answer == "[Sweden]" and case.prediction == "Norway"
    assert case.source_evidence_full_node_ids == ["U1:D2:2@1"]
    assert case.metadata["annotation"]["final_error_type"] == "ExtractionError"


def test_evidence_flow_result_is_normalised_with_its_trail(bench_graph):
    qa = bench_graph.index.qa("locomo-qa-1-2")
    out = auto.run_evidence_flow(bench_graph, qa)
    assert out["status"] == "attributed"
    assert out["error_type"] in auto_error_types()
    assert out["op_id"] in bench_graph.index.ops
    assert out["trail"] and all(isinstance(s, dict) for s in out["trail"])
    assert out["reason"] and out["elapsed_s"] >= 0


def auto_error_types():
    from toolkits.bench_utils import ERROR_TYPES

    return ERROR_TYPES


def test_unknown_keys_are_kept_and_failures_do_not_raise(bench_graph, monkeypatch):
    import toolkits.evidence_flow as ef

    qa = bench_graph.index.qa("locomo-qa-1-2")
    monkeypatch.setattr(ef, "attribute_case_evidence_flow", lambda *a, **k: {
        "error_type": "UpdateError", "op_id": "op-x", "reason": "r", "status": "attributed",
        "trail": [{"stage": "lifecycle", "op_id": "op-x"}, "junk"], "confidence": 0.8, "version": 2})
    out = auto.run_evidence_flow(bench_graph, qa)
    assert out["extra"] == {"confidence": 0.8, "version": 2}
    assert out["trail"] == [{"stage": "lifecycle", "op_id": "op-x"}]

    def boom(*_a, **_k):
        raise RuntimeError("index broke")

    monkeypatch.setattr(ef, "attribute_case_evidence_flow", boom)
    out = auto.run_evidence_flow(bench_graph, qa)
    assert out["status"] == "error" and "index broke" in out["reason"] and out["error_type"] is None


def test_suggested_edge_prefers_the_trail_node(bench_graph):
    edges = bench_graph.index.op_edges[OP_EXTRACT_D2_2]
    last = edges[-1]
    trail = [{"op_id": OP_EXTRACT_D2_2, "node_id": last.target}]
    assert auto.suggested_edge(bench_graph, OP_EXTRACT_D2_2, trail) in {e.edge_id for e in edges
                                                                      if last.target in (e.source, e.target)}
    assert auto.suggested_edge(bench_graph, OP_EXTRACT_D2_2) == edges[0].edge_id
    assert auto.suggested_edge(bench_graph, None) is None


def test_llm_availability_needs_credentials(tmp_path):
    ok, note = auto.llm_availability(auto.LLMSettings(), environ={})
    assert not ok and "--api-config" in note
    cfg = tmp_path / "api.json"
    cfg.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": ["http://127.0.0.1:9/v1"]}))
    ok, note = auto.llm_availability(auto.LLMSettings(api_config=str(cfg), model="m"), environ={})
    assert ok and "graph_search with m" in note
    ok, note = auto.llm_availability(auto.LLMSettings(api_config=str(tmp_path / "missing.json")), environ={})
    assert not ok and "not found" in note


def test_llm_strategy_runs_one_case_through_the_runner(bench_graph, tmp_path):
    from graphtrace import answer
    from membase.clients import ScriptedChatModel

    qa = bench_graph.index.qa("locomo-qa-1-2")
    seen = []

    def factory(ctx):
        seen.append((ctx.case.query_full_node_id, ctx.evidence_ids, ctx.memory_system))
        return ScriptedChatModel([answer("ExtractionError", OP_EXTRACT_D2_2, "the fact about Sweden was dropped")])

    cfg = tmp_path / "api.json"
    cfg.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": ["http://127.0.0.1:9/v1"]}))
    out = auto.run_llm_attribution(bench_graph, qa, auto.LLMSettings(api_config=str(cfg)), model_factory=factory)
    assert out["failure"] is None
    assert out["prediction"] == {"error_type": "ExtractionError", "op_id": OP_EXTRACT_D2_2,
                                 "reason": "the fact about Sweden was dropped"}
    assert seen == [("query:locomo-qa-1-2@1", ["U1:D2:2@1"], "mem0")]


def test_llm_failure_is_reported_not_raised(bench_graph):
    qa = bench_graph.index.qa("locomo-qa-1-2")
    out = auto.run_llm_attribution(bench_graph, qa, auto.LLMSettings(api_config="/nonexistent/api.json"))
    assert out["prediction"] is None and "not found" in out["failure"]


def test_the_warm_up_indexes_the_graph_that_evidence_flow_then_reuses(sc_fixtures, monkeypatch):
    from toolkits.evidence_flow import _attributor
    from toolkits.evidence_flow._graph_view import GraphView

    pg = load_graph(sc_fixtures / "sc012_memtracebench_like.json")  # its own copy: nothing cached for it yet
    builds = []
    real_build = GraphView.build.__func__
    monkeypatch.setattr(GraphView, "build", classmethod(lambda cls, g: builds.append(g) or real_build(cls, g)))
    auto.warm_evidence_flow(pg).join(timeout=60)
    assert builds == [pg.network] and _attributor._cached_view(pg.network) is not None
    out = auto.run_evidence_flow(pg, pg.index.qa("locomo-qa-1-2"))
    assert out["status"] == "attributed" and builds == [pg.network]  # the run found the index ready


def test_a_warm_up_on_a_graph_evidence_flow_cannot_read_ends_quietly(bench_graph):
    import threading

    failures = []
    previous, threading.excepthook = threading.excepthook, failures.append
    try:
        for network in (object(), _Unreadable()):
            broken = type(bench_graph)(stamp=bench_graph.stamp, network=network, index=bench_graph.index,
                                       load_seconds=0)
            auto.warm_evidence_flow(broken).join(timeout=60)
    finally:
        threading.excepthook = previous
    assert failures == []


class _Unreadable:
    """A network whose records cannot be read."""

    def get_all_nodes(self):
        raise RuntimeError("the store went away")

    get_all_edges = get_all_operations = get_all_nodes
