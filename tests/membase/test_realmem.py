"""RealMem: the loader on a small persona in the RealMemBench format (and on the shared slice), its bad
inputs, online questions inside the construction graph, the gold-point extraction check, and a run end to
end (`python -m membase run` with Long-Context and fake models, then evidence_flow attribution)."""

from __future__ import annotations

import json

import pytest

from membase.cli import main
from membase.datasets import load_dataset
from membase.datasets.gold_points import check_gold_points, check_run, point_recall
from membase.datasets.gold_points import main as gold_points_main
from membase.datasets.realmem import load_realmem
from tests.conftest import SHARED, require_shared

SLICE = SHARED / "data" / "realmem" / "Adeleke_Okonjo_dialogues_first40_sessions.json"
PERSON = "Marisol_Quennell"


def _user(text, **extra):
    return {"speaker": "User", "content": text, "is_query": False, **extra}


def _assistant(text, **extra):
    return {"speaker": "Assistant", "content": text, "is_query": False, **extra}


def _point(index, content, turns, source_turn, uuid, *, snapshot=True):
    point = {"index": index, "type": "Dynamic", "content": content, "source_turn": source_turn,
             "source_content_snapshot": turns[source_turn - 1]["content"] if snapshot and source_turn > 0 else "",
             "source_role_snapshot": "User", "session_uuid": uuid}
    return point


def persona():
    s1 = [
        _user("I am planning a walking trip along the Lisbon coast in late April."),
        _assistant("Lovely. How many days do you have, and do you prefer hostels or small hotels?"),
        _user("Nine days, and I only stay in small family-run guesthouses."),
        _assistant("Noted: nine days, family-run guesthouses only."),
    ]
    s2 = [
        _user("My knee has been sore since the marathon, so I want shorter daily stages."),
        _assistant("Then we keep each stage under fifteen kilometres."),
    ]
    points2 = [_point("Travel-DM-S2_01-01", "【Health】 User's knee is sore since the marathon; wants short stages.",
                      s2, 1, "b2")]
    s3 = [
        _user("Can you draft the first three days of my coastal walk now?", is_query=True, query_id="Q-0001",
              topic="Travel", category_name="Dynamic Incremental", session_type="single_session"),
        _assistant(
            # the reply does not restate where the user stays: at the end no memory unit holds that point
            "Day one: Cascais to Guincho, a short stage for your knee.",
            memory_used=[
                {"session_uuid": "a1", "content": "【Trip Plan】 User stays only in small family-run guesthouses."},
                {"session_uuid": "b2", "content": points2[0]["content"]},
            ],
            memory_session_uuids=["a1", "b2"],
        ),
    ]
    return {
        "_metadata": {"person_name": PERSON, "total_sessions": 3, "total_tokens": 900},
        "dialogues": [
            {"session_identifier": "Travel_1:S1_01", "session_uuid": "a1", "current_time": "2026-03-02 (Monday)",
             "dialogue_turns": s1,
             "extracted_memory": [
                 _point("Travel-DM-S1_01-01", "【Trip Plan】 User plans a nine-day walking trip on the Lisbon coast in "
                        "late April.", s1, 1, "a1"),
                 _point("Travel-DM-S1_01-02", "【Trip Plan】 User stays only in small family-run guesthouses.",
                        s1, 3, "a1"),
                 _point("Travel-DM-S1_01-03", "【Hobby】 User collects antique postcards of lighthouses.",
                        s1, 2, "a1", snapshot=False),
             ]},
            {"session_identifier": "Travel_1:S2_01", "session_uuid": "b2", "current_time": "2026-03-05 (Thursday)",
             "dialogue_turns": s2, "extracted_memory": points2},
            {"session_identifier": "Travel_1:S3_01", "session_uuid": "c3", "current_time": "2026-03-09 (Monday)",
             "dialogue_turns": s3, "extracted_memory": []},
        ],
    }


@pytest.fixture
def realmem_path(tmp_path):
    path = tmp_path / f"{PERSON}_dialogues_256k.json"
    path.write_text(json.dumps(persona(), ensure_ascii=False), encoding="utf-8")
    return path


def _mid(s, t):
    return f"realmem-{PERSON}-message-{s}-{t}"


def test_one_trajectory_per_persona_with_online_questions(realmem_path):
    data = load_dataset("auto", realmem_path)
    assert data.name == "RealMem" and len(data) == 1
    traj, qas = data[0]
    assert traj.id == f"realmem-{PERSON}" and [len(s) for s in traj.sessions] == [4, 2, 2]
    assert traj.sessions[0].messages[0].name == "Marisol Quennell" and traj.sessions[0].messages[1].role == "assistant"
    assert traj.sessions[1].messages[0].timestamp == "2026-03-05T00:00:00"
    ask = traj.sessions[2].messages[0]
    assert ask.id == _mid(2, 0) and ask.metadata["is_task"] is True and ask.metadata["query_id"] == "Q-0001"
    (qa,) = qas
    assert qa.id == ask.id and qa.question == ask.content and qa.golden_answers[0].startswith("Day one: Cascais")
    # memory_used -> extracted_memory[].source_turn (counted from 1) -> the source messages
    assert qa.metadata["evidence"] == [_mid(0, 2), _mid(1, 0)]
    assert qa.metadata["question_type"] == "Dynamic Incremental" and qa.metadata["online"] is True
    gold = traj.sessions[0].metadata["gold_memory_points"]
    assert [p["source_message_id"] for p in gold] == [_mid(0, 0), _mid(0, 2), _mid(0, 1)]
    assert "memory_used" not in traj.sessions[2].messages[1].metadata  # gold data stays out of the messages


def test_the_shared_slice_loads():
    data = load_realmem(require_shared(SLICE, "the RealMem slice"))
    traj, qas = data[0]
    assert traj.id == "realmem-Adeleke_Okonjo" and len(traj.sessions) == 40 and len(qas) == 17
    messages = {m.id for m in traj.messages}
    assert all(e in messages for qa in qas for e in qa.metadata["evidence"])
    assert sum(len(qa.metadata["evidence"]) for qa in qas) == 28  # one point of 31 has no source turn (-1)
    assert len(data.issues) == 1 and "has no source turn" in data.issues[0]


def _broken(change):
    raw = persona()
    change(raw)
    return raw


BAD_INPUTS = {
    "missing field": (lambda r: r["dialogues"][1].pop("current_time"), "dialogues[1]: field 'current_time': missing"),
    "turns not a list": (lambda r: r["dialogues"][0].__setitem__("dialogue_turns", {"0": "hi"}),
                         "dialogues[0]: field 'dialogue_turns': expected a list of turns, got dict"),
    "unparsable date": (lambda r: r["dialogues"][2].__setitem__("current_time", "next Monday"),
                        "dialogues[2]: field 'current_time': date 'next Monday' does not parse"),
    "no person": (lambda r: r.pop("_metadata"), "_metadata: field 'person_name': missing or not a string"),
    "bad speaker": (lambda r: r["dialogues"][1]["dialogue_turns"][1].__setitem__("speaker", "Narrator"),
                    "dialogues[1]: field 'dialogue_turns[1].speaker': expected 'User' or 'Assistant'"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_one_error_line_naming_file_record_and_field(name, tmp_path, capsys):
    change, expected = BAD_INPUTS[name]
    path = tmp_path / "persona.json"
    path.write_text(json.dumps(_broken(change)))
    layer = tmp_path / "lc.json"
    layer.write_text(json.dumps({"layer_type": "Long-Context"}))
    out = tmp_path / "run"
    # "dialogues" in the file makes auto pick RealMem; the explicit type gives the same message
    for dataset_type in ("auto", "RealMem"):
        assert main(["run", "--layer-config", str(layer), "--dataset", str(path), "--dataset-type", dataset_type,
                     "--output-dir", str(out), "--quiet", "--qa-model", "fake:x", "--judge-model", "fake:x"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and "\n" not in err and str(path) in err and expected in err
    assert not (out / "traced_data").exists()


def test_search_alone_is_refused_for_online_questions(realmem_path, tmp_path, capsys):
    layer = tmp_path / "lc.json"
    layer.write_text(json.dumps({"layer_type": "Long-Context"}))
    assert main(["search", "--layer-config", str(layer), "--dataset", str(realmem_path),
                 "--output-dir", str(tmp_path / "run"), "--quiet"]) == 2
    assert "use `python -m membase run`" in capsys.readouterr().err


def _run(realmem_path, tmp_path, layer_config, *extra):
    layer = tmp_path / "layer.json"
    layer.write_text(json.dumps(layer_config))
    run_dir = tmp_path / "run"
    code = main(["run", "--layer-config", str(layer), "--dataset", str(realmem_path), "--output-dir", str(run_dir),
                 "--quiet", "--top-k", "2", "--qa-model", "fake:I do not know", "--judge-model",
                 'fake:{"label": "WRONG"}', "--metrics", "f1,llm_judge", *extra])
    assert code == 0
    return run_dir


def test_online_questions_are_searched_and_answered_inside_the_construction_graph(realmem_path, tmp_path, capsys):
    run_dir = _run(realmem_path, tmp_path, {"layer_type": "Long-Context", "context_window": 4000})
    summary = json.loads(capsys.readouterr().out)
    assert summary["construction"]["items_done"] == 8  # every turn joins the memory, the question too
    assert summary["search"]["items_done"] == 1 and summary["evaluation"]["items_done"] == 1
    folder = run_dir / "traced_data" / f"realmem-{PERSON}"
    built = json.loads((folder / "graph_construction.json").read_text())
    assert (folder / "graph_evaluation.json").read_text() == (folder / "graph_construction.json").read_text()
    assert not (folder / "graph_search.json").exists()
    categories = [s["category"] for s in built["data"]["sessions"]]
    # the question is asked between the third session's start and the rest of the conversation
    assert categories == ["memory_construction"] * 3 + ["memory_search", "memory_evaluation", "memory_construction"]
    ops = {o["op_name"] for o in built["data"]["operations"]}
    assert {"memory_system.retrieve", "question-answering", "llm-judge", "memory_system.memory_update"} <= ops
    query = next(n for n in built["data"]["nodes"] if n["class_name"] == "query")
    assert query["full_node_id"] == f"query:{_mid(2, 0)}@1" and built["metadata"]["dataset_cls"] == "RealMem"
    # the memory at question time: the buffer version retrieved does not yet hold the question itself
    retrieved = next(e for e in built["data"]["edges"] if e["source_full_node_id"] == query["full_node_id"])
    unit = next(n for n in built["data"]["nodes"] if n["full_node_id"] == retrieved["target_full_node_id"])
    assert "knee" in unit["value"] and "draft the first three days" not in unit["value"]
    results = json.loads((run_dir / "memory" / "2_None_None_evaluation.json").read_text())
    assert [r["qa_pair"]["id"] for r in results] == [_mid(2, 0)] and results[0]["metrics"]["llm_judge"]["value"] == 0.0


def test_skipped_question_types_are_not_asked(realmem_path, tmp_path, capsys):
    run_dir = _run(realmem_path, tmp_path, {"layer_type": "Long-Context"},
                   "--skip-question-types", "Dynamic Incremental")
    summary = json.loads(capsys.readouterr().out)
    assert summary["search"]["items_done"] == 0 and summary["construction"]["items_done"] == 8
    assert json.loads((run_dir / "memory" / "2_None_None_evaluation.json").read_text()) == []


def test_rerun_keeps_the_online_results_of_users_already_built(realmem_path, tmp_path, capsys):
    run_dir = _run(realmem_path, tmp_path, {"layer_type": "Long-Context"})
    first = (run_dir / "memory" / "2_None_None_evaluation.json").read_text()
    capsys.readouterr()
    _run(realmem_path, tmp_path, {"layer_type": "Long-Context"})
    summary = json.loads(capsys.readouterr().out)
    assert summary["construction"]["users_skipped"] == 1 and summary["search"]["users_skipped"] == 1
    assert (run_dir / "memory" / "2_None_None_evaluation.json").read_text() == first


def test_evidence_flow_and_report_on_a_realmem_run(realmem_path, tmp_path, capsys):
    from toolkits.attribution import cli as attribution_cli
    from toolkits.report import cli as report_cli

    run_dir = _run(realmem_path, tmp_path, {"layer_type": "Long-Context", "context_window": 4000})
    out = tmp_path / "attribution.json"
    for mode in ("source_evidence", "retrieved"):
        args = [str(run_dir), "--exploration-strategy", "evidence_flow", "--output-path", str(out), "--no-progress",
                "--no-resume"]
        if mode == "source_evidence":
            args += ["--starting-nodes-type", "source_evidence"]
        assert attribution_cli.main(args) == 0
        data = json.loads(out.read_text())
        (record,) = data["results"]
        assert record["query_id"] == f"query:{_mid(2, 0)}@1" and record["attribution_failure"] is None
        if mode == "source_evidence":
            assert record["source_evidence_ids"] == [f"{_mid(0, 2)}@1", f"{_mid(1, 0)}@1"]
            assert record["error_attribution_result"]["op_id"]  # an op of this graph is blamed
    report = tmp_path / "report"
    assert report_cli.main(["--data-path", str(out), "--save-folder", str(report), "--no-llm", "--no-png",
                                 "--no-progress"]) == 0
    assert "RealMem" in (report / "error_analysis_report.md").read_text()


def test_gold_point_check_names_the_points_no_memory_unit_holds(realmem_path, tmp_path, capsys):
    assert point_recall("【Trip】 User stays in guesthouses.", "she stays in small guesthouses") == 1.0
    assert point_recall("【Trip】 User stays in guesthouses.", "a hostel") == 0.0
    # a window so small that the first session is pushed out of the buffer by the end
    run_dir = _run(realmem_path, tmp_path, {"layer_type": "Long-Context", "context_window": 60})
    checks = check_run(run_dir)[f"realmem-{PERSON}"]
    status = {c.index: c.status for c in checks}
    assert status["Travel-DM-S1_01-03"] == "never_held"  # nothing in the conversation says it
    assert status["Travel-DM-S1_01-02"] == "lost"  # the buffer held it, then dropped it
    assert status["Travel-DM-S2_01-01"] in {"held", "lost"}
    capsys.readouterr()
    out = tmp_path / "check.json"
    assert gold_points_main([str(run_dir), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "never_held: Travel-DM-S1_01-03" in printed and "lost: Travel-DM-S1_01-02" in printed
    assert json.loads(out.read_text())[f"realmem-{PERSON}"][0]["index"] == "Travel-DM-S1_01-01"
    assert gold_points_main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_gold_point_check_leaves_out_deleted_units():
    graph = {"data": {
        "sessions": [{"session_id": "s", "metadata": {"gold_memory_points": [
            {"index": "p1", "content": "User owns a grey parrot named Tolstoy.", "source_message_id": "m"}]}}],
        "nodes": [
            {"name": "memory-unit-1", "full_name": "memory-unit-1", "full_node_id": "memory-unit-1@1",
             "category": "memory_entry", "value": "owns a grey parrot named Tolstoy", "class_name": None},
            {"name": "delete_marker", "full_name": "delete_marker:str:x", "full_node_id": "delete_marker:str:x@1",
             "category": "marker", "value": "deleted", "class_name": "delete_marker"},
        ],
        "edges": [{"source_full_node_id": "memory-unit-1@1", "target_full_node_id": "delete_marker:str:x@1"}],
    }}
    (check,) = check_gold_points(graph)
    assert check.status == "lost" and check.ever_held_by == ["memory-unit-1@1"] and check.held_at_end_by == []
