r"""An operation's inputs and outputs as readable text, with the question's evidence highlighted.

Graph values are stored as text that is often a Python ``repr`` (quoted, with ``\n`` escapes)
or JSON (a message ``{"content": …}``, a ``{"facts": [...]}`` reply, a list of memories). The
viewer shows the text inside: unquoted, one list item per line, and the words of the golden
answer and of the evidence marked, so a prompt or a reply reads as prose rather than XML.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["ReadableNode", "evidence_terms", "highlight", "op_io", "readable_value"]

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")
_STOP = frozenset(
    "the a an and or but of to in on at for with from by is are was were be been it its this that these those "
    "he she they we you i his her their our your my me him them what who when where why how which did does do "
    "has have had not no yes as so if than then there here about into over after before".split())
_TEXT_KEYS = ("content", "memory", "text", "data")


def _unquote(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in "'\"[{(" and len(stripped) < 2_000_000:
        try:
            return ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    if stripped[:1] in "[{":
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def _flatten(value: Any, depth: int = 0) -> str:
    if depth > 4:
        return str(value)
    if isinstance(value, str):
        inner = _unquote(value) if value.strip()[:1] in "[{" and depth < 3 else value
        return value if inner is value or isinstance(inner, str) else _flatten(inner, depth + 1)
    if isinstance(value, dict):
        for key in _TEXT_KEYS:
            if isinstance(value.get(key), str):
                rest = {k: v for k, v in value.items() if k != key and isinstance(v, str | int | float) and v != ""}
                tail = "\n" + " · ".join(f"{k}: {v}" for k, v in rest.items()) if rest else ""
                return value[key] + tail
        if len(value) == 1:
            key, inner = next(iter(value.items()))
            return f"{key}:\n{_flatten(inner, depth + 1)}"
        return "\n".join(f"{k}: {_flatten(v, depth + 1)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return "\n".join(f"• {_flatten(v, depth + 1)}" for v in value)
    return str(value)


def readable_value(raw: Any) -> str:
    """The text a stored value holds (repr/JSON unwrapped, lists one item per line)."""
    text = str(raw)
    return _flatten(_unquote(text)).strip()


def evidence_terms(*texts: str | None) -> list[str]:
    """Distinctive words of the golden answer and evidence texts (to mark in the values)."""
    seen: dict[str, None] = {}
    for text in texts:
        for word in _WORD.findall(text or ""):
            low = word.lower()
            if len(low) >= 3 and low not in _STOP:
                seen.setdefault(low, None)
    return list(seen)


def highlight(text: str, terms: Iterable[str], *, limit: int = 6000) -> str:
    """HTML of ``text`` (escaped, cut at ``limit``) with every whole-word ``term`` in ``<mark>``."""
    cut = text if len(text) <= limit else text[:limit] + " …"
    words = sorted({t for t in terms if t}, key=len, reverse=True)
    escaped = html.escape(cut)
    if not words:
        return escaped
    pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(re.escape(html.escape(w)) for w in words) + r")(?![A-Za-z0-9])",
                         re.IGNORECASE)
    return pattern.sub(r"<mark>\1</mark>", escaped)


@dataclass(frozen=True, kw_only=True)
class ReadableNode:
    """One input or output of an operation, as text."""

    role: str
    """``input`` or ``output``."""
    node_id: str
    title: str
    text: str


def op_io(network: Any, edges: Iterable[Any]) -> list[ReadableNode]:
    """The inputs (edge sources) then the outputs (edge targets) of one op's edges, as text."""
    sources = list(dict.fromkeys(e.source for e in edges))
    targets = [t for t in dict.fromkeys(e.target for e in edges) if t not in sources]
    out = []
    for role, ids in (("input", sources), ("output", targets)):
        for node_id in ids:
            if node_id not in network:
                continue
            node = network.get_variable(node_id)
            kind = node.class_name or node.name
            title = f"{role} · {node.category} · {kind}@{node.version}"
            out.append(ReadableNode(role=role, node_id=node_id, title=title, text=readable_value(node.raw_value)))
    return out
