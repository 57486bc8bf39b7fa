"""Visual renderings of a graph: DOT text (no dependency), graphviz and pyvis when installed."""

from __future__ import annotations

import html
from typing import Any

_PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22", "#17becf"]


def _short(text: str, limit: int = 30) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def to_dot(graph: Any) -> str:
    """DOT text, left to right, one HTML-table label per variable, colours by category."""
    categories = sorted({n.category for n in graph.nodes})
    colour = {c: _PALETTE[i % len(_PALETTE)] for i, c in enumerate(categories)}
    lines = ["digraph execution {", "  rankdir=LR;", '  node [shape=plain, fontname="Helvetica"];']
    for n in graph.nodes:
        label = (
            f'<<table border="1" cellborder="0" bgcolor="{colour[n.category]}40">'
            f"<tr><td><b>{html.escape(_short(n.full_node_id))}</b></td></tr>"
            f"<tr><td>{html.escape(_short(str(n.raw_value)))}</td></tr></table>>"
        )
        lines.append(f'  "{n.full_node_id}" [label={label}];')
    op_names = {o.op_id: o.op_name or o.op_id for o in graph.ops}
    for e in graph.edges:
        name = html.escape(_short(op_names.get(e.op_id, e.op_id)))
        lines.append(f'  "{e.source_full_node_id}" -> "{e.target_full_node_id}" [label="{name}"];')
    lines.append("}")
    return "\n".join(lines)


def visualize(graph: Any, backend: str = "dot", **kwargs: Any) -> Any:
    """Render ``graph`` (a RuntimeGraph) with ``backend``: ``"dot"``, ``"graphviz"`` or ``"pyvis"``."""
    if backend == "dot":
        return to_dot(graph)
    if backend == "graphviz":
        try:
            import graphviz
        except ImportError as exc:
            raise ImportError("backend='graphviz' needs the graphviz package: pip install graphviz") from exc
        return graphviz.Source(to_dot(graph), **kwargs)
    if backend == "pyvis":
        try:
            from pyvis.network import Network
        except ImportError as exc:
            raise ImportError("backend='pyvis' needs the pyvis package: pip install pyvis") from exc
        net = Network(directed=True, **kwargs)
        for n in graph.nodes:
            net.add_node(n.full_node_id, label=_short(n.full_node_id), title=str(n.raw_value))
        for e in graph.edges:
            net.add_edge(e.source_full_node_id, e.target_full_node_id)
        return net
    raise ValueError(f"unknown visual backend {backend!r}; use 'dot', 'graphviz' or 'pyvis'")
