"""Guided search looks upstream: a retrieval miss implicates the chunking settings that built the units."""

from __future__ import annotations

import pytest

from membase.layers.naive_rag import NaiveRAGConfig, NaiveRAGLayer
from membase.types import Message
from smartcomment import comment_graph, comment_session, comment_variable, current_context
from toolkits.optimization.grouping import group_attributions
from toolkits.optimization.parameters import attributed_parameters, parameter_registry
from toolkits.optimization.records import Attribution

TALK = [
    ("Rosa", "My sister Ines opened a bakery on Harbor Street last spring.", "2023-04-02T10:00:00"),
    ("Tomas", "Does she still bake the almond rolls you brought to the picnic?", "2023-04-02T10:01:00"),
    ("Rosa", "Every Saturday, and she sells out before noon.", "2023-04-02T10:02:00"),
    ("Tomas", "I will visit her shop after my shift on Friday.", "2023-04-02T10:03:00"),
]


@pytest.fixture(scope="module")
def rag_graph(tmp_path_factory):
    config = NaiveRAGConfig(user_id="conv-1", save_dir=str(tmp_path_factory.mktemp("rag")), retriever_name_or_path="fake:64",
                            retriever_dim=64, vector_store="memory", max_tokens=40, deferred=True)
    layer = NaiveRAGLayer(config)
    with comment_graph(user_id="conv-1", project_id="NaiveRAG", strict=True) as graph:
        with comment_session(session_id="s1", category="memory_construction"):
            for i, (name, text, ts) in enumerate(TALK, 1):
                layer.add_message(Message(id=f"D1:{i}", name=name, content=text, timestamp=ts))
        with comment_session(category="memory_construction"):
            layer.flush()
        with comment_session(category="memory_search"):
            comment_variable("Where is the bakery?", variable_name="query", id_strategy=lambda _: "qa-1",
                             class_name="query", category="message & query", metadata={"evidence": ["D1:1"]})
            layer.retrieve("Where is the bakery?", k=2)
            current_context().remove_variable("query")
    retrieve = [op for op in graph.get_all_operations() if op.op_name == "memory_system.retrieve"]
    assert retrieve, "the NaiveRAG layer no longer traces its retrieval"
    return graph, retrieve[-1].op_id


def test_a_retrieval_miss_reaches_the_chunking_parameters_upstream(rag_graph):
    graph, retrieve = rag_graph
    registry = parameter_registry()
    targets = registry.for_layer("NaiveRAG")
    miss = Attribution(error_type="RetrievalError", op_id=retrieve, reason="the unit holding D1:1 was not retrieved")

    own = group_attributions([miss], graph, targets)
    assert own.assignments[0].field == "top_k" and own.assignments[0].upstream == ()
    assert list(attributed_parameters([own], registry, "NaiveRAG")) == ["top_k"]  # the old, narrow view

    wide = group_attributions([miss], graph, targets, upstream_hops=2)
    assignment = wide.assignments[0]
    assert assignment.field == "top_k"  # grouping itself is unchanged ...
    assert {"max_tokens", "num_overlap_msgs", "deferred"} <= set(assignment.upstream)  # ... the chunking is found
    assert "top_k" not in assignment.upstream
    counts = attributed_parameters([wide], registry, "NaiveRAG")
    assert set(counts) == {"top_k", "max_tokens", "num_overlap_msgs", "deferred"}
    assert wide.as_json()["assignments"][0]["upstream"] == list(assignment.upstream)


def test_the_walk_stops_at_the_hop_limit(rag_graph):
    graph, retrieve = rag_graph
    targets = parameter_registry().for_layer("NaiveRAG")
    miss = Attribution(error_type="RetrievalError", op_id=retrieve, reason="r")
    # a retrieved unit <- the add that stored it (one step) <- the buffer update that cut its text (two)
    assert group_attributions([miss], graph, targets, upstream_hops=1).assignments[0].upstream == ()
    assert "max_tokens" in group_attributions([miss], graph, targets, upstream_hops=2).assignments[0].upstream
    unknown = Attribution(error_type="RetrievalError", op_id="op-missing", reason="r")
    assert group_attributions([unknown], graph, targets, upstream_hops=3).assignments[0].upstream == ()
