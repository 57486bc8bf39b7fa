"""Dict-backed driver with the indexes that make the graph queries cost O(answer).

Indexes: full_name -> versions (insertion order), node -> outgoing/incoming edge ids,
op -> edge ids, session -> node ids / op ids. Edge sets are insertion-ordered dicts, so every
query returns a deterministic order (smartcomment 0.1.2 iterated Python sets here).
"""

from __future__ import annotations

import threading
from typing import Any

from smartcomment.drivers.base import Direction, GraphDriver, register_driver
from smartcomment.runtime.errors import GraphFormatError
from smartcomment.schema._validate import validate_record
from smartcomment.schema.base import gc_paused
from smartcomment.schema.operation import OpEdge, OpRecord
from smartcomment.schema.session import Session
from smartcomment.schema.variable import Variable


class InMemoryGraphDriver(GraphDriver):
    """The in-memory backend (``driver_type="in_memory"``)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._nodes: dict[str, Variable] = {}
        self._by_name: dict[str, list[Variable]] = {}
        self._edges: dict[str, OpEdge] = {}
        self._out: dict[str, dict[str, None]] = {}
        self._in: dict[str, dict[str, None]] = {}
        self._op_edges: dict[str, dict[str, None]] = {}
        self._ops: dict[str, OpRecord] = {}
        self._sessions: dict[str, Session] = {}
        self._session_nodes: dict[str, dict[str, None]] = {}
        self._session_ops: dict[str, dict[str, None]] = {}

    # ------------------------------------------------------------------ nodes
    def add_node(self, node: Variable) -> None:
        """Store a new node version; ValueError if its id exists or its session is missing."""
        key = node.full_node_id
        if key in self._nodes:
            raise ValueError(f"node {key!r} already exists")
        if node.session_id not in self._sessions:
            raise ValueError(f"node {key!r} refers to missing session {node.session_id!r}")
        self._nodes[key] = node
        self._by_name.setdefault(node.full_name, []).append(node)
        self._session_nodes[node.session_id][key] = None

    def remove_node(self, full_node_id: str) -> None:
        """Remove a node and every edge touching it (no-op for an unknown id)."""
        node = self._nodes.get(full_node_id)
        if node is None:
            return
        for edge_id in list(self._out.get(full_node_id, ())) + list(self._in.get(full_node_id, ())):
            self.remove_edge(edge_id)
        del self._nodes[full_node_id]
        versions = self._by_name[node.full_name]
        versions.remove(node)
        if not versions:
            del self._by_name[node.full_name]
        self._out.pop(full_node_id, None)
        self._in.pop(full_node_id, None)
        self._session_nodes.get(node.session_id, {}).pop(full_node_id, None)

    def has_node(self, full_node_id: str) -> bool:
        """Whether the node id is stored."""
        return full_node_id in self._nodes

    def get_node(self, full_node_id: str) -> Variable | None:
        """The node with this id, or None."""
        return self._nodes.get(full_node_id)

    def get_nodes_by_name(self, full_name: str) -> list[Variable]:
        """Every version stored under ``full_name``, oldest first."""
        return sorted(self._by_name.get(full_name, ()), key=lambda n: n.version)

    def get_latest_node(self, full_name: str) -> Variable | None:
        """The most recently added version under ``full_name``, or None."""
        versions = self._by_name.get(full_name)
        return versions[-1] if versions else None

    # ------------------------------------------------------------------ edges
    def add_edge(self, edge: OpEdge) -> None:
        """Store an edge; ValueError if its id exists or its session, op or either end is missing."""
        key = edge.edge_id
        if key in self._edges:
            raise ValueError(f"edge {key!r} already exists")
        if edge.session_id not in self._sessions:
            raise ValueError(f"edge {key!r} refers to missing session {edge.session_id!r}")
        if edge.op_id not in self._ops:
            raise ValueError(f"edge {key!r} refers to missing operation {edge.op_id!r}")
        for end in (edge.source_full_node_id, edge.target_full_node_id):
            if end not in self._nodes:
                raise ValueError(f"edge {key!r} refers to missing node {end!r}")
        self._edges[key] = edge
        self._out.setdefault(edge.source_full_node_id, {})[key] = None
        self._in.setdefault(edge.target_full_node_id, {})[key] = None
        self._op_edges[edge.op_id][key] = None

    def remove_edge(self, edge_id: str) -> None:
        """Remove an edge from every index (no-op for an unknown id)."""
        edge = self._edges.pop(edge_id, None)
        if edge is None:
            return
        self._out.get(edge.source_full_node_id, {}).pop(edge_id, None)
        self._in.get(edge.target_full_node_id, {}).pop(edge_id, None)
        self._op_edges.get(edge.op_id, {}).pop(edge_id, None)

    def get_edge(self, edge_id: str) -> OpEdge | None:
        """The edge with this id, or None."""
        return self._edges.get(edge_id)

    def get_edges_by_node(self, full_node_id: str, direction: Direction = "outgoing") -> list[OpEdge]:
        """The node's outgoing or incoming edges, in insertion order."""
        if direction == "outgoing":
            ids = self._out.get(full_node_id, ())
        elif direction == "incoming":
            ids = self._in.get(full_node_id, ())
        else:
            raise ValueError(f"direction must be 'outgoing' or 'incoming', got {direction!r}")
        edges = self._edges
        return [edges[i] for i in ids]

    def get_edges_by_operation(self, op_id: str) -> list[OpEdge]:
        """The op's edges, in insertion order."""
        edges = self._edges
        return [edges[i] for i in self._op_edges.get(op_id, ())]

    def out_degree(self, full_node_id: str) -> int:
        """Number of edges leaving the node."""
        return len(self._out.get(full_node_id, ()))

    def in_degree(self, full_node_id: str) -> int:
        """Number of edges entering the node."""
        return len(self._in.get(full_node_id, ()))

    # ------------------------------------------------------------------ operations
    def add_operation(self, op: OpRecord) -> None:
        """Store an op; ValueError if its id exists or its session is missing."""
        if op.op_id in self._ops:
            raise ValueError(f"operation {op.op_id!r} already exists")
        if op.session_id not in self._sessions:
            raise ValueError(f"operation {op.op_id!r} refers to missing session {op.session_id!r}")
        self._ops[op.op_id] = op
        self._op_edges[op.op_id] = {}
        self._session_ops[op.session_id][op.op_id] = None

    def remove_operation(self, op_id: str) -> None:
        """Remove an op and its edges (no-op for an unknown id)."""
        op = self._ops.get(op_id)
        if op is None:
            return
        for edge_id in list(self._op_edges.get(op_id, ())):
            self.remove_edge(edge_id)
        del self._ops[op_id]
        self._op_edges.pop(op_id, None)
        self._session_ops.get(op.session_id, {}).pop(op_id, None)

    def get_operation(self, op_id: str) -> OpRecord | None:
        """The op with this id, or None."""
        return self._ops.get(op_id)

    # ------------------------------------------------------------------ sessions
    def add_session(self, session: Session) -> None:
        """Store a session; ValueError if its id exists."""
        if session.session_id in self._sessions:
            raise ValueError(f"session {session.session_id!r} already exists")
        self._sessions[session.session_id] = session
        self._session_nodes[session.session_id] = {}
        self._session_ops[session.session_id] = {}

    def remove_session(self, session_id: str) -> None:
        """Remove a session with its ops, nodes and edges (no-op for an unknown id)."""
        if session_id not in self._sessions:
            return
        for op_id in list(self._session_ops.get(session_id, ())):
            self.remove_operation(op_id)
        for node_id in list(self._session_nodes.get(session_id, ())):
            self.remove_node(node_id)
        for edge in [e for e in self._edges.values() if e.session_id == session_id]:
            self.remove_edge(edge.edge_id)
        del self._sessions[session_id]
        self._session_nodes.pop(session_id, None)
        self._session_ops.pop(session_id, None)

    def get_session(self, session_id: str) -> Session | None:
        """The session with this id, or None."""
        return self._sessions.get(session_id)

    # ------------------------------------------------------------------ bulk
    def all_nodes(self) -> list[Variable]:
        """Every node, in insertion order."""
        return list(self._nodes.values())

    def all_edges(self) -> list[OpEdge]:
        """Every edge, in insertion order."""
        return list(self._edges.values())

    def all_operations(self) -> list[OpRecord]:
        """Every op, in insertion order."""
        return list(self._ops.values())

    def all_sessions(self) -> list[Session]:
        """Every session, in insertion order."""
        return list(self._sessions.values())

    def node_ids_of_session(self, session_id: str) -> list[str]:
        """Ids of the session's nodes, in insertion order."""
        return list(self._session_nodes.get(session_id, ()))

    def serialize(self) -> dict[str, list[dict[str, Any]]]:
        """The four record lists as JSON-ready dicts (``nodes``, ``edges``, ``operations``, ``sessions``)."""
        with gc_paused():
            return {
                "nodes": [n.model_dump() for n in self._nodes.values()],
                "edges": [e.model_dump() for e in self._edges.values()],
                "operations": [o.model_dump() for o in self._ops.values()],
                "sessions": [s.model_dump() for s in self._sessions.values()],
            }

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> InMemoryGraphDriver:
        """Rebuild a driver from :meth:`serialize` output; unknown keys (annotations) are ignored."""
        if not isinstance(data, dict):
            raise GraphFormatError(f"data: expected an object, got {type(data).__name__}")
        driver = cls()
        steps = (
            ("sessions", Session, driver.add_session),
            ("nodes", Variable, driver.add_node),
            ("operations", OpRecord, driver.add_operation),
            ("edges", OpEdge, driver.add_edge),
        )
        with gc_paused():
            for key, record_cls, add in steps:
                cls._load_section(data, key, record_cls, add)
        return driver

    @staticmethod
    def _load_section(data: dict[str, Any], key: str, record_cls: type, add: Any) -> None:
        items = data.get(key) or []
        if not isinstance(items, list):
            raise GraphFormatError(f"data.{key}: expected a list, got {type(items).__name__}")
        for i, item in enumerate(items):
            where = f"data.{key}[{i}]"
            record = validate_record(record_cls, item, where=where)
            try:
                add(record)
            except ValueError as exc:  # integrity errors of the driver
                raise GraphFormatError(f"{where}: {exc}") from None

register_driver("in_memory", InMemoryGraphDriver)
