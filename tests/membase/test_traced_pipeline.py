"""Both LLM-free layers traced over two sessions of conv-26 follow the conventions of spec §4.6."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from smartcomment.runtime.network import ExecNetwork
from tests.membase._helpers import FIXED_ANSWER, conv26_two_sessions, run_pipeline

RAG_CONFIG = {"retriever_name_or_path": "fake:64", "retriever_dim": 64, "vector_store": "memory",
              "deferred": True, "max_tokens": 120}


@pytest.fixture(scope="module")
def dataset(locomo_path):
    return conv26_two_sessions(locomo_path)


def _run(layer_type, config, dataset, out):
    reports, search_runner, evaluation_runner = run_pipeline(layer_type, config, dataset, out)
    graph_path = out / "traced" / "locomo-1" / "graph_evaluation.json"
    graph = ExecNetwork.import_graph(json.loads(graph_path.read_text()))
    search_results = json.loads(search_runner.results_path.read_text())
    evaluation_results = json.loads(evaluation_runner.output_path.read_text())
    return {"reports": reports, "graph": graph, "search": search_results, "evaluation": evaluation_results,
            "out": out}


@pytest.fixture(scope="module")
def rag_run(dataset, tmp_path_factory):
    return _run("NaiveRAG", RAG_CONFIG, dataset, tmp_path_factory.mktemp("rag"))


@pytest.fixture(scope="module")
def lc_run(dataset, tmp_path_factory):
    return _run("Long-Context", {}, dataset, tmp_path_factory.mktemp("lc"))


def _ops(graph, name):
    return graph.search_operations(name_pattern=f"^{name}$")


def _edges_of(graph, op_name):
    return [e for op in _ops(graph, op_name) for e in graph.filter_by_operation(op.op_id).edges]


def _shape(graph, node_id):
    node = graph.get_variable(node_id)
    return (node.class_name, node.category)


def _op_signature(graph, op_name):
    """{(edge category, (class, category) of source, of target)} over all ops named `op_name`."""
    return {(e.category, _shape(graph, e.source_full_node_id), _shape(graph, e.target_full_node_id))
            for e in _edges_of(graph, op_name)}


# -- common conventions ------------------------------------------------------------------------------
@pytest.mark.parametrize("run_name, layer_type", [("rag_run", "NaiveRAG"), ("lc_run", "Long-Context")])
def test_graph_and_sessions(request, run_name, layer_type, dataset):
    graph = request.getfixturevalue(run_name)["graph"]
    exported = graph.export_graph()
    assert (exported["user_id"], exported["project_id"], exported["strict"]) == ("locomo-1", layer_type, True)
    sessions = graph.get_all_sessions()
    assert [s.session_id for s in sessions[:2]] == ["locomo-1-session-1", "locomo-1-session-2"]
    assert [s.comment for s in sessions[:2]] == ["It is the 1th conversational session.",
                                                 "It is the 2th conversational session."]
    assert [s.category for s in sessions] == ["memory_construction"] * 3 + ["memory_search", "memory_evaluation"]
    assert sessions[3].metadata == {"top_k": 3, "strict": True}
    assert {"qa_model", "judge_model", "qa_batch_size", "judge_batch_size"} <= set(sessions[4].metadata)
    assert not any(s.session_id == "__none__" for s in sessions)


@pytest.mark.parametrize("run_name", ["rag_run", "lc_run"])
def test_message_and_query_nodes(request, run_name, dataset):
    graph = request.getfixturevalue(run_name)["graph"]
    traj, qas = dataset[0]
    messages = graph.search_variables(category="message")
    assert [m.name for m in messages] == [m.id for m in traj.messages]
    first = messages[0]
    assert first.class_name is None and first.full_node_id == "U1:D1:1@1"
    value = json.loads(first.raw_value)
    assert value == {"content": "Speaker Caroline (role: user) says: Hey Mel! Good to see you! How have you been?"
                                "\nTimestamp: 2023-05-08T13:56:00",
                     "name": "Caroline", "role": "user", "timestamp": "2023-05-08T13:56:00"}
    assert first.metadata == {"speaker_tag": "speaker_a", "dia_id": "D1:1", "timestamp": "2023-05-08T13:56:00",
                              "speakers": "Caroline"}
    queries = graph.search_variables(class_name="query")
    assert [q.name for q in queries] == [q.id for q in qas]
    for node, qa in zip(queries, qas, strict=True):
        assert node.category == "message & query" and node.raw_value == repr(qa.question)
        assert node.metadata == qa.metadata
        for evidence in node.metadata["evidence"]:
            assert graph.get_latest_variable(evidence).category == "message"


@pytest.mark.parametrize("run_name", ["rag_run", "lc_run"])
def test_evaluation_ops_match_the_reference_fixture(request, run_name, fixtures_dir):
    graph = request.getfixturevalue(run_name)["graph"]
    reference = ExecNetwork.import_graph(json.loads((fixtures_dir / "sc012_toy_evaluation.json").read_text()))
    for op_name in ("question-answering", "llm-judge"):
        assert {op.category for op in _ops(graph, op_name)} == {"evaluation"}
        assert _op_signature(graph, op_name) == _op_signature(reference, op_name)
    assert graph.get_variable("question-answering-prompt@1").metadata == {"op_type": "question-answering"}
    assert graph.get_variable("judge_prompt:locomo-judge@1").category == "prompt"
    context = graph.search_variables(class_name="context")[0]
    assert "source_code" in context.metadata
    scores = {n.raw_value for n in graph.search_variables(class_name="judge_score")}
    assert scores <= {"1.0", "0.0"}


@pytest.mark.parametrize("run_name", ["rag_run", "lc_run"])
def test_retrieval_trace_ids_resolve(request, run_name):
    run = request.getfixturevalue(run_name)
    graph = run["graph"]
    memories = [m for record in run["search"] for m in record["retrieved_memories"]]
    assert memories
    for memory in memories:
        node = graph.get_latest_variable(memory["metadata"]["trace_id"])
        assert node.category == "memory_entry"
        if run_name == "rag_run":
            assert json.loads(node.raw_value) == {"content": memory["content"], "id": memory["metadata"]["key"]}
        else:
            assert node.raw_value == memory["content"]


def test_predictions_and_metrics_are_recorded(rag_run):
    results = rag_run["evaluation"]
    assert all(r["prediction"] == FIXED_ANSWER for r in results)
    for r in results:
        correct = r["qa_pair"]["golden_answers"] == [FIXED_ANSWER]
        assert r["metrics"]["llm_judge"]["value"] == (1.0 if correct else 0.0)
        assert set(r["metrics"]) == {"f1", "bleu", "llm_judge"}
    assert any(r["metrics"]["llm_judge"]["value"] == 1.0 for r in results)
    assert any(r["metrics"]["llm_judge"]["value"] == 0.0 for r in results)


# -- NaiveRAG ------------------------------------------------------------------------------------------
def test_naive_rag_ops_and_edges(rag_run):
    graph = rag_run["graph"]
    ops = Counter((op.op_name, op.category) for op in graph.get_all_operations())
    assert set(ops) == {("memory_system.message_buffer_update", "update"), ("memory_system.add", "update"),
                        ("memory_system.retrieve", "retrieval"), ("question-answering", "evaluation"),
                        ("llm-judge", "evaluation")}
    assert ops[("memory_system.retrieve", "retrieval")] == 8
    assert _ops(graph, "memory_system.retrieve")[0].metadata == {"top_k": 3, "embedding_model": "fake-embedder-64"}
    buffer_edges = _edges_of(graph, "memory_system.message_buffer_update")
    assert {e.category for e in buffer_edges} == {"update", "extraction"}
    for e in buffer_edges:
        target = graph.get_variable(e.target_full_node_id)
        if e.category == "update" and target.category == "memory_entry":
            assert e.session_id == graph.get_all_sessions()[2].session_id  # only flush stores under this op
        elif e.category == "update":
            assert target.name == "message-buffer" and target.category == "message_buffer"
        else:
            assert (target.class_name, target.category) == ("temporary_variable", "temporary_variable")
            assert graph.get_variable(e.source_full_node_id).category in ("message", "message_buffer")
    assert _op_signature(graph, "memory_system.add") == {
        ("update", ("temporary_variable", "temporary_variable"), (None, "memory_entry"))}
    assert _op_signature(graph, "memory_system.retrieve") == {
        ("operation", ("query", "message & query"), (None, "memory_entry")),
        ("operation", ("parameter", "parameter"), (None, "memory_entry"))}


def test_naive_rag_parameters_are_inputs_of_the_ops_that_use_them(rag_run):
    graph = rag_run["graph"]
    params = {n.name: n for n in graph.search_variables(class_name="parameter")}
    assert set(params) == {"max_tokens", "num_overlap_msgs", "deferred", "top_k"}
    assert all(n.version == 1 and n.category == "parameter" for n in params.values())  # one node per value
    assert params["top_k"].raw_value == "3"
    assert params["top_k"].metadata == {"tunable": True, "kind": "int", "scope": "search", "layer_type": "NaiveRAG",
                                        "low": 1, "high": 50, "log": False}
    assert params["deferred"].metadata["choices"] == [False, True]
    for op in _ops(graph, "memory_system.retrieve"):
        sub = graph.filter_by_operation(op.op_id)
        assert {n.name for n in sub.nodes if n.class_name == "parameter"} == {"top_k"}
        units = [e.target_full_node_id for e in sub.edges if e.source_full_node_id.startswith("query:")]
        top_k_targets = [e.target_full_node_id for e in sub.edges if e.source_full_node_id == "parameter:top_k@1"]
        assert sorted(top_k_targets) == sorted(units)  # one edge per retrieved unit
    for op in _ops(graph, "memory_system.message_buffer_update"):
        names = {n.name for n in graph.filter_by_operation(op.op_id).nodes if n.class_name == "parameter"}
        assert names == {"max_tokens", "num_overlap_msgs", "deferred"}
    for op in _ops(graph, "memory_system.add"):
        assert not [n for n in graph.filter_by_operation(op.op_id).nodes if n.class_name == "parameter"]


def test_naive_rag_buffer_versions_and_flush(rag_run, dataset):
    graph = rag_run["graph"]
    n_messages = len(dataset.trajectories[0].messages)
    versions = graph.get_versions("message-buffer")
    assert len(versions) == n_messages + 2  # v1 (empty) + one per message + the flush that empties it
    assert json.loads(versions[-1].raw_value) == {"buffer_total_tokens": 0, "message_buffer": []}
    units = [n for n in graph.search_variables(category="memory_entry")]
    assert all(n.name.startswith("memory-unit-") and n.version == 1 for n in units)
    finalization = graph.get_all_sessions()[2]
    final_ops = {op.op_name for op in graph.search_operations(session_ids=[finalization.session_id])}
    assert final_ops == {"memory_system.message_buffer_update"}  # flush reuses the buffer op (spec §7.14)
    flushed_unit = [e for op in graph.search_operations(session_ids=[finalization.session_id])
                    for e in graph.filter_by_operation(op.op_id).edges
                    if graph.get_variable(e.target_full_node_id).category == "memory_entry"]
    assert len(flushed_unit) == 1


# -- Long-Context --------------------------------------------------------------------------------------
def test_long_context_memory_unit_versions(lc_run, dataset):
    graph = lc_run["graph"]
    ops = {(op.op_name, op.category) for op in graph.get_all_operations()}
    assert ops == {("memory_system.memory_update", "update"), ("memory_system.retrieve", "retrieval"),
                   ("question-answering", "evaluation"), ("llm-judge", "evaluation")}
    messages = dataset.trajectories[0].messages
    versions = graph.get_versions("memory-unit")
    assert len(versions) == len(messages) + 1 and versions[0].raw_value == ""
    assert versions[-1].raw_value.endswith(f"says: {messages[-1].content}\nTimestamp: {messages[-1].timestamp}")
    update_op = _ops(graph, "memory_system.memory_update")[0]
    assert update_op.metadata == {"context_window": 128000, "message_separator": "\n",
                                  "llm_model_for_tokenizer": "gpt-4.1-mini"}
    edges = graph.filter_by_operation(update_op.op_id).edges
    assert sorted(e.source_full_node_id for e in edges) == ["U1:D1:1@1", "memory-unit@1", "parameter:context_window@1"]
    assert graph.get_variable("parameter:context_window@1").raw_value == "128000"
    assert {e.target_full_node_id for e in edges} == {"memory-unit@2"} and {e.category for e in edges} == {"update"}
    retrieval = {(e.category, e.target_full_node_id) for e in _edges_of(graph, "memory_system.retrieve")}
    assert retrieval == {("retrieval", versions[-1].full_node_id)}
