"""Manual attributions: validation, the record layout and the append-only output file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime

import pytest

from annotation_interface import annotations as store
from annotation_interface.parser import build_graph_index

OP_EXTRACT_D2_2 = "op-ad912fa103d643e0b4b16a3e9e7169cb"
OP_SEARCH_1 = "op-382b3ccc1309460b8719625b8bac0683"


@pytest.fixture
def index(bench_like):
    return build_graph_index(bench_like)


def _edge_of(index, op_id):
    return index.op_edges[op_id][0].edge_id


def test_a_complete_memory_error_validates(index):
    edge = _edge_of(index, OP_EXTRACT_D2_2)
    att, problems = store.validate_manual(index, op_id=f" {OP_EXTRACT_D2_2} ", edge_id=edge,
                                          error_type="ExtractionError", reason=" lost the move ")
    assert problems == []
    assert att == store.ManualAttribution(op_id=OP_EXTRACT_D2_2, error_type="ExtractionError", edge_id=edge,
                                          reason="lost the move")


@pytest.mark.parametrize(
    ("op", "edge", "kind", "reason", "fragment"),
    [
        ("op-nope", None, "ExtractionError", "r", "not an operation with edges"),
        (None, None, "RetrievalError", "r", "names the faulty operation"),
        (OP_EXTRACT_D2_2, None, "ExtractionError", "r", "give the edge id"),
        (OP_EXTRACT_D2_2, "edge-nope", "ExtractionError", "r", "is not in this graph"),
        (OP_EXTRACT_D2_2, "SEARCH_EDGE", "ExtractionError", "r", "belongs to op"),
        (OP_EXTRACT_D2_2, "EXTRACT_EDGE", "Typo", "r", "is not one of"),
        (OP_EXTRACT_D2_2, "EXTRACT_EDGE", "ExtractionError", "  ", "write the reason"),
    ],
)
def test_invalid_forms_are_refused_with_a_reason(index, op, edge, kind, reason, fragment):
    edge = {"SEARCH_EDGE": _edge_of(index, OP_SEARCH_1), "EXTRACT_EDGE": _edge_of(index, OP_EXTRACT_D2_2)}.get(
        edge, edge)
    att, problems = store.validate_manual(index, op_id=op, edge_id=edge, error_type=kind, reason=reason)
    assert att is None
    assert any(fragment in p for p in problems), problems


def test_non_memory_labels_may_name_no_operation(index):
    for null in ("", "null", "None", None):
        att, problems = store.validate_manual(index, op_id=null, edge_id="", error_type="LLMAsAJudgeError",
                                              reason="the judge was wrong")
        assert problems == [] and att.op_id is None and att.edge_id is None


def test_the_seven_labels():
    assert store.ERROR_LABELS == ("AnnotationError", "LLMAsAJudgeError", "ExtractionError", "UpdateError",
                                  "DeletionError", "RetrievalError", "ResponseError")


def test_record_layout(index):
    qa = index.qa("locomo-qa-1-2")
    att = store.ManualAttribution(op_id="op-1", error_type="UpdateError", edge_id="edge-1", reason="why")
    rec = store.build_record(graph_file_name="a.json", graph_name="mem0/a.json", qa=qa, attribution=att,
                             now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert rec == {
        "saved_at": "2026-01-02T03:04:05Z",
        "graph_id": "a.json",
        "query_id": "query:locomo-qa-1-2@1",
        "query": "Where did Caroline move from four years ago?",
        "manual_error_attribution": {"op_id": "op-1", "error_type": "UpdateError", "edge_id": "edge-1",
                                     "reason": "why"},
        "graph_name": "mem0/a.json",
        "qa_id": "locomo-qa-1-2",
        "annotator": "",
        "unsure": False,
        "comment": "",
    }
    rec = store.build_record(graph_file_name="a.json", graph_name="mem0/a.json", qa=qa, attribution=att,
                             annotator=" Ana ", unsure=True, comment=" maybe retrieval ")
    assert (rec["annotator"], rec["unsure"], rec["comment"]) == ("Ana", True, "maybe retrieval")
    assert store.record_key(rec) == ("mem0/a.json", "locomo-qa-1-2", "Ana")


def test_append_creates_and_extends_the_array(tmp_path):
    out = tmp_path / "sub" / "out.json"
    assert store.check_output(out) == (0, None)
    assert store.append_record(out, {"n": 1}) == 1
    assert store.append_record(out, {"n": 2}) == 2
    assert json.loads(out.read_text()) == [{"n": 1}, {"n": 2}]
    assert store.check_output(out) == (2, None)
    assert sorted(p.name for p in out.parent.iterdir()) == [".out.json.lock", "out.json"]  # no temp files left


@pytest.mark.parametrize("content", ['{"records": []}', "[1, 2", "\x00\x01 not json"])
def test_an_output_that_is_not_an_array_is_never_overwritten(tmp_path, content):
    out = tmp_path / "out.json"
    out.write_text(content)
    count, problem = store.check_output(out)
    assert count == 0 and "left untouched" in problem
    with pytest.raises(store.OutputFileError):
        store.append_record(out, {"n": 1})
    assert out.read_text() == content


def test_a_crash_while_writing_keeps_the_earlier_records(tmp_path, monkeypatch):
    out = tmp_path / "out.json"
    store.append_record(out, {"n": 1})

    def crash(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        store.append_record(out, {"n": 2})
    monkeypatch.undo()
    assert json.loads(out.read_text()) == [{"n": 1}]
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_concurrent_threads_lose_no_record(tmp_path):
    out = tmp_path / "out.json"
    errors: list[BaseException] = []

    def worker(k):
        try:
            for i in range(15):
                store.append_record(out, {"w": k, "i": i})
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    records = json.loads(out.read_text())
    assert sorted((r["w"], r["i"]) for r in records) == [(k, i) for k in range(4) for i in range(15)]


def test_concurrent_processes_lose_no_record(tmp_path):
    """Two app processes (or tabs served by two servers) appending to one file."""
    out = tmp_path / "out.json"
    code = textwrap.dedent(f"""
        import sys
        from annotation_interface.annotations import append_record
        for i in range(20):
            append_record({str(out)!r}, {{"p": sys.argv[1], "i": i}})
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(k)], cwd=os.getcwd()) for k in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    records = json.loads(out.read_text())
    assert len(records) == 60
    assert {(r["p"], r["i"]) for r in records} == {(str(k), i) for k in range(3) for i in range(20)}


def test_an_output_path_that_cannot_be_a_file_is_named_before_any_save(tmp_path):
    folder = tmp_path / "a_folder"
    folder.mkdir()
    count, problem = store.check_output(folder)
    assert count == 0 and "is a folder: give a file name" in problem
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    count, problem = store.check_output(blocker / "annotations.json")
    assert count == 0 and "not a folder" in problem
    with pytest.raises(OSError):
        store.append_record(blocker / "annotations.json", {"n": 1})
    assert blocker.read_text() == "x"


def _rec(graph, qa, who, kind="UpdateError", **extra):
    return {"graph_name": graph, "qa_id": qa, "annotator": who,
            "manual_error_attribution": {"op_id": "op-1", "error_type": kind, "edge_id": "e", "reason": "r"}, **extra}


def test_a_second_save_of_a_case_replaces_the_annotators_record_only(tmp_path):
    out = tmp_path / "out.json"
    assert store.save_record(out, _rec("g.json", "q1", "ana")) == (1, False)
    assert store.save_record(out, _rec("g.json", "q1", "bo")) == (2, False)
    assert store.save_record(out, _rec("g.json", "q2", "ana")) == (3, False)
    assert store.save_record(out, _rec("g.json", "q1", "ana", kind="RetrievalError")) == (3, True)
    records = json.loads(out.read_text())
    mine = [r for r in records if r["annotator"] == "ana" and r["qa_id"] == "q1"]
    assert [r["manual_error_attribution"]["error_type"] for r in mine] == ["RetrievalError"]
    assert {(r["qa_id"], r["annotator"]) for r in records} == {("q1", "ana"), ("q1", "bo"), ("q2", "ana")}


def test_delete_removes_one_annotators_record(tmp_path):
    out = tmp_path / "out.json"
    assert store.delete_record(out, ("g.json", "q1", "ana")) is False  # no file yet: nothing to delete
    store.save_record(out, _rec("g.json", "q1", "ana"))
    store.save_record(out, _rec("g.json", "q1", "bo"))
    assert store.delete_record(out, ("g.json", "q1", "ana")) is True
    assert store.delete_record(out, ("g.json", "q1", "ana")) is False
    assert [r["annotator"] for r in json.loads(out.read_text())] == ["bo"]


def test_old_records_without_annotator_keep_working(tmp_path):
    out = tmp_path / "out.json"
    store.append_record(out, {"graph_id": "g.json", "query_id": "query:q1@1", "manual_error_attribution": {}})
    assert store.record_key(json.loads(out.read_text())[0]) == ("g.json", "query:q1@1", "")
    assert store.record_key({"n": 1}) is None and store.record_key([1]) is None
    with pytest.raises(ValueError, match="graph_name and qa_id"):
        store.save_record(out, {"n": 1})


def test_save_refuses_to_overwrite_a_non_array(tmp_path):
    out = tmp_path / "out.json"
    out.write_text('{"records": []}')
    with pytest.raises(store.OutputFileError):
        store.save_record(out, _rec("g.json", "q1", "ana"))
    with pytest.raises(store.OutputFileError):
        store.delete_record(out, ("g.json", "q1", "ana"))
    assert out.read_text() == '{"records": []}'


def test_concurrent_annotators_saving_in_processes_keep_one_record_each(tmp_path):
    """Three annotators on one folder, each saving every case twice (the second save an edit)."""
    out = tmp_path / "out.json"
    code = textwrap.dedent(f"""
        import sys
        from annotation_interface.annotations import save_record
        for round_ in range(2):
            for i in range(8):
                save_record({str(out)!r}, {{"graph_name": "g.json", "qa_id": f"q{{i}}", "annotator": sys.argv[1],
                                           "round": round_, "manual_error_attribution": {{}}}})
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, who], cwd=os.getcwd()) for who in ("a", "b", "c")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    records = json.loads(out.read_text())
    assert sorted((r["annotator"], r["qa_id"]) for r in records) == sorted(
        (w, f"q{i}") for w in "abc" for i in range(8))
    assert {r["round"] for r in records} == {1}
