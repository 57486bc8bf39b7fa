"""The pages of the annotation interface (rendered by ``app.py`` on every Streamlit rerun).

Kept in an imported module rather than in the script itself: Streamlit recompiles the script
file on reruns, while this module is compiled once per process. Navigation happens in widget
callbacks, so a click is one rerun that reads cached objects only: the dataset and the parsed
graphs are ``st.cache_resource`` entries (keyed by path, mtime and size), and figures,
subgraphs and automatic attributions are memoised on the parsed graph.
"""

from __future__ import annotations

import gc
import math
import sys
from pathlib import Path
from typing import Any

import streamlit as st

from . import annotations as store
from . import attribution as auto
from . import workflow
from .cli import AppArgsError, help_text, parse_app_args
from .dataset import DataPathError, Dataset, open_dataset
from .figures import clicked, subgraph_figure, timeline_figure
from .labels import CaseRef, Label
from .loader import GraphFileError, ParsedGraph, load_graph
from .parser import QARecord
from .readable import evidence_terms, highlight, op_io
from .subgraphs import (
    Subgraph,
    attribution_subgraphs,
    message_subgraph,
    op_subgraph,
    related_variables,
    trail_subgraph,
)

VIEWS = ("Macro flow", "Operation", "Related variables", "Error attribution", "Queue", "Agreement")
TIMELINE_PAGE = 240
TIMELINE_PER_ROW = 8
QA_PAGE = 8
MAX_LISTED = 200
STATUS_BADGE = {"correct": ":green[**correct**]", "wrong": ":red[**wrong**]", "unjudged": ":gray[not judged]"}
STATUS_TEXT = {"correct": "[correct]", "wrong": "[wrong]", "unjudged": "[not judged]"}
ALL_SESSIONS = "(all sessions)"
PLOT_CONFIG = {"displaylogo": False, "scrollZoom": False}
_CSS = ("<style>[data-testid='stMainBlockContainer'] {padding-top: 2.2rem;}"
        " .mt-text {white-space: pre-wrap; font-size: 0.9rem; border-left: 3px solid #ddd; padding: 0.2rem 0.6rem;"
        " margin-bottom: 0.6rem; max-height: 18rem; overflow-y: auto;}"
        " .mt-text mark {background: #ffe58a; padding: 0 1px;}</style>")


# ----------------------------------------------------------------------------------- caches
@st.cache_resource(max_entries=4, ttl=10, show_spinner="Scanning the data folder…")
def _dataset(data: str, index_dir: str | None) -> Dataset:
    return open_dataset(data, index_dir)


@st.cache_resource(max_entries=4, show_spinner="Loading the graph…")
def _graph(path: str, mtime_ns: int, size: int) -> ParsedGraph:
    del mtime_ns, size  # part of the cache key: an edited file is loaded again
    pg = load_graph(path)
    # The graph's millions of acyclic objects live as long as the app shows it: keep the cyclic
    # collector from rescanning them in every later full collection (a second of CPU landing in a
    # random click on a 46k-node graph). Refcounting still frees them when the graph is dropped.
    gc.freeze()
    return pg


# ------------------------------------------------------------------------------------ state
ss = st.session_state


def _init_state() -> None:
    defaults: dict[str, Any] = {
        "view": VIEWS[0], "qa": None, "message": None, "op": "", "var": None, "var_stack": [],
        "var_dir": "both", "qa_filter": "all", "qa_page": 1, "tl_session": ALL_SESSIONS, "tl_page": 1,
        "auto": {}, "llm": {}, "f_op": "", "f_edge": "", "f_type": None, "f_reason": "", "save_msg": None,
        "f_unsure": False, "f_comment": "", "skipped": [],
    }
    for key, value in defaults.items():
        if key not in ss:
            ss[key] = value


def _reset_graph_state() -> None:
    ss.qa = None
    ss.message = None
    ss.op = ""
    ss.var = None
    ss.var_stack = []
    ss.qa_page = 1
    ss.tl_page = 1
    ss.tl_session = ALL_SESSIONS
    ss.save_msg = None


def _go(view: str | None = None, **changes: Any) -> None:
    """Navigation callback: set state keys, then the view."""
    if "var" in changes and changes["var"] and ss.get("var") and changes["var"] != ss.var:
        ss.var_stack = [*ss.var_stack, ss.var]
    for key, value in changes.items():
        ss[key] = value
    if view is not None:
        ss.view = view


def _open_case(graph_name: str, qa_id: str) -> None:
    """Open one question in the attribution view (and name it in the URL)."""
    if graph_name != ss.get("graph"):
        ss.graph = graph_name
        _reset_graph_state()
    _go("Error attribution", qa=qa_id)
    if ss.get("dataset") is not None:
        workflow.set_case_link(ss.dataset, graph_name, qa_id)


def _jump() -> None:
    choice = ss.get("jump")
    if not choice:
        return
    graph_name, qa_id = choice.split("\t", 1)
    _open_case(graph_name, qa_id)
    ss.jump = None


def _var_back() -> None:
    if ss.var_stack:
        ss.var = ss.var_stack[-1]
        ss.var_stack = ss.var_stack[:-1]


def _chart_clicked(chart_key: str, *, edge_to_form: bool = False) -> None:
    """on_select callback of the subgraph figures: a node opens its related variables; an edge
    opens its op (or, in the attribution view, goes into the manual form)."""
    hit = clicked(ss.get(chart_key))
    if not hit:
        return
    if hit[0] == "node":
        _go("Related variables", var=hit[1])
    elif hit[0] == "edge" and len(hit) >= 3:
        if edge_to_form:
            ss.f_op, ss.f_edge = hit[2], hit[1]
        else:
            _go("Operation", op=hit[2])


def _timeline_clicked() -> None:
    hit = clicked(ss.get("timeline"))
    if not hit:
        return
    if hit[0] == "edge":
        ss.message = hit[1]
    elif hit[0] == "node":
        _go("Related variables", message=hit[1], var=hit[1])


def _fill_form(op_id: str | None, edge_id: str | None, error_type: str | None, reason: str,
               unsure: bool | None = None, comment: str | None = None) -> None:
    ss.f_op = op_id or ""
    ss.f_edge = edge_id or ""
    ss.f_type = error_type if error_type in store.ERROR_LABELS else None
    ss.f_reason = reason
    if unsure is not None:
        ss.f_unsure = unsure
    if comment is not None:
        ss.f_comment = comment


# ---------------------------------------------------------------------------------- helpers
def _current_qa(pg: ParsedGraph) -> QARecord | None:
    return pg.index.qa(ss.qa) if ss.qa else None


def _qa_label(qa: QARecord) -> str:
    text = qa.question if len(qa.question) <= 70 else qa.question[:68] + "…"
    return f"{STATUS_TEXT[qa.status]} {qa.qa_id} · {text}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _op_label(pg: ParsedGraph, op_id: str) -> str:
    op = pg.index.ops.get(op_id)
    return f"{op.op_name or 'unnamed'} · {op_id}" if op else op_id


def _plot(fig: Any, key: str, on_select: Any = None) -> None:
    if fig is None:
        st.caption("(nothing to draw)")
        return
    if on_select is None:
        st.plotly_chart(fig, key=key, config=PLOT_CONFIG, width="stretch")
    else:
        st.plotly_chart(fig, key=key, on_select=on_select, selection_mode="points", config=PLOT_CONFIG,
                        width="stretch")


def _cell(value: Any, limit: int = 160) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return _cut(text, limit).replace("|", "\\|")


def _table(header: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (st.dataframe would import pandas on the first click: a second or more)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _candidates_table(pg: ParsedGraph, sub: Subgraph) -> None:
    rows = []
    for op, edges in sub.candidates():
        info = pg.index.ops.get(op)
        rows.append([f"`{op}`", info.op_name if info else "", info.category if info else "", len(edges)])
    if rows:
        st.markdown(_table(["op_id", "op name", "category", "edges"], rows))


def _candidate_picker(pg: ParsedGraph, subs: list[Subgraph]) -> None:
    """Pick a candidate op and one of its edges, and put them in the manual form."""
    owners: dict[str, str] = {}
    for sub in subs:
        for op, _edges in sub.candidates():
            owners.setdefault(op, sub.kind)
    if not owners:
        return
    c1, c2, c3 = st.columns([4, 4, 2])
    op = c1.selectbox("Candidate operation", list(owners), key="cand_op",
                      format_func=lambda o: f"{owners[o]} · {_op_label(pg, o)}")
    edges = [e.edge_id for e in pg.index.op_edges.get(op, [])]
    labels = {e.edge_id: f"{_short_id(e.source)} → {_short_id(e.target)}" for e in pg.index.op_edges.get(op, [])}
    edge = c2.selectbox("Edge", edges[:MAX_LISTED], key="cand_edge", format_func=lambda e: labels.get(e, e))
    c3.button("Put in the form", key="cand_to_form", on_click=_fill_form,
              args=(op, edge, ss.get("f_type"), ss.get("f_reason") or ""))


def _short_id(node_id: str, limit: int = 38) -> str:
    return _cut(node_id, limit)


def _evidence_message(pg: ParsedGraph, qa: QARecord) -> str | None:
    for ev in qa.case_evidence_ids:
        node = ev if pg.index.message(ev) else pg.index.latest.get(ev)
        if node and pg.index.message(node):
            return node
    return None


def _show_evidence(pg: ParsedGraph, qa_id: str) -> None:
    qa = pg.index.qa(qa_id)
    if qa is None:
        return
    node = _evidence_message(pg, qa)
    ss.qa = qa_id
    ss.view = "Macro flow"
    if node:
        ss.message = node
        ss.tl_session = ALL_SESSIONS
        ss.tl_page = pg.index.message(node).position // TIMELINE_PAGE + 1


# ------------------------------------------------------------------------------------ pages
def _problems(ds: Dataset) -> None:
    if ds.errors:
        st.warning(f"{len(ds.errors)} file(s) could not be loaded; the other graphs are available:\n\n"
                   + "\n".join(f"- `{p.graph_name}`: {p.message}" for p in ds.errors))
    if ds.index_note:
        st.caption(ds.index_note)


def _data_notes(ds: Dataset) -> None:
    """Where the graphs come from (bottom of the sidebar)."""
    with st.sidebar:
        st.divider()
        st.caption(f"Data: `{ds.data_path}` · {len(ds.graphs)} graph(s)"
                   + (f" · index `{ds.index_path.name}`" if ds.index_path else ""))
        if ds.skipped:
            with st.expander(f"{len(ds.skipped)} JSON file(s) skipped"):
                st.markdown("\n".join(f"- `{p.graph_name}`: {p.message}" for p in ds.skipped))


def _top_controls(ds: Dataset) -> None:
    names = [g.graph_name for g in ds.graphs]
    if ss.get("graph") not in names:
        ss.graph = names[0]
        _reset_graph_state()
    counts = {g.graph_name: g.counts for g in ds.graphs}
    c1, c2, c3 = st.columns([3, 3, 4])
    c1.selectbox("Graph", names, key="graph", on_change=_reset_graph_state,
                 format_func=lambda n: f"{n} — {counts[n].get('wrong', 0)} wrong / {counts[n].get('questions', 0)} questions")
    wrong = ds.wrong_qas()
    questions = {f"{g.graph_name}\t{q['qa_id']}": str(q.get("question") or "") for g in ds.graphs for q in g.wrong_qas}
    c2.selectbox("Query (wrong answers)", [f"{g}\t{q}" for g, q, _ in wrong], index=None, key="jump",
                 placeholder=f"jump to one of {len(wrong)} wrong questions…", on_change=_jump,
                 format_func=lambda v: f"{Path(v.split(chr(9))[0]).stem} · {_cut(questions.get(v, ''), 60)} "
                                       f"· {v.split(chr(9))[1]}")
    c3.radio("View", VIEWS, key="view", horizontal=True)


def _sidebar(pg: ParsedGraph) -> None:
    ix = pg.index
    with st.sidebar:
        st.header("Questions")
        by = {s: sum(1 for q in ix.qas if q.status == s) for s in ("correct", "wrong", "unjudged")}
        note = f" ({ix.skipped_questions} adversarial skipped)" if ix.skipped_questions else ""
        st.caption(f"{len(ix.qas)} questions: {by['correct']} correct, {by['wrong']} wrong, "
                   f"{by['unjudged']} not judged{note}")
        flt = st.radio("Show", ("all", "correct", "wrong"), key="qa_filter", horizontal=True,
                       on_change=lambda: ss.update(qa_page=1))
        qas = [q for q in ix.qas if flt == "all" or q.status == flt]
        if not qas:
            st.info("No question in this filter." if ix.qas else "This graph has no question nodes.")
            return
        pages = math.ceil(len(qas) / QA_PAGE)
        if ss.qa_page > pages:
            ss.qa_page = 1
        if pages > 1:
            st.number_input(f"Page (of {pages})", min_value=1, max_value=pages, key="qa_page")
        start = (ss.qa_page - 1) * QA_PAGE
        for i, qa in enumerate(qas[start:start + QA_PAGE], start=start):
            with st.container(border=True):
                chosen = " · **selected**" if qa.qa_id == ss.qa else ""
                st.markdown(f"{STATUS_BADGE[qa.status]} `{qa.qa_id}`{chosen}")
                st.markdown(qa.question)
                gold = qa.golden_display or "?"
                pred = qa.prediction or "?"
                st.caption(f"gold: {_cut(gold, 90)} · answer: {_cut(pred, 90)}")
                b1, b2 = st.columns(2)
                b1.button("Attribute", key=f"qa_attr_{i}", on_click=_go, args=("Error attribution",),
                          kwargs={"qa": qa.qa_id}, width="stretch")
                b2.button("Evidence", key=f"qa_ev_{i}", on_click=_show_evidence, args=(pg, qa.qa_id),
                          disabled=_evidence_message(pg, qa) is None, width="stretch")


def _macro_flow(pg: ParsedGraph) -> None:
    ix = pg.index
    if not ix.messages:
        st.info("This graph has no message nodes (category `message`), so there is no timeline. "
                "Use the Operation view or the attribution view.")
        return
    sessions = list(dict.fromkeys(m.session_id or "" for m in ix.messages))
    if ss.tl_session not in (ALL_SESSIONS, *sessions):
        ss.tl_session = ALL_SESSIONS
    c1, c2 = st.columns([3, 1])
    sess = c1.selectbox("Session", (ALL_SESSIONS, *sessions), key="tl_session", on_change=lambda: ss.update(tl_page=1))
    msgs = [m for m in ix.messages if sess == ALL_SESSIONS or (m.session_id or "") == sess]
    pages = max(1, math.ceil(len(msgs) / TIMELINE_PAGE))
    if ss.tl_page > pages:
        ss.tl_page = 1
    if pages > 1:
        c2.number_input(f"Page (of {pages}, {TIMELINE_PAGE} messages each)", 1, pages, key="tl_page")
    page = msgs[(ss.tl_page - 1) * TIMELINE_PAGE: ss.tl_page * TIMELINE_PAGE]
    qa = _current_qa(pg)
    evidence = set(qa.case_evidence_ids) if qa else set()
    left, right = st.columns([3, 2])
    with left:
        st.subheader("Macro flow")
        st.caption(f"{len(msgs)} messages in execution order (rows snake left↔right). Click a diamond to see the "
                   "operations that processed a message, a message to see its related variables"
                   + (f"; ★ = evidence of `{qa.qa_id}`" if qa else "") + ".")
        fig = pg.memo(("timeline", sess, ss.tl_page, tuple(sorted(evidence)), ss.message),
                      lambda: timeline_figure(page, per_row=TIMELINE_PER_ROW, evidence_ids=evidence,
                                              selected_id=ss.message))
        _plot(fig, "timeline", on_select=_timeline_clicked)
        ids = [m.full_node_id for m in page]
        ss.message_pick = ss.message if ss.message in ids else None
        st.selectbox("Message", ids, index=None, key="message_pick", placeholder="choose a message…",
                     format_func=lambda i: f"{ix.message(i).message_id} · {ix.message(i).speaker}: {ix.message(i).text[:80]}",
                     on_change=lambda: ss.update(message=ss.message_pick))
    with right:
        st.subheader("Edge & variable subgraph")
        msg = ix.message(ss.message) if ss.message else None
        if msg is None:
            st.info("Choose a message (click its diamond in the timeline, or pick it below the chart).")
            return
        st.markdown(f"**{msg.message_id}** · {msg.speaker} ({msg.role}) · {msg.timestamp}")
        st.markdown(f"> {msg.text}")
        sub = pg.memo(("message", msg.full_node_id), lambda: message_subgraph(pg, msg.full_node_id))
        if sub.note:
            st.caption(sub.note)
        st.caption(f"{len(sub.op_ids)} operation(s): " + ", ".join(f"`{_op_label(pg, o)}`" for o in sub.op_ids))
        _plot(pg.memo(("message_fig", msg.full_node_id), lambda: subgraph_figure(sub.graph, focus_ids=sub.focus_ids)),
              "message_graph",
              on_select=lambda: _chart_clicked("message_graph"))
        if sub.op_ids:
            pick = st.selectbox("Operation", sub.op_ids, key="message_op_pick", format_func=lambda o: _op_label(pg, o))
            b1, b2 = st.columns(2)
            b1.button("Open in the operation view", on_click=_go, args=("Operation",), kwargs={"op": pick},
                      key="message_open_op")
            b2.button("Related variables of the message", on_click=_go, args=("Related variables",),
                      kwargs={"var": msg.full_node_id}, key="message_related")


def _operation_view(pg: ParsedGraph) -> None:
    ix = pg.index
    st.subheader("Operation")
    context: list[str] = []
    if ss.message:
        context.extend(ix.message_op_ids(ss.message))
    qa = _current_qa(pg)
    if qa:
        context.extend(ix.retrieval_op_ids(qa) + ix.response_op_ids(qa))
    context = list(dict.fromkeys(context))
    ss.op_input = ss.op
    c1, c2 = st.columns(2)
    c1.text_input("Operation id", key="op_input", on_change=lambda: ss.update(op=ss.op_input.strip()),
                  placeholder="op-…")
    if context:
        ss.op_pick = ss.op if ss.op in context else None
        c2.selectbox("…or an operation of the chosen message / question", context, index=None, key="op_pick",
                     format_func=lambda o: _op_label(pg, o), on_change=lambda: ss.update(op=ss.op_pick or ss.op))
    op_id = ss.op
    if not op_id:
        st.info("Give an operation id, or open one from the timeline or the attribution view.")
        return
    op = ix.ops.get(op_id)
    if op is None:
        st.error(f"`{op_id}` is not an operation of this graph.")
        return
    handle = pg.network.get_operation(op_id)
    st.markdown(f"**{op.op_name or 'unnamed op'}** · category `{op.category}` · session `{op.session_id}` · "
                f"created {op.created_at} · {len(ix.op_edges.get(op_id, []))} edge(s)")
    if handle.comment:
        st.caption(handle.comment)
    sub = pg.memo(("op", op_id), lambda: op_subgraph(pg, op_id))
    _plot(pg.memo(("op_fig", op_id), lambda: subgraph_figure(sub.graph, highlight_ops=[op_id])), "op_graph",
          on_select=lambda: _chart_clicked("op_graph"))
    _op_as_text(pg, op_id, qa)
    with st.expander("The operation as XML (what the attribution agents read)"):
        meta = st.checkbox("include metadata in the XML", key="op_xml_meta")
        xml = pg.memo(("op_xml", op_id, meta), lambda: sub.graph.to_xml(include_metadata=meta))
        st.code(xml, language="xml")
        st.download_button("Download XML", xml, file_name=f"{op_id}.xml", mime="application/xml", key="op_xml_dl")


def _op_as_text(pg: ParsedGraph, op_id: str, qa: QARecord | None) -> None:
    """The op's prompt, inputs and response as text, the golden answer's words marked."""
    nodes = pg.memo(("op_io", op_id), lambda: op_io(pg.network, pg.index.op_edges.get(op_id, [])))
    terms = evidence_terms(qa.golden_display) if qa else []
    marked = f" · words of the golden answer of `{qa.qa_id}` are marked" if qa and terms else ""
    st.markdown(f"##### Inputs and outputs as text{marked}")
    for node in nodes[:40]:
        st.markdown(f"**{node.title}**")
        st.markdown(f"<div class='mt-text'>{highlight(node.text, terms)}</div>", unsafe_allow_html=True)
    if len(nodes) > 40:
        st.caption(f"{len(nodes) - 40} more node(s): see the XML.")


def _related_view(pg: ParsedGraph) -> None:
    st.subheader("Related variables")
    c1, c2, c3 = st.columns([4, 2, 1])
    ss.var_input = ss.var or ""
    c1.text_input("Variable id", key="var_input", placeholder="full node id, e.g. U1:D2:2@1",
                  on_change=lambda: _go(var=ss.var_input.strip() or None))
    direction = c2.radio("Direction (1 hop)", ("backward", "forward", "both"), key="var_dir", horizontal=True)
    c3.button("◀ Back", on_click=_var_back, disabled=not ss.var_stack, key="var_back")
    var = ss.var
    if not var:
        st.info("Click a node in any graph, or give a variable id.")
        return
    if var not in pg.network:
        st.error(f"`{var}` is not a variable of this graph.")
        return
    node = pg.network.get_variable(var)
    st.markdown(f"**{node.full_node_id}** · category `{node.category}` · class `{node.class_name}` · "
                f"session `{node.session_id}` · created {node.created_at}")
    with st.expander("Value and metadata", expanded=True):
        st.code(str(node.raw_value)[:20000], language="json" if str(node.raw_value)[:1] in "{[" else None)
        if node.metadata:
            st.json(node.metadata, expanded=False)
    sub = pg.memo(("related", var, direction), lambda: related_variables(pg, var, direction))
    if sub.note:
        st.caption(sub.note)
    _plot(pg.memo(("related_fig", var, direction), lambda: subgraph_figure(sub.graph, focus_ids=[var])),
          "related_graph",
          on_select=lambda: _chart_clicked("related_graph"))
    neighbours = [n.full_node_id for n in sub.graph.nodes if n.full_node_id != var]
    if neighbours:
        pick = st.selectbox("Neighbour", neighbours, key="var_next")
        st.button("Go to neighbour", on_click=_go, kwargs={"var": pick}, key="var_go")
    ops = pg.memo(("var_ops", var), lambda: [op.op_id for op in pg.network.get_operations_by_variable(var)])
    if ops:
        label = "Operations that read or wrote it" + (f" (first {MAX_LISTED} of {len(ops)})" if len(ops) > MAX_LISTED else "")
        pick_op = st.selectbox(label, ops[:MAX_LISTED], key="var_op", format_func=lambda o: _op_label(pg, o))
        st.button("Open operation", on_click=_go, args=("Operation",), kwargs={"op": pick_op}, key="var_open_op")


def _qa_header(pg: ParsedGraph, qa: QARecord) -> None:
    st.markdown(f"##### {STATUS_BADGE[qa.status]} `{qa.qa_id}` — {qa.question}")
    c1, c2 = st.columns(2)
    c1.markdown(f"**Golden answer:** {qa.golden_display or '—'}")
    c1.markdown(f"**Prediction:** {qa.prediction or '—'}")
    c2.markdown(f"**Judge:** {qa.judge_response or '—'} (score `{qa.judge_score}`)")
    ev = ", ".join(f"`{e}`" for e in qa.case_evidence_ids) or "none recorded"
    missing = f" (not in the graph: {', '.join(qa.missing_evidence)})" if qa.missing_evidence else ""
    c2.markdown(f"**Evidence:** {ev}{missing}")
    if qa.status == "correct":
        st.info("This question was judged correct; attribution is meant for wrong answers.")
    if qa.annotation:
        with st.expander("Benchmark label (MemTraceBench annotation of this question)"):
            st.json(qa.annotation, expanded=False)


_TRAIL_COLUMNS = ("stage", "op_name", "present", "score", "node_id", "note")


def _trail_table(steps: list[dict[str, Any]]) -> str:
    """The trail as a table that fits a 1440 px window: fixed columns, short cells, the op id in
    the op column's text (other keys, if any, join the note)."""
    rows = []
    for i, step in enumerate(steps, 1):
        op = step.get("op_name") or ""
        if step.get("op_id"):
            op = f"{op} `{_cut(str(step['op_id']), 14)}`"
        extra = "; ".join(f"{k}: {v}" for k, v in step.items() if k not in (*_TRAIL_COLUMNS, "op_id") and v is not None)
        note = " · ".join(x for x in (str(step.get("note") or ""), extra) if x)
        present = {True: "yes", False: "**no**"}.get(step.get("present"), "")
        score = f"{step['score']:.2f}" if isinstance(step.get("score"), int | float) else ""
        rows.append([i, step.get("stage") or "", op, present, score, _cut(str(step.get("node_id") or ""), 30),
                     _cut(note, 90)])
    return _table(["#", "stage", "op", "present", "score", "node", "note"], rows)


def _trail_panel(pg: ParsedGraph, qa: QARecord, result: dict[str, Any]) -> None:
    steps = result["trail"]
    if not steps:
        return
    n = len(steps)
    if not 1 <= ss.get("trail_step", n) <= n:
        ss.trail_step = n
    k = st.slider("Trail step", 1, n, key="trail_step") if n > 1 else 1
    states: dict[str, str] = {}
    for step in steps[:k]:
        node = step.get("node_id")
        if node:
            states[node] = "present" if step.get("present") else "absent" if step.get("present") is False else "current"
    current = steps[k - 1]
    if current.get("node_id"):
        states[current["node_id"]] = "current"
    where = f" · {current.get('op_name') or 'op'} `{current['op_id']}`" if current.get("op_id") else ""
    st.caption(f"step {k}/{n} · {current.get('stage')}{where} · {current.get('note') or ''}")
    sub = pg.memo(("trail", qa.qa_id), lambda: trail_subgraph(pg, steps))
    if sub.note:
        st.caption(sub.note)
    highlight = [current["op_id"]] if current.get("op_id") else []
    _plot(pg.memo(("trail_fig", qa.qa_id, k),
                  lambda: subgraph_figure(sub.graph, node_states=states, highlight_ops=highlight)), "trail_graph",
          on_select=lambda: _chart_clicked("trail_graph", edge_to_form=True))
    with st.expander("All trail steps"):
        st.markdown(_trail_table(steps))


def _auto_panel(pg: ParsedGraph, qa: QARecord, args: Any, key: str) -> None:
    st.markdown("#### Automatic attribution")
    c1, c2 = st.columns(2)
    if ss.get("ef_mode") not in auto.EVIDENCE_MODES:
        ss.ef_mode = args.evidence_mode
    c1.radio("evidence_flow starts from", auto.EVIDENCE_MODES, key="ef_mode", horizontal=True,
             format_func=lambda m: "retrieved evidence (CLI default)" if m == "retrieved" else "annotated evidence",
             help="retrieved = run_error_attribution.py's default (pseudo source evidence); annotated = "
                  "--starting-nodes-type source_evidence. The first retrieved run on a graph builds its index.")
    if c1.button("Run evidence_flow (no LLM)", key="run_ef"):
        mode = ss.ef_mode
        with st.spinner("Following the evidence through the graph…"):
            ss.auto = {**ss.auto, key: pg.memo(("evidence_flow", qa.qa_id, mode),
                                               lambda: auto.run_evidence_flow(pg, qa, mode))}
        ss.trail_step = max(1, len(ss.auto[key]["trail"]))
    settings = auto.LLMSettings(model=args.judge_model, api_config=args.api_config, strategy=args.llm_strategy)
    available, note = auto.llm_availability(settings)
    if available:
        if c2.button(f"Run {settings.strategy} ({settings.model})", key="run_llm"):
            with st.spinner(f"{settings.strategy} is exploring the graph with {settings.model}…"):
                ss.llm = {**ss.llm, key: auto.run_llm_attribution(pg, qa, settings)}
        c2.caption(note)
    else:
        c2.info(note)
    result = ss.auto.get(key)
    if result:
        op = result["op_id"]
        status = result["status"]
        st.markdown(f"**evidence_flow** · status `{status}` · **{result['error_type'] or 'no error type'}** at "
                    f"`{_op_label(pg, op) if op else '—'}` · {result['elapsed_s']:.2f} s")
        for k, v in result["extra"].items():
            st.markdown(f"- {k}: `{v}`")
        st.markdown(result["reason"])
        st.button("Put this result in the form", key="ef_to_form", on_click=_fill_form,
                  args=(op, auto.suggested_edge(pg, op, result["trail"]), result["error_type"],
                        f"[evidence_flow] {result['reason']}"))
        _trail_panel(pg, qa, result)
    llm = ss.llm.get(key)
    if llm:
        pred = llm["prediction"]
        if pred:
            st.markdown(f"**{llm['strategy']}** ({llm['model']}) · **{pred.get('error_type')}** at "
                        f"`{_op_label(pg, pred.get('op_id') or '')}` · {llm['elapsed_s']:.1f} s · tokens {llm['usage']}")
            st.markdown(pred.get("reason") or "")
            st.button("Put the LLM result in the form", key="llm_to_form", on_click=_fill_form,
                      args=(pred.get("op_id"), auto.suggested_edge(pg, pred.get("op_id")), pred.get("error_type"),
                            f"[{llm['strategy']}] {pred.get('reason') or ''}"))
        else:
            st.error(f"{llm['strategy']} gave no attribution: {llm['failure']}")


def _my_record(state: workflow.QueueState, graph_name: str, qa: QARecord) -> dict[str, Any] | None:
    key = (graph_name, qa.qa_id, state.annotator)
    return next((r for r in reversed(state.records) if store.record_key(r) == key), None)


def _load_record(record: dict[str, Any]) -> None:
    manual = record.get("manual_error_attribution") or {}
    _fill_form(manual.get("op_id"), manual.get("edge_id"), manual.get("error_type"), str(manual.get("reason") or ""),
               unsure=bool(record.get("unsure")), comment=str(record.get("comment") or ""))


def _delete_mine(output: Path, key: store.RecordKey) -> None:
    try:
        removed = store.delete_record(output, key)
    except (store.OutputFileError, OSError) as exc:
        ss.save_msg = None
        ss.delete_msg = f"Not deleted: {exc}"
        return
    ss.save_msg = None
    ss.delete_msg = f"Deleted your label of `{key[1]}`." if removed else "There was no label of yours to delete."
    _fill_form(None, None, None, "", unsure=False, comment="")


def _save(pg: ParsedGraph, qa: QARecord, graph_name: str, output: Path, annotator: str) -> int | None:
    attribution, problems = store.validate_manual(pg.index, op_id=ss.f_op, edge_id=ss.f_edge,
                                                  error_type=ss.f_type, reason=ss.f_reason)
    if not annotator:
        problems.insert(0, "give your name (sidebar: 'Your name (annotator)') before saving")
    if problems or attribution is None:
        st.error("Not saved:\n\n" + "\n".join(f"- {p}" for p in problems))
        return None
    record = store.build_record(graph_file_name=pg.path.name, graph_name=graph_name, qa=qa, attribution=attribution,
                                annotator=annotator, unsure=bool(ss.f_unsure), comment=str(ss.f_comment or ""))
    try:
        total, replaced = store.save_record(output, record)
    except (store.OutputFileError, OSError) as exc:
        st.error(f"Not saved: {exc}")
        return None
    how = "replaced your earlier label" if replaced else f"record {total}"
    sure = " (unsure)" if record["unsure"] else ""
    ss.save_msg = f"Saved `{qa.qa_id}` as {attribution.error_type}{sure} — {how} in `{output}`."
    return total


def _manual_form(pg: ParsedGraph, qa: QARecord, graph_name: str, args: Any, state: workflow.QueueState) -> None:
    st.markdown("#### Manual attribution")
    output = Path(args.output_path)
    count, problem = store.check_output(output)
    status = st.empty()  # filled after the form, so that a save in this run is counted
    if ss.f_type not in store.ERROR_LABELS:
        ss.f_type = None
    with st.form("manual_form"):
        c1, c2 = st.columns(2)
        c1.text_input("Operation id (empty = null)", key="f_op", placeholder="op-…")
        c2.text_input("Edge id", key="f_edge", placeholder="edge-…")
        c3, c4 = st.columns([3, 1])
        c3.selectbox("Error type", store.ERROR_LABELS, key="f_type", index=None, placeholder="choose the error type")
        c4.checkbox("unsure", key="f_unsure", help="kept out of the human labels that tools score against")
        st.text_area("Reason", key="f_reason", placeholder="what went wrong at this operation, and why it is the "
                                                           "earliest decisive fault")
        st.text_input("Comment (optional)", key="f_comment", placeholder="anything a second annotator should know")
        submitted = st.form_submit_button("Save label", disabled=problem is not None, type="primary")
    if submitted:
        total = _save(pg, qa, graph_name, output, state.annotator)
        if total is not None:
            count = total
    if problem:
        status.error(problem)
    else:
        status.caption(f"Labels are saved to `{output}` ({count} saved so far); a second save of a case replaces "
                       "your earlier label. Click an edge in a candidate graph or the trail to put it in the form.")
    if ss.save_msg:
        st.success(ss.save_msg)
    if ss.get("delete_msg"):
        st.info(ss.pop("delete_msg"))
    mine = _my_record(state, graph_name, qa) if not submitted else None
    if submitted:
        try:
            mine = next((r for r in reversed(store.read_records(output))
                         if store.record_key(r) == (graph_name, qa.qa_id, state.annotator)), None)
        except store.OutputFileError:
            mine = None
    if mine is not None:
        c1, c2 = st.columns(2)
        c1.button("Load my saved label into the form", key="mine_load", on_click=_load_record, args=(mine,))
        c2.button("Delete my label of this case", key="mine_delete", on_click=_delete_mine,
                  args=(output, (graph_name, qa.qa_id, state.annotator)))


def _base_url() -> str:
    try:
        url = st.context.url or ""
    except AttributeError:  # pragma: no cover - older Streamlit
        url = ""
    return url.split("?", 1)[0] or "http://127.0.0.1:8501/"


def _attribution_view(pg: ParsedGraph, graph_name: str, args: Any, state: workflow.QueueState) -> None:
    ix = pg.index
    if not ix.qas:
        st.info("This graph has no question nodes to attribute.")
        return
    order = sorted(ix.qas, key=lambda q: q.status != "wrong")
    ids = [q.qa_id for q in order]
    ss.attr_pick = ss.qa if ss.qa in ids else None
    st.selectbox("Question", ids, index=None, key="attr_pick", placeholder="choose a question (wrong ones first)…",
                 format_func=lambda i: _qa_label(ix.qa(i)), on_change=lambda: ss.update(qa=ss.attr_pick))
    qa = _current_qa(pg)
    if qa is None:
        st.info("Choose a question here, with **Attribute** in the sidebar, the wrong-answer selector or the "
                "**Queue** view.")
        return
    key = f"{graph_name}::{qa.qa_id}"
    if ss.get("form_for") != key:
        # another question: start from an empty form (or this annotator's saved label, to edit it), so no
        # field of the last question is saved by mistake
        ss.form_for = key
        _fill_form(None, None, None, "", unsure=False, comment="")
        mine = _my_record(state, graph_name, qa)
        if mine is not None:
            _load_record(mine)
        ss.save_msg = None
        ss.pop("trail_step", None)
    workflow.queue_bar(state, (graph_name, qa.qa_id), _open_case, _base_url())
    pg.memo(("evidence_flow_warm_up",), lambda: auto.warm_evidence_flow(pg))
    _qa_header(pg, qa)
    subs = pg.memo(("attribution", qa.qa_id), lambda: attribution_subgraphs(pg, qa))
    st.markdown("#### Candidate subgraphs")
    tabs = st.tabs([s.title for s in subs])
    for i, (tab, sub) in enumerate(zip(tabs, subs, strict=True)):
        with tab:
            if sub.note:
                st.caption(sub.note)
            _candidates_table(pg, sub)
            chart = f"cand_graph_{i}"
            fig = pg.memo(("attribution_fig", qa.qa_id, i), lambda sub=sub: subgraph_figure(sub.graph, focus_ids=sub.focus_ids))
            _plot(fig, chart,
                  on_select=lambda chart=chart: _chart_clicked(chart, edge_to_form=True))
    _candidate_picker(pg, subs)
    _auto_panel(pg, qa, args, key)
    workflow.case_labels(state, (graph_name, qa.qa_id), qa.annotation, _table)
    _manual_form(pg, qa, graph_name, args, state)


def _benchmark_labels(ds: Dataset, refs: list[CaseRef]) -> dict[CaseRef, Label]:
    """The graphs' own annotations (``final_error_type``/``final_op_id``) of the given cases."""
    out: dict[CaseRef, Label] = {}
    for graph_name in sorted({g for g, _ in refs}):
        entry = ds.graph(graph_name)
        if entry is None:
            continue
        try:
            pg = _graph(entry.graph_path, entry.mtime_ns, entry.size)
        except GraphFileError:
            continue
        for g, qa_id in refs:
            qa = pg.index.qa(qa_id) if g == graph_name else None
            if qa is not None and qa.annotation and qa.annotation.get("final_error_type"):
                out[(g, qa_id)] = Label(source="benchmark", error_type=qa.annotation["final_error_type"],
                                                 op_id=qa.annotation.get("final_op_id"))
    return out


def _dataset_or_error(args: Any) -> Dataset | None:
    data = workflow.link_folder(args.data)
    try:
        ds = _dataset(data, args.index_dir)
    except DataPathError as exc:
        st.error(str(exc))
        return None
    st.markdown("#### MemTrace · execution graphs")
    _problems(ds)
    if not ds.graphs:
        st.error(f"No graph files found in `{ds.data_path}`: give a smartcomment graph JSON file, a MemTraceBench "
                 "folder (<split>/*.json) or a `python -m membase` output folder (traced_data/<user>/graph_*.json).")
        if ds.skipped:
            st.markdown("Skipped:\n\n" + "\n".join(f"- `{p.graph_name}`: {p.message}" for p in ds.skipped))
        return None
    return ds


# ------------------------------------------------------------------------------------- main
def main() -> None:
    """Render the page."""
    st.set_page_config(page_title="MemTrace · annotation", layout="wide")
    st.markdown(_CSS, unsafe_allow_html=True)
    try:
        args = parse_app_args(sys.argv[1:])
    except AppArgsError as exc:
        st.error(f"Bad command line: {exc}")
        st.code(help_text())
        return
    if args.help:
        st.code(help_text())
        return
    ds = _dataset_or_error(args)
    if ds is None:
        return
    _init_state()
    ss.dataset = ds
    ss.data_path = str(ds.data_path)
    workflow.annotator_box(args.annotator)
    state = workflow.queue_state(ds, args)
    workflow.apply_link(ds, _open_case, state)
    if ss.get("link_problem"):
        st.warning(ss.pop("link_problem"))
    _top_controls(ds)
    view = ss.view
    if view in ("Queue", "Agreement"):
        _data_notes(ds)
        if view == "Queue":
            workflow.queue_view(state, _open_case, _base_url())
        else:
            workflow.agreement_view(ds, state, lambda refs: _benchmark_labels(ds, refs), _table, args.output_path)
        return
    entry = ds.graph(ss.graph)
    try:
        pg = _graph(entry.graph_path, entry.mtime_ns, entry.size)
    except GraphFileError as exc:
        st.error(f"`{entry.graph_name}` could not be opened: {exc}")
        return
    ix = pg.index
    st.caption(f"`{entry.graph_name}` · graph `{ix.graph_id}` · user `{ix.user_id}` · system `{ix.project_id}` · "
               f"{ix.node_count} nodes · {len(ix.edges)} edges · {len(ix.ops)} ops · {len(ix.messages)} messages · "
               f"opened in {pg.load_seconds:.2f} s")
    _sidebar(pg)
    _data_notes(ds)
    if view == "Macro flow":
        _macro_flow(pg)
    elif view == "Operation":
        _operation_view(pg)
    elif view == "Related variables":
        _related_view(pg)
    else:
        _attribution_view(pg, entry.graph_name, args, state)
