"""The memory paraphrase table: Mem0 stores a message as the table's rewordings, and the harness reads them there.

A tiny data file (``tiny_paraphrase.json``) builds through the real Mem0 layer; the benchmark
``p`` (LoCoMo by reference) builds a few cases when the shared LoCoMo file is present.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.attribution.build import build_benchmark
from benchmarks.attribution.data import BenchmarkError, load_benchmark
from benchmarks.attribution.reader import evidence_keys

TINY = Path(__file__).with_name("tiny_paraphrase.json")
DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "attribution" / "data"


def _memory_texts(export: dict) -> set[str]:
    """The texts of every memory unit version in a Mem0 graph."""
    return {json.loads(n["value"])["memory"] for n in export["data"]["nodes"] if n.get("category") == "memory_entry"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny-paraphrase")
    return out, build_benchmark(load_benchmark(TINY), out)


def test_the_graph_holds_the_tables_rewordings_and_copies_the_other_messages(built):
    out, report = built
    assert [(c["case"], c["final_error_type"]) for c in report.cases] == [(1, "ExtractionError"), (2, "RetrievalError")]
    export = json.loads((out / "mem0" / "tinypara-002.json").read_text())
    memories = _memory_texts(export)
    assert {"Omar adopted a grey rabbit from a shelter on 9 May 2025.", "Omar's rabbit is named Pebble.",
            "Nadia's cousin Felix begins a carpentry apprenticeship in Leeds on 19 May 2025."} <= memories
    assert not any("adopted a grey rabbit from the shelter yesterday" in m for m in memories)  # no copy of message 1
    assert any(m.startswith("Omar: She already chewed") for m in memories)  # a message without an entry is copied


def test_a_planned_edit_acts_on_the_rewording_at_the_extraction(built):
    out, report = built
    case = report.cases[0]
    export = json.loads((out / "mem0" / "tinypara-001.json").read_text())
    ops = {op["op_id"]: op["op_name"] for op in export["data"]["operations"]}
    memories = _memory_texts(export)
    assert "Omar's rabbit is named Clover." in memories and "Omar's rabbit is named Pebble." not in memories
    assert ops[case["final_op_id"]] == "memory_system.extract_facts"


def test_the_evidence_reader_keys_a_reworded_message_by_the_memory_that_states_the_answer():
    conv = load_benchmark(TINY).conversations["burrow"]
    texts = [text for _id, _who, text, _time in conv.messages()]
    assert evidence_keys(conv.questions["when"], texts, conv.memories) == (
        "Omar adopted a grey rabbit from a shelter on 9 May 2025.",)
    assert evidence_keys(conv.questions["name"], texts, conv.memories) == ("Omar's rabbit is named Pebble.",)
    assert evidence_keys(conv.questions["name"], texts) == (texts[0],)  # other splits: the message's own sentence


def test_mem0s_fake_extraction_returns_the_table_verbatim_and_splits_other_messages():
    from membase.layers.mem0_fake import METADATA_MARKER, Mem0FakeBrain

    brain = Mem0FakeBrain(max_facts=6, memories={"I got a kayak. It is bright orange.": ["Ada owns an orange kayak."]})

    def facts(content: str) -> list[str]:
        prompt = f"Input:\nuser: {content}{METADATA_MARKER}\nSpeaker Name: Ada\nSpeaker Role: user\n"
        reply = brain([{"role": "system", "content": "extract"}, {"role": "user", "content": prompt}])
        return json.loads(reply.removeprefix("```json\n").removesuffix("\n```"))["facts"]

    assert facts("I got a kayak. It is bright orange.") == ["Ada owns an orange kayak."]
    assert facts("I bought a green canoe at the harbour market. The canoe came with two wooden paddles.") == [
        "Ada: I bought a green canoe at the harbour market.", "Ada: The canoe came with two wooden paddles."]


@pytest.mark.parametrize("memories, message", [
    ({"9": ["x"]}, "key '9' names no message"),
    ({"D3:1": ["x"]}, "key 'D3:1' names no message"),
    ({"1": []}, "needs a non-empty list"),
    ({"1": ["ok", 3]}, "needs a non-empty list"),
])
def test_a_bad_paraphrase_table_is_refused_naming_the_field(tmp_path, memories, message):
    data = json.loads(TINY.read_text())
    data["conversations"][0]["memories"] = memories
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BenchmarkError, match=f"conversation 0 field 'memories'.*{message}"):
        load_benchmark(path)


def test_a_message_whose_words_another_message_repeats_cannot_have_an_entry(tmp_path):
    data = json.loads(TINY.read_text())
    turns = data["conversations"][0]["sessions"][1]["turns"]
    turns[1][1] = data["conversations"][0]["sessions"][0]["turns"][0][1]
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BenchmarkError, match="says what another message says"):
        load_benchmark(path)


def _locomo_file(tmp_path: Path) -> Path:
    """A LoCoMo-layout file with new sentences: two sessions, two questions."""
    sample = {"sample_id": "conv-x", "conversation": {
        "speaker_a": "Ada", "speaker_b": "Ben",
        "session_1_date_time": "9:05 am on 3 March, 2024",
        "session_1": [{"speaker": "Ada", "dia_id": "D1:1", "text": "I repainted the boat shed blue last night."},
                      {"speaker": "Ben", "dia_id": "D1:2", "text": "Blue suits the lake."}],
        "session_2_date_time": "6:40 pm on 10 March, 2024",
        "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "My sister moves to Oslo in April."}]},
        "qa": [{"question": "What colour is Ada's boat shed?", "answer": "blue", "evidence": ["D1:1"], "category": 4},
               {"question": "Where does Ben's sister move?", "answer": "Oslo", "evidence": ["D2:1"], "category": 4}]}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    return path


def _referring(tmp_path: Path, sessions: int, qa: int) -> Path:
    data = {"format": "attribution-benchmark-v1", "reader": "evidence", "conversations": [
        {"id": "x", "locomo": {"sample": "conv-x", "sessions": sessions},
         "questions": [{"key": "q", "locomo_qa": qa}],
         "memories": {"D1:1": ["On 2 March 2024 Ada repainted her boat shed blue."]}}],
        "cases": [{"conversation": "x", "split": "mem0", "question": "q",
                   "fault": {"error": "retrieval", "corruption": "skip", "site": "search"}}]}
    path = tmp_path / f"ref-{sessions}-{qa}.json"
    path.write_text(json.dumps(data))
    return path


def test_a_conversation_taken_from_locomo_by_reference_reads_turns_question_and_evidence(tmp_path):
    locomo = _locomo_file(tmp_path)
    conv = load_benchmark(_referring(tmp_path, 2, 2), locomo=locomo).conversations["x"]
    assert [(who, text) for _id, who, text, _t in conv.messages()][2] == ("Ben", "My sister moves to Oslo in April.")
    assert conv.sessions[1][0] == "2024-03-10T18:40:00"
    assert conv.questions["q"]["evidence"] == [3] and conv.qa("q").golden_answers == ["Oslo"]
    assert conv.memories == {1: ("On 2 March 2024 Ada repainted her boat shed blue.",)}
    with pytest.raises(BenchmarkError, match=r"question 0.*outside the sessions taken"):
        load_benchmark(_referring(tmp_path, 1, 2), locomo=locomo)
    with pytest.raises(BenchmarkError, match="cannot read it"):
        load_benchmark(_referring(tmp_path, 1, 1), locomo=tmp_path / "missing.json")


@pytest.mark.slow
def test_benchmark_p_builds_verified_cases_whose_memories_are_the_paraphrases(tmp_path, locomo_path):
    bench = load_benchmark(DATA / "p.json", locomo=locomo_path)
    report = build_benchmark(bench, tmp_path, numbers=[1, 2, 6])
    assert [(c["case"], c["final_error_type"]) for c in report.cases] == [
        (1, "ExtractionError"), (2, "RetrievalError"), (6, "ExtractionError")]
    export = json.loads((tmp_path / "mem0" / "p-002.json").read_text())
    memories = _memory_texts(export)
    assert "Caroline attended an LGBTQ support group on 7 May 2023 and found it very powerful." in memories
    assert not any(m.startswith("Caroline: I went to a LGBTQ support group") for m in memories)


def test_list_names_a_benchmark_it_cannot_load_here_and_lists_the_others(tmp_path, monkeypatch, capsys):
    from benchmarks.attribution.__main__ import main

    monkeypatch.setenv("MEMTRACE_SHARED_DIR", str(tmp_path))  # no LoCoMo file there
    assert main(["list"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "not loadable here" in lines["p"] and "locomo10.json" in lines["p"]
    assert "85 cases" in lines["d"]
