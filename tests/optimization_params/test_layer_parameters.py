"""Tunable parameters are traced variables: identity, metadata, edges, strictness, format, cost."""

from __future__ import annotations

import itertools
import json

import pytest

from membase.layers.evermemos import EverMemOSConfig, EverMemOSLayer
from membase.layers.long_context import LongContextConfig, LongContextLayer
from membase.layers.naive_rag import NaiveRAGConfig, NaiveRAGLayer
from membase.layers.parameters import TUNABLE_PARAMETERS, ParameterTracer, TunableParameter
from membase.types import Message
from smartcomment import ExecNetwork, comment_graph, comment_session, comment_variable, current_context

TALK = [
    ("Caroline", "I went to an LGBTQ support group yesterday.", "2023-05-08T13:56:00"),
    ("Melanie", "That sounds powerful, I am proud of you!", "2023-05-08T13:57:00"),
    ("Caroline", "I moved from Sweden four years ago.", "2023-05-25T13:15:00"),
]
STANDARD_NODE_KEYS = {"created_at", "filename", "lineno", "name", "version", "value", "comment", "category", "graph_id",
                      "user_id", "class_name", "project_id", "session_id", "metadata", "trigger_point", "full_name",
                      "node_id", "full_node_id"}


def _messages():
    return [Message(id=f"U1:D1:{i}", name=n, content=t, timestamp=ts) for i, (n, t, ts) in enumerate(TALK, 1)]


def _search(layer, graph, question="Where did Caroline move from?", k=2):
    with comment_graph(graph=graph), comment_session(category="memory_search"):
        comment_variable(question, variable_name="query", id_strategy=lambda _: "locomo-qa-1-1", class_name="query",
                         category="message & query", metadata={"evidence": []})
        layer.retrieve(question, k=k)
        current_context().remove_variable("query")


def _rag(tmp_path, **fields):
    config = NaiveRAGConfig(user_id="locomo-1", save_dir=str(tmp_path), retriever_name_or_path="fake:64",
                            retriever_dim=64, vector_store="memory", **fields)
    return NaiveRAGLayer(config)


def _construct(layer, project="NaiveRAG"):
    with comment_graph(user_id="locomo-1", project_id=project, strict=True) as graph:
        with comment_session(session_id="s1", category="memory_construction"):
            for m in _messages():
                layer.add_message(m)
        with comment_session(category="memory_construction"):
            layer.flush()
    return graph


def _params_of(graph, op_name):
    out = []
    for op in graph.get_all_operations():
        if op.op_name == op_name:
            out.append({n.name for n in graph.filter_by_operation(op.op_id).nodes if n.class_name == "parameter"})
    return out


def test_every_declared_parameter_is_valid_and_names_a_config_field():
    from membase.layers import build_layer_config
    from membase.layers.parameters import get_config_value

    for layer_type, params in TUNABLE_PARAMETERS.items():
        extra = {"llm_config": {"provider": "fake"}} if layer_type in ("EverMemOS",) else {}
        config = build_layer_config(layer_type, user_id="u", **extra)
        for spec in params:
            if spec.scope == "layer_config":
                get_config_value(config, spec.name)  # raises when the path names no field
            else:
                assert spec.name == "top_k"
    with pytest.raises(ValueError):
        TunableParameter("x", "int", low=5, high=1)
    with pytest.raises(ValueError):
        TunableParameter("x", "categorical")


def test_naive_rag_records_one_node_per_parameter_and_links_it_to_the_ops_that_use_it(tmp_path):
    layer = _rag(tmp_path, max_tokens=256, num_overlap_msgs=1)
    graph = _construct(layer)
    _search(layer, graph)
    params = {n.name: n for n in graph.search_variables(class_name="parameter")}
    assert set(params) == {"max_tokens", "num_overlap_msgs", "deferred", "top_k"}
    assert {n.full_node_id for n in params.values()} == {
        "parameter:max_tokens@1", "parameter:num_overlap_msgs@1", "parameter:deferred@1", "parameter:top_k@1"}
    assert (params["max_tokens"].raw_value, params["deferred"].raw_value, params["top_k"].raw_value) == ("256", "false", "2")
    assert params["max_tokens"].metadata == {"tunable": True, "kind": "int", "scope": "layer_config",
                                             "layer_type": "NaiveRAG", "low": 64, "high": 2048, "log": True}
    assert params["deferred"].metadata["requires"] == {"true": "max_tokens"}
    assert _params_of(graph, "memory_system.message_buffer_update") == [{"max_tokens", "num_overlap_msgs", "deferred"}] * 3
    assert _params_of(graph, "memory_system.retrieve") == [{"top_k"}]
    assert _params_of(graph, "memory_system.add") == [set()] * 3
    # parameters are inputs: sources of the op's edges, never produced by it
    for edge in graph.get_all_edges():
        assert not edge.target_full_node_id.startswith("parameter:")


def test_long_context_window_feeds_every_memory_update(tmp_path):
    layer = LongContextLayer(LongContextConfig(user_id="locomo-1", save_dir=str(tmp_path), context_window=4000))
    graph = _construct(layer, "Long-Context")
    assert _params_of(graph, "memory_system.memory_update") == [{"context_window"}] * 3
    assert graph.get_latest_variable("parameter:context_window").raw_value == "4000"


def test_evermemos_retrieval_parameters_in_hybrid_and_agentic_modes(tmp_path):
    ids = itertools.count()

    def layer(mode):
        config = EverMemOSConfig(
            user_id="locomo-1", save_dir=str(tmp_path / mode), llm_config={"provider": "fake", "model": "fake"},
            embedding_config={"provider": "fake", "embedding_dims": 64},
            retrieval_config={"retrieval_mode": mode},
            boundary_config={"hard_message_limit": 2, "use_smart_mask": False},
        )
        return EverMemOSLayer(config, id_factory=lambda: f"{next(ids):024x}")

    expected = {"retrieval_config.retrieval_mode", "retrieval_config.rrf_k", "retrieval_config.bm25_top_n",
                "retrieval_config.emb_top_n"}
    hybrid = layer("hybrid")
    graph = _construct(hybrid, "EverMemOS")
    _search(hybrid, graph, "Sweden")
    assert _params_of(graph, "memory_system.hybrid_retrieval") == [expected | {"top_k"}]
    agentic = layer("agentic")
    graph = _construct(agentic, "EverMemOS")
    _search(agentic, graph, "Sweden")
    (round1,) = _params_of(graph, "memory_system.agentic_round1_bundle")
    assert expected <= round1  # recorded inside a never-raise block: a bug would only log
    assert graph.get_latest_variable("parameter:retrieval_config.retrieval_mode").raw_value == '"agentic"'


def test_a_parameter_changed_in_a_strict_graph_becomes_a_new_version(tmp_path):
    layer = _rag(tmp_path)
    graph = _construct(layer)
    assert graph.strict
    _search(layer, graph, k=2)
    _search(layer, graph, k=3)  # e.g. a second search stage with another top_k
    versions = graph.get_versions("parameter:top_k")
    assert [(v.version, v.raw_value) for v in versions] == [(1, "2"), (2, "3")]
    assert graph.strict  # restored


def test_handles_are_resolved_once_per_graph_and_not_at_all_when_untraced(tmp_path, monkeypatch):
    import smartcomment

    tracer = ParameterTracer("NaiveRAG")
    assert tracer.handles({"top_k": 3}) == []  # no graph open
    calls = []
    real = smartcomment.comment_variable
    monkeypatch.setattr(smartcomment, "comment_variable", lambda *a, **k: calls.append(1) or real(*a, **k))
    with comment_graph(user_id="u", project_id="NaiveRAG", strict=True), comment_session(category="memory_search"):
        first = [tracer.handles({"top_k": 3, "deferred": False}) for _ in range(50)]
    assert len(calls) == 2 and all(h == first[0] for h in first)
    with comment_graph(user_id="u2", project_id="NaiveRAG"), comment_session(category="memory_search"):
        tracer.handles({"top_k": 3})
    assert len(calls) == 3  # a new graph resolves again
    with pytest.raises(KeyError, match="no tunable parameter"):
        with comment_graph(user_id="u3"), comment_session():
            tracer.handles({"not_a_parameter": 1})


def test_graphs_with_parameters_keep_the_0_1_2_record_format(tmp_path):
    layer = _rag(tmp_path)
    graph = _construct(layer)
    _search(layer, graph)
    exported = graph.export_graph()
    nodes = [n for n in exported["data"]["nodes"] if n["class_name"] == "parameter"]
    assert nodes and all(set(n) == STANDARD_NODE_KEYS for n in nodes)
    assert all(isinstance(n["value"], str) and isinstance(n["metadata"], dict) for n in nodes)
    blob = json.loads(json.dumps(exported))
    assert ExecNetwork.import_graph(blob).export_graph() == blob
