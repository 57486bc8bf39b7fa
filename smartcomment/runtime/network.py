"""``ExecNetwork``: the execution graph of one traced run, its queries and its JSON form.

The JSON produced by :meth:`ExecNetwork.export_graph` is the smartcomment 0.1.2 export format
(the MemTraceBench file format): ``import_graph(x).export_graph() == x`` for every file written
by the reference, apart from extra ``data`` keys such as MemTraceBench's ``annotations``.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import uuid
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from smartcomment.drivers.base import GraphDriver, get_driver_class
from smartcomment.drivers.in_memory import InMemoryGraphDriver  # noqa: F401  (registers "in_memory")
from smartcomment.runtime.atomic import atomic_write_json
from smartcomment.runtime.errors import ExecNetworkKeyError, GraphFormatError
from smartcomment.runtime.graph import RuntimeGraph
from smartcomment.runtime.operation import RuntimeEdge, RuntimeOp
from smartcomment.runtime.session import RuntimeSession
from smartcomment.runtime.variable import RuntimeVariable
from smartcomment.schema.base import now_timestamp
from smartcomment.schema.operation import OpEdge, OpRecord
from smartcomment.schema.session import Session
from smartcomment.schema.variable import Variable

NONE_SESSION_ID = "__none__"
NONE_OP_ID = "__none_op__"
NONE_IDENTITY = "COMMENT:NONE"
NONE_FULL_NODE_ID = "COMMENT:NONE@1"
_SENTINEL_FILE = "<sentinel>"


def _as_set(values: str | Iterable[str] | None) -> set[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        return {values}
    return set(values)


def _by_time(items: Iterable[Any]) -> list[Any]:
    return sorted(items, key=lambda x: x.created_at)


def _in_window(created_at: str, start: str | None, end: str | None) -> bool:
    return (start is None or created_at >= start) and (end is None or created_at <= end)


class ExecNetwork:
    """An execution graph: sessions, variable versions, operations and their edges.

    Args:
        graph_id: Graph id (``graph-<uuid4 hex>`` by default).
        user_id: The traced user/trajectory (e.g. ``locomo-1``).
        project_id: The traced system (e.g. ``Mem0``).
        storage_path: Kept for format compatibility; unused.
        strict: When true, a changed value under an existing identity raises
            :class:`~smartcomment.runtime.errors.TraceConsistencyError`.
        driver_type: Storage backend; only ``"in_memory"``.
        created_at: Creation time (``YYYY-MM-DD HH:MM:SS.mmm``).
        metadata: Graph-level metadata.
    """

    def __init__(
        self,
        *,
        graph_id: str | None = None,
        user_id: str | None = None,
        project_id: str | None = None,
        storage_path: str | None = None,
        strict: bool = False,
        driver_type: str = "in_memory",
        created_at: str | None = None,
        metadata: dict[str, Any] | None = None,
        _driver: GraphDriver | None = None,
    ) -> None:
        self.graph_id = graph_id if graph_id is not None else "graph-" + uuid.uuid4().hex
        self.user_id = user_id
        self.project_id = project_id
        self.storage_path = storage_path
        self.strict = bool(strict)
        self.driver_type = driver_type
        self.created_at = created_at if created_at is not None else now_timestamp()
        self._metadata: dict[str, Any] = dict(metadata) if metadata else {}
        self._driver: GraphDriver = _driver if _driver is not None else get_driver_class(driver_type)()
        self._lock = getattr(self._driver, "_lock", None) or threading.RLock()

    # ------------------------------------------------------------------ metadata
    @property
    def metadata(self) -> dict[str, Any]:
        """A shallow copy of the graph metadata."""
        return dict(self._metadata)

    def update_metadata(self, metadata: dict[str, Any]) -> None:
        """Merge ``metadata`` into the graph metadata."""
        self._metadata.update(metadata)

    @property
    def driver(self) -> GraphDriver:
        """The storage backend."""
        return self._driver

    # ------------------------------------------------------------------ JSON
    def model_dump(self) -> dict[str, Any]:
        """The export dict (spec §3.1), keys in the reference order."""
        return {
            "graph_id": self.graph_id,
            "user_id": self.user_id,
            "project_id": self.project_id,
            "storage_path": self.storage_path,
            "strict": self.strict,
            "driver_type": self.driver_type,
            "created_at": self.created_at,
            "metadata": copy.deepcopy(self._metadata),
            "data": self._driver.serialize(),
        }

    def export_graph(self) -> dict[str, Any]:
        """Export the graph as a JSON-ready dict (the MemTraceBench/smartcomment 0.1.2 format)."""
        return self.model_dump()

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """The export as a JSON string."""
        return json.dumps(self.model_dump(), indent=indent, ensure_ascii=False)

    @classmethod
    def model_validate(cls, data: Any) -> ExecNetwork:
        """Build a graph from an export dict; see :meth:`import_graph`."""
        return cls.import_graph(data)

    @classmethod
    def import_graph(cls, data: Any) -> ExecNetwork:
        """Build a graph from an export dict without mutating it.

        Unknown top-level keys and unknown ``data`` keys (e.g. MemTraceBench ``annotations``)
        are ignored.

        Raises:
            GraphFormatError: the dict does not follow the export format; the message names
                the offending key (e.g. ``data.nodes[3].version``).
        """
        if not isinstance(data, dict):
            raise GraphFormatError(f"graph: expected a JSON object, got {type(data).__name__}")
        checks = {
            "graph_id": (str, False),
            "user_id": (str, True),
            "project_id": (str, True),
            "storage_path": (str, True),
            "created_at": (str, False),
            "driver_type": (str, False),
        }
        kwargs: dict[str, Any] = {}
        for key, (typ, nullable) in checks.items():
            if key in data:
                value = data[key]
                if not (isinstance(value, typ) or (nullable and value is None)):
                    raise GraphFormatError(f"graph.{key}: expected a string{' or null' if nullable else ''}, got {value!r}")
                kwargs[key] = value
        if "strict" in data:
            if not isinstance(data["strict"], bool):
                raise GraphFormatError(f"graph.strict: expected true or false, got {data['strict']!r}")
            kwargs["strict"] = data["strict"]
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise GraphFormatError(f"graph.metadata: expected an object, got {type(metadata).__name__}")
        driver_type = kwargs.get("driver_type", "in_memory")
        try:
            driver_cls = get_driver_class(driver_type)
        except ValueError as exc:
            raise GraphFormatError(f"graph.driver_type: {exc}") from None
        payload = data.get("data") or {}
        # Records copy what they keep (metadata included), so the caller's dict is never aliased.
        driver = driver_cls.deserialize(payload) if payload else driver_cls()
        return cls(metadata=copy.deepcopy(metadata), _driver=driver, **kwargs)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ExecNetwork:
        """Read a graph JSON file.

        Raises:
            GraphFormatError: the file is missing, not JSON, or not a graph export; the message
                names the file and the problem.
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise GraphFormatError(f"graph file {str(path)!r}: cannot be read ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise GraphFormatError(f"graph file {str(path)!r}: not UTF-8 text ({exc.reason})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GraphFormatError(
                f"graph file {str(path)!r}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); "
                "the file may be truncated"
            ) from None
        try:
            return cls.import_graph(data)
        except GraphFormatError as exc:
            raise GraphFormatError(f"graph file {str(path)!r}: {exc}") from None

    def to_file(self, path: str | os.PathLike[str], *, indent: int | None = 4) -> None:
        """Write the export atomically (temp file + fsync + rename) as UTF-8 JSON."""
        atomic_write_json(Path(path), self.model_dump(), indent=indent)

    # ------------------------------------------------------------------ counts
    def __contains__(self, full_node_id: object) -> bool:
        return isinstance(full_node_id, str) and self._driver.has_node(full_node_id)

    def __len__(self) -> int:
        return self.node_count

    @property
    def node_count(self) -> int:
        """Number of variable versions."""
        return len(self._driver.all_nodes())

    @property
    def edge_count(self) -> int:
        """Number of edges."""
        return len(self._driver.all_edges())

    @property
    def op_count(self) -> int:
        """Number of operations."""
        return len(self._driver.all_operations())

    @property
    def session_count(self) -> int:
        """Number of sessions."""
        return len(self._driver.all_sessions())

    @property
    def is_empty(self) -> bool:
        """True when the graph holds no variable."""
        return self.node_count == 0

    def __repr__(self) -> str:
        return (
            f"ExecNetwork(graph_id={self.graph_id!r}, nodes={self.node_count}, edges={self.edge_count}, "
            f"ops={self.op_count}, sessions={self.session_count})"
        )

    # ------------------------------------------------------------------ lookups
    def _node(self, full_node_id: str) -> Variable:
        node = self._driver.get_node(full_node_id)
        if node is None:
            raise ExecNetworkKeyError(f"variable {full_node_id!r} is not in graph {self.graph_id!r}")
        return node

    def get_variable(self, full_node_id: str) -> RuntimeVariable:
        """The variable version with this full node id (``ExecNetworkKeyError`` if missing)."""
        return RuntimeVariable(self._node(full_node_id))

    def get_operation(self, op_id: str) -> RuntimeOp:
        """The operation with this id (``ExecNetworkKeyError`` if missing)."""
        op = self._driver.get_operation(op_id)
        if op is None:
            raise ExecNetworkKeyError(f"operation {op_id!r} is not in graph {self.graph_id!r}")
        return RuntimeOp(op)

    def get_edge(self, edge_id: str) -> RuntimeEdge:
        """The edge with this id (``ExecNetworkKeyError`` if missing)."""
        edge = self._driver.get_edge(edge_id)
        if edge is None:
            raise ExecNetworkKeyError(f"edge {edge_id!r} is not in graph {self.graph_id!r}")
        return RuntimeEdge(edge)

    def get_session(self, session_id: str) -> RuntimeSession:
        """The session with this id (``ExecNetworkKeyError`` if missing)."""
        session = self._driver.get_session(session_id)
        if session is None:
            raise ExecNetworkKeyError(f"session {session_id!r} is not in graph {self.graph_id!r}")
        return RuntimeSession(session)

    def get_latest_variable(self, full_name: str) -> RuntimeVariable:
        """The most recently inserted version of ``full_name`` (``ExecNetworkKeyError`` if none)."""
        node = self._driver.get_latest_node(full_name)
        if node is None:
            raise ExecNetworkKeyError(f"no variable named {full_name!r} in graph {self.graph_id!r}")
        return RuntimeVariable(node)

    def get_versions(self, full_name: str) -> list[RuntimeVariable]:
        """All versions of ``full_name`` sorted by version (empty if none)."""
        return [RuntimeVariable(n) for n in self._driver.get_nodes_by_name(full_name)]

    def get_all_nodes(self) -> list[RuntimeVariable]:
        """Every variable version in insertion order."""
        return [RuntimeVariable(n) for n in self._driver.all_nodes()]

    def get_all_edges(self) -> list[RuntimeEdge]:
        """Every edge in insertion order."""
        return [RuntimeEdge(e) for e in self._driver.all_edges()]

    def get_all_operations(self) -> list[RuntimeOp]:
        """Every operation in insertion order."""
        return [RuntimeOp(o) for o in self._driver.all_operations()]

    def get_all_sessions(self) -> list[RuntimeSession]:
        """Every session in insertion order."""
        return [RuntimeSession(s) for s in self._driver.all_sessions()]

    def get_operations_by_variable(self, full_node_id: str) -> list[RuntimeOp]:
        """Distinct operations owning an incoming or outgoing edge of the variable, by time."""
        self._node(full_node_id)
        driver = self._driver
        op_ids: dict[str, None] = {}
        for direction in ("incoming", "outgoing"):
            for edge in driver.get_edges_by_node(full_node_id, direction):
                op_ids[edge.op_id] = None
        return _by_time(RuntimeOp(driver.get_operation(op_id)) for op_id in op_ids)

    def get_root_nodes(self) -> list[RuntimeVariable]:
        """Variables without an incoming edge (isolated variables included)."""
        driver = self._driver
        return [RuntimeVariable(n) for n in driver.all_nodes() if not driver.get_edges_by_node(n.full_node_id, "incoming")]

    def get_leaf_nodes(self) -> list[RuntimeVariable]:
        """Variables without an outgoing edge."""
        driver = self._driver
        return [RuntimeVariable(n) for n in driver.all_nodes() if not driver.get_edges_by_node(n.full_node_id, "outgoing")]

    # ------------------------------------------------------------------ reachability
    def _reachable_closure(
        self, full_node_id: str, direction: Literal["outgoing", "incoming"] = "outgoing", max_depth: int | None = None
    ) -> set[str]:
        """Ids reachable from the start along ``direction`` edges, start included."""
        self._node(full_node_id)
        end = "target_full_node_id" if direction == "outgoing" else "source_full_node_id"
        seen = {full_node_id}
        frontier = deque([(full_node_id, 0)])
        while frontier:
            current, depth = frontier.popleft()
            if max_depth is not None and depth >= max_depth:
                continue
            for edge in self._driver.get_edges_by_node(current, direction):
                nxt = getattr(edge, end)
                if nxt not in seen:
                    seen.add(nxt)
                    frontier.append((nxt, depth + 1))
        return seen

    def get_ancestors(self, full_node_id: str, max_depth: int | None = None) -> list[RuntimeVariable]:
        """Upstream variables (start excluded), by creation time."""
        ids = self._reachable_closure(full_node_id, "incoming", max_depth) - {full_node_id}
        return _by_time(RuntimeVariable(self._node(i)) for i in ids)

    def get_descendants(self, full_node_id: str, max_depth: int | None = None) -> list[RuntimeVariable]:
        """Downstream variables (start excluded), by creation time."""
        ids = self._reachable_closure(full_node_id, "outgoing", max_depth) - {full_node_id}
        return _by_time(RuntimeVariable(self._node(i)) for i in ids)

    def _sessions_of(self, ids: Iterable[str]) -> list[RuntimeSession]:
        session_ids = {self._node(i).session_id for i in ids}
        return _by_time(RuntimeSession(self._driver.get_session(s)) for s in session_ids)

    def contributing_sessions(self, full_node_id: str) -> list[RuntimeSession]:
        """Sessions of the variable's upstream closure (start included), by creation time."""
        return self._sessions_of(self._reachable_closure(full_node_id, "incoming"))

    def get_downstream_sessions(self, full_node_id: str) -> list[RuntimeSession]:
        """Sessions of the variable's downstream closure (start included), by creation time."""
        return self._sessions_of(self._reachable_closure(full_node_id, "outgoing"))

    # ------------------------------------------------------------------ subgraphs
    def _graph_from(self, node_ids: Iterable[str], edges: Iterable[OpEdge]) -> RuntimeGraph:
        driver = self._driver
        edge_list = list(edges)
        op_ids: dict[str, None] = {}
        for e in edge_list:
            op_ids[e.op_id] = None
        return RuntimeGraph(
            [RuntimeVariable(driver.get_node(i)) for i in node_ids],
            [RuntimeEdge(e) for e in edge_list],
            [RuntimeOp(driver.get_operation(o)) for o in op_ids],
        )

    def induced_subgraph(self, ids: Iterable[str]) -> RuntimeGraph:
        """Nodes in ``ids`` (missing ignored), edges with both ends inside, their ops."""
        driver = self._driver
        keep: dict[str, None] = {}
        for i in ids:
            if driver.has_node(i):
                keep[i] = None
        edges = [
            e
            for node_id in keep
            for e in driver.get_edges_by_node(node_id, "outgoing")
            if e.target_full_node_id in keep
        ]
        return self._graph_from(keep, edges)

    def filter_by_session(self, session_ids: str | Iterable[str]) -> RuntimeGraph:
        """Variables of those sessions, the edges between them and their ops."""
        wanted = _as_set(session_ids) or set()
        return self.induced_subgraph(n.full_node_id for n in self._driver.all_nodes() if n.session_id in wanted)

    def filter_by_category(self, categories: str | Iterable[str]) -> RuntimeGraph:
        """Variables of those categories, the edges between them and their ops."""
        wanted = _as_set(categories) or set()
        return self.induced_subgraph(n.full_node_id for n in self._driver.all_nodes() if n.category in wanted)

    def filter_by_time(self, start: str | None = None, end: str | None = None, exclude: bool = False) -> RuntimeGraph:
        """Variables created within ``[start, end]`` (or strictly outside when ``exclude``), induced."""
        return self.induced_subgraph(
            n.full_node_id for n in self._driver.all_nodes() if _in_window(n.created_at, start, end) != exclude
        )

    def filter_by_operation(self, op_ids: str | Iterable[str]) -> RuntimeGraph:
        """The operation subgraph: all edges of those ops, their endpoints, and the ops.

        Unknown op ids and ops without edges contribute nothing.
        """
        driver = self._driver
        wanted = [op_ids] if isinstance(op_ids, str) else list(dict.fromkeys(op_ids))
        nodes: dict[str, None] = {}
        edges: list[OpEdge] = []
        ops: list[RuntimeOp] = []
        for op_id in wanted:
            op = driver.get_operation(op_id)
            op_edges = driver.get_edges_by_operation(op_id) if op is not None else []
            if not op_edges:
                continue  # an edgeless op contributes nothing, as in smartcomment 0.1.2
            ops.append(RuntimeOp(op))
            for e in op_edges:
                edges.append(e)
                nodes[e.source_full_node_id] = None
                nodes[e.target_full_node_id] = None
        return RuntimeGraph([RuntimeVariable(driver.get_node(i)) for i in nodes], [RuntimeEdge(e) for e in edges], ops)

    def get_operation_subgraphs(self, full_name: str, version: int | None = None) -> list[RuntimeGraph]:
        """Incoming edges of a variable grouped by edge category: one subgraph per group.

        Each subgraph holds the group's source variables, the variable itself, the edges and
        their ops. Groups come in order of their first incoming edge.
        """
        node = self._node(f"{full_name}@{version}") if version is not None else self.get_latest_variable(full_name).variable
        groups: dict[str, list[OpEdge]] = {}
        for e in self._driver.get_edges_by_node(node.full_node_id, "incoming"):
            groups.setdefault(e.category, []).append(e)
        return [
            self._graph_from(dict.fromkeys([e.source_full_node_id for e in edges] + [node.full_node_id]), edges)
            for edges in groups.values()
        ]

    def get_child_subgraphs(self, full_name: str, version: int | None = None) -> list[RuntimeGraph]:
        """The operation subgraphs of every distinct child of the variable, concatenated."""
        node = self._node(f"{full_name}@{version}") if version is not None else self.get_latest_variable(full_name).variable
        children: dict[str, Variable] = {}
        for e in self._driver.get_edges_by_node(node.full_node_id, "outgoing"):
            child = self._driver.get_node(e.target_full_node_id)
            children.setdefault(child.full_name, child)
        return [sub for name, child in children.items() for sub in self.get_operation_subgraphs(name, child.version)]

    def bfs(
        self,
        full_node_id: str,
        direction: Literal["forward", "backward", "both"] = "forward",
        *,
        max_depth: int | None = None,
        op_ids: Iterable[str] | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
        categories: Iterable[str] | str | None = None,
        session_ids: Iterable[str] | str | None = None,
        include_sibling_inputs: bool = False,
    ) -> RuntimeGraph:
        """Breadth-first walk from a variable; the result holds only the edges actually walked.

        ``"both"`` expands the forward cone along outgoing edges and the backward cone along
        incoming edges. With ``include_sibling_inputs`` a forward step also adds the other
        inputs of the same op into the target, as non-expanding boundary nodes.
        """
        if direction not in ("forward", "backward", "both"):
            raise ValueError(f"direction must be 'forward', 'backward' or 'both', got {direction!r}")
        self._node(full_node_id)
        driver = self._driver
        op_filter = _as_set(op_ids)
        cat_filter = _as_set(categories)
        session_filter = _as_set(session_ids)

        def node_ok(node_id: str) -> bool:
            n = driver.get_node(node_id)
            return (
                (cat_filter is None or n.category in cat_filter)
                and _in_window(n.created_at, start_time, end_time)
                and (session_filter is None or n.session_id in session_filter)
            )

        nodes: dict[str, None] = {full_node_id: None}
        edges: dict[str, OpEdge] = {}

        def walk(forward: bool) -> None:
            # The depth limit only stops new nodes: an edge back to an already visited node is
            # still collected (smartcomment 0.1.2 behaves the same way).
            direction_key = "outgoing" if forward else "incoming"
            seen = {full_node_id}
            queue = deque([(full_node_id, 0)])
            while queue:
                current, depth = queue.popleft()
                for e in driver.get_edges_by_node(current, direction_key):
                    if op_filter is not None and e.op_id not in op_filter:
                        continue
                    nxt = e.target_full_node_id if forward else e.source_full_node_id
                    if nxt not in seen:
                        if (max_depth is not None and depth >= max_depth) or not node_ok(nxt):
                            continue
                        seen.add(nxt)
                        queue.append((nxt, depth + 1))
                    edges.setdefault(e.edge_id, e)
                    nodes[nxt] = None
                    if forward and include_sibling_inputs:
                        for sib in driver.get_edges_by_node(nxt, "incoming"):
                            if sib.op_id == e.op_id and sib.edge_id != e.edge_id and node_ok(sib.source_full_node_id):
                                edges.setdefault(sib.edge_id, sib)
                                nodes.setdefault(sib.source_full_node_id, None)

        if direction in ("forward", "both"):
            walk(True)
        if direction in ("backward", "both"):
            walk(False)
        return self._graph_from(nodes, edges.values())

    def time_range(self) -> tuple[str, str] | None:
        """``(min, max)`` variable creation time, or None for an empty graph."""
        stamps = [n.created_at for n in self._driver.all_nodes()]
        return (min(stamps), max(stamps)) if stamps else None

    def to_runtime_graph(self) -> RuntimeGraph:
        """The whole graph as a :class:`RuntimeGraph`."""
        return RuntimeGraph(self.get_all_nodes(), self.get_all_edges(), self.get_all_operations())

    # ------------------------------------------------------------------ searches
    def search_sessions(
        self,
        *,
        name_pattern: str | None = None,
        category: str | Iterable[str] | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
    ) -> list[RuntimeSession]:
        """Sessions matching all filters (regex ``search`` on the session name), by time."""
        rx = _compile(name_pattern)
        cats = _as_set(category)
        return _by_time(
            RuntimeSession(s)
            for s in self._driver.all_sessions()
            if (rx is None or (s.session_name is not None and rx.search(s.session_name)))
            and (cats is None or s.category in cats)
            and _in_window(s.created_at, start_time, end_time)
        )

    def search_operations(
        self,
        *,
        name_pattern: str | None = None,
        category: str | Iterable[str] | None = None,
        session_ids: str | Iterable[str] | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
    ) -> list[RuntimeOp]:
        """Operations matching all filters (regex ``search`` on the op name), by time."""
        rx = _compile(name_pattern)
        cats = _as_set(category)
        sessions = _as_set(session_ids)
        return _by_time(
            RuntimeOp(o)
            for o in self._driver.all_operations()
            if (rx is None or (o.op_name is not None and rx.search(o.op_name)))
            and (cats is None or o.category in cats)
            and (sessions is None or o.session_id in sessions)
            and _in_window(o.created_at, start_time, end_time)
        )

    def search_variables(
        self,
        *,
        name_pattern: str | None = None,
        category: str | Iterable[str] | None = None,
        class_name: str | None = None,
        session_ids: str | Iterable[str] | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
    ) -> list[RuntimeVariable]:
        """Variables matching all filters (regex ``search`` on the full name), by time."""
        rx = _compile(name_pattern)
        cats = _as_set(category)
        sessions = _as_set(session_ids)
        return _by_time(
            RuntimeVariable(n)
            for n in self._driver.all_nodes()
            if (rx is None or rx.search(n.full_name))
            and (cats is None or n.category in cats)
            and (class_name is None or n.class_name == class_name)
            and (sessions is None or n.session_id in sessions)
            and _in_window(n.created_at, start_time, end_time)
        )

    def search_edges(
        self,
        *,
        category: str | Iterable[str] | None = None,
        op_ids: str | Iterable[str] | None = None,
        session_ids: str | Iterable[str] | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
    ) -> list[RuntimeEdge]:
        """Edges matching all filters, by time."""
        cats = _as_set(category)
        ops = _as_set(op_ids)
        sessions = _as_set(session_ids)
        return _by_time(
            RuntimeEdge(e)
            for e in self._driver.all_edges()
            if (cats is None or e.category in cats)
            and (ops is None or e.op_id in ops)
            and (sessions is None or e.session_id in sessions)
            and _in_window(e.created_at, start_time, end_time)
        )

    # ------------------------------------------------------------------ mutation
    def _adopt(self, record: Any) -> Any:
        clone = record.model_copy()
        clone.graph_id = self.graph_id
        clone.user_id = self.user_id
        clone.project_id = self.project_id
        return clone

    def add_variable(self, rv: RuntimeVariable) -> RuntimeVariable:
        """Insert a copy of the variable under this graph's ids."""
        if not isinstance(rv, RuntimeVariable):
            raise TypeError(f"add_variable expects a RuntimeVariable, got {type(rv).__name__}")
        if rv.full_name == NONE_IDENTITY:
            raise ValueError(f"{NONE_IDENTITY!r} is reserved for the NONE sentinel node")
        node = self._adopt(rv.variable)
        with self._lock:
            self._driver.add_node(node)
        return RuntimeVariable(node)

    def add_edge(self, re_: RuntimeEdge) -> RuntimeEdge:
        """Insert a copy of the edge under this graph's ids."""
        if not isinstance(re_, RuntimeEdge):
            raise TypeError(f"add_edge expects a RuntimeEdge, got {type(re_).__name__}")
        edge = self._adopt(re_.edge)
        with self._lock:
            self._driver.add_edge(edge)
        return RuntimeEdge(edge)

    def add_operation(self, ro: RuntimeOp) -> RuntimeOp:
        """Insert a copy of the operation under this graph's ids."""
        if not isinstance(ro, RuntimeOp):
            raise TypeError(f"add_operation expects a RuntimeOp, got {type(ro).__name__}")
        if ro.op_id == NONE_OP_ID:
            raise ValueError(f"operation id {NONE_OP_ID!r} is reserved for the NONE sentinel op")
        op = self._adopt(ro.op)
        with self._lock:
            self._driver.add_operation(op)
        return RuntimeOp(op)

    def add_session(self, rs: RuntimeSession) -> RuntimeSession:
        """Insert a copy of the session under this graph's ids."""
        if not isinstance(rs, RuntimeSession):
            raise TypeError(f"add_session expects a RuntimeSession, got {type(rs).__name__}")
        if rs.session_id == NONE_SESSION_ID:
            raise ValueError(f"session id {NONE_SESSION_ID!r} is reserved for the NONE sentinel session")
        session = self._adopt(rs.session)
        with self._lock:
            self._driver.add_session(session)
        return RuntimeSession(session)

    def remove_variable(self, full_node_id: str) -> None:
        """Remove a variable version and its edges."""
        self._node(full_node_id)
        with self._lock:
            self._driver.remove_node(full_node_id)

    def remove_edge(self, edge_id: str) -> None:
        """Remove an edge."""
        self.get_edge(edge_id)
        with self._lock:
            self._driver.remove_edge(edge_id)

    def remove_operation(self, op_id: str) -> None:
        """Remove an operation and its edges."""
        self.get_operation(op_id)
        with self._lock:
            self._driver.remove_operation(op_id)

    def remove_session(self, session_id: str) -> None:
        """Remove a session with its operations, variables and edges."""
        self.get_session(session_id)
        with self._lock:
            self._driver.remove_session(session_id)

    # ------------------------------------------------------------------ sentinels (used by the tracer)
    def _none_session(self) -> Session:
        session = self._driver.get_session(NONE_SESSION_ID)
        if session is None:
            session = Session(
                session_id=NONE_SESSION_ID, session_name="NONE sentinel", category="sentinel",
                graph_id=self.graph_id, user_id=self.user_id, project_id=self.project_id,
                filename=_SENTINEL_FILE, lineno=0,
            )
            self._driver.add_session(session)
        return session

    def _none_node(self) -> Variable:
        node = self._driver.get_node(NONE_FULL_NODE_ID)
        if node is None:
            self._none_session()
            node = Variable(
                name=NONE_IDENTITY, version=1, value="NONE", category="sentinel", session_id=NONE_SESSION_ID,
                graph_id=self.graph_id, user_id=self.user_id, project_id=self.project_id,
                filename=_SENTINEL_FILE, lineno=0,
            )
            self._driver.add_node(node)
        return node

    def _none_op(self) -> OpRecord:
        op = self._driver.get_operation(NONE_OP_ID)
        if op is None:
            self._none_session()
            op = OpRecord(
                op_id=NONE_OP_ID, op_name="NONE sentinel", category="sentinel", session_id=NONE_SESSION_ID,
                graph_id=self.graph_id, user_id=self.user_id, project_id=self.project_id,
                filename=_SENTINEL_FILE, lineno=0,
            )
            self._driver.add_operation(op)
        return op

    # ------------------------------------------------------------------ visualisation
    def visualize(self, backend: str = "dot", **kwargs: Any) -> Any:
        """Render the whole graph with a visual backend (``"dot"`` gives DOT text)."""
        return self.to_runtime_graph().visualize(backend=backend, **kwargs)


def _compile(pattern: str | None):
    if pattern is None:
        return None
    import re

    return re.compile(pattern)
