"""A read-only index over one execution graph, built once and shared by all of its cases.

It accepts a smartcomment ``ExecNetwork`` (anything with ``get_all_nodes/edges/operations``)
or the exported JSON dict itself, so the attributor does not care where the graph came from.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import regex

__all__ = [
    "EdgeRec",
    "GraphView",
    "NodeRec",
    "OpRec",
    "is_delete_marker",
    "is_memory_unit",
    "is_message",
    "is_parameter",
    "split_full_node_id",
]

#: Op categories that belong to answering a question, not to building memory.
QUERY_TIME_OP_CATEGORIES = frozenset({"retrieval", "evaluation"})
# Nodes that configure an op (top_k, chunk sizes, ...) rather than carry data.
_PARAMETER_WORDS = ("parameter", "hyperparameter")
# A capitalised word after a lower-case word or a comma: a name, not a sentence start.
_MID_SENTENCE_CAPITAL = regex.compile(r"(?<=[\p{Ll},;])\s+(\p{Lu}\p{Ll}{2,})\b")
_CALENDAR = frozenset("january february march april may june july august september october november december "
                      "monday tuesday wednesday thursday friday saturday sunday".split())


def split_full_node_id(full_node_id: str) -> tuple[str, int | None]:
    """Split ``name@version`` on the last ``@`` (names may contain ``:`` and ``@``)."""
    head, sep, tail = full_node_id.rpartition("@")
    if sep and tail.isdigit():
        return head, int(tail)
    return full_node_id, None


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeRec:
    """One variable version."""

    full_node_id: str
    full_name: str
    name: str
    version: int
    value: str
    category: str
    class_name: str | None
    created_at: str
    metadata: dict[str, Any]
    order: int


@dataclass(frozen=True, kw_only=True, slots=True)
class EdgeRec:
    """One edge of an operation."""

    edge_id: str
    source: str
    target: str
    op_id: str
    category: str | None
    created_at: str
    order: int


@dataclass(frozen=True, kw_only=True, slots=True)
class OpRec:
    """One operation."""

    op_id: str
    op_name: str | None
    category: str | None
    created_at: str
    session_id: str | None


def _node_fields(raw: Any) -> tuple:
    """``(full_node_id, full_name, name, version, stored value, category, class_name, created_at,
    metadata)`` of an export dict or a smartcomment ``Variable`` record."""
    if isinstance(raw, dict):
        value = raw.get("raw_value")
        return (raw.get("full_node_id"), raw.get("full_name"), raw.get("name"), raw.get("version"),
                raw.get("value") if value is None else value, raw.get("category"), raw.get("class_name"),
                raw.get("created_at"), raw.get("metadata"))
    # the record's own metadata dict, not the copy its property makes: the view never mutates it,
    # and copying 46k dicts was a third of the time to index a big graph
    metadata = getattr(raw, "_metadata", None)
    return (raw.full_node_id, raw.full_name, raw.name, raw.version, raw.value, raw.category, raw.class_name,
            raw.created_at, raw.metadata if metadata is None else metadata)


def _edge_fields(raw: Any) -> tuple:
    """``(edge_id, source, target, op_id, category, created_at)`` of an export dict or an ``OpEdge``."""
    if isinstance(raw, dict):
        return (raw.get("edge_id"), raw.get("source_full_node_id"), raw.get("target_full_node_id"),
                raw.get("op_id"), raw.get("category"), raw.get("created_at"))
    return (raw.edge_id, raw.source_full_node_id, raw.target_full_node_id, raw.op_id, raw.category,
            raw.created_at)


def _op_fields(raw: Any) -> tuple:
    """``(op_id, op_name, category, created_at, session_id)`` of an export dict or an ``OpRecord``."""
    if isinstance(raw, dict):
        return raw.get("op_id"), raw.get("op_name"), raw.get("category"), raw.get("created_at"), raw.get("session_id")
    return raw.op_id, raw.op_name, raw.category, raw.created_at, raw.session_id


class GraphView:
    """Indexes of one graph: nodes by id and by full name, edges by node and by op, ops."""

    def __init__(self, nodes: list[Any], edges: list[Any], ops: list[Any]) -> None:
        """Build the indexes from node/edge/op records (export dicts or smartcomment records)."""
        self.nodes: dict[str, NodeRec] = {}
        self.versions: dict[str, list[NodeRec]] = defaultdict(list)
        for i, raw in enumerate(nodes):
            full_node_id, full_name, name, version, value, category, class_name, created_at, metadata = (
                _node_fields(raw))
            full_name = full_name or split_full_node_id(full_node_id)[0]
            rec = NodeRec(
                full_node_id=full_node_id,
                full_name=full_name,
                name=name or full_name,
                version=int(version or split_full_node_id(full_node_id)[1] or 1),
                value=value if type(value) is str else str(value),
                category=category or "variable",
                class_name=class_name,
                created_at=created_at or "",
                metadata=metadata if type(metadata) is dict else dict(metadata or {}),
                order=i,
            )
            self.nodes[full_node_id] = rec
            self.versions[full_name].append(rec)
        self.ops: dict[str, OpRec] = {}
        for raw in ops:
            op_id, op_name, category, created_at, session_id = _op_fields(raw)
            self.ops[op_id] = OpRec(op_id=op_id, op_name=op_name, category=category, created_at=created_at or "",
                                    session_id=session_id)
        records = []
        for i, raw in enumerate(edges):
            edge_id, source, target, op_id, category, created_at = _edge_fields(raw)
            records.append(EdgeRec(edge_id=edge_id, source=source, target=target, op_id=op_id, category=category,
                                   created_at=created_at or "", order=i))
        records.sort(key=lambda e: (e.created_at, e.order))
        self.edges: list[EdgeRec] = records
        self.out_edges: dict[str, list[EdgeRec]] = defaultdict(list)
        self.in_edges: dict[str, list[EdgeRec]] = defaultdict(list)
        self.op_edges: dict[str, list[EdgeRec]] = defaultdict(list)
        for rec in records:  # filled in time order, so every bucket is already sorted
            self.out_edges[rec.source].append(rec)
            self.in_edges[rec.target].append(rec)
            self.op_edges[rec.op_id].append(rec)
        for lst in self.versions.values():
            lst.sort(key=lambda n: (n.version, n.order))
        self.memo: dict[Any, Any] = {}
        """Per-graph results the attributor computes once and reuses across cases."""

    @classmethod
    def build(cls, graph: Any) -> GraphView:
        """Index an ``ExecNetwork`` or an exported graph dict.

        Raises:
            TypeError: if ``graph`` is neither.
        """
        if isinstance(graph, dict):
            data = graph.get("data", graph)
            return cls(data.get("nodes", []), data.get("edges", []), data.get("operations", []))
        if hasattr(graph, "get_all_nodes") and hasattr(graph, "get_all_edges"):
            # the records behind the handles: reading them directly is several times faster
            return cls([getattr(h, "variable", h) for h in graph.get_all_nodes()],
                       [getattr(h, "edge", h) for h in graph.get_all_edges()],
                       [getattr(h, "op", h) for h in graph.get_all_operations()])
        raise TypeError(
            f"evidence_flow needs an ExecNetwork or an exported graph dict, got {type(graph).__name__!r}"
        )

    # ----------------------------------------------------------------- lookups
    def resolve(self, node_id: str) -> NodeRec | None:
        """Return the node with this full node id, else the latest version of this full name."""
        rec = self.nodes.get(node_id)
        if rec is not None:
            return rec
        name, _ = split_full_node_id(node_id)
        versions = self.versions.get(node_id) or self.versions.get(name)
        if versions:
            # "latest" = last inserted, as smartcomment's get_latest_variable defines it
            return max(versions, key=lambda n: n.order)
        return None

    def op_category(self, op_id: str) -> str | None:
        """Return the category of an op (None if unknown)."""
        op = self.ops.get(op_id)
        return op.category if op else None

    def op_name(self, op_id: str) -> str | None:
        """Return the name of an op (None if unknown or unnamed)."""
        op = self.ops.get(op_id)
        return op.op_name if op else None

    def is_query_time_op(self, op_id: str) -> bool:
        """Return True for retrieval/evaluation ops (they do not build memory)."""
        return self.op_category(op_id) in QUERY_TIME_OP_CATEGORIES

    # ----------------------------------------------------------------- derived, computed once
    @cached_property
    def messages(self) -> list[NodeRec]:
        """Conversation message nodes, in creation order."""
        return sorted((n for n in self.nodes.values() if is_message(n)), key=lambda n: (n.created_at, n.order))

    @cached_property
    def speakers(self) -> frozenset[str]:
        """Lower-case first names of everyone who speaks in the conversation, each also as its
        content token ("caroline" and "carolin", "jonas" and "jona"), so that one set serves both
        word and token comparisons."""
        from ._text import stem

        names = set()
        for node in self.messages:
            name = message_speaker(node)
            if name:
                names.update((name, stem(name)))
        return frozenset(names)

    @cached_property
    def proper_names(self) -> frozenset[str]:
        """Words the conversation capitalises inside a sentence (names of people, pets, places),
        lower case, calendar words and stop words left out (the "The" of "my band, The Lanterns"
        names nobody)."""
        from ._text import content_tokens, message_text

        found: set[str] = set()
        for node in self.messages:
            found.update(w.lower() for w in _MID_SENTENCE_CAPITAL.findall(message_text(node.value)))
        return frozenset(w for w in found - _CALENDAR if content_tokens(w))

    @cached_property
    def message_tokens(self) -> dict[str, frozenset[str]]:
        """Content tokens of each message (what it says, without Mem0's metadata suffix)."""
        from ._text import content_tokens, message_text

        return {node.full_node_id: content_tokens(message_text(node.value)) for node in self.messages}

    @cached_property
    def document_frequency(self) -> dict[str, int]:
        """In how many messages each content token occurs (for rarity weights)."""
        counts: dict[str, int] = defaultdict(int)
        for tokens in self.message_tokens.values():
            for token in tokens:
                counts[token] += 1
        return dict(counts)

    @cached_property
    def construction_edges(self) -> list[EdgeRec]:
        """Edges of ops that build memory (not retrieval/evaluation), parameters left out, in order."""
        data = {node_id for node_id, node in self.nodes.items() if not is_parameter(node)}
        building = {op_id for op_id, op in self.ops.items() if op.category not in QUERY_TIME_OP_CATEGORIES}
        return [edge for edge in self.edges
                if edge.source in data and edge.target in data
                and (edge.op_id in building or edge.op_id not in self.ops)]

    @cached_property
    def memory_units(self) -> list[NodeRec]:
        """Memory unit nodes (every version), in record order."""
        return [n for n in self.nodes.values() if is_memory_unit(n)]

    @cached_property
    def unit_producers(self) -> dict[str, list[EdgeRec]]:
        """For each memory unit version, the construction edges that write it, in order."""
        out: dict[str, list[EdgeRec]] = defaultdict(list)
        for edge in self.construction_edges:
            if is_memory_unit(self.nodes[edge.target]):
                out[edge.target].append(edge)
        return dict(out)

    @cached_property
    def unit_deletions(self) -> list[EdgeRec]:
        """Construction edges from a memory unit to a deletion (a marker, or out of a deleting op), in order."""
        out = []
        for edge in self.construction_edges:
            source, target = self.nodes[edge.source], self.nodes[edge.target]
            if is_memory_unit(source) and not is_memory_unit(target) and (
                    is_delete_marker(target) or "delet" in (self.op_name(edge.op_id) or "").lower()):
                out.append(edge)
        return out

    @cached_property
    def memory_bound(self) -> frozenset[str]:
        """Nodes from which some memory unit can be reached over construction edges (units included)."""
        incoming: dict[str, list[str]] = defaultdict(list)
        for edge in self.construction_edges:
            incoming[edge.target].append(edge.source)
        seen = {n.full_node_id for n in self.nodes.values() if is_memory_unit(n)}
        stack = list(seen)
        while stack:
            for source in incoming.get(stack.pop(), ()):
                if source not in seen:
                    seen.add(source)
                    stack.append(source)
        return frozenset(seen)


def is_memory_unit(node: NodeRec) -> bool:
    """Memory units: category ``memory_entry`` or a ``memory-unit`` name."""
    return node.category == "memory_entry" or node.name.startswith("memory-unit")


def is_message(node: NodeRec) -> bool:
    """Conversation messages: category ``message`` without a class name."""
    return node.category == "message" and not node.class_name


def is_delete_marker(node: NodeRec) -> bool:
    """Nodes that mark an explicit deletion of their source unit."""
    if node.class_name == "delete_marker" or node.full_name.startswith("delete_marker"):
        return True
    return node.category == "marker" and "delete" in (node.full_name + " " + node.value).lower()


def is_parameter(node: NodeRec) -> bool:
    """Configuration values recorded as op inputs (``top_k``, chunk sizes, ...): never data."""
    labels = f"{node.category} {node.class_name or ''}".lower()
    if any(word in labels for word in _PARAMETER_WORDS):
        return True
    return bool(node.metadata.get("is_parameter") or node.metadata.get("parameter") is True)


def message_speaker(node: NodeRec) -> str | None:
    """Lower-case first name of a message's speaker (its ``name`` field or metadata), if any."""
    name = None
    try:
        value = json.loads(node.value)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        name = value["name"]
    for key in ("speakers", "speaker"):
        if not name and isinstance(node.metadata.get(key), str):
            name = node.metadata[key]
    if not name or not name.strip():
        return None
    return name.strip().split()[0].lower()
