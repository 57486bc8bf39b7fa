"""Frontier records and state: ordering, explicit exploring node, dump/load, markdown."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from graphtrace.models import GraphTraceNodeRecord, GraphTraceState


def rec(node_id: str, created_at: str, **kw) -> GraphTraceNodeRecord:
    return GraphTraceNodeRecord(full_node_id=node_id, created_at=created_at, added_at="T", **kw)


@pytest.mark.parametrize("bad", ["no-version", "x@", "x@1a", "@3"])
def test_record_rejects_ids_without_integer_version(bad):
    with pytest.raises(ValidationError, match="<name>@<version>"):
        GraphTraceNodeRecord(full_node_id=bad)


def test_record_version_uses_last_at_and_is_dumped():
    r = rec("query:locomo@qa@12", "2026-01-01 00:00:00.000")
    assert r.version == 12
    assert r.model_dump()["version"] == 12


def test_frontier_is_ordered_by_creation_time_then_id():
    state = GraphTraceState()
    for node_id, ts in [("b@1", "2026-01-02"), ("a@1", "2026-01-02"), ("z@1", "2026-01-01")]:
        state.add_to_explore(rec(node_id, ts))
    assert [r.full_node_id for r in state.frontier()] == ["z@1", "a@1", "b@1"]


def test_exploring_node_survives_adding_an_earlier_node():
    """Reference bug 1: the exploring node was inferred from the frontier head."""
    state = GraphTraceState()
    state.add_to_explore(rec("late@1", "2026-01-05"))
    assert state.start_next_exploration().full_node_id == "late@1"
    state.add_to_explore(rec("early@1", "2026-01-01"))
    assert state.get_exploring_node().full_node_id == "late@1"
    assert state.start_next_exploration().full_node_id == "late@1"
    finished = state.finish_exploring_node("done", at="F")
    assert finished.full_node_id == "late@1" and finished.state == "explored" and finished.explored_at == "F"
    assert state.get_to_explore("early@1").state == "to_explore"
    assert state.start_next_exploration().full_node_id == "early@1"


def test_finish_without_exploring_node_raises():
    with pytest.raises(ValueError, match="no node is being explored"):
        GraphTraceState().finish_exploring_node("x")


def test_dump_and_load_round_trip_keeps_order_exploring_and_history():
    state = GraphTraceState()
    state.add_to_explore(rec("b@1", "2026-01-02", category="message"))
    state.add_to_explore(rec("a@2", "2026-01-01"))
    state.start_next_exploration()
    state.finish_exploring_node("a was fine", at="F")
    state.start_next_exploration()
    dump = state.model_dump()
    assert isinstance(dump["to_explore_nodes"], list)
    loaded = GraphTraceState.model_validate(dump)
    assert loaded.model_dump() == dump
    assert loaded.get_exploring_node().full_node_id == "b@1"
    assert loaded.has_explored("a@2")


def test_markdown_of_state_and_record():
    state = GraphTraceState()
    state.add_to_explore(rec("m@1", "2026-01-01 00:00:00.000", category="message", comment="A message."))
    assert state.to_markdown() == (
        "# Graph Trace State\n\n## To-Explore Nodes\n\n"
        "- `m@1`\n\t- Version: 1\n\t- Inserted into Execution Graph At: `2026-01-01 00:00:00.000`\n"
        "\t- Added to Your To-Explore Frontier At: `T`\n\t- Category: `message`\n\t- State: `to_explore`\n"
        "\t- Comment: A message.\n\n"
        "## Exploring Node\n\nThere is no variable node in exploration."
    )
    state.start_next_exploration()
    state.finish_exploring_node("ok", at="F")
    state.finish("all done", at="G")
    text = state.to_markdown()
    assert "There are no variable nodes to be explored." in text
    assert text.endswith("## Outcome\n\nFinished at `G`.\n\nall done")
    history = state.exploration_history["m@1"].to_markdown()
    assert history.endswith("\t- Finished Exploration At: `F`\n\t- Outcome: ok")
