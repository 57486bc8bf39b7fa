"""The annotation workflow pages: annotator name, queue, deep links, labels, agreement, export.

Rendered by :mod:`annotation_interface.views`; the logic lives in :mod:`.workqueue`,
:mod:`.labels`, :mod:`.agreement` and :mod:`.export`. The annotator's name and the current case
are mirrored in the URL (``annotator``, ``folder``, ``graph``, ``case``), so a reload — a new
Streamlit session — keeps the name and a copied URL opens the case.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from . import annotations as store
from .agreement import AgreementRow, annotator_agreement, strategy_agreement
from .dataset import Dataset
from .export import export_annotations
from .labels import AttributionOutputError, AutoLabels, CaseRef, Label, human_labels, load_attribution_output
from .workqueue import QueueFilter, QueueItem, deep_link, filter_items, find_item, next_item, queue_items

__all__ = [
    "QueueState",
    "agreement_view",
    "annotator_box",
    "apply_link",
    "case_labels",
    "queue_bar",
    "queue_state",
    "queue_view",
]

ss = st.session_state
ANY = "(any)"
QUEUE_PAGE = 15
"""Cases listed per queue page (each row is a widget: a long page is slow to draw)."""
OpenCase = Callable[[str, str], None]


@st.cache_resource(max_entries=16, show_spinner=False)
def _attribution_output(path: str, mtime_ns: int, cases: tuple[tuple[str, str], ...]) -> AutoLabels:
    del mtime_ns  # cache key: a rewritten output is read again
    return load_attribution_output(path, cases)


@dataclass(frozen=True, kw_only=True)
class QueueState:
    """Everything the queue pages need, read once per rerun."""

    items: list[QueueItem]
    """The whole queue (every wrong question of the folder)."""
    shown: list[QueueItem]
    """The items that pass the current filter."""
    records: list[Any]
    humans: dict[CaseRef, dict[str, Label]]
    outputs: list[AutoLabels]
    problems: list[str]
    annotator: str

    @property
    def done(self) -> set[CaseRef]:
        """Cases the current annotator saved a record for."""
        return {ref for ref, by in self.humans.items() if self.annotator in by}

    def labels_of(self, ref: CaseRef) -> list[Label]:
        """Every known label of a case (human, loaded outputs, replay, evidence_flow of this session)."""
        labels = list(self.humans.get(ref, {}).values())
        for out in self.outputs:
            if ref in out.labels:
                labels.append(out.labels[ref])
            if ref in out.replay:
                labels.append(out.replay[ref])
        ef = (ss.get("auto") or {}).get(f"{ref[0]}::{ref[1]}")
        if ef and ef.get("error_type"):
            labels.append(Label(source="evidence_flow", error_type=ef["error_type"], op_id=ef.get("op_id")))
        return labels


# --------------------------------------------------------------------------------- annotator
def _set_annotator() -> None:
    name = " ".join(str(ss.get("annotator_input") or "").split())
    ss.annotator = name
    if name:
        st.query_params["annotator"] = name
    elif "annotator" in st.query_params:
        del st.query_params["annotator"]


def annotator_box(default: str | None) -> str:
    """The annotator's name (asked once: the sidebar's first field, kept in the session and URL)."""
    if "annotator" not in ss:
        ss.annotator = " ".join((st.query_params.get("annotator") or default or "").split())
    with st.sidebar:
        if ss.annotator:
            st.caption(f"Annotating as **{ss.annotator}**")
            with st.popover("Change name"):
                ss.annotator_input = ss.annotator
                st.text_input("Annotator", key="annotator_input", on_change=_set_annotator)
        else:
            st.text_input("Your name (annotator)", key="annotator_input", on_change=_set_annotator,
                          placeholder="asked once per session; records carry it")
    return str(ss.annotator)


# ------------------------------------------------------------------------------ queue state
def _outputs(paths: list[str], items: list[QueueItem]) -> tuple[list[AutoLabels], list[str]]:
    cases = tuple(i.ref for i in items)
    outs, problems = [], []
    for path in paths:
        try:
            outs.append(_attribution_output(str(Path(path).resolve()), os.stat(path).st_mtime_ns, cases))
        except (OSError, AttributionOutputError) as exc:
            problems.append(f"--attributions: {exc}")
    return outs, problems


def _current_filter() -> QueueFilter:
    def pick(key: str) -> str | None:
        value = ss.get(key)
        return None if value in (None, "", ANY) else str(value)

    return QueueFilter(split=pick("q_split"), predicted_type=pick("q_type"), blamed_op=pick("q_op"),
                       disagreement=bool(ss.get("q_disagree")))


def queue_state(ds: Dataset, args: Any) -> QueueState:
    """Read the saved records and the loaded attribution outputs, and filter the queue."""
    items = queue_items(ds)
    problems: list[str] = []
    try:
        records = store.read_records(args.output_path)
    except store.OutputFileError as exc:
        records, problems = [], [str(exc)]
    outputs, more = _outputs(list(args.attributions or []), items)
    state = QueueState(items=items, shown=items, records=records, humans=human_labels(records), outputs=outputs,
                       problems=problems + more, annotator=str(ss.get("annotator") or ""))
    flt = _current_filter()
    if flt == QueueFilter():
        return state
    shown = filter_items(items, flt, state.labels_of)
    return QueueState(**{**state.__dict__, "shown": shown})


# -------------------------------------------------------------------------------- deep links
def link_folder(data: str) -> str:
    """The data path a deep link asks for (its ``folder`` parameter when that exists), else ``data``."""
    folder = st.query_params.get("folder")
    if folder and folder != data and Path(folder).exists():
        return folder
    return data


def apply_link(ds: Dataset, open_case: OpenCase, state: QueueState) -> None:
    """Once per session: open the case a deep link names, else resume the annotator's queue at
    the first case they have not labelled."""
    if ss.get("link_applied"):
        return
    ss.link_applied = True
    params = st.query_params
    item = find_item(state.items, graph=params.get("graph"), case=params.get("case"))
    if params.get("case") and item is None:
        ss.link_problem = (f"The link names case `{params.get('case')}` of graph `{params.get('graph')}`, which is "
                           f"not a wrong question of `{ds.data_path}`.")
    if item is None and state.annotator and state.done:
        item = next_item(state.items, current=None, done=state.done, skipped=set())
    if item is not None:
        open_case(item.graph_name, item.qa_id)


def set_case_link(ds: Dataset, graph_name: str, qa_id: str) -> None:
    """Mirror the open case in the URL (so that it can be copied and a reload reopens it)."""
    st.query_params.update({"folder": str(ds.data_path), "graph": Path(graph_name).stem, "case": qa_id})


# ------------------------------------------------------------------------------- queue pages
def _mark(state: QueueState, ref: CaseRef) -> str:
    if ref in state.done:
        return "✓"
    if ref in set(ss.get("skipped") or []):
        return "↷"
    return "·"


def _go_next(state: QueueState, current: CaseRef | None, open_case: OpenCase, *, skip: bool) -> None:
    skipped = set(ss.get("skipped") or [])
    if skip and current is not None:
        skipped.add(current)
        ss.skipped = sorted(skipped)
    item = next_item(state.shown, current=current, done=state.done, skipped=skipped)
    if item is None:
        ss.queue_msg = "Every case of the queue is annotated."
        return
    open_case(item.graph_name, item.qa_id)


def queue_bar(state: QueueState, current: CaseRef, open_case: OpenCase, base: str) -> None:
    """Progress, position, next / skip, and the case's deep link (top of the attribution view)."""
    done_shown = sum(1 for i in state.shown if i.ref in state.done)
    refs = [i.ref for i in state.shown]
    where = f"case {refs.index(current) + 1} of {len(refs)}" if current in refs else "not in the queue's filter"
    c1, c2, c3 = st.columns([6, 1.3, 1.3])
    who = state.annotator or "—"
    c1.markdown(f"**{done_shown} of {len(state.shown)} annotated** by {who} · {where} · "
                f"mark {_mark(state, current)}")
    c2.button("Skip ↷", key="q_skip", on_click=_go_next, args=(state, current, open_case), kwargs={"skip": True},
              width="stretch")
    c3.button("Next →", key="q_next", on_click=_go_next, args=(state, current, open_case), kwargs={"skip": False},
              width="stretch", type="primary" if current in state.done else "secondary")
    if ss.get("queue_msg"):
        st.success(ss.pop("queue_msg"))
    item = next((i for i in state.items if i.ref == current), None)
    if item is not None:
        st.caption(f"Link to this case: {deep_link(base, folder=str(ss.get('data_path') or ''), item=item)}")


def _filters(state: QueueState) -> None:
    splits = sorted({i.split for i in state.items if i.split})
    types = sorted({lab.error_type for i in state.items for lab in state.labels_of(i.ref)
                    if lab.error_type and not lab.source.startswith("human:")})
    ops = sorted({lab.op_id for i in state.items for lab in state.labels_of(i.ref)
                  if lab.op_id and not lab.source.startswith("human:")})
    c1, c2, c3, c4 = st.columns([2, 2, 3, 2])

    def first_page() -> None:
        ss.q_page = 1

    c1.selectbox("Split", [ANY, *splits], key="q_split", on_change=first_page)
    c2.selectbox("Predicted error type", [ANY, *types], key="q_type", on_change=first_page)
    c3.selectbox("Blamed op", [ANY, *ops], key="q_op", on_change=first_page)
    c4.checkbox("Labels disagree", key="q_disagree", on_change=first_page)


def queue_view(state: QueueState, open_case: OpenCase, base: str) -> None:
    """The queue page: filters, progress, one line per case with its mark, link and open button."""
    st.subheader("Annotation queue")
    for problem in state.problems:
        st.error(problem)
    _filters(state)
    done_shown = sum(1 for i in state.shown if i.ref in state.done)
    st.markdown(f"**{done_shown} of {len(state.shown)} annotated** by {state.annotator or '— (give your name)'}"
                f" · marks: ✓ annotated by you, ↷ skipped, · open")
    if not state.shown:
        st.info("No case passes the filter." if state.items else "The folder has no wrongly answered question.")
        return
    st.button("Start / resume: open the next open case", key="q_start", type="primary",
              on_click=_go_next, args=(state, None, open_case), kwargs={"skip": False})
    pages = max(1, -(-len(state.shown) // QUEUE_PAGE))
    if not 1 <= int(ss.get("q_page") or 1) <= pages:
        ss.q_page = 1
    if pages > 1:
        st.number_input(f"Page (of {pages}, {QUEUE_PAGE} cases each)", min_value=1, max_value=pages, key="q_page")
    first = (int(ss.get("q_page") or 1) - 1) * QUEUE_PAGE
    for n, item in enumerate(state.shown[first:first + QUEUE_PAGE], first + 1):
        c1, c2 = st.columns([9, 1])
        others = sorted(a or "?" for a in state.humans.get(item.ref, {}) if a != state.annotator)
        by = f" · also by {', '.join(others)}" if others else ""
        link = deep_link(base, folder=str(ss.get("data_path") or ""), item=item)
        c1.markdown(f"{_mark(state, item.ref)} {n}. [`{item.graph_stem}` · `{item.qa_id}`]({link}) — "
                    f"{item.question}{by}")
        c2.button("Open", key=f"q_open_{n}", on_click=open_case, args=item.ref, width="stretch")


# ------------------------------------------------------------------------------- labels
def case_labels(state: QueueState, ref: CaseRef, benchmark: dict[str, Any] | None,
                table: Callable[[list[str], list[list[Any]]], str]) -> None:
    """The human label(s) of the case beside every automatic one."""
    rows = [[lab.source, lab.error_type or "—", f"`{lab.op_id}`" if lab.op_id else "—",
             "unsure" if lab.unsure else "", lab.reason] for lab in state.labels_of(ref)]
    if benchmark and benchmark.get("final_error_type"):
        rows.append(["benchmark annotation", benchmark.get("final_error_type"),
                     f"`{benchmark.get('final_op_id')}`" if benchmark.get("final_op_id") else "—", "", ""])
    st.markdown("#### Labels of this case")
    if rows:
        st.markdown(table(["source", "error type", "op", "", "reason"], rows))
    else:
        st.caption("No label yet: run evidence_flow, load outputs with --attributions, or save yours below.")


# ------------------------------------------------------------------------------- agreement
def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _rows(rows: list[AgreementRow]) -> list[list[Any]]:
    return [[r.left, r.right, r.cases, _pct(r.eta), _pct(r.oia), _pct(r.kappa)] for r in rows]


def agreement_view(ds: Dataset, state: QueueState, benchmark_labels: Callable[[list[CaseRef]], dict[CaseRef, Label]],
                   table: Callable[[list[str], list[list[Any]]], str], output_path: str) -> None:
    """ETA/OIA/kappa of every strategy against the human labels, annotators against each other,
    and the export of the labels as a MemTraceBench folder."""
    st.subheader("Agreement")
    for problem in state.problems:
        st.error(problem)
    labelled = sorted(state.humans)
    st.caption(f"{len(labelled)} case(s) with a human label in `{output_path}`. The human label of a case is the "
               "most frequent sure label of its annotators (a tie: the latest); ETA/OIA are exact matches of the "
               "error type / op id, kappa is Cohen's on the error types.")
    strategies: dict[str, dict[CaseRef, Label]] = {out.name: out.labels for out in state.outputs}
    for out in state.outputs:
        if out.replay:
            strategies[f"{out.name} (replay)"] = out.replay
    ef = {ref: lab for ref in labelled for lab in state.labels_of(ref) if lab.source == "evidence_flow"}
    if ef:
        strategies["evidence_flow (this session)"] = ef
    bench = benchmark_labels(labelled) if labelled and st.checkbox(
        "Compare with the benchmark's own annotations (opens the labelled graphs)", key="ag_bench") else {}
    if bench:
        strategies["benchmark annotation"] = bench
    header = ["labels", "against", "cases", "ETA", "OIA", "kappa"]
    st.markdown("##### Strategies against the human labels")
    st.markdown(table(header, _rows(strategy_agreement(state.humans, strategies))) if strategies else
                "No automatic labels loaded: start the app with `--attributions <run_error_attribution output>…`.")
    pairs = annotator_agreement(state.humans)
    st.markdown("##### Between annotators")
    st.markdown(table(header, _rows(pairs)) if pairs else "One annotator so far.")
    _export_panel(ds, state)


def _export_panel(ds: Dataset, state: QueueState) -> None:
    st.markdown("##### Export the labels (MemTraceBench layout)")
    c1, c2 = st.columns([4, 1])
    c1.text_input("Folder to write", key="export_dir", placeholder="e.g. runs/human_labels")
    c2.checkbox("include unsure", key="export_unsure")
    if st.button("Export", key="export_go", disabled=not (ss.get("export_dir") or "").strip() or not state.records):
        try:
            summary = export_annotations(ds, state.records, ss.export_dir.strip(),
                                         include_unsure=bool(ss.get("export_unsure")))
        except (OSError, ValueError) as exc:
            st.error(f"Not exported: {exc}")
            return
        splits = ", ".join(f"{k}: {v}" for k, v in sorted(summary.by_split.items())) or "nothing"
        st.success(f"Exported {summary.cases} case(s) in {len(summary.files)} file(s) to `{summary.out_dir}` "
                   f"({splits}).")
        for split in sorted(summary.by_split):
            st.code(f"python run_error_attribution.py {summary.out_dir} {split} --exploration-strategy "
                    "evidence_flow --output-path scores.json", language="bash")
        if summary.left_out:
            st.caption("Left out: " + "; ".join(summary.left_out))
