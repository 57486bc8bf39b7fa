"""Records of the graph-search notebook: one frontier/history entry, and the whole search state.

The frontier is ordered by *variable creation time* (then id), so exploring "the head" walks the
execution graph in execution order. Unlike the reference, the node being explored is tracked by
id rather than inferred from the frontier head: adding an earlier variable (an older message, a
previous memory version) while a node is being explored must not change which node is being
explored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, computed_field, field_validator
from sortedcontainers import SortedDict

__all__ = [
    "DUMMY_OP_COMMENT",
    "DUMMY_OP_ID",
    "DUMMY_ROOT_CATEGORY",
    "DUMMY_ROOT_COMMENT",
    "DUMMY_ROOT_CREATED_AT",
    "DUMMY_ROOT_ID",
    "MAXIMUM_CHARACTER_LIMIT",
    "GraphTraceNodeRecord",
    "GraphTraceState",
    "NodeState",
    "now_timestamp",
]

DUMMY_ROOT_ID = "__MEMTRACE_DUMMY_ROOT__@1"
DUMMY_ROOT_CREATED_AT = "0000-00-00 00:00:00.000"
DUMMY_ROOT_CATEGORY = "synthetic_dummy_root"
DUMMY_ROOT_COMMENT = (
    "Synthetic starting node, not part of the execution graph: exploring it lists every variable "
    "that has no incoming edge (the roots of the graph)."
)
DUMMY_OP_ID = "DUMMY_OP"
DUMMY_OP_COMMENT = (
    "Synthetic operation that connects the dummy root to all roots of the execution graph; "
    "it is not stored in the graph and can never be an attribution target."
)
MAXIMUM_CHARACTER_LIMIT = 128_000
"""Largest window, in characters, that one tool output returns."""

NodeState = Literal["to_explore", "exploring", "explored"]


def now_timestamp() -> str:
    """Local time as ``YYYY-MM-DD HH:MM:SS.mmm`` (the graph's own timestamp format)."""
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


class GraphTraceNodeRecord(BaseModel):
    """One variable on the frontier or in the exploration history."""

    model_config = ConfigDict(validate_assignment=True)

    full_node_id: str
    """Variable id ``<full_name>@<version>``."""
    created_at: str = Field(default_factory=now_timestamp)
    """When the variable was created in the execution graph (copied from the graph)."""
    state: NodeState = "to_explore"
    comment: str | None = None
    """The variable's comment in the graph."""
    category: str = "variable"
    """The variable's category in the graph."""
    added_at: str = Field(default_factory=now_timestamp)
    """When the node entered the frontier."""
    discovered_from: str | None = None
    """Id of the node being explored when this one was added."""
    discovered_by_op_id: str | None = None
    """Operation the agent says exposed this node (informational, not validated)."""
    explored_at: str | None = None
    outcome: str | None = None
    """The agent's node-level conclusion, set when exploration of the node finishes."""

    @field_validator("full_node_id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        name, sep, version = value.rpartition("@")
        if not sep or not name or not version.isdigit():
            raise ValueError(
                f"full_node_id {value!r} must look like '<name>@<version>' with an integer version"
            )
        return value

    @computed_field  # type: ignore[prop-decorator]
    @property
    def version(self) -> int:
        """The version parsed from the id (after the last ``@``)."""
        return int(self.full_node_id.rpartition("@")[2])

    @property
    def key(self) -> tuple[str, str]:
        """Priority key: creation time, then id."""
        return (self.created_at, self.full_node_id)

    def __lt__(self, other: GraphTraceNodeRecord) -> bool:
        return self.key < other.key

    def finish(self, outcome: str, at: str | None = None) -> None:
        """Mark the node explored with the agent's conclusion."""
        self.state = "explored"
        self.explored_at = at or now_timestamp()
        self.outcome = outcome

    def to_markdown(self) -> str:
        """Render as a bullet with tab-indented details (used in hints and the history)."""
        lines = [
            f"- `{self.full_node_id}`",
            f"\t- Version: {self.version}",
            f"\t- Inserted into Execution Graph At: `{self.created_at}`",
            f"\t- Added to Your To-Explore Frontier At: `{self.added_at}`",
            f"\t- Category: `{self.category}`",
            f"\t- State: `{self.state}`",
        ]
        if self.discovered_from:
            lines.append(f"\t- Discovered From: variable `{self.discovered_from}`")
        if self.discovered_by_op_id:
            lines.append(f"\t- Discovered By: operation `{self.discovered_by_op_id}`")
        if self.comment:
            lines.append(f"\t- Comment: {self.comment}")
        if self.explored_at:
            lines.append(f"\t- Finished Exploration At: `{self.explored_at}`")
        if self.outcome:
            lines.append(f"\t- Outcome: {self.outcome}")
        return "\n".join(lines)


class GraphTraceState(BaseModel):
    """The search state: the ordered frontier, the node being explored and the history."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    to_explore_nodes: Any = Field(default_factory=SortedDict)
    """Frontier: SortedDict ``(created_at, id) -> record``; dumped as a list of records."""
    exploration_history: dict[str, GraphTraceNodeRecord] = Field(default_factory=dict)
    """Finished nodes in finish order."""
    exploring_id: str | None = None
    """Id of the node being explored (tracked explicitly, see the module docstring)."""
    finished_at: str | None = None
    outcome: str | None = None
    _index: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)

    @field_validator("to_explore_nodes", mode="before")
    @classmethod
    def _load_frontier(cls, value: Any) -> SortedDict:
        if isinstance(value, SortedDict):
            return value
        items = value.values() if isinstance(value, dict) else (value or [])
        frontier = SortedDict()
        for item in items:
            record = (
                item if isinstance(item, GraphTraceNodeRecord) else GraphTraceNodeRecord.model_validate(item)
            )
            frontier[record.key] = record
        return frontier

    @field_validator("exploration_history", mode="before")
    @classmethod
    def _load_history(cls, value: Any) -> dict:
        if isinstance(value, list):
            records = [
                v if isinstance(v, GraphTraceNodeRecord) else GraphTraceNodeRecord.model_validate(v)
                for v in value
            ]
            return {r.full_node_id: r for r in records}
        return value or {}

    def model_post_init(self, __context: Any) -> None:
        """Index the frontier by node id; ValueError if the exploring node is not in it."""
        self._index = {record.full_node_id: key for key, record in self.to_explore_nodes.items()}
        if self.exploring_id is not None and self.exploring_id not in self._index:
            raise ValueError(f"exploring node {self.exploring_id!r} is not in the frontier")

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """Dump with the frontier as a plain list of record dumps (in frontier order)."""
        return {
            "to_explore_nodes": [r.model_dump(**kwargs) for r in self.to_explore_nodes.values()],
            "exploration_history": {k: r.model_dump(**kwargs) for k, r in self.exploration_history.items()},
            "exploring_id": self.exploring_id,
            "finished_at": self.finished_at,
            "outcome": self.outcome,
        }

    # -- queries ---------------------------------------------------------------------------

    @property
    def frontier_size(self) -> int:
        """Number of frontier nodes, including the one being explored."""
        return len(self.to_explore_nodes)

    def get_exploring_node(self) -> GraphTraceNodeRecord | None:
        """The node being explored, or None."""
        if self.exploring_id is None:
            return None
        return self.to_explore_nodes[self._index[self.exploring_id]]

    def get_to_explore(self, full_node_id: str) -> GraphTraceNodeRecord | None:
        """The frontier record of a node, or None."""
        key = self._index.get(full_node_id)
        return None if key is None else self.to_explore_nodes[key]

    def has_explored(self, full_node_id: str) -> bool:
        """Whether the node's exploration has been finished."""
        return full_node_id in self.exploration_history

    def frontier(self) -> list[GraphTraceNodeRecord]:
        """Frontier records in exploration order."""
        return list(self.to_explore_nodes.values())

    # -- mutations -------------------------------------------------------------------------

    def add_to_explore(self, record: GraphTraceNodeRecord) -> None:
        """Insert a record as ``to_explore`` (replacing a record with the same id)."""
        if record.full_node_id in self._index:
            self.remove_to_explore(record.full_node_id)
        record.state = "to_explore"
        self.to_explore_nodes[record.key] = record
        self._index[record.full_node_id] = record.key

    def remove_to_explore(self, full_node_id: str) -> GraphTraceNodeRecord:
        """Remove a node from the frontier (clearing the exploring mark if it was that node).

        Raises:
            KeyError: the node is not on the frontier.
        """
        key = self._index.pop(full_node_id)
        if self.exploring_id == full_node_id:
            self.exploring_id = None
        return self.to_explore_nodes.pop(key)

    def start_next_exploration(self) -> GraphTraceNodeRecord | None:
        """Return the node being explored, else mark the frontier head as exploring (None if empty)."""
        current = self.get_exploring_node()
        if current is not None:
            return current
        if not self.to_explore_nodes:
            return None
        head = self.to_explore_nodes.peekitem(0)[1]
        head.state = "exploring"
        self.exploring_id = head.full_node_id
        return head

    def finish_exploring_node(self, outcome: str, at: str | None = None) -> GraphTraceNodeRecord:
        """Move the exploring node to the history with its outcome.

        Raises:
            ValueError: no node is being explored.
        """
        if self.exploring_id is None:
            raise ValueError("no node is being explored")
        record = self.remove_to_explore(self.exploring_id)
        record.finish(outcome, at)
        self.exploration_history[record.full_node_id] = record
        return record

    def finish(self, outcome: str, at: str | None = None) -> None:
        """Record the overall outcome of the search."""
        self.finished_at = at or now_timestamp()
        self.outcome = outcome

    def to_markdown(self) -> str:
        """Render the frontier, the exploring node and the outcome (not the history)."""
        parts = ["# Graph Trace State", "", "## To-Explore Nodes", ""]
        if self.to_explore_nodes:
            parts.append("\n".join(r.to_markdown() for r in self.to_explore_nodes.values()))
        else:
            parts.append("There are no variable nodes to be explored.")
        parts += ["", "## Exploring Node", ""]
        if self.exploring_id is not None:
            parts.append(f"Variable node `{self.exploring_id}` is being explored.")
        else:
            parts.append("There is no variable node in exploration.")
        if self.outcome is not None:
            parts += ["", "## Outcome", "", f"Finished at `{self.finished_at}`.", "", self.outcome]
        return "\n".join(parts)
