"""The EverMemOS layer traced end to end with the deterministic fake: graph structure per §4.6."""

from __future__ import annotations

import itertools
import json

import pytest

from membase.layers import build_layer_config
from membase.layers.evermemos import EverMemOSConfig, EverMemOSLayer
from membase.layers.evermemos.fake import make_evermemos_fake
from membase.types import Message
from smartcomment import comment_graph, comment_session, comment_variable, current_context

TALK = [
    ("Caroline", "I went to an LGBTQ support group yesterday.", "2023-05-08T13:56:00"),
    ("Melanie", "That sounds powerful, I am proud of you!", "2023-05-08T13:57:00"),
    ("Caroline", "It was, I felt accepted and I want to study counseling.", "2023-05-08T13:58:00"),
    ("Melanie", "I painted a lake sunrise last year.", "2023-05-25T13:14:00"),
    ("Caroline", "I moved from Sweden four years ago.", "2023-05-25T13:15:00"),
]


def _messages(talk=TALK):
    return [Message(id=f"U1:D{i}", name=n, content=t, timestamp=ts) for i, (n, t, ts) in enumerate(talk, 1)]


def _layer(tmp_path, chat_model=None, **overrides) -> EverMemOSLayer:
    fields = dict(
        user_id="locomo-1",
        save_dir=str(tmp_path / "locomo-1"),
        llm_config={"provider": "fake", "model": "evermemos-fake"},
        embedding_config={"provider": "fake", "embedding_dims": 64},
    )
    fields.update(overrides)
    ids = itertools.count()
    return EverMemOSLayer(
        EverMemOSConfig(**fields), chat_model=chat_model, id_factory=lambda: f"{next(ids):024x}"
    )


def _construct(layer, graph_messages):
    with comment_graph(user_id="locomo-1", project_id="EverMemOS", strict=True) as graph:
        with comment_session(session_id="s1", category="memory_construction"):
            for m in graph_messages:
                layer.add_message(m)
        with comment_session(category="memory_construction"):
            layer.flush()
    return graph


def _search(layer, graph, question, qa_id="locomo-qa-1-1", k=2):
    with comment_graph(graph=graph), comment_session(category="memory_search"):
        comment_variable(
            question,
            variable_name="query",
            id_strategy=lambda _: qa_id,
            class_name="query",
            category="message & query",
            metadata={"evidence": []},
        )
        entries = layer.retrieve(question, k=k)
        current_context().remove_variable("query")
    return entries


def _ops(graph, name):
    return [op for op in graph.get_all_operations() if op.op_name == name]


def _edges(graph, op):
    return [e for e in graph.get_all_edges() if e.op_id == op.op_id]


def _prefix(full_node_id: str) -> str:
    return full_node_id.split(":", 1)[0].rsplit("@", 1)[0]


@pytest.fixture
def built(tmp_path):
    layer = _layer(tmp_path)
    graph = _construct(layer, _messages())
    return layer, graph


def test_boundary_split_and_memcell_graph(built):
    layer, graph = built
    assert layer.failures == [] and len(layer.manager.memcells) == 2  # one boundary split + the flush
    # one buffer-append op per message, plus the two resets (after the memcell, after the flush)
    buffer_ops = _ops(graph, "memory_system.message_buffer_update")
    assert len(buffer_ops) == len(TALK) + 2
    assert sorted(json.dumps(op.metadata, sort_keys=True) for op in buffer_ops if op.metadata) == [
        '{"flush": true}',
        '{"smart_mask_flag": false}',
    ]
    versions = graph.get_versions("message-buffer")
    assert json.loads(versions[0].raw_value) == [] and len(versions) == len(buffer_ops) + 1
    assert json.loads(versions[-1].raw_value) == []

    boundary_ops = _ops(graph, "evermemos.boundary_detection")
    assert len(boundary_ops) == len(TALK) - 1 and {op.category for op in boundary_ops} == {
        "boundary_detection"
    }
    split_op = next(
        op
        for op in boundary_ops
        if any(_prefix(e.target_full_node_id) == "temporary_variable" for e in _edges(graph, op))
    )
    edges = _edges(graph, split_op)
    kinds = {(_prefix(e.source_full_node_id), _prefix(e.target_full_node_id), e.category) for e in edges}
    assert ("message-buffer", "new_messages", "split_message_buffer") in kinds
    assert ("message-buffer", "history_messages", "split_message_buffer") in kinds
    assert ("history_messages", "time_gap", "operation") in kinds
    assert ("boundary-detection-prompt-template", "boundary_detection_prompt", "operation") in kinds
    assert ("boundary_detection_prompt", "raw_boundary_detection_response", "boundary_detection") in kinds
    assert ("raw_boundary_detection_response", "boundary_detection_result", "boundary_detection") in kinds
    assert ("boundary_detection_result", "temporary_variable", "operation") in kinds
    gap = next(e.target_full_node_id for e in edges if _prefix(e.target_full_node_id) == "time_gap")
    assert "16 days" in graph.get_variable(gap).raw_value
    # the other judgements end in the shared no-split marker
    no_split = [e for e in graph.get_all_edges() if _prefix(e.target_full_node_id) == "no_split_marker"]
    assert len({e.op_id for e in no_split}) == len(TALK) - 2


def test_episode_extraction_versions_the_memory_unit(built):
    layer, graph = built
    first = layer.manager.memcells[0]
    name = f"memory-unit-{first.event_id}"
    versions = graph.get_versions(name)
    assert [v.version for v in versions] == [1, 2, 3, 4]  # v1, +episode, +event log, final
    values = [json.loads(v.raw_value) for v in versions]
    assert values[0]["episode"] is None and "original_data" in values[0]
    assert values[1]["episode"] == first.episode and values[1]["subject"] == first.subject
    assert values[2]["event_log"] == {"atomic_fact": first.event_log["atomic_fact"]}
    assert "original_data" not in values[3]
    finalize = _ops(graph, "memory_system.finalize_memory_unit")
    assert len(finalize) == 2 and {op.category for op in finalize} == {"initialization"}
    init_edges = [e for e in _edges(graph, finalize[0])]
    assert [(_prefix(e.source_full_node_id), e.target_full_node_id, e.category) for e in init_edges] == [
        ("temporary_variable", f"{name}@1", "initialization")
    ]
    extract = _ops(graph, "memory_system.extract_memory")[0]
    assert extract.category == "extraction" and extract.metadata["event_log_enabled"] is True
    into_v2 = {
        (_prefix(e.source_full_node_id), e.category)
        for e in graph.get_all_edges()
        if e.target_full_node_id == f"{name}@2"
    }
    assert into_v2 == {(name, "mutation"), ("episode_memory", "mutation")}
    chain = {(_prefix(e.source_full_node_id), _prefix(e.target_full_node_id)) for e in _edges(graph, extract)}
    assert {
        ("episode-extraction-prompt-template", "episode_extraction_prompt"),
        ("episode-extraction-custom-instructions", "episode_extraction_prompt"),
        ("episode_extraction_prompt", "raw_episode_extraction_response"),
        ("raw_episode_extraction_response", "episode_memory"),
        ("event-log-prompt-template", "event_extraction_prompt"),
        ("raw_event_log_extraction_response", "event_log"),
    } <= chain
    # the flush memcell is finalised straight from the buffer
    flush_edges = _edges(graph, finalize[1])
    assert _prefix(flush_edges[0].source_full_node_id) == "message-buffer"


def test_agentic_round_one_sufficient(built):
    layer, graph = built
    entries = _search(layer, graph, "Where did Caroline move from Sweden?")
    assert entries and all(e.metadata["trace_id"].startswith("memory-unit-") for e in entries)
    assert _ops(graph, "memory_system.agentic_round2_bundle") == []
    round1 = _ops(graph, "memory_system.agentic_round1_bundle")
    assert len(round1) == 1 and round1[0].metadata["round"] == 1
    edges = _edges(graph, round1[0])
    kinds = {(_prefix(e.source_full_node_id), _prefix(e.target_full_node_id)) for e in edges}
    assert {
        ("query", "sparse_retrieval_results"),
        ("query", "dense_retrieval_results"),
        ("sparse_retrieval_results", "hybrid_retrieval_results"),
        ("hybrid_retrieval_results", "reranked_for_check"),
        ("reranked_for_check", "sufficiency_check_docs_text"),
        ("sufficiency_check_prompt", "raw_sufficiency_check_response"),
        ("raw_sufficiency_check_response", "sufficiency_check_result"),
        ("sufficiency_check_result", "memory-unit-" + entries[0].metadata["id"]),
    } <= kinds
    for entry in entries:  # retrieval edges land on the latest (final) version
        latest = graph.get_latest_variable(entry.metadata["trace_id"])
        assert latest.version == 4
        assert any(e.target_full_node_id == latest.full_node_id for e in edges)


def test_agentic_round_two_and_final_merge(tmp_path):
    layer = _layer(tmp_path, chat_model=make_evermemos_fake(sufficiency="never"))
    graph = _construct(layer, _messages())
    entries = _search(layer, graph, "What did Caroline eat for breakfast?", k=2)
    assert len(entries) == 2
    round2 = _ops(graph, "memory_system.agentic_round2_bundle")
    final = _ops(graph, "memory_system.agentic_final_rerank")
    assert len(round2) == 1 and len(final) == 1 and round2[0].metadata["multi_query"] is True
    r2 = {(_prefix(e.source_full_node_id), _prefix(e.target_full_node_id)) for e in _edges(graph, round2[0])}
    assert {
        ("multi_query_generation_prompt", "raw_multi_query_generation_response"),
        ("raw_multi_query_generation_response", "refined_queries"),
        ("refined_queries", "refined_query"),
        ("refined_query", "sparse_retrieval_results"),
        ("hybrid_retrieval_results", "round2_retrieval_results"),
    } <= r2
    queries = [n for n in graph.get_all_nodes() if n.class_name == "refined_query"]
    assert len(queries) == 2
    fin = _edges(graph, final[0])
    assert {(_prefix(e.source_full_node_id), _prefix(e.target_full_node_id)) for e in fin} >= {
        ("hybrid_retrieval_results", "combined_retrieval_results"),
        ("round2_retrieval_results", "combined_retrieval_results"),
    }
    returned = {
        e.target_full_node_id.rsplit("@", 1)[0]
        for e in fin
        if e.target_full_node_id.startswith("memory-unit-")
    }
    assert returned == {e.metadata["trace_id"] for e in entries}


def test_hybrid_mode_links_lists_to_units(tmp_path):
    layer = _layer(tmp_path, retrieval_config={"retrieval_mode": "hybrid"})
    graph = _construct(layer, _messages())
    entries = _search(layer, graph, "Sweden", k=1)
    op = _ops(graph, "memory_system.hybrid_retrieval")[0]
    assert op.metadata["rrf_k"] == 60 and op.metadata["mode"] == "hybrid_retrieval"
    into_unit = {
        _prefix(e.source_full_node_id)
        for e in _edges(graph, op)
        if e.target_full_node_id.startswith(entries[0].metadata["trace_id"])
    }
    assert into_unit == {"sparse_retrieval_results", "dense_retrieval_results", "parameter"}
    params = {n.name for n in graph.filter_by_operation(op.op_id).nodes if n.class_name == "parameter"}
    assert params == {"retrieval_config.retrieval_mode", "retrieval_config.rrf_k", "retrieval_config.bm25_top_n",
                      "retrieval_config.emb_top_n", "top_k"}
    sparse_inputs = {e.source_full_node_id for e in _edges(graph, op) if "sparse_retrieval_results" in e.target_full_node_id}
    assert sparse_inputs == {"query:locomo-qa-1-1@1", "parameter:retrieval_config.bm25_top_n@1"}


def test_failed_extraction_is_recorded_and_the_run_continues(tmp_path):
    layer = _layer(tmp_path, chat_model=make_evermemos_fake(broken=["event_log"]))
    graph = _construct(layer, _messages())
    assert layer.failures and "event_log extraction failed" in layer.failures[0]["error"]
    failed = [e for e in graph.get_all_edges() if _prefix(e.target_full_node_id) == "failed_marker"]
    assert failed and all("error" in e.metadata and e.category == "extraction" for e in failed)
    assert len(layer.manager.memcells) == 0  # nothing indexed, but every message was processed
    assert len(_ops(graph, "evermemos.boundary_detection")) == len(TALK) - 1


def test_force_split_op_and_untraced_use(tmp_path):
    layer = _layer(tmp_path, boundary_config={"hard_message_limit": 3, "use_smart_mask": False})
    graph = _construct(layer, _messages())
    forced = [op for op in _ops(graph, "evermemos.boundary_detection") if op.metadata.get("trigger_type")]
    assert forced and forced[0].metadata["trigger_type"] == "message_limit"
    assert forced[0].metadata["hard_message_limit"] == 3 and forced[0].metadata["total_messages"] == 3
    plain = _layer(tmp_path / "plain")
    for m in _messages():
        plain.add_message(m)
    plain.flush()
    assert plain.retrieve("Sweden", k=1)[0].metadata["trace_id"].startswith("memory-unit-")


def test_persistence_round_trip(tmp_path, built):
    layer, _ = built
    layer.save_memory()
    again = EverMemOSLayer(layer.config)
    assert again.load_memory() is True
    assert [e.metadata["id"] for e in again.retrieve("Sweden", k=2)] == [
        e.metadata["id"] for e in layer.retrieve("Sweden", k=2)
    ]
    with pytest.raises(NotImplementedError):
        again.delete("x")


def test_config_from_layer_config_json(tmp_path):
    config = build_layer_config(
        "EverMemOS",
        user_id="u",
        save_dir=str(tmp_path),
        llm_config={"provider": "fake"},
        retrieval_config={"retrieval_mode": "hybrid", "final_top_k": 10},
    )
    assert isinstance(config, EverMemOSConfig) and config.get_llm_models() == ["gpt-4o-mini"]
    with pytest.raises(ValueError, match="sufficiency_check_docs"):
        EverMemOSConfig(user_id="u", retrieval_config={"sufficiency_check_docs": 30, "final_top_k": 20})


def test_locomo_session_pair_one_memcell_per_session_and_graph_round_trip(tmp_path, locomo_path):
    from membase.datasets.locomo import load_locomo
    from smartcomment.runtime.network import ExecNetwork

    trajectory, _ = load_locomo(locomo_path)[0]
    sessions = list(trajectory.sessions)[:2]
    layer = _layer(tmp_path, user_id=trajectory.id)
    with comment_graph(user_id=trajectory.id, project_id="EverMemOS", strict=True) as graph:
        for session in sessions:
            with comment_session(session_id=session.id, category="memory_construction"):
                for m in session.messages:
                    layer.add_message(m)
        with comment_session(category="memory_construction"):
            layer.flush()
    cells = layer.manager.memcells
    assert len(cells) == 2 and layer.failures == []
    assert [m["content"] for m in cells[0].original_data] == [m.content for m in sessions[0].messages]
    # smart mask: the last message of session 1 also opens the next memcell
    expected = [sessions[0].messages[-1].content] + [m.content for m in sessions[1].messages]
    assert [m["content"] for m in cells[1].original_data] == expected
    message = graph.get_latest_variable(sessions[0].messages[0].id)
    assert message.category == "message" and message.metadata["speaker"] == sessions[0].messages[0].name
    exported = graph.export_graph()
    assert ExecNetwork.import_graph(json.loads(json.dumps(exported))).export_graph() == exported


def test_openai_compatible_endpoint_from_api_config(tmp_path):
    from membase.clients import ChatClient

    api = tmp_path / "api_config.json"
    api.write_text(
        json.dumps(
            {"api_keys": ["sk-a", "sk-b"], "base_urls": ["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"]}
        )
    )
    layer = _layer(
        tmp_path,
        llm_config={
            "provider": "openai",
            "model": "qwen3",
            "api_config_path": str(api),
            "temperature": 0.5,
            "max_tokens": 99,
        },
    )
    assert isinstance(layer.chat_model.model, ChatClient) and layer.chat_model.model.credentials.size == 2
    seen = {}
    layer.chat_model.model = type("Spy", (), {"complete": lambda self, m, **kw: seen.update(kw) or "x"})()
    layer.chat_model.complete([{"role": "user", "content": "hi"}], temperature=0.0)
    assert seen == {"temperature": 0.0, "max_tokens": 99}
