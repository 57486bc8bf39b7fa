"""Flatten an execution graph into a linear, chronological log of operation blocks.

Each operation becomes one block (spec-attribution §4.1)::

    ### Operation <op_id>
    created_at: <ts>
    op_name: <name>
    category: <category>
    <comment>…</comment>
    <metadata>{json}</metadata>

    Input variables:
    <variable>
      <category>…</category>
      …
    </variable>

Output and Intermediate sections follow when non-empty. Every line that a variable or a comment
contributes is indented, so the only column-0 lines of a block are the ones written here: the
``### Operation`` marker, the header fields and the section labels. ``TraceIndex`` relies on that
to parse the log back even when values contain those very labels.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from obstrace._tokens import TokenCounter, default_token_counter

__all__ = [
    "EMPTY_LOG",
    "SECTION_LABELS",
    "FlatBlock",
    "flatten_execution_graph",
    "join_blocks",
    "render_operation_blocks",
    "xml_escape",
    "xml_field",
]

EMPTY_LOG = "[NO RELATED OPERATIONS FOUND]"
BLOCK_SEPARATOR = "\n\n"
SECTION_LABELS = {"input": "Input variables:", "output": "Output variables:", "intermediate": "Intermediate variables:"}
_IDENTITY_KEYS = frozenset({"full_node_id", "node_id", "full_name", "name"})


@dataclass(frozen=True, kw_only=True)
class FlatBlock:
    """One rendered operation block of the flat log."""

    op_id: str
    """Identifier of the operation."""
    created_at: str
    """Creation timestamp of the operation (orders the log)."""
    text: str
    """The rendered block, without a trailing newline."""
    node_ids: tuple[str, ...]
    """Full node ids of the variables that the block shows (its edges' endpoints)."""


def xml_escape(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` (quotes are left alone: the log has no attributes)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_field(tag: str, value: Any, indent: int = 0) -> list[str]:
    """Render one field as lines: nothing for None, one line for single-line text, else a block.

    Args:
        tag: Element name.
        value: Field value; None renders nothing, other non-strings are ``str()``-ed.
        indent: Spaces before the tags; content lines of a multi-line value get two more.

    Returns:
        The rendered lines (possibly empty).
    """
    if value is None:
        return []
    text = xml_escape(value if isinstance(value, str) else str(value))
    pad = " " * indent
    if "\n" not in text:
        return [f"{pad}<{tag}>{text}</{tag}>"]
    inner = " " * (indent + 2)
    return [f"{pad}<{tag}>", *(inner + line for line in text.split("\n")), f"{pad}</{tag}>"]


def _header_value(value: Any) -> str:
    # Header fields sit on column-0 lines; a raw newline would forge a new header or marker line.
    return str(value).replace("\r", "\\r").replace("\n", "\\n")


def _strip_identity(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _strip_identity(v) for k, v in value.items() if k not in _IDENTITY_KEYS}
    if isinstance(value, list | tuple):
        return [_strip_identity(v) for v in value]
    return value


def _variable_lines(variable: Any, *, include_id: bool) -> list[str]:
    lines = ["<variable>"]
    if include_id:
        lines += xml_field("full_node_id", variable.full_node_id, 2)
    lines += xml_field("class_name", variable.class_name, 2)
    lines += xml_field("category", variable.category, 2)
    lines += xml_field("created_at", variable.created_at, 2)
    lines += xml_field("comment", variable.comment or None, 2)
    raw = getattr(variable, "raw_value", None)
    lines += xml_field("value", raw if raw is not None else variable.value, 2)
    lines.append("</variable>")
    return lines


def _render_block(op: Any, edges: list[Any], graph: Any, *, include_variable_ids: bool) -> FlatBlock:
    lines = [
        f"### Operation {_header_value(op.op_id)}",
        f"created_at: {_header_value(op.created_at)}",
        f"op_name: {_header_value(op.op_name)}",
        f"category: {_header_value(op.category)}",
    ]
    lines += xml_field("comment", op.comment or None)
    metadata = _strip_identity(op.metadata or {})
    if metadata:
        lines += xml_field("metadata", json.dumps(metadata, ensure_ascii=False, default=str))

    in_degree: dict[str, int] = defaultdict(int)
    out_degree: dict[str, int] = defaultdict(int)
    for edge in edges:
        out_degree[edge.source_full_node_id] += 1
        in_degree[edge.target_full_node_id] += 1
    node_ids = sorted(set(in_degree) | set(out_degree))
    sections: dict[str, list[str]] = {"input": [], "output": [], "intermediate": []}
    for node_id in node_ids:
        if in_degree[node_id] == 0 and out_degree[node_id] > 0:
            sections["input"].append(node_id)
        elif out_degree[node_id] == 0 and in_degree[node_id] > 0:
            sections["output"].append(node_id)
        else:
            sections["intermediate"].append(node_id)
    for role in ("input", "output", "intermediate"):
        if not sections[role]:
            continue
        lines += ["", SECTION_LABELS[role]]
        for node_id in sections[role]:
            lines += _variable_lines(graph.get_variable(node_id), include_id=include_variable_ids)
    return FlatBlock(op_id=op.op_id, created_at=op.created_at, text="\n".join(lines), node_ids=tuple(node_ids))


def render_operation_blocks(graph: Any, *, include_variable_ids: bool = False) -> list[FlatBlock]:
    """Render every operation of a graph as a block, in execution order.

    Args:
        graph: An ``ExecNetwork`` (anything with ``get_all_operations``, ``get_all_edges`` and
            ``get_variable``).
        include_variable_ids: Add a ``<full_node_id>`` line to every variable. The documented
            layout has none; the attribution agents turn it on so that variables can be named.

    Returns:
        The blocks sorted by ``(created_at, op_id)``.
    """
    edges_by_op: dict[str, list[Any]] = defaultdict(list)
    for edge in graph.get_all_edges():
        edges_by_op[edge.op_id].append(edge)
    ops = sorted(graph.get_all_operations(), key=lambda op: (op.created_at, op.op_id))
    return [
        _render_block(op, edges_by_op.get(op.op_id, []), graph, include_variable_ids=include_variable_ids)
        for op in ops
    ]


def join_blocks(texts: Iterable[str]) -> str:
    """Join block texts with a blank line; an empty log becomes ``[NO RELATED OPERATIONS FOUND]``."""
    joined = BLOCK_SEPARATOR.join(texts)
    return joined if joined else EMPTY_LOG


def flatten_execution_graph(
    graph: Any,
    token_limit: int | None = None,
    *,
    include_variable_ids: bool = False,
    token_counter: TokenCounter | None = None,
) -> str:
    """Flatten a graph into the chronological operation-block log of spec §4.1.

    With ``token_limit`` the newest blocks are kept: blocks are taken newest to oldest until the
    next one would overflow the budget (separators included), then emitted chronologically. The
    long-context baseline uses ``obstrace.long_context.budget_trace`` instead, which never drops
    the operations touching the source evidence and marks elisions.

    Args:
        graph: The execution graph (``ExecNetwork``).
        token_limit: Token budget for the whole log, or None for no limit.
        include_variable_ids: Add each variable's full node id (see ``render_operation_blocks``).
        token_counter: Counts tokens; defaults to tiktoken ``o200k_base`` (or its offline estimate).

    Returns:
        The log text.

    Raises:
        ValueError: If ``token_limit`` is negative.
    """
    blocks = render_operation_blocks(graph, include_variable_ids=include_variable_ids)
    if token_limit is None:
        return join_blocks(block.text for block in blocks)
    if token_limit < 0:
        raise ValueError(f"token_limit must be >= 0 or None, got {token_limit}")
    count = token_counter or default_token_counter()
    separator_tokens = count(BLOCK_SEPARATOR)
    kept: list[str] = []
    used = 0
    for block in reversed(blocks):
        cost = count(block.text) + (separator_tokens if kept else 0)
        if used + cost > token_limit:
            break
        kept.append(block.text)
        used += cost
    return join_blocks(reversed(kept))
