"""LongMemEval: the loader on a small file in the official format, its bad inputs, and a run end to end
(`python -m membase run` with Long-Context and fake models, then evidence_flow attribution)."""

from __future__ import annotations

import json

import pytest

from membase.cli import main
from membase.datasets import detect_dataset_type, load_dataset
from membase.datasets.longmemeval import load_longmemeval
from membase.exceptions import DatasetError


def _turn(role, content, has_answer=None):
    turn = {"role": role, "content": content}
    if has_answer is not None:
        turn["has_answer"] = has_answer
    return turn


def _question(qid, question, answer, sessions, *, qtype="single-session-user"):
    """One record; `sessions` = [(session_id, date, turns)]."""
    return {
        "question_id": qid, "question_type": qtype, "question": question, "answer": answer,
        "question_date": "2024/02/10 (Sat) 18:30",
        "haystack_session_ids": [s[0] for s in sessions], "haystack_dates": [s[1] for s in sessions],
        "haystack_sessions": [s[2] for s in sessions],
        "answer_session_ids": [s[0] for s in sessions if any(t.get("has_answer") for t in s[2])],
    }


def longmemeval_records():
    greenhouse = [
        ("sess_garden", "2024/01/15 (Mon) 09:12", [
            _turn("user", "I finally set up the small greenhouse behind the garage last weekend.", True),
            _turn("assistant", "That sounds lovely. What are you planning to grow in it?"),
            _turn("user", "Mostly chili peppers, and a row of basil for my sister.", True),
            _turn("assistant", "Chili peppers like warmth, so the greenhouse is a good fit."),
        ]),
        ("sess_bike", "2024/01/03 (Wed) 20:40", [  # earlier date, later in the file: sorted first
            _turn("user", "My bicycle chain keeps slipping on steep hills."),
            _turn("assistant", "A worn chain or cassette often causes that; have a shop measure it."),
        ]),
    ]
    violin = [
        ("sess_music", "2023/11/20 (Mon) 17:05", [
            _turn("user", "I started violin lessons with a teacher named Ottoline on Tuesdays.", True),
            _turn("assistant", "Wonderful! Weekly lessons help a lot at the start."),
        ]),
        ("sess_empty", "2023/11/22 (Wed) 08:00", []),
    ]
    return [
        _question("q_greenhouse", "What do I mostly grow in my greenhouse?", "chili peppers", greenhouse),
        _question("q_violin", "Who teaches my violin lessons?", "Ottoline", violin),
        _question("q_violin_abs", "Who teaches my cello lessons?", "You did not mention cello lessons.", violin,
                  qtype="single-session-user"),
        _question("q_count", "How many bikes do I own?", 2, greenhouse[1:], qtype="multi-session"),
    ]


@pytest.fixture
def lme_path(tmp_path):
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(longmemeval_records()))
    return path


def test_one_trajectory_per_question_with_official_ids(lme_path):
    data = load_longmemeval(lme_path)
    assert data.name == "LongMemEval" and len(data) == 4
    traj, qas = data[0]
    assert traj.id == "longmemeval-q_greenhouse" and [q.id for q in qas] == ["q_greenhouse"]
    # sessions ordered by date, message ids keep the file's positions
    assert [s.id for s in traj.sessions] == ["sess_bike", "sess_garden"]
    assert traj.sessions[0].messages[0].id == "longmemeval-message-0-1-0"
    assert traj.sessions[1].messages[2].id == "longmemeval-message-0-0-2"
    first = traj.sessions[1].messages[0]
    assert (first.role, first.name, first.timestamp) == ("user", "User", "2024-01-15T09:12:00")
    assert qas[0].metadata["evidence"] == ["longmemeval-message-0-0-0", "longmemeval-message-0-0-2"]
    assert qas[0].golden_answers == ["chili peppers"] and qas[0].timestamp == "2024-02-10T18:30:00"
    assert data[3][1][0].golden_answers == ["2"]  # an integer answer becomes text


def test_abstention_questions_are_kept_and_marked(lme_path):
    data = load_longmemeval(lme_path)
    abstention = data[2][1][0]
    assert abstention.id == "q_violin_abs" and abstention.metadata["abstention"] is True
    assert data[1][1][0].metadata["abstention"] is False
    # the empty haystack session is left out and reported
    assert [s.id for s in data[1][0].sessions] == ["sess_music"]
    assert any("sess_empty" in issue for issue in data.issues)


def test_auto_detection_by_shape(lme_path, tmp_path):
    assert detect_dataset_type(json.loads(lme_path.read_text())) == "LongMemEval"
    assert load_dataset("auto", lme_path).name == "LongMemEval"
    assert detect_dataset_type([{"sample_id": "x", "conversation": {}, "qa": []}]) == "LoCoMo"
    assert detect_dataset_type({"_metadata": {}, "dialogues": []}) == "RealMem"
    assert detect_dataset_type([{"id": 1}]) is None and detect_dataset_type([]) is None
    # a LongMemEval record that lost its id is still told apart, and named by its loader
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps([{k: v for k, v in longmemeval_records()[0].items() if k != "question_id"}]))
    with pytest.raises(DatasetError, match="record 0: field 'question_id': missing"):
        load_dataset("auto", broken)
    # a file of none of the three shapes says what it looks like and how to read it as one of them
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([{"id": 1}]))
    with pytest.raises(DatasetError, match=r"not a LoCoMo, LongMemEval or RealMem file by its shape \(a list whose "
                                           r"first record has id\); pass --dataset-type"):
        load_dataset("auto", odd)
    odd.write_text(json.dumps({"sessions": []}))
    with pytest.raises(DatasetError, match=r"an object with sessions but no 'dialogues'"):
        load_dataset("auto", odd)
    # read as LoCoMo, its loader says what does not fit
    odd.write_text(json.dumps([{"id": 1}]))
    with pytest.raises(DatasetError, match="LoCoMo sample 1"):
        load_dataset("LoCoMo", odd)


def _broken(records, index, change):
    records = json.loads(json.dumps(records))
    change(records[index])
    return records


BAD_INPUTS = {
    "missing field": (lambda r: r.pop("haystack_dates"), "record 1 (question_id 'q_violin'): field 'haystack_dates': missing"),
    "turns not a list": (lambda r: r["haystack_sessions"].__setitem__(0, "hello"),
                         "field 'haystack_sessions[0]': expected a list of turns, got str"),
    "unparsable date": (lambda r: r["haystack_dates"].__setitem__(0, "sometime in May"),
                        "field 'haystack_dates[0]': date 'sometime in May' does not parse"),
    "bad question date": (lambda r: r.__setitem__("question_date", "2024/13/45 (Xyz) 99:99"),
                          "field 'question_date': date"),
    "bad role": (lambda r: r["haystack_sessions"][0][0].__setitem__("role", "narrator"),
                 "field 'haystack_sessions[0][0].role': expected 'user' or 'assistant', got 'narrator'"),
    "lengths differ": (lambda r: r["haystack_session_ids"].pop(), "the three haystack lists differ in length"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_one_error_line_naming_file_record_and_field(name, tmp_path, capsys):
    change, expected = BAD_INPUTS[name]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_broken(longmemeval_records(), 1, change)))
    layer = tmp_path / "lc.json"
    layer.write_text(json.dumps({"layer_type": "Long-Context"}))
    out = tmp_path / "run"
    assert main(["run", "--layer-config", str(layer), "--dataset", str(path), "--output-dir", str(out),
                 "--quiet", "--qa-model", "fake:x", "--judge-model", "fake:x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and str(path) in err and expected in err
    assert not (out / "traced_data").exists()  # nothing started


def test_unknown_dataset_type_is_one_error_line(lme_path, tmp_path, capsys):
    layer = tmp_path / "lc.json"
    layer.write_text(json.dumps({"layer_type": "Long-Context"}))
    assert main(["construct", "--layer-config", str(layer), "--dataset", str(lme_path), "--dataset-type", "MSC",
                 "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: unknown --dataset-type 'MSC'; choose auto or one of ['LoCoMo', 'LongMemEval', 'RealMem']"


def test_run_and_evidence_flow_attribution_end_to_end(lme_path, tmp_path, capsys):
    from toolkits.attribution import cli as attribution_cli

    layer = tmp_path / "lc.json"
    layer.write_text(json.dumps({"layer_type": "Long-Context", "context_window": 4000}))
    run_dir = tmp_path / "run"
    assert main(["run", "--layer-config", str(layer), "--dataset", str(lme_path), "--dataset-type", "LongMemEval",
                 "--output-dir", str(run_dir), "--quiet", "--top-k", "1", "--qa-model", "fake:I do not know",
                 "--judge-model", 'fake:{"label": "WRONG"}', "--metrics", "f1,llm_judge"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["evaluation"]["items_done"] == 4 and summary["construction"]["users_done"] == 4
    graph = json.loads((run_dir / "traced_data" / "longmemeval-q_greenhouse" / "graph_evaluation.json").read_text())
    assert graph["user_id"] == "longmemeval-q_greenhouse" and graph["metadata"]["dataset_cls"] == "LongMemEval"
    query = next(n for n in graph["data"]["nodes"] if n["class_name"] == "query")
    assert query["full_node_id"] == "query:q_greenhouse@1"

    out = tmp_path / "attribution.json"
    assert attribution_cli.main([str(run_dir), "--exploration-strategy", "evidence_flow",
                                       "--starting-nodes-type", "source_evidence", "--output-path", str(out),
                                       "--no-progress"]) == 0
    data = json.loads(out.read_text())
    metrics = data["metrics"]
    # 4 wrong answers judged; the abstention question is kept in the run but not attributed
    assert metrics["judged_failures"] == 4 and metrics["skipped_adversarial"] == 1 and metrics["total_cases"] == 3
    assert {r["query_id"] for r in data["results"]} == {"query:q_greenhouse@1", "query:q_violin@1", "query:q_count@1"}
    greenhouse = next(r for r in data["results"] if r["query_id"] == "query:q_greenhouse@1")
    assert greenhouse["source_evidence_ids"] == ["longmemeval-message-0-0-0@1", "longmemeval-message-0-0-2@1"]
    assert greenhouse["attribution_failure"] is None and greenhouse["error_attribution_result"]["op_id"]

    from toolkits.report import cli as report_cli

    report = tmp_path / "report"
    assert report_cli.main(["--data-path", str(out), "--save-folder", str(report), "--no-llm", "--no-png",
                                 "--no-progress"]) == 0
    text = (report / "error_analysis_report.md").read_text()
    assert "| LongMemEval | 3 |" in text  # the dataset-source row counts the three attributed questions


def test_faultbench_builds_cases_from_a_longmemeval_file(lme_path, tmp_path, capsys):
    from toolkits.faultbench.__main__ import main as faultbench_main

    out = tmp_path / "bench"
    assert faultbench_main(["build", str(out), "--dataset", str(lme_path), "--splits", "long_context",
                            "--kinds", "extraction"]) == 0
    (case,) = sorted((out / "long_context").glob("*.json"))
    assert case.name == "long_context-longmemeval-2-1.json"  # the question with exactly one evidence message
    graph = json.loads(case.read_text())
    assert graph["metadata"]["memtracebench_dataset_source"] == "LongMemEval"
    assert [a["query_id"] for a in graph["data"]["annotations"]] == ["query:q_violin@1"]
    manifest = json.loads((out / "faultbench_manifest.json").read_text())
    assert manifest["config"]["dataset_type"] == "LongMemEval"
