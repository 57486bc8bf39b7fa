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
    def add_node(self, node: Variable) -> None: ...
    @abstractmethod
    def remove_node(self, full_node_id: str) -> None: ...
    @abstractmethod
    def has_node(self, full_node_id: str) -> bool: ...
    @abstractmethod
    def get_node(self, full_node_id: str) -> Variable | None: ...
    @abstractmethod
    def get_nodes_by_name(self, full_name: str) -> list[Variable]: ...
    @abstractmethod
    def get_latest_node(self, full_name: str) -> Variable | None: ...
    @abstractmethod
    def add_edge(self, edge: OpEdge) -> None: ...
    @abstractmethod
    def remove_edge(self, edge_id: str) -> None: ...
    @abstractmethod
    def get_edge(self, edge_id: str) -> OpEdge | None: ...
    @abstractmethod
    def get_edges_by_node(self, full_node_id: str, direction: Direction = "outgoing") -> list[OpEdge]: ...
    @abstractmethod
    def get_edges_by_operation(self, op_id: str) -> list[OpEdge]: ...
    @abstractmethod
    def add_operation(self, op: OpRecord) -> None: ...
    @abstractmethod
    def remove_operation(self, op_id: str) -> None: ...
    @abstractmethod
    def get_operation(self, op_id: str) -> OpRecord | None: ...
    @abstractmethod
    def add_session(self, session: Session) -> None: ...
    @abstractmethod
    def remove_session(self, session_id: str) -> None: ...
    @abstractmethod
    def get_session(self, session_id: str) -> Session | None: ...
    @abstractmethod
    def all_nodes(self) -> Iterable[Variable]: ...
    @abstractmethod
    def all_edges(self) -> Iterable[OpEdge]: ...
    @abstractmethod
    def all_operations(self) -> Iterable[OpRecord]: ...
    @abstractmethod
    def all_sessions(self) -> Iterable[Session]: ...
    @abstractmethod
    def serialize(self) -> dict[str, list[dict[str, Any]]]: ...

    @classmethod
    @abstractmethod
    def deserialize(cls, data: dict[str, Any]) -> GraphDriver: ...


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
