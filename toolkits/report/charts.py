"""Plotly charts of the statistical report, and their PNG copies.

:func:`build_charts` turns the statistics (and the per-case facts, for distributions) into
plotly figures; the HTML page embeds them with plotly.js inlined once, so it works offline.
:func:`export_pngs` writes PNG copies with kaleido, plotly's static exporter, which drives a
Chrome or Chromium found on the machine (Debian: ``apt-get install chromium``). When kaleido or a
browser is missing the PNGs are skipped with a one-line notice; the HTML page does not need them.

plotly itself is optional (the ``report`` extra): without it :func:`build_charts` returns no
charts and a notice, and the report keeps its tables.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .funnel import FUNNEL_STAGES
from .stats import CaseFacts

__all__ = ["Chart", "build_charts", "export_pngs", "plotly_available", "plotly_js"]

ERROR_TYPE_COLORS = {
    "ExtractionError": "#4C78A8",
    "UpdateError": "#F58518",
    "DeletionError": "#E45756",
    "RetrievalError": "#72B7B2",
    "ResponseError": "#54A24B",
    "LLMAsAJudgeError": "#B279A2",
    "AnnotationError": "#9D755D",
}
"""The one colour of each error type, in every chart (non-memory verdicts included)."""
_OTHER_COLOR = "#9D9D9D"
# colours for series that are not error types (memory systems, metrics): none is an error type's
SERIES_COLORS = ("#1B1B3A", "#8C8C8C", "#C9A227", "#17A398", "#6A4C93", "#D1495B")
# a decision is drawn in the colour of the error type it reads as
_DECISION_TYPES = {"ADD": "ExtractionError", "NONE": "ExtractionError", "UPDATE": "UpdateError", "DELETE": "DeletionError"}
PNG_SIZE = (900, 520)
PNG_TIMEOUT_S = 180.0
INSTALL_HINT = "pip install -e '.[report]'"


@dataclass(frozen=True, kw_only=True)
class Chart:
    """One figure of the report."""

    slug: str
    """File stem and HTML anchor, e.g. ``error_types_by_memory_system``."""
    title: str
    figure: Any
    """The ``plotly.graph_objects.Figure``."""
    caption: str
    """One sentence saying how to read the chart."""


def plotly_available() -> bool:
    """True when plotly can be imported."""
    try:
        import plotly  # noqa: F401
    except ImportError:
        return False
    return True


def plotly_js() -> str:
    """The plotly.js bundle shipped inside the plotly package (inlined into the HTML page)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _layout(fig: Any, title: str, **extra: Any) -> Any:
    settings: dict[str, Any] = {
        "title": {"text": title, "x": 0.01},
        "template": "plotly_white",
        "margin": {"l": 60, "r": 20, "t": 60, "b": 100},
        "legend": {"orientation": "h", "y": -0.22, "yanchor": "top", "traceorder": "normal"},
    }
    fig.update_layout(**{**settings, **extra})
    return fig


def _count_axis(largest: int) -> dict[str, Any]:
    """An axis of whole case counts (no 0.5 ticks on small numbers)."""
    axis: dict[str, Any] = {"rangemode": "tozero", "tickformat": "d"}
    if largest <= 10:
        axis["dtick"] = 1
    return axis


def _ordered_types(*maps: dict[str, Any]) -> list[str]:
    seen: set[str] = set()
    for m in maps:
        seen.update(m)
    return [t for t in ERROR_TYPE_COLORS if t in seen] + sorted(seen - set(ERROR_TYPE_COLORS))


def _type_distribution_chart(block: dict[str, Any], *, slug: str, title: str, scope: str) -> Chart | None:
    """One bar per error type (used where a grouping has one group: one stacked bar says less)."""
    import plotly.graph_objects as go

    counts = block["counts"]
    if not counts:
        return None
    types = list(counts)
    fig = go.Figure(go.Bar(
        x=types, y=[counts[t] for t in types], marker_color=[ERROR_TYPE_COLORS.get(t, _OTHER_COLOR) for t in types],
        text=[f"{counts[t]} ({block['shares'][t]:.0%})" for t in types], textposition="outside",
        hovertemplate="%{x}: %{y} case(s)<extra></extra>", showlegend=False,
    ))
    _layout(fig, title, xaxis_title="error type", yaxis_title="cases with a verdict",
            yaxis=_count_axis(max(counts.values())))
    return Chart(slug=slug, title=title, figure=fig, caption=f"Cases of {scope} per error type (count and share).")


def _error_types_chart(groups: dict[str, Any], *, slug: str, title: str, axis: str) -> Chart | None:
    import plotly.graph_objects as go

    if len(groups) < 2:  # one group: a single stacked bar would repeat the overall split
        return None
    names = list(groups)
    types = _ordered_types(*(g["counts"] for g in groups.values()))
    fig = go.Figure()
    for t in types:
        counts = [groups[n]["counts"].get(t, 0) for n in names]
        shares = [groups[n]["shares"].get(t, 0.0) for n in names]
        fig.add_bar(
            name=t, x=names, y=counts, marker_color=ERROR_TYPE_COLORS.get(t, _OTHER_COLOR),
            text=[f"{c} ({s:.0%})" if c else "" for c, s in zip(counts, shares, strict=True)],
            textposition="inside",
            hovertemplate=f"{t}<br>%{{x}}: %{{y}} case(s)<extra></extra>",
        )
    _layout(fig, title, barmode="stack", xaxis_title=axis, yaxis_title="cases with a verdict",
            yaxis=_count_axis(max((g["verdicts"] for g in groups.values()), default=0)))
    return Chart(slug=slug, title=title, figure=fig,
                 caption=f"Cases per {axis}, split by predicted error type (count and share of the {axis}).")


def _blamed_chart(rows: list[dict[str, Any]], *, key: str, slug: str, title: str, unresolved: int) -> Chart | None:
    import plotly.graph_objects as go

    if len(rows) < 2:  # one operation: a single bar says what the table says
        return None
    labels = [r[key] for r in rows][::-1]  # largest at the top of a horizontal bar chart
    types = _ordered_types(*(r["error_types"] for r in rows))
    fig = go.Figure()
    for t in types:
        fig.add_bar(
            name=t, orientation="h", y=labels, x=[r["error_types"].get(t, 0) for r in rows][::-1],
            marker_color=ERROR_TYPE_COLORS.get(t, _OTHER_COLOR),
            hovertemplate=f"{t}<br>%{{y}}: %{{x}} case(s)<extra></extra>",
        )
    height = max(340, 160 + 28 * len(rows))
    _layout(fig, title, barmode="stack", xaxis_title="attributed cases", height=height,
            xaxis=_count_axis(max(r["count"] for r in rows)), margin={"l": 280, "r": 20, "t": 60, "b": 100})
    note = f" {unresolved} case(s) name an operation that is not in their graph." if unresolved else ""
    return Chart(slug=slug, title=title, figure=fig,
                 caption=f"How often each {key.replace('_', ' ')} is the attributed faulty operation, by error type.{note}")


_FUNNEL_TICKS = {  # short two-line ticks: five groups of four bars fit 900 px
    "extraction": "captured<br>(extraction)",
    "update/deletion": "kept through<br>updates/deletions",
    "store": "in the store at<br>question time",
    "retrieval": "in the answering<br>context (retrieval)",
}


def _funnel_chart(funnel: dict[str, Any]) -> Chart | None:
    """Share of each memory system's cases still carrying the information after each stage:
    grouped bars, one colour per system, so four systems stay readable side by side."""
    import plotly.graph_objects as go

    overall = funnel["overall"]
    if not overall["cases"]:
        return None
    systems = {name: f for name, f in funnel["by_memory_system"].items() if f["cases"]}
    series = systems if len(systems) > 1 else {"all cases": overall}
    # a stage where no series lost a case would repeat the bar before it: left out
    stages = [s for s in FUNNEL_STAGES[:-1] if any(f["lost_at"][s] for f in series.values())]
    if not stages:  # everything was lost at the answer: one bar, the table says it
        return None
    labels = ["failed cases", *(_FUNNEL_TICKS[s] for s in stages)]
    fig = go.Figure()
    for i, (name, f) in enumerate(series.items()):
        values = [f["cases"], *(f["carried_after"][s] for s in stages)]
        shares = [v / f["cases"] for v in values]
        fig.add_bar(name=f"{name} ({f['cases']})", x=labels, y=shares, marker_color=SERIES_COLORS[i % len(SERIES_COLORS)],
                    text=[f"{v}" for v in values], textposition="outside",
                    hovertemplate=f"{name}<br>%{{x}}: %{{text}} case(s), %{{y:.0%}}<extra></extra>")
    title = "Where the critical information was lost"
    _layout(fig, title, barmode="group", yaxis={"range": [0, 1.12], "tickformat": ".0%", "title": "share of the failed cases"},
            margin={"l": 70, "r": 20, "t": 60, "b": 80}, legend={"orientation": "h", "y": 1.02, "yanchor": "bottom",
                                                                   "x": 1, "xanchor": "right"})
    fig.update_xaxes(tickangle=0, automargin=True)
    checked = overall["trail"]
    how = (f"every case is placed by its verdict's error type; {checked['checked']} trail(s) checked, "
           f"{checked['contradicts']} contradict their verdict (listed below)")
    return Chart(slug="loss_funnel", title=title, figure=fig,
                 caption=f"Share (bar) and number (label) of each memory system's failed cases that still carried the "
                         f"information needed for the answer after each pipeline stage; the drop from one bar to the "
                         f"next is the loss at that stage, the last bar the cases lost at the answer; stages where no "
                         f"case was lost are left out ({how}).")


def _decision_chart(rows: list[dict[str, Any]]) -> Chart | None:
    """The ADD/UPDATE/DELETE/NONE split of the blamed memory update decisions, by error type."""
    import plotly.graph_objects as go

    row = next((r for r in rows if r.get("decision_events")), None)
    if row is None or sum(1 for n in row["decision_events"].values() if n) < 2:
        return None
    events = [e for e, n in row["decision_events"].items() if n]
    fig = go.Figure(go.Bar(x=events, y=[row["decision_events"][e] for e in events],
                           marker_color=[ERROR_TYPE_COLORS[_DECISION_TYPES[e]] for e in events], showlegend=False,
                           text=[str(row["decision_events"][e]) for e in events], textposition="outside"))
    title = f"Blamed decisions of {row['op_name']}"
    _layout(fig, title, xaxis_title="decision", yaxis_title="blamed cases",
            yaxis=_count_axis(max(row["decision_events"].values())))
    return Chart(slug="decision_events", title=title, figure=fig,
                 caption="Which memory update decision lost the information, in the colour of the error type it "
                         "reads as: a new fact added wrongly (ADD) or not kept (NONE) is an extraction error, a rewrite "
                         "(UPDATE) an update error, a removal (DELETE) a deletion error.")


def _recovery_chart(replay: dict[str, Any] | None) -> Chart | None:
    """Rescued and not rescued replays per blamed operation."""
    import plotly.graph_objects as go

    if not replay or len(replay["by_op"]) < 1:
        return None
    rows = replay["by_op"][::-1]
    names = [r["op_name"] for r in rows]
    fig = go.Figure()
    fig.add_bar(name="rescued", orientation="h", y=names, x=[r["rescued"] for r in rows], marker_color=SERIES_COLORS[3],
                text=[f"{r['rescued']} of {r['replayed']} ({r['recovery_gain']:.0%})" for r in rows], textposition="inside")
    fig.add_bar(name="not rescued", orientation="h", y=names, x=[r["replayed"] - r["rescued"] for r in rows],
                marker_color=SERIES_COLORS[1])
    title = "Recovery gain: failures rescued by repairing the blamed operation"
    _layout(fig, title, barmode="stack", xaxis_title="replayed failures", height=max(320, 160 + 32 * len(rows)),
            xaxis=_count_axis(max(r["replayed"] for r in rows)), margin={"l": 280, "r": 20, "t": 60, "b": 100})
    return Chart(slug="recovery_gain", title=title, figure=fig,
                 caption="Each failure was replayed with its blamed operation repaired and the downstream operations "
                         "run again; rescued = the replayed answer was judged correct.")


def _accuracy_chart(gold: dict[str, Any]) -> Chart | None:
    import plotly.graph_objects as go

    by_type = gold["by_gold_error_type"]
    if not by_type:
        return None
    types = list(by_type)
    fig = go.Figure()
    for key, label, color in (("error_type_accuracy", "error type", SERIES_COLORS[0]),
                              ("op_accuracy", "operation", SERIES_COLORS[1]), ("joint_accuracy", "both", SERIES_COLORS[2])):
        values = [by_type[t][key] for t in types]
        fig.add_bar(name=label, x=types, y=values, marker_color=color, text=[f"{v:.0%}" for v in values],
                    textposition="outside")
    title = "Attribution accuracy per gold error type"
    _layout(fig, title, barmode="group", yaxis={"range": [0, 1.1], "tickformat": ".0%"}, xaxis_title="gold error type")
    return Chart(slug="accuracy_by_error_type", title=title, figure=fig,
                 caption="Share of labelled cases whose predicted error type, operation, or both match the gold labels.")


def _confusion_chart(gold: dict[str, Any]) -> Chart | None:
    import plotly.graph_objects as go

    matrix = gold["confusion_matrix"]
    rows = [g for g in matrix if sum(matrix[g].values())]
    if not rows:
        return None
    columns = [c for c in next(iter(matrix.values())) if any(matrix[g][c] for g in rows)]
    z = [[matrix[g][c] for c in columns] for g in rows]
    fig = go.Figure(go.Heatmap(z=z, x=columns, y=rows, colorscale="Blues", text=z, texttemplate="%{text}",
                               hovertemplate="gold %{y}<br>predicted %{x}: %{z}<extra></extra>"))
    title = "Confusion matrix (gold × predicted error type)"
    _layout(fig, title, xaxis_title="predicted", yaxis_title="gold", yaxis={"autorange": "reversed"})
    return Chart(slug="confusion_matrix", title=title, figure=fig,
                 caption="Rows are gold error types, columns predicted ones (FAILED: no attribution).")


def _cost_chart(facts: Sequence[CaseFacts]) -> Chart | None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    executed = [f for f in facts if not f.cached and f.seconds is not None]
    if not executed:
        return None
    systems = sorted({f.memory_system for f in executed})
    has_tokens = any((f.input_tokens or 0) + (f.output_tokens or 0) for f in executed)
    fig = make_subplots(rows=1, cols=2 if has_tokens else 1,
                        subplot_titles=["seconds per case", "tokens per case"] if has_tokens else ["seconds per case"])
    for system in systems:
        members = [f for f in executed if f.memory_system == system]
        fig.add_trace(go.Box(name=system, y=[f.seconds for f in members], boxpoints="all", jitter=0.3, pointpos=0,
                             showlegend=False, text=[f.query_id for f in members]), row=1, col=1)
        if has_tokens:
            fig.add_trace(go.Box(name=system, y=[(f.input_tokens or 0) + (f.output_tokens or 0) for f in members],
                                 boxpoints="all", jitter=0.3, pointpos=0, showlegend=False,
                                 text=[f.query_id for f in members]),
                          row=1, col=2)
    title = "Attribution cost per case"
    _layout(fig, title)
    fig.update_yaxes(rangemode="tozero")
    tokens_note = "" if has_tokens else " The attribution used no model tokens."
    return Chart(slug="cost_per_case", title=title, figure=fig,
                 caption=f"Time (and model tokens, input plus output) per attributed case, per memory system; cached cases excluded.{tokens_note}")


def build_charts(statistics: dict[str, Any], facts: Sequence[CaseFacts]) -> tuple[list[Chart], str | None]:
    """All charts that the statistics support.

    Returns:
        ``(charts, notice)``: ``notice`` is a one-line reason when charts are skipped (no plotly).
    """
    if not plotly_available():
        return [], f"charts skipped: plotly is not installed ({INSTALL_HINT})"
    error_types = statistics["error_types"]
    blamed = statistics["blamed_operations"]
    by_system = _error_types_chart(error_types["by_memory_system"], slug="error_types_by_memory_system",
                                   title="Error types per memory system", axis="memory system")
    if by_system is None:
        by_system = _type_distribution_chart(error_types["overall"], slug="error_types_by_memory_system",
                                             title="Error types", scope="the memory system")
    candidates = [
        by_system,
        _error_types_chart(error_types["by_dataset_source"], slug="error_types_by_dataset_source",
                           title="Error types per dataset source", axis="dataset source"),
        _funnel_chart(statistics["loss_funnel"]),
        _blamed_chart(blamed["by_name"], key="op_name", slug="blamed_operations",
                      title="Most-blamed operations", unresolved=blamed["unresolved"]),
        _blamed_chart(blamed["by_category"], key="category", slug="blamed_categories",
                      title="Most-blamed operation categories", unresolved=0),
        _decision_chart(blamed["by_name"]),
        _recovery_chart(statistics.get("replay")),
    ]
    if statistics.get("gold"):
        candidates += [_accuracy_chart(statistics["gold"]), _confusion_chart(statistics["gold"])]
    candidates.append(_cost_chart(facts))
    return [c for c in candidates if c is not None], None


def export_pngs(charts: Sequence[Chart], folder: str | Path, *, timeout_s: float = PNG_TIMEOUT_S) -> tuple[dict[str, str], str | None]:
    """Write ``<folder>/<slug>.png`` for every chart with kaleido.

    Returns:
        ``({slug: path}, notice)``; on any failure no PNG is kept and ``notice`` says why in one line.
    """
    if not charts:
        return {}, None
    try:
        import kaleido  # noqa: F401
        import plotly.io as pio
    except ImportError:
        return {}, f"PNG copies skipped: kaleido is not installed ({INSTALL_HINT}; it also needs Chrome or Chromium)"
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    paths = {c.slug: str(target / f"{c.slug}.png") for c in charts}
    error: list[BaseException] = []

    def write() -> None:
        try:
            width, height = PNG_SIZE
            pio.write_images([c.figure for c in charts], [paths[c.slug] for c in charts], format="png",
                             width=[width] * len(charts), height=[c.figure.layout.height or height for c in charts])
        except BaseException as exc:  # noqa: BLE001 - reported as the notice
            error.append(exc)

    worker = threading.Thread(target=write, name="memtrace-png-export", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        reason = f"kaleido did not finish within {timeout_s:g} s"
    elif error:
        reason = " ".join(f"{type(error[0]).__name__}: {error[0]}".split())[:300]
    else:
        missing = [p for p in paths.values() if not Path(p).is_file()]
        if not missing:
            return paths, None
        reason = f"kaleido wrote no file for {len(missing)} chart(s)"
    for p in paths.values():
        Path(p).unlink(missing_ok=True)
    return {}, f"PNG copies skipped: {reason} (kaleido needs Chrome or Chromium, e.g. apt-get install chromium)"
