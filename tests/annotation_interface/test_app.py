"""The Streamlit app driven headless with ``streamlit.testing`` (AppTest) on real graph files."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit", reason="the viewer extra is not installed: pip install -e '.[viewer]'")

from annotation_interface.dataset import open_dataset  # noqa: E402
from annotation_interface.loader import load_graph  # noqa: E402
from annotation_interface.subgraphs import attribution_subgraphs  # noqa: E402

from .conftest import faultbench_files, split_file  # noqa: E402


def _texts(at, kind="markdown"):
    return [e.value for e in getattr(at, kind)]


def _chart(at, key):
    for el in at.get("plotly_chart"):
        if el.proto.id and key in el.proto.id:
            return json.loads(el.proto.spec)
    raise AssertionError(f"no plotly chart {key!r}")


def _submit(at):
    return next(b for b in at.button if b.label == "Save label")


class _State(dict):
    """Stands in for st.session_state when a callback is called directly."""

    __getattr__ = dict.__getitem__
    __setattr__ = dict.__setitem__


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


# ------------------------------------------------------------------------------ data engine pages
def test_faultbench_opens_with_graph_selector_questions_and_timeline(app, faultbench, tmp_path):
    at = _ok(app(faultbench))
    files = faultbench_files(faultbench)
    graphs = at.selectbox(key="graph").options
    assert [g.split(" — ")[0] for g in graphs] == [p.relative_to(faultbench).as_posix() for p in files]
    assert any("JSON file(s) skipped" in e.label for e in at.sidebar.expander)
    first = load_graph(files[0]).index
    sidebar = " ".join(e.value for e in at.sidebar.markdown)
    assert all(q.qa_id in sidebar for q in first.qas[:8])
    by = {s: sum(q.status == s for q in first.qas) for s in ("correct", "wrong")}
    assert any(f"{len(first.qas)} questions: {by['correct']} correct, {by['wrong']} wrong" in c.value
               for c in at.sidebar.caption)
    spec = _chart(at, "timeline")
    speakers = [t for t in spec["data"] if t.get("mode") == "markers+text"]
    assert sum(len(t["customdata"]) for t in speakers) == min(240, len(first.messages))  # one point per message
    jump = at.selectbox(key="jump").options
    assert len(jump) == len(open_dataset(faultbench, tmp_path / "idx2").wrong_qas())  # every wrong question


def test_select_graph_message_operation_and_variable(app, faultbench):
    at = _ok(app(faultbench))
    path = split_file(faultbench, "mem0")
    name = path.relative_to(faultbench).as_posix()
    at.selectbox(key="graph").select(name).run()
    assert any(f"`{name}`" in c.value for c in at.caption)
    # a message: its processing ops appear on the right
    msg = load_graph(path).index.messages[2].full_node_id
    at.selectbox(key="message_pick").select_index(2).run()
    _ok(at)
    assert at.session_state["message"] == msg
    assert any("memory_system.extract_facts" in c.value and "memory_system.update_memory_decision" in c.value
               for c in at.caption)
    msg_graph = _chart(at, "message_graph")
    assert any(t.get("name") == "message" for t in msg_graph["data"])
    # open one of its ops in the operation view: graph + XML of that op subgraph
    op_pick = at.selectbox(key="message_op_pick")
    op_id = op_pick.value
    at.button(key="message_open_op").click().run()
    _ok(at)
    assert at.radio(key="view").value == "Operation"
    xml = at.code[0].value
    assert xml.startswith("<graph>") and f'<operation id="{op_id}"' in xml
    # the message's related variables, then a neighbour, then back
    at.radio(key="view").set_value("Macro flow").run()
    at.button(key="message_related").click().run()
    _ok(at)
    assert at.radio(key="view").value == "Related variables" and at.session_state["var"] == msg
    neighbours = at.selectbox(key="var_next").options
    assert neighbours and all(msg != n for n in neighbours)
    at.selectbox(key="var_next").select(neighbours[0])
    at.button(key="var_go").click().run()
    assert at.session_state["var"] == neighbours[0] and at.session_state["var_stack"] == [msg]
    at.radio(key="var_dir").set_value("backward").run()
    _ok(at)
    at.button(key="var_back").click().run()
    assert at.session_state["var"] == msg and at.session_state["var_stack"] == []


def test_timeline_click_handlers(monkeypatch):
    """A diamond opens the message's ops, a message node its related variables (what a click in
    the browser sends through the plotly selection event)."""
    from annotation_interface import views as app_module

    state = _State()
    monkeypatch.setattr(app_module, "ss", state)
    state["timeline"] = {"selection": {"points": [{"customdata": ["edge", "U5:D1:2@1"]}]}}
    app_module._timeline_clicked()
    assert state["message"] == "U5:D1:2@1"
    state.update(var=None, var_stack=[], view="Macro flow",
                 timeline={"selection": {"points": [{"customdata": ["node", "U5:D1:3@1"]}]}})
    app_module._timeline_clicked()
    assert state["view"] == "Related variables" and state["var"] == "U5:D1:3@1"


def test_question_filter_and_evidence_jump(app, sc_fixtures):
    at = _ok(app(sc_fixtures / "sc012_memtracebench_like.json"))
    at.radio(key="qa_filter").set_value("correct").run()
    assert "locomo-qa-1-1" in " ".join(e.value for e in at.sidebar.markdown)
    assert "locomo-qa-1-2" not in " ".join(e.value for e in at.sidebar.markdown)
    at.radio(key="qa_filter").set_value("wrong").run()
    assert "locomo-qa-1-2" in " ".join(e.value for e in at.sidebar.markdown)
    at.button(key="qa_ev_0").click().run()
    _ok(at)
    assert at.radio(key="view").value == "Macro flow"
    assert at.session_state["qa"] == "locomo-qa-1-2" and at.session_state["message"] == "U1:D2:2@1"
    stars = [t for t in _chart(at, "timeline")["data"] if t.get("name") == "evidence"]
    assert stars and stars[0]["customdata"] == [["node", "U1:D2:2@1"]]


def test_jump_to_a_wrong_question_switches_graph(app, faultbench, tmp_path):
    at = _ok(app(faultbench))
    options = at.selectbox(key="jump").options  # shown as "graph stem · question · qa id"
    ds = open_dataset(faultbench, tmp_path / "idx2")
    last_graph, last_qa, _ = ds.wrong_qas()[-1]  # another graph than the one shown first
    question = next(q["question"] for q in ds.graph(last_graph).wrong_qas if q["qa_id"] == last_qa)
    i = len(options) - 1
    stem, shown_question, shown_id = options[i].split(" · ")
    assert (stem, shown_id) == (last_graph.split("/")[-1].removesuffix(".json"), last_qa)
    assert question.startswith(shown_question.rstrip("…"))  # the question text is in the jump list
    at.selectbox(key="jump").select_index(i).run()
    _ok(at)
    assert at.selectbox(key="graph").value == last_graph
    assert at.radio(key="view").value == "Error attribution"
    assert at.session_state["qa"] == last_qa
    assert at.selectbox(key="jump").value is None


# -------------------------------------------------------------------------------- attribution
def test_attribution_view_runs_evidence_flow_and_saves_an_annotation(app, faultbench, tmp_path):
    from toolkits.bench_utils import ERROR_TYPES

    out = tmp_path / "annotations.json"
    path = split_file(faultbench, "mem0", min_questions=2)
    name = path.relative_to(faultbench).as_posix()
    pg = load_graph(path)
    first, second = pg.index.qas[0], pg.index.qas[1]
    at = _ok(app(faultbench, output=out))
    at.selectbox(key="graph").select(name).run()
    at.button(key="qa_attr_0").click().run()
    _ok(at)
    assert at.radio(key="view").value == "Error attribution" and at.session_state["qa"] == first.qa_id
    subs = attribution_subgraphs(pg, first)
    assert [t.label for t in at.tabs] == [s.title for s in subs]
    assert [t.label for t in at.tabs][-2:] == [f"Retrieval · {first.qa_id}", f"Response · {first.qa_id}"]
    tables = [m.value for m in at.markdown if m.value.startswith("| op_id | op name |")]
    assert len(tables) == len(subs) and "memory_system.search_vector_store" in tables[-2]  # candidate ops
    assert any("LLM attribution is off" in i.value for i in at.info)

    at.button(key="run_ef").click().run()
    _ok(at)
    summary = next(m.value for m in at.markdown if m.value.startswith("**evidence_flow**"))
    assert "status `attributed`" in summary
    found = next(t for t in ERROR_TYPES if f"**{t}**" in summary)
    slider = at.slider(key="trail_step")
    assert slider.value == slider.max > 1
    slider.set_value(1).run()
    _ok(at)
    assert any(c.value.startswith("step 1/") for c in at.caption)
    trail = _chart(at, "trail_graph")
    assert trail["data"]

    at.button(key="ef_to_form").click().run()
    op_id = at.text_input(key="f_op").value
    assert op_id.startswith("op-") and at.text_input(key="f_edge").value.startswith("edge-")
    assert at.selectbox(key="f_type").value == found
    at.text_area(key="f_reason").input("The update replaced the aerial-yoga unit with an unrelated memory.")
    _submit(at).click().run()
    _ok(at)
    assert any("record 1" in s.value for s in at.success)
    saved = json.loads(out.read_text())
    assert len(saved) == 1
    rec = saved[0]
    assert set(rec) == {"saved_at", "graph_id", "query_id", "query", "manual_error_attribution", "graph_name", "qa_id",
                        "annotator", "unsure", "comment"}
    assert (rec["annotator"], rec["unsure"], rec["comment"]) == ("tester", False, "")
    assert rec["graph_id"] == path.name and rec["graph_name"] == name
    assert rec["query_id"] == first.query_full_node_id and rec["qa_id"] == first.qa_id
    assert rec["query"] == first.question
    assert rec["manual_error_attribution"] == {
        "op_id": op_id, "error_type": found, "edge_id": at.text_input(key="f_edge").value,
        "reason": "The update replaced the aerial-yoga unit with an unrelated memory."}
    assert rec["saved_at"].endswith("Z")

    # a second question of the same graph starts from an empty form and appends, keeping the first record
    at.button(key="qa_attr_1").click().run()
    assert (at.text_input(key="f_op").value, at.text_input(key="f_edge").value, at.selectbox(key="f_type").value,
            at.text_area(key="f_reason").value) == ("", "", None, "")
    assert not at.success
    at.selectbox(key="f_type").select("AnnotationError")
    at.text_input(key="f_op").input("")
    at.text_input(key="f_edge").input("")
    at.text_area(key="f_reason").input("The golden answer is not supported by the conversation.")
    _submit(at).click().run()
    _ok(at)
    saved = json.loads(out.read_text())
    assert [r["qa_id"] for r in saved] == [first.qa_id, second.qa_id]
    assert saved[1]["manual_error_attribution"]["op_id"] is None


def test_invalid_form_is_not_saved(app, sc_fixtures, tmp_path):
    out = tmp_path / "annotations.json"
    at = _ok(app(sc_fixtures / "sc012_memtracebench_like.json", output=out))
    at.radio(key="view").set_value("Error attribution").run()
    at.selectbox(key="attr_pick").select("locomo-qa-1-2").run()
    at.text_input(key="f_op").input("op-does-not-exist")
    at.selectbox(key="f_type").select("RetrievalError")
    at.text_area(key="f_reason").input("r")
    _submit(at).click().run()
    _ok(at)
    errors = " ".join(e.value for e in at.error)
    assert "Not saved" in errors and "op-does-not-exist" in errors
    assert not out.exists()


def test_clicking_an_edge_of_a_candidate_graph_fills_the_form(app, sc_fixtures, monkeypatch):
    at = _ok(app(sc_fixtures / "sc012_memtracebench_like.json"))
    at.radio(key="view").set_value("Error attribution").run()
    at.selectbox(key="attr_pick").select("locomo-qa-1-2").run()
    from annotation_interface import views as app_module

    spec = _chart(at, "cand_graph_1")
    edge = next(t for t in spec["data"] if t.get("name") == "edges (click)")["customdata"][0]
    state = _State({"cand_graph_1": {"selection": {"points": [{"customdata": edge}]}}})
    monkeypatch.setattr(app_module, "ss", state)
    app_module._chart_clicked("cand_graph_1", edge_to_form=True)
    assert (state["f_op"], state["f_edge"]) == (edge[2], edge[1])


def test_a_non_array_output_file_blocks_saving_and_is_left_alone(app, sc_fixtures, tmp_path):
    out = tmp_path / "annotations.json"
    out.write_text('{"not": "an array"}')
    at = _ok(app(sc_fixtures / "sc012_memtracebench_like.json", output=out))
    at.radio(key="view").set_value("Error attribution").run()
    at.selectbox(key="attr_pick").select("locomo-qa-1-2").run()
    assert any("not an array" in e.value for e in at.error)
    assert _submit(at).disabled
    assert out.read_text() == '{"not": "an array"}'


def test_llm_strategy_with_credentials(app, sc_fixtures, tmp_path, monkeypatch):
    from annotation_interface import attribution
    from graphtrace import answer
    from membase.clients import ScriptedChatModel

    op = "op-ad912fa103d643e0b4b16a3e9e7169cb"
    monkeypatch.setattr(attribution, "MODEL_FACTORY",
                        lambda ctx: ScriptedChatModel([answer("ExtractionError", op, "dropped at extraction")]))
    cfg = tmp_path / "api.json"
    cfg.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": ["http://127.0.0.1:9/v1"]}))
    at = _ok(app(sc_fixtures / "sc012_memtracebench_like.json", "--api-config", str(cfg), "--judge-model", "tiny"))
    at.radio(key="view").set_value("Error attribution").run()
    at.selectbox(key="attr_pick").select("locomo-qa-1-2").run()
    run = at.button(key="run_llm")
    assert run.label == "Run graph_search (tiny)"
    run.click().run()
    _ok(at)
    assert any(m.value.startswith("**graph_search** (tiny) · **ExtractionError**") for m in at.markdown)
    at.button(key="llm_to_form").click().run()
    assert at.text_input(key="f_op").value == op and at.selectbox(key="f_type").value == "ExtractionError"


# --------------------------------------------------------------------------------- other inputs
def test_membase_output_folder(app, membase_run):
    at = _ok(app(membase_run))
    assert at.selectbox(key="graph").options == ["traced_data/locomo-1/graph_evaluation.json — 2 wrong / 2 questions"]
    assert any("(1 adversarial skipped)" in c.value for c in at.sidebar.caption)


def test_construction_only_graph_has_no_questions(app, sc_fixtures):
    at = _ok(app(sc_fixtures / "sc012_toy_construction.json"))
    assert any("no question nodes" in i.value for i in at.sidebar.info)
    assert _chart(at, "timeline")
    at.radio(key="view").set_value("Error attribution").run()
    assert any("no question nodes" in i.value for i in at.info)


def test_edge_cases_fixture_opens(app, sc_fixtures):
    at = _ok(app(sc_fixtures / "sc012_edge_cases.json"))
    assert any("no message nodes" in i.value for i in at.info)
    at.radio(key="view").set_value("Operation").run()
    at.text_input(key="op_input").input("op-nope").run()
    assert any("is not an operation of this graph" in e.value for e in at.error)


# ------------------------------------------------------------------------------------ error pages
def test_empty_folder_page(app, tmp_path):
    (tmp_path / "empty").mkdir()
    at = _ok(app(tmp_path / "empty"))
    assert any("No graph files found" in e.value for e in at.error)


def test_a_file_that_is_not_a_graph_is_named(app, faultbench):
    at = _ok(app(faultbench / "faultbench_manifest.json"))
    assert any("No graph files found" in e.value for e in at.error)
    assert any("faultbench_manifest.json" in m.value and "not a graph export" in m.value for m in at.markdown)


def test_malformed_file_is_reported_and_the_others_load(app, faultbench, copy_tree):
    data = copy_tree(faultbench / "rag", "rag")
    (data / "aaa_broken.json").write_text('{"graph_id": "g", "data": {"nodes": [{"name": ')
    at = _ok(app(data))
    warning = " ".join(w.value for w in at.warning)
    assert "1 file(s) could not be loaded" in warning and "aaa_broken.json" in warning and "invalid JSON" in warning
    assert [o.split(" — ")[0] for o in at.selectbox(key="graph").options] == sorted(
        p.name for p in (faultbench / "rag").glob("*.json"))
    assert _chart(at, "timeline")


def test_a_graph_that_breaks_after_indexing_is_an_error_in_the_page(app, faultbench, copy_tree):
    data = copy_tree(split_file(faultbench, "rag"), "one/g.json")
    raw = json.loads(data.read_text())
    raw["data"]["nodes"][0]["version"] = "two"  # indexes fine, fails the strict import
    data.write_text(json.dumps(raw))
    at = _ok(app(data))
    assert any("could not be opened" in e.value and "data.nodes[0]" in e.value for e in at.error)


def test_missing_data_path_and_bad_flags(app, tmp_path):
    at = _ok(app(tmp_path / "nope"))
    assert any("no such file or folder" in e.value for e in at.error)
    at = _ok(app(tmp_path, "--llm-strategy", "nonsense"))
    assert any("Bad command line" in e.value for e in at.error)
    assert "--output-path" in at.code[0].value


def test_the_saved_count_is_current_right_after_a_save(app, sc_fixtures, tmp_path):
    out = tmp_path / "annotations.json"
    out.write_text('[{"earlier": "record"}]')
    at = _ok(app(sc_fixtures / "sc012_memtracebench_like.json", output=out))
    at.radio(key="view").set_value("Error attribution").run()
    at.selectbox(key="attr_pick").select("locomo-qa-1-2").run()
    assert any("(1 saved so far)" in c.value for c in at.caption)
    at.selectbox(key="f_type").select("AnnotationError")
    at.text_area(key="f_reason").input("The golden answer is not in the conversation.")
    _submit(at).click().run()
    _ok(at)
    assert any("record 2" in s.value for s in at.success)
    assert any("(2 saved so far)" in c.value for c in at.caption)
    assert len(json.loads(out.read_text())) == 2
