"""The Mem0v3 layer on the real mem0ai 2.x, driven by the deterministic fake, traced from outside."""

from __future__ import annotations

import ast
import json

import pytest

from tests.membase_mem0v3._helpers import NEEDS_MEM0V3, make_config, message

pytest.importorskip("mem0.utils.scoring", reason=NEEDS_MEM0V3)

from membase.clients.fake import FunctionChatModel  # noqa: E402
from membase.exceptions import ConfigError, ModelUnreachableError  # noqa: E402
from membase.layers.mem0v3 import Mem0v3Layer  # noqa: E402
from membase.layers.mem0v3_fake import Mem0v3FakeBrain  # noqa: E402
from membase.layers.mem0v3_tracing import CUSTOM_INSTRUCTIONS_VARIABLE, SYSTEM_PROMPT_VARIABLE  # noqa: E402

ADD_OPS = [
    "memory_system.recent_messages",
    "memory_system.search_existing_memories",
    "memory_system.extract_memories",
    "memory_system.parse_extraction",
    "memory_system.embed_memories",
    "memory_system.hash_dedup",
    "memory_system.insert_memories",
]
TWO_FACTS = [
    message(1, "My sister Lea plays the cello in a quartet."),
    message(2, "We are planning a hiking trip to the Dolomites in June."),
]


def test_each_message_records_the_additive_op_map_in_order(traced_question):
    run = traced_question(TWO_FACTS, "What does Lea play?", ["mem0v3-message-1"], "The cello.")
    names = [op.op_name for op in run.graph.get_all_operations()]
    construction = [n for n in names if n in ADD_OPS]
    assert construction == ADD_OPS * 2
    categories = {op.op_name: op.category for op in run.graph.get_all_operations()}
    assert categories["memory_system.extract_memories"] == "extraction"
    assert categories["memory_system.embed_memories"] == "embedding"
    assert categories["memory_system.insert_memories"] == "update"
    assert {categories[n] for n in ("memory_system.semantic_search", "memory_system.score_fusion")} == {"retrieval"}


def test_the_extraction_call_reads_message_context_and_prompts(traced_question):
    run = traced_question(TWO_FACTS, "What does Lea play?", ["mem0v3-message-1"], "The cello.",
                          custom_instructions="Keep the names of instruments.")
    second = run.ops("memory_system.extract_memories")[1]
    by_target: dict[str, set[str]] = {}
    for edge in run.edges(second):
        by_target.setdefault(edge.target_full_node_id, set()).add(edge.source_full_node_id)
    instruction = next(t for t in by_target if t.startswith("additive_extraction_task_instruction:"))
    raw = next(t for t in by_target if t.startswith("raw_additive_extraction_response:"))
    sources = {s.split(":")[0].split("@")[0] for s in by_target[instruction]}
    assert sources == {"mem0v3-message-2", "recent_messages", "existing_memories", CUSTOM_INSTRUCTIONS_VARIABLE}
    assert by_target[raw] == {instruction, f"{SYSTEM_PROMPT_VARIABLE}@1"}
    custom = run.graph.get_latest_variable(CUSTOM_INSTRUCTIONS_VARIABLE)
    assert ast.literal_eval(custom.value) == "Keep the names of instruments." and custom.category == "prompt"
    # the value the graph records is the value mem0 sent: the optimizer's edits take effect
    sent = run.layer.chat_model.calls[-1].messages[-1]["content"]
    assert "## Custom Instructions\nKeep the names of instruments." in sent
    # the recent-message context names the earlier message without a lineage edge
    (recent_op,) = [op for op in run.ops("memory_system.recent_messages")][1:]
    assert recent_op.metadata["message_ids"] == ["mem0v3-message-1"]
    assert run.edges(recent_op) == []


def test_units_hold_the_parsed_texts_and_search_results_resolve(traced_question):
    run = traced_question(TWO_FACTS, "Which sister plays the cello in a quartet?", ["mem0v3-message-1"], "Lea.", k=2)
    units = {u["id"]: u["memory"] for u in run.layer.get_all()}
    assert sorted(units.values()) == sorted(
        ["Ana: My sister Lea plays the cello in a quartet.", "Ana: We are planning a hiking trip to the Dolomites in June."])
    for memory_id, text in units.items():
        node = run.graph.get_latest_variable(f"memory-unit-{memory_id}")
        assert json.loads(node.value)["memory"] == text and node.version == 1
    assert [e.metadata["trace_id"] for e in run.entries] and all(
        run.graph.get_latest_variable(e.metadata["trace_id"]) is not None for e in run.entries)
    (fusion,) = run.ops("memory_system.score_fusion")
    details = fusion.metadata["scores"]
    assert set(details) == {e.metadata["id"] for e in run.entries}
    for entry in run.entries:  # explain=True: mem0's score details are op metadata and entry metadata
        assert details[entry.metadata["id"]] == entry.metadata["score_details"]
        assert details[entry.metadata["id"]]["threshold"] == 0.1
    assert fusion.metadata["bm25_active"] is False  # no fastembed in this venv: semantic score only


def test_a_text_an_existing_memory_already_has_is_dropped_by_hash(traced_question):
    texts = iter([["Lea plays the cello."], ["Lea plays the cello.", "Lea tours in May."]])

    def reply(messages, **kwargs):
        return json.dumps({"memory": [{"id": str(i), "text": t} for i, t in enumerate(next(texts))]})

    run = traced_question(TWO_FACTS, "What does Lea play?", ["mem0v3-message-1"], "The cello.",
                          chat_model=FunctionChatModel(reply, model="scripted"))
    first = run.layer.get_all()
    assert sorted(u["memory"] for u in first) == ["Lea plays the cello.", "Lea tours in May."]
    dedup = run.ops("memory_system.hash_dedup")[1]
    original = next(u for u in first if u["memory"] == "Lea plays the cello.")
    assert dedup.metadata["skipped"] == [
        {"text": "Lea plays the cello.", "reason": "existing_memory_has_same_hash", "memory_id": original["id"]}]
    inserted = [e.target_full_node_id for e in run.edges(run.ops("memory_system.insert_memories")[1])]
    assert len(inserted) == 1


def test_a_failing_message_is_recorded_and_the_run_continues(traced_question):
    def flaky(messages, **kwargs):
        if "quartet" in messages[-1]["content"].split("## New Messages", 1)[1]:
            raise RuntimeError("the model replied with nothing")
        return Mem0v3FakeBrain()(messages)

    run = traced_question(TWO_FACTS, "What does Lea play?", ["mem0v3-message-1"], "I do not know.",
                          chat_model=FunctionChatModel(flaky, model="flaky"))
    assert [f["message_id"] for f in run.layer.failures] == ["mem0v3-message-1"]
    assert "the model replied with nothing" in run.layer.failures[0]["error"]
    assert len(run.layer.get_all()) == 1
    failed = run.ops("memory_system.extract_memories")[0]
    assert any((e.metadata or {}).get("error") for e in run.edges(failed))


def test_a_fatal_client_error_stops_the_run(tmp_path):
    def dead(messages, **kwargs):
        raise ModelUnreachableError("no endpoint at http://127.0.0.1:9")

    layer = Mem0v3Layer(make_config(tmp_path), chat_model=FunctionChatModel(dead, model="dead"))
    try:
        with pytest.raises(ModelUnreachableError):
            layer.add_message(TWO_FACTS[0])
    finally:
        layer.cleanup()


def test_untraced_use_and_persistence(tmp_path):
    layer = Mem0v3Layer(make_config(tmp_path))
    try:
        layer.add_message(TWO_FACTS[0])
        assert [e.content for e in layer.retrieve("Who plays the cello?", k=3)] == [
            "Ana: My sister Lea plays the cello in a quartet."]
        layer.save_memory()
        assert layer.load_memory("mem0v3-user") is True
        memory_id = layer.get_all()[0]["id"]
        assert layer.update(memory_id, data="Lea plays the viola.") is True
        assert layer.get_all()[0]["memory"] == "Lea plays the viola."
        assert layer.delete(memory_id) is True and layer.get_all() == []
    finally:
        layer.cleanup()


def test_the_1_0_5_layer_refuses_mem0_2_x_instead_of_dropping_its_prompts(tmp_path):
    from membase.layers.mem0 import Mem0Config, Mem0Layer

    config = Mem0Config(user_id="u", save_dir=str(tmp_path / "u"), llm_provider="fake", embedder_provider="fake",
                        embedding_model_dims=32, custom_fact_extraction_prompt="Reply in json with facts.")
    with pytest.raises(ConfigError, match="ignores the config key.*custom_fact_extraction_prompt.*Mem0v3"):
        Mem0Layer(config)


def _capitalised_words(text: str) -> list[tuple[str, str]]:
    """A stand-in for spaCy: every capitalised word after the speaker prefix is an entity."""
    body = text.split(": ", 1)[-1]
    return [("PROPN", word.strip(".,")) for word in body.split()[1:] if word[:1].isupper()]


def test_entities_are_linked_and_boost_search_when_an_extractor_is_available(traced_question, monkeypatch):
    import mem0.memory.main as mem0_main

    monkeypatch.setattr(mem0_main, "extract_entities_batch", lambda texts, **kw: [_capitalised_words(t) for t in texts])
    monkeypatch.setattr(mem0_main, "extract_entities", _capitalised_words)
    messages = [*TWO_FACTS, message(3, "Yesterday Lea bought a new bow for her old cello.")]
    run = traced_question(messages, "Ana: Where will the Dolomites trip go in June?", ["mem0v3-message-2"],
                          "The Dolomites.", k=2)
    links = [e for op in run.ops("memory_system.link_entities") for e in run.edges(op)]
    assert {e.target_full_node_id.rsplit("@", 1)[0] for e in links} == {"entity-lea", "entity-dolomites", "entity-june"}
    assert all(e.source_full_node_id.startswith("memory-unit-") for e in links)
    # the third memory links to the entity the first one created (mem0 updates its linked ids)
    lea = {e.source_full_node_id for e in links if e.target_full_node_id.startswith("entity-lea")}
    assert len(lea) == 2
    (fusion,) = run.ops("memory_system.score_fusion")
    assert fusion.metadata["entity_boost_active"] is True
    boosted = [d for d in fusion.metadata["scores"].values() if d["entity_boost"] > 0]
    assert boosted and all(d["max_possible_score"] == 1.5 for d in boosted)


def test_bm25_hits_are_recorded_and_fused_when_keyword_search_is_active(traced_question):
    from types import SimpleNamespace

    def bm25_on(layer):  # a stand-in for fastembed's sparse encoder: every stored memory is a keyword hit
        hits = [SimpleNamespace(id=u["id"], score=4.0) for u in layer.get_all()]
        layer.memory.vector_store.keyword_search = lambda query, top_k=5, filters=None: hits

    run = traced_question(TWO_FACTS, "Which sister plays the cello in a quartet?", ["mem0v3-message-1"], "Lea.",
                          k=2, before_search=bm25_on)
    (keyword,) = run.ops("memory_system.keyword_search")
    (target,) = {e.target_full_node_id for e in run.edges(keyword)}
    assert len(json.loads(run.graph.get_variable(target).value)) == 2
    (fusion,) = run.ops("memory_system.score_fusion")
    assert fusion.metadata["bm25_active"] is True and fusion.metadata["entity_boost_active"] is False
    assert all(d["bm25_score"] > 0 and d["max_possible_score"] == 2.0 for d in fusion.metadata["scores"].values())
    assert any(e.source_full_node_id == target for e in run.edges(fusion))
