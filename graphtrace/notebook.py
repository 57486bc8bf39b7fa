"""GraphTraceNotebook: the frontier state machine the graph-search agent drives through seven tools.

The agent starts from a few variables (the failed query and its evidence messages, or a
synthetic root that exposes every root of the graph), explores one node at a time in execution
order — reading every operation that touches it — and grows or prunes a bounded frontier of
variables to visit next. Each tool returns text the model can act on; bad arguments produce an
``Error: …`` text naming the fix rather than an exception.

Differences from the reference, on purpose (spec §12): the exploring node is tracked by id and
cannot be deleted; offsets and limits are validated; regex searches run with a time bound,
skip empty matches, can ignore case, and page the match list with ``offset``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from agentscope.message import TextBlock, ToolResultState
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChunk

from .hints import DefaultGraphTraceToHint, GraphTraceToHint
from .models import (
    DUMMY_ROOT_CATEGORY,
    DUMMY_ROOT_COMMENT,
    DUMMY_ROOT_CREATED_AT,
    DUMMY_ROOT_ID,
    MAXIMUM_CHARACTER_LIMIT,
    GraphTraceNodeRecord,
    GraphTraceState,
    now_timestamp,
)
from .rendering import RegexSearchError, find_matches, paginate, render_dummy_root, render_node_operations

__all__ = ["GraphTraceNotebook", "StateChangeHook", "TOOL_NAMES"]

StateChangeHook = Callable[["GraphTraceNotebook"], None | Awaitable[None]]

TOOL_NAMES = (
    "initialize_execution_graph",
    "explore_graph_trace_node",
    "view_node_value",
    "update_to_explore_nodes",
    "finish_node_exploration",
    "finish_graph_exploration",
    "view_exploration_history",
)

_NOT_LOADED = (
    "Error: the execution graph is not loaded. Call `initialize_execution_graph` first, then retry this tool."
)
_ALLOW = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="graph-trace tools are read-only")


def _chunk(*texts: str, error: bool = False, metadata: dict | None = None) -> ToolChunk:
    return ToolChunk(
        content=[TextBlock(text=t) for t in texts],
        state=ToolResultState.ERROR if error else ToolResultState.SUCCESS,
        metadata=metadata or {},
    )


def _error(text: str) -> ToolChunk:
    return _chunk(text if text.startswith("Error:") else f"Error: {text}", error=True)


def _fence(text: str) -> str:
    return f"```text\n{text}\n```"


def _check_window(offset: Any, limit: Any) -> str | None:
    for name, value in (("offset", offset), ("limit", limit)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"Error: `{name}` must be an integer >= 1 (1-based), got {value!r}."
    return None


def _cap_notice(limit: int) -> str | None:
    if limit <= MAXIMUM_CHARACTER_LIMIT:
        return None
    return (
        f"The requested limit {limit} exceeds the maximum of {MAXIMUM_CHARACTER_LIMIT} characters per call; "
        f"limit was set to {MAXIMUM_CHARACTER_LIMIT}."
    )


class GraphTraceNotebook:
    """Frontier-based exploration of one execution graph, exposed as agent tools.

    Args:
        graph: The execution graph (``ExecNetwork``); never modified — tools work on a deep copy
            made by ``initialize_execution_graph``.
        max_trace_nodes: Frontier cap for ``add`` (the node being explored does not count);
            None means no cap.
        graph_trace_to_hint: Hint generator; defaults to :class:`DefaultGraphTraceToHint`.
        include_metadata: Reserved for metadata in renderings; the attribution runner always
            uses False and renderings currently never include metadata.
        clock: Returns the timestamps the notebook writes (tests pass a fixed clock).
    """

    description = (
        "Tools to explore an execution graph one variable at a time, for error attribution, root-cause "
        "analysis and graph inspection. System hints describe the current state and the next options. "
        "Call `finish_graph_exploration` when done or when the user changes the topic."
    )

    def __init__(
        self,
        graph: Any,
        max_trace_nodes: int | None = None,
        graph_trace_to_hint: GraphTraceToHint | None = None,
        include_metadata: bool = False,
        *,
        clock: Callable[[], str] | None = None,
    ) -> None:
        if max_trace_nodes is not None and max_trace_nodes < 1:
            raise ValueError(f"max_trace_nodes must be >= 1 or None, got {max_trace_nodes}")
        self.graph = graph
        self.max_trace_nodes = max_trace_nodes
        self.graph_trace_to_hint: GraphTraceToHint = graph_trace_to_hint or DefaultGraphTraceToHint()
        self.include_metadata = include_metadata
        self.clock = clock or now_timestamp
        self.working_graph: Any | None = None
        self.current_state: GraphTraceState | None = None
        self._hooks: dict[str, StateChangeHook] = {}

    # -- hooks, hint, state --------------------------------------------------------------------

    def register_state_change_hook(self, name: str, hook: StateChangeHook) -> None:
        """Call ``hook(notebook)`` (sync or async) after every state-changing tool.

        Raises:
            ValueError: a hook with this name exists.
        """
        if name in self._hooks:
            raise ValueError(f"a state-change hook named {name!r} is already registered; remove it first")
        self._hooks[name] = hook

    def remove_state_change_hook(self, name: str) -> None:
        """Remove a hook by name.

        Raises:
            ValueError: no hook has this name.
        """
        if name not in self._hooks:
            raise ValueError(f"no state-change hook named {name!r} is registered")
        del self._hooks[name]

    async def _fire_hooks(self) -> None:
        for hook in list(self._hooks.values()):
            result = hook(self)
            if inspect.isawaitable(result):
                await result

    def get_hint(self) -> str | None:
        """The hint for the current state (what :class:`~graphtrace.agent_models.HintMiddleware` shows)."""
        return self.graph_trace_to_hint(self.current_state)

    def state_dict(self) -> dict[str, Any]:
        """Serializable snapshot of the search state."""
        return {"current_state": None if self.current_state is None else self.current_state.model_dump()}

    def load_state_dict(self, data: dict[str, Any]) -> None:
        """Restore a snapshot from :meth:`state_dict` (the working graph is re-copied if needed)."""
        raw = data.get("current_state")
        self.current_state = None if raw is None else GraphTraceState.model_validate(raw)
        if self.current_state is None:
            self.working_graph = None
        elif self.working_graph is None:
            self.working_graph = self._copy_graph()

    def list_tools(self) -> list[FunctionTool]:
        """The seven tools, in registration order, as always-allowed ``FunctionTool`` objects."""
        return [FunctionTool(getattr(self, name), permission=_ALLOW) for name in TOOL_NAMES]

    # -- helpers -----------------------------------------------------------------------------

    def _copy_graph(self) -> Any:
        return type(self.graph).import_graph(self.graph.export_graph())

    def _record_for(self, full_node_id: str, **extra: Any) -> GraphTraceNodeRecord:
        variable = self.working_graph.get_variable(full_node_id)
        return GraphTraceNodeRecord(
            full_node_id=variable.full_node_id,
            created_at=variable.created_at,
            comment=variable.comment,
            category=variable.category,
            added_at=self.clock(),
            **extra,
        )

    def _has_variable(self, full_node_id: str) -> bool:
        return isinstance(full_node_id, str) and full_node_id in self.working_graph

    def start(self, initial_full_node_ids: list[str] | None = None) -> GraphTraceState:
        """Load the graph and set the frontier without firing hooks (what the runner calls directly).

        Args:
            initial_full_node_ids: Starting variables; empty or None starts from the synthetic root.

        Returns:
            The new state.

        Raises:
            ValueError: the graph is already loaded, or an id is not a variable of the graph.
        """
        if self.current_state is not None:
            raise ValueError(
                "the execution graph is already loaded. Keep exploring, or call "
                "`finish_graph_exploration` before loading it again."
            )
        ids = list(initial_full_node_ids or [])
        bad_types = [i for i in ids if not isinstance(i, str)]
        if bad_types:
            raise ValueError(f"`initial_full_node_ids` must be a list of strings, got {bad_types!r}.")
        working = self._copy_graph()
        unknown = [i for i in ids if i not in working]
        if unknown:
            raise ValueError(
                f"variable(s) {', '.join(f'`{i}`' for i in unknown)} not found in the execution graph; "
                "check the full node ids (`<name>@<version>`) and call this tool again."
            )
        self.working_graph = working
        state = GraphTraceState()
        if ids:
            for full_node_id in dict.fromkeys(ids):
                state.add_to_explore(self._record_for(full_node_id))
        else:
            state.add_to_explore(
                GraphTraceNodeRecord(
                    full_node_id=DUMMY_ROOT_ID,
                    created_at=DUMMY_ROOT_CREATED_AT,
                    category=DUMMY_ROOT_CATEGORY,
                    comment=DUMMY_ROOT_COMMENT,
                    added_at=self.clock(),
                )
            )
        self.current_state = state
        return state

    # -- tools -------------------------------------------------------------------------------

    async def initialize_execution_graph(self, initial_full_node_ids: list[str] | None = None) -> ToolChunk:
        """Load the execution graph and set the starting to-explore frontier.

        Call this once before any other graph tool. With no ids, the frontier starts from a
        synthetic root node whose exploration lists every root variable of the graph.

        Args:
            initial_full_node_ids (list[str] | None): Full node ids (``<name>@<version>``) of
                the variables to start from, e.g. the query and evidence messages. Leave empty to
                start from the synthetic root.
        """
        try:
            state = self.start(initial_full_node_ids)
        except ValueError as exc:
            return _error(str(exc))
        await self._fire_hooks()
        text = (
            "The execution graph was loaded successfully. The to-explore frontier holds "
            f"{state.frontier_size} variable node(s)."
        )
        if self.max_trace_nodes is not None and state.frontier_size > self.max_trace_nodes:
            text += (
                f" This is above the frontier cap of {self.max_trace_nodes}; new nodes can be added only "
                "after finishing or deleting some."
            )
        return _chunk(text)

    async def explore_graph_trace_node(
        self, offset: int = 1, limit: int = MAXIMUM_CHARACTER_LIMIT, include_variable_value: bool = True
    ) -> ToolChunk:
        """Explore the current node: show every operation that reads or writes it.

        If no node is being explored, the earliest node of the frontier (by creation time in the
        graph) becomes the exploring node. Output is paginated by characters.

        Args:
            offset (int): 1-based character position to start reading from (default 1).
            limit (int): Maximum number of characters to return, capped at 128000.
            include_variable_value (bool): When False, return the whole rendering without
                variable values and without pagination (a compact preview); use
                `view_node_value` to read values afterwards.
        """
        if self.current_state is None:
            return _error(_NOT_LOADED)
        if include_variable_value:
            bad = _check_window(offset, limit)
            if bad:
                return _error(bad)
        node = self.current_state.start_next_exploration()
        if node is None:
            return _error(
                "the to-explore frontier is empty, so there is nothing to explore. Call "
                "`finish_graph_exploration` if you have what you need; if the frontier was emptied by "
                "mistake, review `view_exploration_history` and node values, call "
                "`finish_graph_exploration`, then `initialize_execution_graph` again to restart."
            )
        graph = self.working_graph
        if node.full_node_id == DUMMY_ROOT_ID:
            rendering = render_dummy_root(graph, include_value=include_variable_value)
        else:
            rendering = render_node_operations(graph, node.full_node_id, include_value=include_variable_value)
        await self._fire_hooks()
        if not include_variable_value:
            return _chunk(
                _fence(rendering),
                "This is a value-less preview of the whole rendering: `offset` and `limit` were ignored. "
                "Use `view_node_value` to read the values of relevant variables.",
            )
        blocks = []
        notice = _cap_notice(limit)
        if notice:
            blocks.append(notice)
        page = paginate(rendering, offset, min(limit, MAXIMUM_CHARACTER_LIMIT))
        blocks += [_fence(page.window), page.status]
        return _chunk(*blocks)

    async def view_node_value(
        self,
        full_node_id: str,
        pattern: str | None = None,
        max_surrounding_chars: int = 120,
        offset: int = 1,
        limit: int = MAXIMUM_CHARACTER_LIMIT,
        ignore_case: bool = False,
    ) -> ToolChunk:
        """Read the stored value of any variable in the graph, or search it with a regex.

        Args:
            full_node_id (str): Full node id (``<name>@<version>``) of any variable in the graph.
            pattern (str | None): Optional Python regular expression; when given, only the
                matches are listed, each as ``start:end: snippet`` with 1-based positions.
            max_surrounding_chars (int): Characters of context shown on each side of a match.
            offset (int): 1-based character position in the value (or in the match list when a
                pattern is given) to start reading from.
            limit (int): Maximum number of characters to return, capped at 128000.
            ignore_case (bool): Match the pattern case-insensitively.
        """
        bad = _check_window(offset, limit)
        if bad:
            return _error(bad)
        if (
            isinstance(max_surrounding_chars, bool)
            or not isinstance(max_surrounding_chars, int)
            or max_surrounding_chars < 0
        ):
            return _error(f"`max_surrounding_chars` must be an integer >= 0, got {max_surrounding_chars!r}.")
        if self.current_state is None:
            return _error(_NOT_LOADED)
        if not self._has_variable(full_node_id):
            return _error(
                f"variable `{full_node_id}` not found in the execution graph; check the full node id "
                "(`<name>@<version>`) as shown by the other tools."
            )
        variable = self.working_graph.get_variable(full_node_id)
        raw = getattr(variable, "raw_value", None)
        value = str(variable.value) if raw is None else str(raw)
        effective = min(limit, MAXIMUM_CHARACTER_LIMIT)
        blocks = []
        notice = _cap_notice(limit)
        if notice:
            blocks.append(notice)
        if pattern is None or pattern == "":
            page = paginate(value, offset, effective)
            return _chunk(*blocks, f"# Value for `{full_node_id}`\n\n{_fence(page.window)}", page.status)
        try:
            matches, capped = find_matches(
                value, pattern, surrounding_chars=max_surrounding_chars, ignore_case=bool(ignore_case)
            )
        except RegexSearchError as exc:
            return _error(f"{exc}. Check the pattern (Python `re` syntax) and call this tool again.")
        if not matches:
            return _chunk(*blocks, f"No matches for pattern `{pattern}` in variable `{full_node_id}`.")
        listing = "\n--\n".join(matches)
        page = paginate(listing, offset, effective)
        heading = f"# Matches for `{pattern}` in variable `{full_node_id}`"
        status = f"{len(matches)} match(es). {page.status}"
        if capped:
            status += f" Only the first {len(matches)} matches are listed; narrow the pattern to see others."
        return _chunk(*blocks, f"{heading}\n\n{_fence(page.window)}", status)

    async def update_to_explore_nodes(
        self,
        action: Literal["add", "delete"],
        full_node_id: str,
        discovered_by_op_id: str | None = None,
    ) -> ToolChunk:
        """Add a variable to, or delete one from, the to-explore frontier.

        Args:
            action (Literal["add", "delete"]): ``add`` a variable to explore later, or
                ``delete`` one that is no longer relevant. The node being explored cannot be
                deleted (finish it instead).
            full_node_id (str): Full node id (``<name>@<version>``) of the variable.
            discovered_by_op_id (str | None): Optional, for ``add``: the operation whose
                subgraph revealed this variable (kept as context in the frontier).
        """
        if self.current_state is None:
            return _error(_NOT_LOADED)
        state = self.current_state
        if action not in ("add", "delete"):
            return _error(f"`action` must be 'add' or 'delete', got {action!r}.")
        exploring = state.get_exploring_node()
        if action == "delete":
            if state.get_to_explore(full_node_id) is None:
                return _error(
                    f"variable `{full_node_id}` is not in the to-explore frontier; nothing was deleted."
                )
            if exploring is not None and exploring.full_node_id == full_node_id:
                return _error(
                    f"variable `{full_node_id}` is being explored and cannot be deleted. Call "
                    "`finish_node_exploration` with an outcome (it may say the node is irrelevant) instead."
                )
            state.remove_to_explore(full_node_id)
            await self._fire_hooks()
            return _chunk(
                f"Variable `{full_node_id}` was deleted from the to-explore frontier "
                f"({state.frontier_size} node(s) left)."
            )
        if exploring is not None and exploring.full_node_id == full_node_id:
            return _error(
                f"variable `{full_node_id}` is the node being explored; it is already on the frontier."
            )
        if state.get_to_explore(full_node_id) is not None:
            return _error(f"variable `{full_node_id}` is already in the to-explore frontier.")
        if state.has_explored(full_node_id):
            return _error(
                f"variable `{full_node_id}` has already been explored; see `view_exploration_history` "
                "for its outcome."
            )
        open_slots = state.frontier_size - (1 if exploring is not None else 0)
        if self.max_trace_nodes is not None and open_slots >= self.max_trace_nodes:
            return _error(
                f"the to-explore frontier has reached its maximum size of {self.max_trace_nodes} nodes "
                "(the node being explored is not counted). Delete a less relevant node first."
            )
        if not self._has_variable(full_node_id):
            return _error(
                f"variable `{full_node_id}` not found in the execution graph; check the full node id "
                "(`<name>@<version>`) as shown in the operation subgraphs."
            )
        record = self._record_for(
            full_node_id,
            discovered_from=exploring.full_node_id if exploring is not None else None,
            discovered_by_op_id=discovered_by_op_id,
        )
        state.add_to_explore(record)
        await self._fire_hooks()
        return _chunk(
            f"Variable `{full_node_id}` was added to the to-explore frontier "
            f"({state.frontier_size} node(s) now, including any node being explored)."
        )

    async def finish_node_exploration(self, outcome: str) -> ToolChunk:
        """Finish exploring the current node and record what you concluded about it.

        Args:
            outcome (str): Node-level conclusion: what its operations did with the critical
                information and whether each was locally correct.
        """
        if self.current_state is None:
            return _error(_NOT_LOADED)
        if not isinstance(outcome, str) or not outcome.strip():
            return _error("`outcome` must be a non-empty text describing what you concluded about the node.")
        if self.current_state.get_exploring_node() is None:
            return _error("no node is being explored. Call `explore_graph_trace_node` first.")
        record = self.current_state.finish_exploring_node(outcome, at=self.clock())
        await self._fire_hooks()
        return _chunk(
            f"Exploration of `{record.full_node_id}` is finished and recorded in the exploration history "
            f"({self.current_state.frontier_size} node(s) left in the frontier)."
        )

    async def finish_graph_exploration(self, outcome: str) -> ToolChunk:
        """Finish the whole graph exploration with an overall outcome and unload the graph.

        This does not give the final answer; after it, answer in the requested format. The
        graph can be loaded again with `initialize_execution_graph`.

        Args:
            outcome (str): Summary of what the exploration established.
        """
        if self.current_state is None:
            return _error(_NOT_LOADED)
        if not isinstance(outcome, str) or not outcome.strip():
            return _error("`outcome` must be a non-empty summary of what the exploration established.")
        state = self.current_state
        state.finish(outcome, at=self.clock())
        dump = state.model_dump()
        self.current_state = None
        self.working_graph = None
        await self._fire_hooks()
        return _chunk(
            "The graph exploration is finished and its outcome recorded. The graph is unloaded; give your "
            "final answer now (or call `initialize_execution_graph` to explore again).",
            metadata={"graph_trace_state": dump},
        )

    async def view_exploration_history(self) -> ToolChunk:
        """List the nodes explored so far with their outcomes, in the order they were finished."""
        if self.current_state is None:
            return _error(_NOT_LOADED)
        history = list(self.current_state.exploration_history.values())
        if not history:
            return _chunk("There is no exploration history.")
        return _chunk("\n\n".join(r.to_markdown() for r in history))
