"""The rules replay uses to decide where information survives, and which repairs exist.

Sentences here are invented for the tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from membase.replay.repairs import Evidence, RepairUnsupported, make_repair
from membase.types import Message
from toolkits.replay_verify import _kept, _text_of


def _message(text: str) -> Message:
    return Message(id="m-1", name="Priya", content=text, timestamp="2024-03-02T10:00:00")


STATED = _message("I finally bought a teal kayak for the lake trips this summer.")


def test_a_verbatim_layer_holds_the_information_only_where_the_message_text_is_unchanged() -> None:
    # Long-Context and NaiveRAG keep message text: one changed word is a different statement.
    evidence = Evidence(messages=[STATED], answers=["a teal kayak"], verbatim=True)
    assert evidence.holds("Speaker Priya says: I finally bought a teal kayak for the lake trips this summer.")
    assert not evidence.holds("Speaker Priya says: I finally bought a red kayak for the lake trips this summer.")
    assert evidence.holds("earlier line\nI FINALLY bought a teal kayak, for the lake trips this summer!")


def test_a_rephrasing_layer_must_keep_the_answers_words_when_the_evidence_states_them() -> None:
    # The answer's words with part of the message around them: a fact with a changed colour no
    # longer states it, and a stray "teal kayak" with no context is not the information either.
    evidence = Evidence(messages=[STATED], answers=["a teal kayak"])
    assert evidence.holds("Priya bought a teal kayak for lake trips")
    assert not evidence.holds("Priya bought a red kayak for lake trips this summer")
    assert not evidence.holds("teal kayak")


def test_an_inferred_answer_is_held_by_most_of_the_evidence_message() -> None:
    # "last month" is not in the message: the message's own words carry the information.
    evidence = Evidence(messages=[STATED], answers=["March 2024"])
    assert evidence.holds("Priya: finally bought teal kayak for the lake trips this summer")
    assert not evidence.holds("Priya went to the lake")
    assert evidence.holds("She got it in March 2024")


def test_rank_prefers_the_text_that_holds_more_of_the_evidence() -> None:
    evidence = Evidence(messages=[STATED], answers=["a teal kayak"])
    texts = ["Priya likes the lake", "Priya bought a teal kayak", "Priya finally bought a teal kayak for the lake trips"]
    assert evidence.rank(texts) == 2
    assert evidence.rank(["nothing here"]) is None


def test_an_op_passes_on_the_units_it_writes_not_the_prompt_that_quotes_its_input() -> None:
    # A decision whose prompt still quotes the old unit has replaced it all the same.
    category = {"unit@2": "memory_entry", "prompt@1": "prompt", "decision@1": "llm_response", "shown@1": "similar_memories"}
    assert _kept({"unit@2", "prompt@1", "decision@1"}, category) == {"unit@2"}
    assert _kept({"prompt@1", "decision@1", "shown@1"}, category) == {"decision@1"}


def test_node_values_are_read_as_their_words() -> None:
    # JSON-encoded values are decoded, so an escaped newline does not glue two words together.
    assert "kayak\nfor" in _text_of('{"content": "kayak\\nfor", "name": "Priya"}')
    assert _text_of("plain text") == "plain text"


@pytest.mark.parametrize(("layer", "stage", "key", "reason"), [
    ("Long-Context", "retrieval", ("retrieve", "q"), "whole memory"),
    ("NaiveRAG", "deletion", ("message", 3), "deletes nothing"),
    ("EverMemOS", "update", ("message", 3), "extraction and retrieval only"),
    ("Mem0", "retrieval", ("message", 3), "not recorded by a retrieval call"),
    ("Mem0", "update", ("retrieve", "q"), "query time"),
    ("Mem0", "response", ("answer", "q"), "no repair"),
    ("Mem0v3", "retrieval", ("retrieve", "q"), "no repairs"),
])
def test_repairs_that_do_not_exist_say_why(layer: str, stage: str, key: tuple, reason: str) -> None:
    with pytest.raises(RepairUnsupported, match=reason):
        make_repair(layer, key=key, stage=stage, op_name="op", evidence=Evidence(messages=[STATED]))


@pytest.mark.slow
def test_replay_search_finds_injected_faults_on_a_small_faultbench(locomo_path: Path) -> None:
    """A NaiveRAG faultbench from one conversation: where the search finds a rescuing op, it is the
    fault's op; and the retrieval fault is found (the retrieval repair restores the hidden document)."""
    from toolkits.faultbench import BuildConfig, check_labels_by_replay

    config = BuildConfig(locomo_path=str(locomo_path), out_dir="unused", splits=["rag"], conversations=[1],
                         kinds=["extraction", "retrieval"], max_messages=24, windows_per_conversation=1)
    result = check_labels_by_replay(config)
    found = [c for c in result["cases"] if c["replay_op"] is not None]
    assert found, result["cases"]
    assert all(c["replay_op"] == c["injected_op"] for c in found)
    assert any(c["injected_type"] == "RetrievalError" for c in found)


def test_a_candidate_cap_still_tries_the_questions_retrieval(monkeypatch: pytest.MonkeyPatch) -> None:
    # The retrieval comes last in execution order; a cap on construction candidates must not hide it.
    import toolkits.replay_verify as rv
    from membase.replay import ReplayOutcome

    candidates = [(f"op-{i}", "memory_system.memory_update", "update") for i in range(5)]
    candidates.append(("op-r", "memory_system.retrieve", "retrieval"))
    monkeypatch.setattr(rv, "candidate_ops", lambda _replayer, _record: candidates)
    tried: list[str] = []

    class Replayer:
        def repair(self, _trajectory: str, _qa: str, op_id: str, stage: str) -> ReplayOutcome:
            tried.append(op_id)
            return ReplayOutcome(status="replayed", stage=stage, rescued=op_id == "op-r", applied=True)

    label = rv.earliest_rescue(Replayer(), {"trajectory": "t", "query_id": "query:q@1"}, max_candidates=3)
    assert tried == ["op-0", "op-1", "op-r"]
    assert label["op_id"] == "op-r" and label["error_type"] == "RetrievalError" and label["candidates"] == 6


@pytest.mark.slow
def test_replay_search_finds_injected_retrieval_faults_on_evermemos(locomo_path: Path) -> None:
    """EverMemOS's retrieval repair puts the episode holding the evidence into the final selection:
    the searches a fault emptied of it are found by replay search, at the op the fault acted in."""
    from toolkits.faultbench import BuildConfig, check_labels_by_replay

    config = BuildConfig(locomo_path=str(locomo_path), out_dir="unused", splits=["evermemos"], conversations=[5],
                         kinds=["retrieval"], max_messages=20, windows_per_conversation=2)
    result = check_labels_by_replay(config)
    found = [c for c in result["cases"] if c["replay_op"] is not None]
    assert found, result["cases"]
    assert all(c["replay_op"] == c["injected_op"] and c["replay_type"] == "RetrievalError" for c in found)


@pytest.mark.slow
def test_a_layers_own_model_calls_go_through_the_runs_cache(mem0_run: Path, tmp_path: Path) -> None:
    """Mem0's fake LLM sits behind <run>/call_cache/layer: a replay repeats its calls from there, and a
    replay whose layer cache is gone makes them again (counted as new calls)."""
    import shutil

    from membase.clients.cached import layer_config_with_cache
    from membase.replay import RunReplayer

    assert layer_config_with_cache("Mem0", {"llm_config": {"cache_dir": "mine"}}, "run")["llm_config"] == {
        "cache_dir": "mine"}  # a cache the user named stays
    assert layer_config_with_cache("NaiveRAG", {"max_tokens": 5}, "run") == {"max_tokens": 5}  # no model of its own
    layer_cache = mem0_run / "call_cache" / "layer"
    assert any(layer_cache.rglob("*.json"))
    copy = tmp_path / "run"
    shutil.copytree(mem0_run, copy)
    with RunReplayer(copy) as replayer:
        assert replayer.check()["new_calls"] == 0
    shutil.rmtree(copy / "call_cache" / "layer")
    with RunReplayer(copy) as replayer:
        assert replayer.check()["new_calls"] > 0
