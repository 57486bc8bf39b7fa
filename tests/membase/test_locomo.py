from __future__ import annotations

import json
from collections import Counter

import pytest

from membase.datasets import load_locomo
from membase.datasets.locomo import NO_ANSWER, parse_evidence
from membase.exceptions import DatasetError


@pytest.fixture(scope="module")
def locomo(locomo_path):
    return load_locomo(locomo_path)


def test_counts_on_the_shared_file(locomo):
    assert len(locomo) == 10
    assert sum(len(t.sessions) for t in locomo.trajectories) == 272
    assert sum(len(t.messages) for t in locomo.trajectories) == 5882
    assert sum(len(q) for q in locomo.qa_pair_lists) == 1986
    types = Counter(q.metadata["question_type"] for qas in locomo.qa_pair_lists for q in qas)
    assert types == {"single-hop": 841, "adversarial": 446, "temporal": 321, "multi-hop": 282, "open-domain": 96}


def test_ids_times_and_metadata(locomo):
    traj, qas = locomo[0]
    assert traj.id == "locomo-1" and traj.metadata == {"speaker_a": "Caroline", "speaker_b": "Melanie"}
    first = traj.sessions[0]
    assert first.id == "locomo-1-session-1"
    msg = first.messages[0]
    assert (msg.id, msg.name, msg.role, msg.timestamp) == ("U1:D1:1", "Caroline", "user", "2023-05-08T13:56:00")
    assert msg.metadata == {"speaker_tag": "speaker_a", "dia_id": "D1:1"}
    starts = [s.started_at for s in traj.sessions]
    assert starts == sorted(starts)
    qa = qas[0]
    assert qa.id == "locomo-qa-1-1" and qa.golden_answers == ["7 May 2023"]
    assert qa.metadata == {"question_type": "temporal", "category_id": 2, "evidence": ["U1:D1:3"],
                           "speaker_names": ["Caroline", "Melanie"]}
    assert qa.timestamp == traj.sessions[-1].ended_at
    all_qas = [q for qs in locomo.qa_pair_lists for q in qs]
    adversarial = [q for q in all_qas if q.metadata["question_type"] == "adversarial"]
    assert all("adversarial_answer" in q.metadata for q in adversarial)
    assert sum(q.golden_answers == [NO_ANSWER] for q in all_qas) == 444
    assert all(isinstance(a, str) for q in all_qas for a in q.golden_answers)


def test_malformed_evidence_is_repaired_and_reported(locomo):
    by_id = {q.id: q for qs in locomo.qa_pair_lists for q in qs}
    assert by_id["locomo-qa-1-38"].metadata["evidence"] == ["U1:D8:6", "U1:D9:17"]
    assert "U5:D11:26" in by_id["locomo-qa-5-19"].metadata["evidence"]
    assert by_id["locomo-qa-4-89"].metadata["evidence"] == ["U4:D1:18", "U4:D1:20"]  # the bare "D" is dropped
    assert any("locomo-qa-4-89" in issue and "unparseable" in issue for issue in locomo.issues)
    assert any("locomo-qa-10-70" in issue for issue in locomo.issues)


def test_parse_evidence_variants():
    assert parse_evidence(["D1:3"]) == (["D1:3"], [])
    ids, problems = parse_evidence(["D9:1 D4:4", "D:11:26", "D30:05", "D", "D9:1"])
    assert ids == ["D9:1", "D4:4", "D11:26", "D30:5"]
    assert len(problems) == 4


def _official_sample():
    return {
        "sample_id": "x",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi", "img_url": ["u"]}],
            "session_2_date_time": "10:00 am on 9 May, 2023",
            "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "yo"}],
        },
        "session_summary": {"session_1_summary": "S1", "session_2_summary": "S2"},
        "observation": {"session_1_observation": {"Ann": []}},
        "qa": [{"question": "q?", "answer": 2022, "evidence": ["D2:1"], "category": 1}],
    }


def test_official_format_keeps_summaries_and_observations(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_official_sample()]))
    ds = load_locomo(path)
    traj, qas = ds[0]
    assert [s.metadata.get("session_summary") for s in traj.sessions] == ["S1", "S2"]
    assert traj.sessions[0].metadata["session_observation"] == {"Ann": []}
    assert traj.sessions[0].messages[0].metadata["img_url"] == ["u"]
    assert qas[0].golden_answers == ["2022"] and qas[0].metadata["question_type"] == "multi-hop"


def test_bad_input_gives_one_clear_error(tmp_path):
    with pytest.raises(DatasetError, match="not found"):
        load_locomo(tmp_path / "missing.json")
    bad = _official_sample()
    bad["conversation"]["session_1"][0]["speaker"] = "Eve"
    (tmp_path / "bad.json").write_text(json.dumps([bad]))
    with pytest.raises(DatasetError, match="unknown speaker 'Eve'"):
        load_locomo(tmp_path / "bad.json")
    del bad["conversation"]["speaker_b"]
    (tmp_path / "bad2.json").write_text(json.dumps([bad]))
    with pytest.raises(DatasetError, match="lacks key 'speaker_b'"):
        load_locomo(tmp_path / "bad2.json")


def test_dataset_sample_and_roundtrip(locomo, tmp_path):
    sub = locomo.sample(size=3, seed=1, question_filter=lambda q: q.metadata["question_type"] != "adversarial")
    assert len(sub) == 3
    assert all(q.metadata["question_type"] != "adversarial" for qs in sub.qa_pair_lists for q in qs)
    assert [t.id for t in sub.trajectories] == [t.id for t in locomo.sample(size=3, seed=1).trajectories]
    path = sub.save_dataset(tmp_path / "ds.json")
    again = type(sub).read_dataset(path)
    assert again.trajectories[0] == sub.trajectories[0]
