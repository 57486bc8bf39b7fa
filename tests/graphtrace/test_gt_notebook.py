"""The seven notebook tools on the MemTraceBench-like fixture graph: exact outputs of key steps."""

from __future__ import annotations

import asyncio

import pytest

from graphtrace.models import DUMMY_ROOT_ID, MAXIMUM_CHARACTER_LIMIT
from graphtrace.notebook import TOOL_NAMES, GraphTraceNotebook

QUERY = "query:locomo-qa-1-2@1"
EVIDENCE = "U1:D2:2@1"
UNIT_2 = "memory-unit-00000000-0000-0000-0000-000000000002@1"
SEARCH_OP = "op-d3cffc1336f44ad2a3916aaab6a536bc"
NOT_LOADED = (
    "Error: the execution graph is not loaded. Call `initialize_execution_graph` first, then retry this tool."
)


def texts(chunk) -> list[str]:
    return [block.text for block in chunk.content]


def call(notebook, tool: str, **kwargs) -> list[str]:
    return texts(asyncio.run(getattr(notebook, tool)(**kwargs)))


@pytest.fixture
def nb(bench_graph, clock):
    return GraphTraceNotebook(bench_graph, max_trace_nodes=3, clock=clock)


@pytest.fixture
def started(nb):
    assert call(nb, "initialize_execution_graph", initial_full_node_ids=[QUERY, EVIDENCE]) == [
        "The execution graph was loaded successfully. The to-explore frontier holds 2 variable node(s)."
    ]
    return nb


def test_tools_are_registered_in_reference_order(nb):
    assert [tool.name for tool in nb.list_tools()] == list(TOOL_NAMES)


def test_every_stateful_tool_asks_for_initialisation_first(nb):
    assert call(nb, "explore_graph_trace_node") == [NOT_LOADED]
    assert call(nb, "view_node_value", full_node_id=QUERY) == [NOT_LOADED]
    assert call(nb, "update_to_explore_nodes", action="add", full_node_id=QUERY) == [NOT_LOADED]
    assert call(nb, "finish_node_exploration", outcome="x") == [NOT_LOADED]
    assert call(nb, "finish_graph_exploration", outcome="x") == [NOT_LOADED]
    assert call(nb, "view_exploration_history") == [NOT_LOADED]
    assert "call `initialize_execution_graph` first" in nb.get_hint()


def test_initialisation_errors_and_reload(nb):
    assert call(nb, "initialize_execution_graph", initial_full_node_ids=["ghost@1", QUERY]) == [
        "Error: variable(s) `ghost@1` not found in the execution graph; check the full node ids "
        "(`<name>@<version>`) and call this tool again."
    ]
    assert nb.current_state is None and nb.working_graph is None
    call(nb, "initialize_execution_graph", initial_full_node_ids=[QUERY])
    assert call(nb, "initialize_execution_graph")[0].startswith(
        "Error: the execution graph is already loaded."
    )


def test_explore_starts_from_the_earliest_node_and_paginates(started, bench_graph):
    first = call(started, "explore_graph_trace_node", limit=300)
    assert started.current_state.exploring_id == EVIDENCE  # the message is older than the query
    assert len(first) == 2
    assert first[0].startswith("```text\n# Graph Trace Node `U1:D2:2@1`\n\n- Category: `message`\n")
    assert first[0].endswith("\n```") and len(first[0]) == len("```text\n") + 300 + len("\n```")
    total = int(first[1].split(" of ")[1].split(" ")[0])
    assert first[1] == (
        f"Characters 1-300 of {total} are returned. Content is truncated. "
        "Call this tool again with `offset=301` to continue."
    )
    rest = call(started, "explore_graph_trace_node", offset=301)
    assert (
        rest[1]
        == f"Characters 301-{total} of {total} are returned. All content has been returned. No further read is needed."
    )
    assert first[0][len("```text\n") : -len("\n```")] + rest[0][len("```text\n") : -len("\n```")] == (
        __import__("graphtrace.rendering", fromlist=["x"]).render_node_operations(bench_graph, EVIDENCE)
    )


def test_explore_caps_limit_and_validates_window(started):
    capped = call(started, "explore_graph_trace_node", limit=MAXIMUM_CHARACTER_LIMIT + 1)
    assert capped[0] == (
        "The requested limit 128001 exceeds the maximum of 128000 characters per call; limit was set to 128000."
    )
    assert len(capped) == 3
    assert call(started, "explore_graph_trace_node", offset=0) == [
        "Error: `offset` must be an integer >= 1 (1-based), got 0."
    ]


def test_value_less_preview_ignores_pagination(started):
    preview = call(started, "explore_graph_trace_node", offset=999_999, limit=5, include_variable_value=False)
    assert "<value>" not in preview[0] and "# Operation 1 of 1" in preview[0]
    assert preview[1].startswith(
        "This is a value-less preview of the whole rendering: `offset` and `limit` were ignored."
    )


def test_view_node_value_full_and_with_pattern(started, bench_graph):
    value = bench_graph.get_variable(UNIT_2).value
    assert call(started, "view_node_value", full_node_id=UNIT_2) == [
        f"# Value for `{UNIT_2}`\n\n```text\n{value}\n```",
        f"Characters 1-{len(value)} of {len(value)} are returned. All content has been returned. No further read is needed.",
    ]
    start = value.index("Norway") + 1
    assert call(
        started,
        "view_node_value",
        full_node_id=UNIT_2,
        pattern="norway",
        max_surrounding_chars=5,
        ignore_case=True,
    ) == [
        f"# Matches for `norway` in variable `{UNIT_2}`\n\n```text\n{start}:{start + 5}: ...from Norway four...\n```",
        f"1 match(es). Characters 1-{len(f'{start}:{start + 5}: ...from Norway four...')} of "
        f"{len(f'{start}:{start + 5}: ...from Norway four...')} are returned. All content has been returned. "
        "No further read is needed.",
    ]
    assert call(started, "view_node_value", full_node_id=UNIT_2, pattern="Sweden") == [
        f"No matches for pattern `Sweden` in variable `{UNIT_2}`."
    ]


def test_view_node_value_errors(nb, started):
    assert call(started, "view_node_value", full_node_id=UNIT_2, pattern="(")[0].startswith(
        "Error: invalid regular expression '(': missing )"
    )
    assert call(started, "view_node_value", full_node_id="ghost@1") == [
        "Error: variable `ghost@1` not found in the execution graph; check the full node id (`<name>@<version>`) "
        "as shown by the other tools."
    ]
    assert call(started, "view_node_value", full_node_id=UNIT_2, max_surrounding_chars=-1) == [
        "Error: `max_surrounding_chars` must be an integer >= 0, got -1."
    ]
    assert call(started, "view_node_value", full_node_id=UNIT_2, limit=0) == [
        "Error: `limit` must be an integer >= 1 (1-based), got 0."
    ]


def test_view_node_value_pages_the_match_list_with_offset(started, bench_graph):
    one = call(
        started, "view_node_value", full_node_id=UNIT_2, pattern='"', max_surrounding_chars=0, limit=10
    )
    two = call(
        started,
        "view_node_value",
        full_node_id=UNIT_2,
        pattern='"',
        max_surrounding_chars=0,
        offset=11,
        limit=10,
    )
    assert "Call this tool again with `offset=11` to continue." in one[1]
    assert one[0] != two[0] and "Characters 11-20" in two[1]


def test_frontier_add_delete_and_their_errors(started):
    call(started, "explore_graph_trace_node")  # EVIDENCE is now exploring
    add = "update_to_explore_nodes"
    assert call(started, add, action="add", full_node_id=EVIDENCE) == [
        f"Error: variable `{EVIDENCE}` is the node being explored; it is already on the frontier."
    ]
    assert call(started, add, action="add", full_node_id=QUERY) == [
        f"Error: variable `{QUERY}` is already in the to-explore frontier."
    ]
    assert call(started, add, action="add", full_node_id="ghost@1")[0].startswith(
        "Error: variable `ghost@1` not found"
    )
    assert call(started, add, action="move", full_node_id=QUERY) == [
        "Error: `action` must be 'add' or 'delete', got 'move'."
    ]
    assert call(started, add, action="add", full_node_id=UNIT_2, discovered_by_op_id=SEARCH_OP) == [
        f"Variable `{UNIT_2}` was added to the to-explore frontier (3 node(s) now, including any node being explored)."
    ]
    record = started.current_state.get_to_explore(UNIT_2)
    assert (record.discovered_from, record.discovered_by_op_id, record.added_at) == (
        EVIDENCE,
        SEARCH_OP,
        "2030-01-01 00:00:00.000",
    )
    call(started, add, action="add", full_node_id="U1:D1:1@1")
    assert call(started, add, action="add", full_node_id="U1:D1:2@1") == [
        "Error: the to-explore frontier has reached its maximum size of 3 nodes (the node being explored is not "
        "counted). Delete a less relevant node first."
    ]
    assert call(started, add, action="delete", full_node_id=EVIDENCE) == [
        f"Error: variable `{EVIDENCE}` is being explored and cannot be deleted. Call `finish_node_exploration` "
        "with an outcome (it may say the node is irrelevant) instead."
    ]
    assert call(started, add, action="delete", full_node_id="U1:D1:1@1") == [
        "Variable `U1:D1:1@1` was deleted from the to-explore frontier (3 node(s) left)."
    ]
    assert call(started, add, action="delete", full_node_id="U1:D1:1@1") == [
        "Error: variable `U1:D1:1@1` is not in the to-explore frontier; nothing was deleted."
    ]


def test_adding_an_earlier_node_keeps_the_exploring_node(bench_graph, clock):
    """Reference bug 1, through the tools: the hint and finish act on the node really explored."""
    nb = GraphTraceNotebook(bench_graph, max_trace_nodes=4, clock=clock)
    call(nb, "initialize_execution_graph", initial_full_node_ids=[QUERY])
    call(nb, "explore_graph_trace_node")
    call(nb, "update_to_explore_nodes", action="add", full_node_id=EVIDENCE)  # older than the query
    assert f"Variable node `{QUERY}` is being explored." in nb.get_hint()
    assert call(nb, "finish_node_exploration", outcome="retrieval returned the Norway unit") == [
        f"Exploration of `{QUERY}` is finished and recorded in the exploration history (1 node(s) left in the frontier)."
    ]
    call(nb, "explore_graph_trace_node")
    assert nb.current_state.exploring_id == EVIDENCE


def test_finish_node_history_and_finish_graph(started):
    assert call(started, "finish_node_exploration", outcome="x") == [
        "Error: no node is being explored. Call `explore_graph_trace_node` first."
    ]
    assert call(started, "view_exploration_history") == ["There is no exploration history."]
    call(started, "explore_graph_trace_node")
    assert call(started, "finish_node_exploration", outcome="  ") == [
        "Error: `outcome` must be a non-empty text describing what you concluded about the node."
    ]
    call(started, "finish_node_exploration", outcome="Sweden was extracted correctly.")
    history = call(started, "view_exploration_history")[0]
    assert history.startswith(f"- `{EVIDENCE}`\n\t- Version: 1\n")
    assert history.endswith(
        "\t- Finished Exploration At: `2030-01-01 00:00:00.000`\n\t- Outcome: Sweden was extracted correctly."
    )

    result = asyncio.run(started.finish_graph_exploration(outcome="The update decision wrote Norway."))
    assert texts(result)[0].startswith("The graph exploration is finished and its outcome recorded.")
    dump = result.metadata["graph_trace_state"]
    assert dump["outcome"] == "The update decision wrote Norway."
    assert list(dump["exploration_history"]) == [EVIDENCE]
    assert started.current_state is None and started.working_graph is None
    assert "call `initialize_execution_graph` first" in started.get_hint()
    assert call(started, "initialize_execution_graph")[0].startswith(
        "The execution graph was loaded successfully."
    )


def test_empty_frontier_explains_how_to_restart(started):
    for _ in range(2):
        call(started, "explore_graph_trace_node")
        call(started, "finish_node_exploration", outcome="done")
    message = call(started, "explore_graph_trace_node")[0]
    assert message.startswith("Error: the to-explore frontier is empty, so there is nothing to explore.")
    assert "`initialize_execution_graph` again to restart" in message


def test_dummy_root_lists_every_root_variable(nb, bench_graph):
    call(nb, "initialize_execution_graph")
    assert [r.full_node_id for r in nb.current_state.frontier()] == [DUMMY_ROOT_ID]
    text = call(nb, "explore_graph_trace_node", include_variable_value=False)[0]
    assert text.startswith("```text\n# Operation `DUMMY_OP`\n\n- Name: `DUMMY_OP`\n- Comment: ")
    roots = sorted(bench_graph.get_root_nodes(), key=lambda v: (v.created_at, v.full_node_id))
    positions = [text.index(f'full_node_id="{v.full_node_id}"') for v in roots]
    assert positions == sorted(positions) and len(roots) == 15
    assert f"The graph has {len(roots)} root variable(s)." in text


def test_hint_per_state(nb):
    assert nb.get_hint().startswith(
        "<system-hint>\nAn execution graph of the memory system's run is available"
    )
    call(nb, "initialize_execution_graph", initial_full_node_ids=[QUERY])
    idle = nb.get_hint()
    assert "There is no variable node in exploration." in idle
    assert "1. Call `explore_graph_trace_node`" in idle and "finish_graph_exploration" in idle
    call(nb, "explore_graph_trace_node")
    exploring = nb.get_hint()
    assert f"Variable node `{QUERY}` is being explored." in exploring
    assert "`finish_node_exploration`" in exploring and exploring.endswith("</system-hint>")


def test_state_change_hooks_sync_and_async(nb):
    seen = []

    async def async_hook(notebook):
        seen.append(("async", notebook.current_state is not None))

    nb.register_state_change_hook("sync", lambda notebook: seen.append(("sync", True)))
    nb.register_state_change_hook("async", async_hook)
    with pytest.raises(ValueError, match="already registered"):
        nb.register_state_change_hook("sync", print)
    call(nb, "initialize_execution_graph", initial_full_node_ids=[QUERY])
    call(nb, "view_node_value", full_node_id=QUERY)  # read-only: no hooks
    assert seen == [("sync", True), ("async", True)]
    nb.remove_state_change_hook("sync")
    with pytest.raises(ValueError, match="no state-change hook"):
        nb.remove_state_change_hook("sync")


def test_state_dict_round_trip(started, bench_graph, clock):
    call(started, "explore_graph_trace_node")
    snapshot = started.state_dict()
    other = GraphTraceNotebook(bench_graph, clock=clock)
    other.load_state_dict(snapshot)
    assert other.current_state.exploring_id == EVIDENCE and other.working_graph is not None
    assert other.state_dict() == snapshot


def test_original_graph_is_never_modified(started, bench_graph, bench_graph_json):
    call(started, "explore_graph_trace_node")
    assert started.working_graph is not bench_graph
    assert bench_graph.export_graph()["data"]["nodes"] == bench_graph_json["data"]["nodes"]
