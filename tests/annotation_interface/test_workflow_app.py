"""The annotation workflow in the app (AppTest): name, queue, deep links, edit/delete, unsure and
comment, labels of a case, the agreement table with a loaded attribution output, export."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit", reason="the viewer extra is not installed: pip install -e '.[viewer]'")

from annotation_interface.dataset import open_dataset  # noqa: E402
from annotation_interface.loader import load_graph  # noqa: E402
from annotation_interface.workqueue import queue_items  # noqa: E402


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _md(at):
    return "\n".join(m.value for m in at.markdown)


def _save(at, kind, reason, *, unsure=False, comment=""):
    at.button(key="cand_to_form").click().run()
    at.selectbox(key="f_type").select(kind)
    at.text_area(key="f_reason").input(reason)
    at.checkbox(key="f_unsure").check() if unsure else at.checkbox(key="f_unsure").uncheck()
    at.text_input(key="f_comment").input(comment)
    next(b for b in at.button if b.label == "Save label").click().run()
    return _ok(at)


@pytest.fixture
def items(faultbench, tmp_path):
    return queue_items(open_dataset(faultbench, tmp_path / "idx-items"))


def test_without_a_name_nothing_is_saved_and_the_name_is_asked(app, faultbench, tmp_path, items):
    out = tmp_path / "annotations.json"
    at = _ok(app(faultbench, output=out, annotator=None))
    assert at.text_input(key="annotator_input").label == "Your name (annotator)"
    at.radio(key="view").set_value("Queue").run()
    at.button(key="q_start").click().run()
    _ok(at)
    assert at.session_state["qa"] == items[0].qa_id
    _save(at, "RetrievalError", "r")
    assert any("give your name" in e.value for e in at.error) and not out.exists()
    at.text_input(key="annotator_input").input("ana").run()
    assert at.session_state["annotator"] == "ana" and at.query_params["annotator"] in ("ana", ["ana"])


def test_queue_progress_edit_delete_unsure_and_resume(app, faultbench, tmp_path, items):
    out = tmp_path / "annotations.json"
    at = _ok(app(faultbench, output=out))
    at.radio(key="view").set_value("Queue").run()
    assert f"0 of {len(items)} annotated" in _md(at)
    at.button(key="q_start").click().run()
    _save(at, "RetrievalError", "first", unsure=True, comment="could be the update")
    assert any("(unsure)" in s.value for s in at.success)
    at.button(key="q_next").click().run()
    assert at.session_state["qa"] == items[1].qa_id
    _save(at, "UpdateError", "second")
    at.button(key="q_skip").click().run()
    assert at.session_state["qa"] == items[2].qa_id
    # back to the first case: the form holds the saved label, a second save replaces it
    at.radio(key="view").set_value("Queue").run()
    assert f"2 of {len(items)} annotated" in _md(at) and "✓ 1." in _md(at)
    at.button(key="q_open_1").click().run()
    assert (at.text_area(key="f_reason").value, at.checkbox(key="f_unsure").value,
            at.text_input(key="f_comment").value) == ("first", True, "could be the update")
    _save(at, "ExtractionError", "first, edited")
    assert any("replaced your earlier label" in s.value for s in at.success)
    records = json.loads(out.read_text())
    assert [(r["qa_id"], r["manual_error_attribution"]["error_type"], r["unsure"]) for r in records] == [
        (items[1].qa_id, "UpdateError", False), (items[0].qa_id, "ExtractionError", False)]
    # the labels of the case: the human one beside the benchmark annotation
    labels = next(m.value for m in at.markdown if m.value.startswith("| source |"))
    assert "human:tester" in labels and "benchmark annotation" in labels
    at.button(key="mine_delete").click().run()
    _ok(at)
    assert [r["qa_id"] for r in json.loads(out.read_text())] == [items[1].qa_id]
    # a new session of the same annotator resumes at the first case without a label of theirs
    again = _ok(app(faultbench, output=out))
    assert again.radio(key="view").value == "Error attribution" and again.session_state["qa"] == items[0].qa_id


def test_a_deep_link_opens_its_case(app, faultbench, tmp_path, items, monkeypatch):
    from streamlit.testing.v1 import AppTest

    target = items[7]
    at = app(faultbench)  # sets argv; run again with the link's query parameters
    link = AppTest.from_file(str(at._script_path), default_timeout=90)
    link.query_params.update({"folder": str(faultbench.resolve()), "graph": target.graph_stem, "case": target.qa_id})
    _ok(link.run())
    assert link.radio(key="view").value == "Error attribution"
    assert (link.session_state["graph"], link.session_state["qa"]) == (target.graph_name, target.qa_id)
    assert f"case 8 of {len(items)}" in _md(link)
    broken = AppTest.from_file(str(at._script_path), default_timeout=90)
    broken.query_params.update({"graph": target.graph_stem, "case": "no-such-case"})
    _ok(broken.run())
    assert any("no-such-case" in w.value for w in broken.warning)


def test_agreement_table_scores_a_loaded_output_and_exports(app, faultbench, tmp_path, items):
    out = tmp_path / "annotations.json"
    first = items[0]
    pg = load_graph(faultbench / first.graph_name)
    gold = pg.index.qa(first.qa_id).annotation
    records = []
    for who, kind in (("ana", gold["final_error_type"]), ("bo", "AnnotationError")):
        records.append({"graph_name": first.graph_name, "qa_id": first.qa_id, "annotator": who, "unsure": False,
                        "saved_at": f"2026-01-0{len(records) + 1}T00:00:00Z",
                        "manual_error_attribution": {"op_id": gold["final_op_id"] if who == "ana" else None,
                                                     "error_type": kind, "edge_id": None, "reason": "r"}})
    out.write_text(json.dumps(records))
    output = tmp_path / "graph_search.json"
    output.write_text(json.dumps({"results": [{
        "query_id": f"query:{first.qa_id}@1", "graph_path": f"/elsewhere/{first.graph_name}",
        "error_attribution_result": {"error_type": gold["final_error_type"], "op_id": gold["final_op_id"],
                                     "reason": "x"}}]}))
    at = _ok(app(faultbench, "--attributions", str(output), output=out))
    at.radio(key="view").set_value("Agreement").run()
    _ok(at)
    tables = [m.value for m in at.markdown if m.value.startswith("| labels | against |")]
    # the latest label (bo's non-memory label) wins the 1-1 tie: the strategy disagrees with it
    assert "| graph_search | human | 1 | 0.00 | 0.00 |" in tables[0]
    assert "| human:ana | human:bo | 1 | 0.00 | 0.00 |" in tables[1]
    at.checkbox(key="ag_bench").check().run()
    assert "| benchmark annotation | human | 1 |" in next(m.value for m in at.markdown
                                                         if m.value.startswith("| labels | against |"))
    at.text_input(key="export_dir").input(str(tmp_path / "bench")).run()
    at.button(key="export_go").click().run()
    _ok(at)
    assert any("Exported 1 case(s)" in s.value for s in at.success)
    exported = json.loads(next((tmp_path / "bench").glob("*/*.json")).read_text())
    assert exported["data"]["annotations"][0]["final_error_type"] == "AnnotationError"


def test_queue_filters_and_pages(app, faultbench, items):
    at = _ok(app(faultbench))
    at.radio(key="view").set_value("Queue").run()
    assert f"0 of {len(items)} annotated" in _md(at) and at.number_input(key="q_page").max == -(-len(items) // 15)
    at.number_input(key="q_page").set_value(2).run()
    at.selectbox(key="q_split").select("rag").run()
    _ok(at)
    rag = [i for i in items if i.split == "rag"]
    assert f"0 of {len(rag)} annotated" in _md(at)
    assert at.session_state["q_page"] == 1  # a new filter starts at its first page
    assert all(i.qa_id in _md(at) for i in rag[:15])
