"""XML and Markdown renderings of graph records, byte-compatible with smartcomment 0.1.2.

Nothing is escaped: values appear verbatim, because the attribution prompts and MemTraceBench
annotations were produced from exactly this text. Nested blocks are indented by prefixing every
line, so continuation lines of multi-line values shift with their block.
"""

from __future__ import annotations

import json
from typing import Any

_CREATED = "created in the system at "


def _metadata_json(metadata: dict[str, Any]) -> str:
    return json.dumps(metadata, ensure_ascii=False)


def _xml_tail(lines: list[str], comment: str | None, created_at: str, metadata: dict, include_metadata: bool) -> None:
    if comment:
        lines.append(f"  <comment>{comment}</comment>")
    lines.append(f"  <created_at>{_CREATED}{created_at}</created_at>")
    if include_metadata and metadata:
        lines.append(f"  <metadata>{_metadata_json(metadata)}</metadata>")


def _md_tail(lines: list[str], created_at: str, metadata: dict, include_metadata: bool) -> None:
    lines.append(f"- Created At: {_CREATED}`{created_at}`")
    if include_metadata and metadata:
        lines.append(f"- Metadata: `{_metadata_json(metadata)}`")


def variable_xml(var: Any, *, include_metadata: bool = False, include_variable_value: bool = True) -> str:
    class_attr = f' class="{var.class_name}"' if var.class_name else ""
    lines = [
        f'<variable full_node_id="{var.full_node_id}" name="{var.name}" version="{var.version}"'
        f'{class_attr} category="{var.category}">'
    ]
    if include_variable_value:
        lines.append(f"  <value>{var.value}</value>")
    _xml_tail(lines, var.comment, var.created_at, var._metadata, include_metadata)
    lines.append("</variable>")
    return "\n".join(lines)


def variable_markdown(var: Any, *, include_metadata: bool = False, include_variable_value: bool = True) -> str:
    head = f"**{var.name}** (v{var.version})"
    if var.class_name:
        head += f" [{var.class_name}]"
    lines = [head, f"- Full Node ID: `{var.full_node_id}`"]
    if include_variable_value:
        lines.append(f"- Value: `{var.value}`")
    if var.comment:
        lines.append(f"- Comment: {var.comment}")
    lines.append(f"- Category: {var.category}")
    _md_tail(lines, var.created_at, var._metadata, include_metadata)
    return "\n".join(lines)


def edge_xml(edge: Any, *, include_metadata: bool = False) -> str:
    lines = [
        f'<edge id="{edge.edge_id}" source="{edge.source_full_node_id}" '
        f'target="{edge.target_full_node_id}" category="{edge.category}">'
    ]
    _xml_tail(lines, edge.comment, edge.created_at, edge._metadata, include_metadata)
    lines.append("</edge>")
    return "\n".join(lines)


def edge_markdown(edge: Any, *, include_metadata: bool = False) -> str:
    lines = [
        f"**Edge: `{edge.source_full_node_id}` -> `{edge.target_full_node_id}`**",
        f"- Edge ID: `{edge.edge_id}`",
        f"- Category: {edge.category}",
    ]
    if edge.comment:
        lines.append(f"- Comment: {edge.comment}")
    _md_tail(lines, edge.created_at, edge._metadata, include_metadata)
    return "\n".join(lines)


def op_xml(op: Any, *, include_metadata: bool = False) -> str:
    lines = [f'<operation id="{op.op_id}" name="{op.op_name}" category="{op.category}">']
    _xml_tail(lines, op.comment, op.created_at, op._metadata, include_metadata)
    lines.append("</operation>")
    return "\n".join(lines)


def op_markdown(op: Any, *, include_metadata: bool = False) -> str:
    lines = [f"**Op: {op.op_name or 'UNNAMED'}**", f"- Operation ID: `{op.op_id}`", f"- Category: {op.category}"]
    if op.comment:
        lines.append(f"- Comment: {op.comment}")
    _md_tail(lines, op.created_at, op._metadata, include_metadata)
    return "\n".join(lines)


def session_xml(session: Any, *, include_metadata: bool = False) -> str:
    name_attr = f' name="{session.session_name}"' if session.session_name is not None else ""
    lines = [f'<session id="{session.session_id}"{name_attr} category="{session.category}">']
    _xml_tail(lines, session.comment, session.created_at, session._metadata, include_metadata)
    lines.append("</session>")
    return "\n".join(lines)


def session_markdown(session: Any, *, include_metadata: bool = False) -> str:
    lines = [
        f"**Session: {session.session_name or session.session_id}**",
        f"- Session ID: `{session.session_id}`",
        f"- Category: {session.category}",
    ]
    if session.comment:
        lines.append(f"- Comment: {session.comment}")
    _md_tail(lines, session.created_at, session._metadata, include_metadata)
    return "\n".join(lines)


def _indent(block: str, prefix: str = "    ") -> list[str]:
    return [prefix + line for line in block.split("\n")]


def graph_xml(nodes: list, edges: list, ops: list, *, include_metadata: bool, include_variable_value: bool) -> str:
    if not nodes and not edges and not ops:
        return "<graph />"
    lines = ["<graph>", "  <nodes>"]
    for n in nodes:
        lines += _indent(
            variable_xml(n._variable, include_metadata=include_metadata, include_variable_value=include_variable_value)
        )
    lines.append("  </nodes>")
    if edges:
        lines.append("  <edges>")
        for e in edges:
            lines += _indent(edge_xml(e._edge, include_metadata=include_metadata))
        lines.append("  </edges>")
    if ops:
        lines.append("  <operations>")
        for o in ops:
            lines += _indent(op_xml(o._op, include_metadata=include_metadata))
        lines.append("  </operations>")
    lines.append("</graph>")
    return "\n".join(lines)


def graph_markdown(nodes: list, edges: list, ops: list, *, include_metadata: bool, include_variable_value: bool) -> str:
    if not nodes and not edges and not ops:
        return "## Graph\n\n*Empty graph.*"
    lines = ["## Graph", "", f"### Nodes ({len(nodes)})", ""]
    for n in nodes:
        lines += [
            variable_markdown(
                n._variable, include_metadata=include_metadata, include_variable_value=include_variable_value
            ),
            "",
        ]
    if edges:
        lines += [f"### Edges ({len(edges)})", ""]
        for e in edges:
            lines += [edge_markdown(e._edge, include_metadata=include_metadata), ""]
    if ops:
        lines += [f"### Operations ({len(ops)})", ""]
        for o in ops:
            lines += [op_markdown(o._op, include_metadata=include_metadata), ""]
    return "\n".join(lines)
