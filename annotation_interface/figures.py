"""Plotly figures of the viewer: the message timeline and operation subgraphs.

Both figures carry ``customdata`` on their clickable markers — ``["node", full_node_id]`` and
``["edge", id, …]`` — which the app reads back from Streamlit's selection events
(:func:`clicked`).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from .parser import MessageRecord

__all__ = [
    "CATEGORY_COLORS",
    "clicked",
    "layered_layout",
    "subgraph_figure",
    "timeline_figure",
    "timeline_positions",
]

CATEGORY_COLORS = {
    "message": "#4c78a8",
    "message & query": "#e45756",
    "memory_entry": "#54a24b",
    "llm_response": "#f58518",
    "prompt": "#b279a2",
    "memory_context": "#72b7b2",
    "golden_answers": "#eeca3b",
    "marker": "#9d755d",
    "variable": "#bab0ac",
}
_PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#eeca3b",
            "#bab0ac")
_STATE_LINE = {"present": "#2ca02c", "absent": "#d62728", "current": "#111111"}
_MAX_ARROWS = 150
_HASHED_NAME = re.compile(r"[A-Za-z_]+:[0-9a-f]{40}")


def _hover(text: str, *, width: int = 80, limit: int = 600) -> str:
    """Plain text as plotly hover HTML: escaped, cut, wrapped."""
    text = text if len(text) <= limit else text[:limit] + " …"
    lines: list[str] = []
    for raw in text.splitlines() or [""]:
        while len(raw) > width:
            cut = raw.rfind(" ", 0, width)
            cut = cut if cut > width // 2 else width
            lines.append(raw[:cut])
            raw = raw[cut:].lstrip()
        lines.append(raw)
    return "<br>".join(html.escape(line) for line in lines[:14])


def clicked(event: Any) -> tuple[str, ...] | None:
    """The ``customdata`` of the first selected point of a Streamlit plotly selection event."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError, AttributeError):
        return None
    for point in points or []:
        data = point.get("customdata") if isinstance(point, Mapping) else None
        if isinstance(data, list | tuple) and data and all(isinstance(x, str) for x in data):
            return tuple(data)
    return None


# ----------------------------------------------------------------------------------- timeline
def timeline_positions(count: int, per_row: int) -> list[tuple[float, float]]:
    """Boustrophedon positions: row ``r`` runs left to right when even, right to left when odd."""
    out = []
    for k in range(count):
        row, col = divmod(k, per_row)
        x = col if row % 2 == 0 else per_row - 1 - col
        out.append((float(x), float(-row)))
    return out


def timeline_figure(
    messages: Sequence[MessageRecord],
    *,
    per_row: int = 8,
    evidence_ids: Collection[str] = (),
    selected_id: str | None = None,
    title: str = "",
) -> go.Figure:
    """The "Macro Flow": messages in execution order, snaking across rows.

    Nodes are messages (colour = speaker); the thick edge from a message to the next one stands
    for the processing of that message — its handle (a diamond) is clickable. Evidence messages
    of the chosen question are starred, the chosen message is ringed.
    """
    per_row = max(1, per_row)
    pos = timeline_positions(len(messages), per_row)
    traces: list[Any] = []
    same_x: list[float | None] = []
    same_y: list[float | None] = []
    cross_x: list[float | None] = []
    cross_y: list[float | None] = []
    handles_x, handles_y, handles_data, handles_text = [], [], [], []
    for k in range(len(messages) - 1):
        (x0, y0), (x1, y1) = pos[k], pos[k + 1]
        same = messages[k].session_id == messages[k + 1].session_id
        xs, ys = (same_x, same_y) if same else (cross_x, cross_y)
        xs.extend((x0, x1, None))
        ys.extend((y0, y1, None))
    for k, msg in enumerate(messages):
        x0, y0 = pos[k]
        x1, y1 = pos[k + 1] if k + 1 < len(messages) else (x0 + (0.5 if (-y0) % 2 == 0 else -0.5), y0)
        handles_x.append((x0 + x1) / 2)
        handles_y.append((y0 + y1) / 2)
        handles_data.append(["edge", msg.full_node_id])
        handles_text.append(f"processing of {html.escape(msg.message_id)}<br>click: the ops that processed it")
    if same_x:
        traces.append(go.Scatter(x=same_x, y=same_y, mode="lines", line={"width": 7, "color": "#c7c7c7"},
                                 hoverinfo="skip", name="message flow"))
    if cross_x:
        traces.append(go.Scatter(x=cross_x, y=cross_y, mode="lines", line={"width": 4, "color": "#c7c7c7", "dash": "dot"},
                                 hoverinfo="skip", name="next session"))
    traces.append(go.Scatter(x=handles_x, y=handles_y, mode="markers", name="processing (click)",
                             marker={"symbol": "diamond", "size": 10, "color": "#7f7f7f"},
                             customdata=handles_data, hovertext=handles_text, hoverinfo="text",
                             unselected={"marker": {"opacity": 1}}))
    speakers = list(dict.fromkeys(m.speaker for m in messages))
    for i, speaker in enumerate(speakers):
        idx = [k for k, m in enumerate(messages) if m.speaker == speaker]
        traces.append(go.Scatter(
            x=[pos[k][0] for k in idx], y=[pos[k][1] for k in idx], mode="markers+text", name=speaker,
            text=[messages[k].message_id for k in idx], textposition="top center", textfont={"size": 10},
            marker={"size": 18, "color": _PALETTE[i % len(_PALETTE)], "line": {"width": 1, "color": "white"}},
            customdata=[["node", messages[k].full_node_id] for k in idx],
            hovertext=[_hover(f"{messages[k].message_id} · {messages[k].speaker} ({messages[k].role}) "
                              f"{messages[k].timestamp}\n{messages[k].text}") for k in idx],
            hoverinfo="text", unselected={"marker": {"opacity": 1}},
        ))
    ev = [k for k, m in enumerate(messages) if m.full_node_id in evidence_ids]
    if ev:
        traces.append(go.Scatter(
            x=[pos[k][0] for k in ev], y=[pos[k][1] for k in ev], mode="markers", name="evidence",
            marker={"symbol": "star", "size": 24, "color": "#ffd700", "line": {"width": 2, "color": "#d62728"}},
            customdata=[["node", messages[k].full_node_id] for k in ev],
            hovertext=[f"evidence {html.escape(messages[k].message_id)}" for k in ev], hoverinfo="text",
            unselected={"marker": {"opacity": 1}},
        ))
    sel = [k for k, m in enumerate(messages) if m.full_node_id == selected_id]
    if sel:
        traces.append(go.Scatter(
            x=[pos[k][0] for k in sel], y=[pos[k][1] for k in sel], mode="markers", name="selected",
            marker={"symbol": "circle-open", "size": 32, "color": "#111111", "line": {"width": 3}},
            hoverinfo="skip",
        ))
    rows = (len(messages) + per_row - 1) // per_row
    fig = go.Figure(data=traces)
    fig.update_layout(
        title={"text": html.escape(title), "x": 0} if title else None,
        height=max(220, 90 * rows + 110), margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        xaxis={"visible": False, "range": [-0.6, per_row - 0.4]},
        yaxis={"visible": False, "range": [-(rows - 1) - 0.6, 0.6]},
        # below the chart: the toolbar (top right, on hover) would cover a legend on top
        legend={"orientation": "h", "y": -0.02, "yanchor": "top", "x": 0},
        clickmode="event+select", plot_bgcolor="white", hovermode="closest",
    )
    return fig


# -------------------------------------------------------------------------------- subgraphs
def _acyclic_successors(ids: list[str], succ: dict[str, list[str]]) -> dict[str, list[str]]:
    """``succ`` less the back edges a depth-first walk from each node (in input order) finds."""
    on_stack, done = 1, 2
    state: dict[str, int] = {}
    dag: dict[str, list[str]] = {n: [] for n in ids}
    for root in ids:
        if root in state:
            continue
        state[root] = on_stack
        stack = [(root, iter(succ[root]))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = done
                stack.pop()
                continue
            seen = state.get(child)
            if seen == on_stack:
                continue  # a back edge closes a cycle
            dag[node].append(child)
            if seen is None:
                state[child] = on_stack
                stack.append((child, iter(succ[child])))
    return dag


def _longest_path_layers(ids: list[str], dag: dict[str, list[str]]) -> dict[str, int]:
    indegree = dict.fromkeys(ids, 0)
    for n in ids:
        for t in dag[n]:
            indegree[t] += 1
    layer = dict.fromkeys(ids, 0)
    queue = [n for n in ids if indegree[n] == 0]
    for n in queue:  # Kahn's order: every predecessor is placed before its successors
        for t in dag[n]:
            layer[t] = max(layer[t], layer[n] + 1)
            indegree[t] -= 1
            if indegree[t] == 0:
                queue.append(t)
    return layer


def layered_layout(node_ids: Sequence[str], edges: Iterable[tuple[str, str]]) -> dict[str, tuple[float, float]]:
    """Left-to-right layers: a node sits one layer right of its furthest predecessor. Back edges
    found by a depth-first walk (cycles, self-loops) are ignored for the layering. Within a layer
    nodes keep their input order."""
    ids = list(dict.fromkeys(node_ids))
    succ: dict[str, list[str]] = {n: [] for n in ids}
    for s, t in edges:
        if s != t and s in succ and t in succ:
            succ[s].append(t)
    layer = _longest_path_layers(ids, _acyclic_successors(ids, succ))
    layers: dict[int, list[str]] = {}
    for n in ids:
        layers.setdefault(layer[n], []).append(n)
    pos: dict[str, tuple[float, float]] = {}
    for x, members in layers.items():
        count = len(members)
        for i, n in enumerate(members):
            pos[n] = (float(x), (count - 1) / 2.0 - i)
    return pos


def _short(node: Any) -> str:
    name = str(node.name)
    if node.class_name:
        # content-identified variables are named "<type>:<sha1>": the class says more
        label = node.class_name if _HASHED_NAME.fullmatch(name) else f"{node.class_name}:{name}"
    else:
        label = name
    label = label if len(label) <= 26 else label[:24] + "…"
    return f"{label}@{node.version}"


def _value_preview(raw: Any) -> str:
    text = str(raw)
    try:
        parsed = json.loads(text)
    except (ValueError, TypeError):
        return text
    if isinstance(parsed, dict):
        for key in ("content", "memory", "text"):
            if isinstance(parsed.get(key), str):
                return parsed[key]
    return text


_RING_MEANING = {"present": "ring: the information is still there", "absent": "ring: the information is lost here",
                 "current": "ring: the trail step shown"}


def _ring_legend(states: set[str]) -> list[Any]:
    """Legend-only entries that say what the trail's node rings mean."""
    return [go.Scatter(x=[None], y=[None], mode="markers", name=_RING_MEANING[state], hoverinfo="skip",
                       marker={"size": 14, "color": "white", "line": {"color": _STATE_LINE[state], "width": 4}})
            for state in ("present", "absent", "current") if state in states]


def subgraph_figure(
    rg: Any,
    *,
    focus_ids: Collection[str] = (),
    highlight_ops: Collection[str] = (),
    node_states: Mapping[str, str] | None = None,
    op_names: Mapping[str, str | None] | None = None,
    max_nodes: int = 1500,
    max_labels: int = 30,
) -> go.Figure | None:
    """An op subgraph (a smartcomment ``RuntimeGraph``) as a layered plotly graph.

    Args:
        rg: The subgraph.
        focus_ids: Nodes drawn larger with a dark ring.
        highlight_ops: Ops whose edges are drawn thick (the others fade).
        node_states: ``{node id: "present" | "absent" | "current"}`` rings (attribution trails).
        op_names: Op id -> name for the legend.
        max_nodes: Above this, no figure (None): the XML view still works.
        max_labels: Above this many nodes, only focused and ringed nodes are labelled.

    Returns:
        The figure, or None for an empty or too large subgraph.
    """
    nodes = list(rg.nodes)
    if not nodes or len(nodes) > max_nodes:
        return None
    states = dict(node_states or {})
    ids = [n.full_node_id for n in nodes]
    edges = list(rg.edges)
    pos = layered_layout(ids, ((e.source_full_node_id, e.target_full_node_id) for e in edges))
    names = dict(op_names or {})
    for op in rg.ops:
        names.setdefault(op.op_id, op.op_name)
    traces: list[Any] = []
    op_order = list(dict.fromkeys(e.op_id for e in edges))
    hi = set(highlight_ops)
    mid_x, mid_y, mid_data, mid_text = [], [], [], []
    arrows = []
    for i, op_id in enumerate(op_order):
        xs: list[float | None] = []
        ys: list[float | None] = []
        color = _PALETTE[i % len(_PALETTE)]
        for e in edges:
            if e.op_id != op_id:
                continue
            (x0, y0), (x1, y1) = pos[e.source_full_node_id], pos[e.target_full_node_id]
            if e.source_full_node_id == e.target_full_node_id:
                x1, y1 = x0 + 0.25, y0 + 0.25  # self-loop: a short stub
            xs.extend((x0, x1, None))
            ys.extend((y0, y1, None))
            mid_x.append((x0 + x1) / 2)
            mid_y.append((y0 + y1) / 2)
            mid_data.append(["edge", e.edge_id, op_id])
            mid_text.append(_hover(f"edge {e.edge_id}\nop {names.get(op_id) or '?'} · {op_id}\n"
                                   f"{e.source_full_node_id} → {e.target_full_node_id}"))
            if len(edges) <= _MAX_ARROWS:
                arrows.append({"x": x1, "y": y1, "ax": x0, "ay": y0, "xref": "x", "yref": "y", "axref": "x",
                               "ayref": "y", "showarrow": True, "arrowhead": 2, "arrowsize": 1.2, "arrowwidth": 1.2,
                               "arrowcolor": color, "standoff": 9, "opacity": 1.0 if not hi or op_id in hi else 0.3})
        width = 4.5 if op_id in hi else 1.8
        traces.append(go.Scatter(
            x=xs, y=ys, mode="lines", line={"width": width, "color": color},
            opacity=1.0 if not hi or op_id in hi else 0.3, hoverinfo="skip",
            name=f"{names.get(op_id) or 'op'} · {op_id[:11]}", legendgroup=op_id,
        ))
    if mid_x:
        traces.append(go.Scatter(x=mid_x, y=mid_y, mode="markers", marker={"size": 7, "color": "#555555",
                                 "symbol": "square"}, customdata=mid_data, hovertext=mid_text, hoverinfo="text",
                                 name="edges (click)", showlegend=False, unselected={"marker": {"opacity": 1}}))
    by_category: dict[str, list[Any]] = {}
    for n in nodes:
        by_category.setdefault(n.category or "variable", []).append(n)
    show_all_labels = len(nodes) <= max_labels
    focus = set(focus_ids)
    for j, (category, members) in enumerate(by_category.items()):
        color = CATEGORY_COLORS.get(category, _PALETTE[(j + 3) % len(_PALETTE)])
        sizes, line_colors, line_widths = [], [], []
        for n in members:
            state = states.get(n.full_node_id)
            big = n.full_node_id in focus or state == "current"
            sizes.append(26 if state == "current" else 22 if big else 15)
            line_colors.append(_STATE_LINE.get(state or "", "#111111" if big else "white"))
            line_widths.append(4 if state else 3 if big else 1)
        traces.append(go.Scatter(
            x=[pos[n.full_node_id][0] for n in members], y=[pos[n.full_node_id][1] for n in members],
            mode="markers+text", name=category,
            text=[_short(n) if show_all_labels or n.full_node_id in focus or n.full_node_id in states else ""
                  for n in members],
            textposition="top right",
            textfont={"size": 9},
            marker={"size": sizes, "color": color, "line": {"color": line_colors, "width": line_widths}},
            customdata=[["node", n.full_node_id] for n in members],
            hovertext=[_hover(f"{n.full_node_id}\ncategory {n.category} · class {n.class_name}\n"
                              f"{_value_preview(n.raw_value)}") for n in members],
            hoverinfo="text", unselected={"marker": {"opacity": 1}},
        ))
    traces.extend(_ring_legend(set(states.values())))
    layers = max((p[0] for p in pos.values()), default=0)
    tallest = max((sum(1 for p in pos.values() if p[0] == x) for x in {p[0] for p in pos.values()}), default=1)
    fig = go.Figure(data=traces)
    fig.update_layout(
        height=min(900, max(320, 46 * tallest + 120)), margin={"l": 10, "r": 10, "t": 10, "b": 10},
        # labels sit right of their node: room for the last layer's labels
        xaxis={"visible": False, "range": [-0.6, layers + 1.4]}, yaxis={"visible": False},
        legend={"orientation": "h", "y": -0.02, "yanchor": "top", "x": 0, "font": {"size": 10}},
        annotations=arrows, clickmode="event+select", plot_bgcolor="white", hovermode="closest",
    )
    return fig
