"""The storage interface behind :class:`~smartcomment.runtime.network.ExecNetwork`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Literal

from smartcomment.schema.operation import OpEdge, OpRecord
from smartcomment.schema.session import Session
from smartcomment.schema.variable import Variable

Direction = Literal["outgoing", "incoming"]


class GraphDriver(ABC):
    """Stores sessions, variables, operations and edges; enforces referential integrity."""

    @abstractmethod
    def add_node(self, node: Variable) -> None:
        """Store a new variable version; its session must exist and its id must be new."""

    @abstractmethod
    def remove_node(self, full_node_id: str) -> None:
        """Remove a node and every edge touching it; unknown ids are ignored."""

    @abstractmethod
    def has_node(self, full_node_id: str) -> bool:
        """Whether a node with this id is stored."""

    @abstractmethod
    def get_node(self, full_node_id: str) -> Variable | None:
        """The node with this id, or None."""

    @abstractmethod
    def get_nodes_by_name(self, full_name: str) -> list[Variable]:
        """Every version stored under ``full_name``, oldest first."""

    @abstractmethod
    def get_latest_node(self, full_name: str) -> Variable | None:
        """The newest version under ``full_name``, or None."""

    @abstractmethod
    def add_edge(self, edge: OpEdge) -> None:
        """Store an edge; its session, op and both end nodes must exist and its id must be new."""

    @abstractmethod
    def remove_edge(self, edge_id: str) -> None:
        """Remove an edge; unknown ids are ignored."""

    @abstractmethod
    def get_edge(self, edge_id: str) -> OpEdge | None:
        """The edge with this id, or None."""

    @abstractmethod
    def get_edges_by_node(self, full_node_id: str, direction: Direction = "outgoing") -> list[OpEdge]:
        """The node's outgoing or incoming edges, in a deterministic order."""

    @abstractmethod
    def get_edges_by_operation(self, op_id: str) -> list[OpEdge]:
        """The edges recorded by one op, in a deterministic order."""

    @abstractmethod
    def add_operation(self, op: OpRecord) -> None:
        """Store an op; its session must exist and its id must be new."""

    @abstractmethod
    def remove_operation(self, op_id: str) -> None:
        """Remove an op and its edges; unknown ids are ignored."""

    @abstractmethod
    def get_operation(self, op_id: str) -> OpRecord | None:
        """The op with this id, or None."""

    @abstractmethod
    def add_session(self, session: Session) -> None:
        """Store a new session."""

    @abstractmethod
    def remove_session(self, session_id: str) -> None:
        """Remove a session with its ops, nodes and edges; unknown ids are ignored."""

    @abstractmethod
    def get_session(self, session_id: str) -> Session | None:
        """The session with this id, or None."""

    @abstractmethod
    def all_nodes(self) -> Iterable[Variable]:
        """Every stored node."""

    @abstractmethod
    def all_edges(self) -> Iterable[OpEdge]:
        """Every stored edge."""

    @abstractmethod
    def all_operations(self) -> Iterable[OpRecord]:
        """Every stored op."""

    @abstractmethod
    def all_sessions(self) -> Iterable[Session]:
        """Every stored session."""

    @abstractmethod
    def serialize(self) -> dict[str, list[dict[str, Any]]]:
        """The stored records as JSON-ready lists under ``nodes``, ``edges``, ``operations``, ``sessions``."""

    @classmethod
    @abstractmethod
    def deserialize(cls, data: dict[str, Any]) -> GraphDriver:
        """Rebuild a driver from :meth:`serialize` output."""


_DRIVERS: dict[str, type[GraphDriver]] = {}


def register_driver(name: str, cls: type[GraphDriver]) -> None:
    """Make a driver class available under ``driver_type=name``."""
    _DRIVERS[name] = cls


def get_driver_class(name: str) -> type[GraphDriver]:
    """Return the driver class registered under ``name`` (ValueError if unknown)."""
    try:
        return _DRIVERS[name]
    except KeyError:
        raise ValueError(f"unknown driver_type {name!r}; available: {sorted(_DRIVERS)}") from None
