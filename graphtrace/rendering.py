"""Text renderings that the graph-search tools return: pagination, operation subgraphs, roots, matches.

Everything here is a pure function of a graph (an ``ExecNetwork`` or anything with the same
queries) and arguments, so the exact texts the model sees can be tested directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import regex

from smartcomment.runtime.errors import MemTraceError

from .models import DUMMY_OP_COMMENT, DUMMY_OP_ID

__all__ = [
    "REGEX_TIMEOUT_SECONDS",
    "MAX_REGEX_MATCHES",
    "Page",
    "RegexSearchError",
    "find_matches",
    "paginate",
    "render_dummy_root",
    "render_node_operations",
    "render_operation_subgraph",
    "render_variable_xml",
]

REGEX_TIMEOUT_SECONDS = 2.0
"""Wall-clock bound for one regex search over one value (agent-supplied patterns)."""
MAX_REGEX_MATCHES = 1_000
"""At most this many matches are listed for one search."""

_ROLE_SENTENCES = {
    "intermediate": "intermediate (produced by one step of this operation and consumed by another)",
    "input": "input read by the operation",
    "output": "output produced by the operation",
    "none": "present in the operation subgraph without a direct edge",
}


# ---------------------------------------------------------------------------------------------
# Pagination
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Page:
    """One 1-based character window of a text and its status line."""

    window: str
    status: str
    start: int
    """1-based first character (0 when the window is empty)."""
    end: int
    """1-based last character, inclusive (0 when the window is empty)."""
    total: int
    truncated: bool


def paginate(text: str, offset: int, limit: int) -> Page:
    """Cut a 1-based window ``[offset, offset + limit)`` out of ``text``.

    Args:
        text: The full content.
        offset: 1-based first character (>= 1).
        limit: Maximum characters in the window (>= 1).

    Returns:
        The window with a status sentence saying what was returned and how to continue.

    Raises:
        ValueError: ``offset`` or ``limit`` is below 1.
    """
    if offset < 1 or limit < 1:
        raise ValueError(f"offset and limit must be >= 1, got offset={offset}, limit={limit}")
    total = len(text)
    start = offset - 1
    if start >= total:
        return Page(
            window="",
            status=(
                f"No content is available from the {offset}-th character; the full content has {total} characters."
            ),
            start=0,
            end=0,
            total=total,
            truncated=False,
        )
    end = min(start + limit, total)
    status = f"Characters {start + 1}-{end} of {total} are returned."
    if end < total:
        status += f" Content is truncated. Call this tool again with `offset={end + 1}` to continue."
    else:
        status += " All content has been returned. No further read is needed."
    return Page(
        window=text[start:end], status=status, start=start + 1, end=end, total=total, truncated=end < total
    )


# ---------------------------------------------------------------------------------------------
# XML pieces
# ---------------------------------------------------------------------------------------------


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


def render_variable_xml(variable: Any, *, include_value: bool = True) -> str:
    """Render one variable in smartcomment's XML layout (no metadata).

    Args:
        variable: A variable handle (``full_node_id``, ``name``, ``version``, ``class_name``,
            ``category``, ``raw_value``, ``comment``, ``created_at``).
        include_value: Include the ``<value>`` element.

    Returns:
        The XML text.
    """
    attrs = f'full_node_id="{variable.full_node_id}" name="{variable.name}" version="{variable.version}"'
    if variable.class_name:
        attrs += f' class="{variable.class_name}"'
    attrs += f' category="{variable.category}"'
    lines = [f"<variable {attrs}>"]
    if include_value:
        lines.append(f"  <value>{_raw_value(variable)}</value>")
    if variable.comment:
        lines.append(f"  <comment>{variable.comment}</comment>")
    lines.append(f"  <created_at>created in the system at {variable.created_at}</created_at>")
    lines.append("</variable>")
    return "\n".join(lines)


def _raw_value(variable: Any) -> str:
    raw = getattr(variable, "raw_value", None)
    return str(variable.value) if raw is None else str(raw)


def _sorted_ids(ids: Iterable[str]) -> list[str]:
    return sorted(set(ids))


def _id_sentence(ids: list[str], kind: str) -> str:
    if not ids:
        return f"There is no {kind} variable."
    listed = ", ".join(f"`{i}`" for i in ids)
    if len(ids) == 1:
        return f"There is 1 {kind} variable; its identifier is: {listed}."
    return f"There are {len(ids)} {kind} variables; their identifiers are: {listed}."


# ---------------------------------------------------------------------------------------------
# Operation subgraph around a focus variable
# ---------------------------------------------------------------------------------------------


def render_operation_subgraph(graph: Any, op: Any, focus_id: str, *, include_value: bool = True) -> str:
    """Render one operation's subgraph from the point of view of a focus variable.

    Args:
        graph: The working ``ExecNetwork``.
        op: The operation handle.
        focus_id: The variable being explored; must be in the operation subgraph.
        include_value: Include variable values in the XML.

    Returns:
        Header lines (name, category, time, focus role), the direct successors of the focus,
        the leaf variables of the subgraph, and the subgraph XML with sorted elements.

    Raises:
        ValueError: the focus variable is not part of the operation subgraph.
    """
    from smartcomment.runtime.graph import RuntimeGraph

    sub = graph.filter_by_operation(op.op_id)
    nodes = sorted(sub.nodes, key=lambda n: (n.created_at, n.full_node_id))
    edges = sorted(sub.edges, key=lambda e: (e.created_at, e.edge_id))
    ops = sorted(sub.ops, key=lambda o: (o.created_at, o.op_id))
    node_ids = {n.full_node_id for n in nodes}
    if focus_id not in node_ids:
        raise ValueError(f"variable {focus_id!r} is not part of the subgraph of operation {op.op_id!r}")
    is_source = any(e.source_full_node_id == focus_id for e in edges)
    is_target = any(e.target_full_node_id == focus_id for e in edges)
    role = (
        "intermediate"
        if is_source and is_target
        else "input"
        if is_source
        else "output"
        if is_target
        else "none"
    )
    successors = _sorted_ids(e.target_full_node_id for e in edges if e.source_full_node_id == focus_id)
    with_outgoing = {e.source_full_node_id for e in edges}
    leaves = _sorted_ids(n for n in node_ids if n not in with_outgoing)
    xml = RuntimeGraph(nodes=nodes, edges=edges, ops=ops).to_xml(
        include_metadata=False, include_variable_value=include_value
    )
    lines = [
        f"# Operation `{op.op_id}`",
        "",
        f"- Name: `{op.op_name or 'UNNAMED'}`",
        f"- Category: `{op.category}`",
        f"- Created At: `{op.created_at}`",
    ]
    if op.comment:
        lines.append(f"- Comment: {op.comment}")
    lines += [
        f"- Focus Variable: `{focus_id}`",
        f"- Focus Role: {_ROLE_SENTENCES[role]}",
        "",
        "## Direct Successor Variables",
        _id_sentence(successors, "direct successor"),
        "",
        "## Leaf Variables In Operation Subgraph",
        _id_sentence(leaves, "leaf"),
        "",
        "## Canonical Subgraph",
        xml,
    ]
    return "\n".join(lines)


def render_node_operations(graph: Any, full_node_id: str, *, include_value: bool = True) -> str:
    """Render every operation that touches a variable, in execution order.

    Args:
        graph: The working ``ExecNetwork``.
        full_node_id: The explored variable.
        include_value: Include variable values in the XML.

    Returns:
        A header section followed by one section per operation, separated by ``---`` rules.
    """
    variable = graph.get_variable(full_node_id)
    ops = list(graph.get_operations_by_variable(full_node_id))
    if not ops:
        return f"# Graph Trace Node `{full_node_id}`\n\nNo operations directly involve this variable."
    header = [f"# Graph Trace Node `{full_node_id}`", "", f"- Category: `{variable.category}`"]
    if variable.comment:
        header.append(f"- Comment: {variable.comment}")
    header += [
        f"- Inserted into Execution Graph At: `{variable.created_at}`",
        f"- Number of Operations Found: {len(ops)}",
    ]
    sections = ["\n".join(header)]
    for i, op in enumerate(ops, start=1):
        body = render_operation_subgraph(graph, op, full_node_id, include_value=include_value)
        sections.append(f"# Operation {i} of {len(ops)}\n\n{body}")
    return "\n\n---\n\n".join(sections)


def render_dummy_root(graph: Any, *, include_value: bool = True) -> str:
    """Render the synthetic root: every variable without an incoming edge, in creation order."""
    roots = sorted(graph.get_root_nodes(), key=lambda n: (n.created_at, n.full_node_id))
    head = [
        f"# Operation `{DUMMY_OP_ID}`",
        "",
        f"- Name: `{DUMMY_OP_ID}`",
        f"- Comment: {DUMMY_OP_COMMENT}",
        "",
        "## Root Graph Trace Nodes",
        "",
    ]
    if not roots:
        return "\n".join(head) + (
            "The execution graph has no root variables: it is empty or not a DAG. "
            "Tell the user that the graph cannot be explored from its roots."
        )
    body = "\n\n".join(render_variable_xml(v, include_value=include_value) for v in roots)
    tail = (
        f"\n\nThe graph has {len(roots)} root variable(s). Add the ones relevant to the task to the "
        "to-explore frontier with `update_to_explore_nodes` (action `add`)."
    )
    return "\n".join(head) + body + tail


# ---------------------------------------------------------------------------------------------
# Regex search in a value
# ---------------------------------------------------------------------------------------------


class RegexSearchError(MemTraceError, ValueError):
    """The pattern does not compile or the search ran out of time."""


def find_matches(
    value: str,
    pattern: str,
    *,
    surrounding_chars: int,
    ignore_case: bool = False,
    max_matches: int = MAX_REGEX_MATCHES,
    timeout: float = REGEX_TIMEOUT_SECONDS,
) -> tuple[list[str], bool]:
    """List the non-empty matches of a pattern in a value with surrounding context.

    Each match renders as ``"<s>:<e>: <snippet>"`` with 1-based inclusive positions; the
    snippet adds ``surrounding_chars`` characters on both sides and ``...`` where it was clipped.
    Zero-length matches are skipped (they would list every position).

    Args:
        value: The text to search.
        pattern: A Python-style regular expression.
        surrounding_chars: Context characters on each side (>= 0).
        ignore_case: Match case-insensitively.
        max_matches: Stop after this many matches.
        timeout: Seconds allowed for the whole search.

    Returns:
        The rendered matches and whether the list was cut at ``max_matches``.

    Raises:
        RegexSearchError: invalid pattern or search timeout.
    """
    flags = regex.V0 | (regex.IGNORECASE if ignore_case else 0)
    try:
        compiled = regex.compile(pattern, flags)
    except regex.error as exc:
        raise RegexSearchError(f"invalid regular expression {pattern!r}: {exc}") from None
    rendered: list[str] = []
    capped = False
    try:
        for match in compiled.finditer(value, timeout=timeout):
            if match.end() == match.start():
                continue
            if len(rendered) >= max_matches:
                capped = True
                break
            lo = max(0, match.start() - surrounding_chars)
            hi = min(len(value), match.end() + surrounding_chars)
            snippet = ("..." if lo > 0 else "") + value[lo:hi] + ("..." if hi < len(value) else "")
            rendered.append(f"{match.start() + 1}:{match.end()}: {snippet}")
    except TimeoutError:
        raise RegexSearchError(
            f"the search for {pattern!r} took longer than {timeout:g} s; use a simpler pattern"
        ) from None
    return rendered, capped
