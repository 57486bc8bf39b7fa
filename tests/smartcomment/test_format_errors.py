"""Broken graph files end in one clear GraphFormatError naming the file and the problem."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartcomment import ExecNetworkKeyError, GraphFormatError
from smartcomment.runtime.network import ExecNetwork
from smartcomment.runtime.operation import RuntimeOp
from smartcomment.runtime.session import RuntimeSession
from smartcomment.schema.operation import OpRecord
from smartcomment.schema.session import Session

FIXTURE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "smartcomment-0.1.2" / "sc012_toy_search.json"
pytestmark = pytest.mark.skipif(not FIXTURE.is_file(), reason="shared fixtures not available")

TEXT = FIXTURE.read_text(encoding="utf-8") if FIXTURE.is_file() else "{}"
DATA = json.loads(TEXT)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)


@SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(TEXT) - 2))
def test_truncated_file_names_file_and_position(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "graph.json"
    path.write_text(TEXT[:cut], encoding="utf-8")
    with pytest.raises(GraphFormatError) as info:
        ExecNetwork.from_file(path)
    message = str(info.value)
    assert "graph.json" in message and "invalid JSON" in message and "\n" not in message


@SETTINGS
@given(
    section=st.sampled_from(["nodes", "edges", "operations", "sessions"]),
    index=st.integers(min_value=0, max_value=3),
    key=st.sampled_from(
        ["name", "version", "value", "session_id", "op_id", "source_full_node_id", "lineno", "filename",
         "metadata", "created_at", "graph_id", "comment", "category", "session_name", "op_name"]
    ),
    replacement=json_values,
    delete=st.booleans(),
)
def test_corrupted_record_gives_format_error_not_crash(section, index, key, replacement, delete) -> None:
    data = json.loads(TEXT)
    record = data["data"][section][index]
    if key not in record:
        return
    if delete:
        del record[key]
    else:
        record[key] = replacement
    try:
        graph = ExecNetwork.import_graph(data)
    except GraphFormatError as exc:
        # the broken record itself, or a record that refers to it, is named
        assert re.match(r"data\.(nodes|edges|operations|sessions)\[\d+\]", str(exc)), str(exc)
    else:
        graph.export_graph()  # anything accepted must still export


@SETTINGS
@given(value=json_values, where=st.sampled_from(["top", "data", "nodes", "metadata", "strict"]))
def test_arbitrary_json_is_accepted_or_rejected_cleanly(value, where) -> None:
    data = json.loads(TEXT)
    if where == "top":
        data = value
    elif where == "data":
        data["data"] = value
    elif where == "nodes":
        data["data"]["nodes"] = value
    else:
        data[where] = value
    try:
        ExecNetwork.import_graph(data)
    except GraphFormatError:
        pass


def test_messages_are_specific(tmp_path: Path) -> None:
    data = json.loads(TEXT)
    data["data"]["nodes"][2]["version"] = "two"
    with pytest.raises(GraphFormatError, match=r"data\.nodes\[2\]\.version: expected an integer >= 1, got 'two'"):
        ExecNetwork.import_graph(data)
    data = json.loads(TEXT)
    data["data"]["edges"][0]["op_id"] = "op-missing"
    with pytest.raises(GraphFormatError, match=r"data\.edges\[0\]: edge .* missing operation 'op-missing'"):
        ExecNetwork.import_graph(data)
    data = json.loads(TEXT)
    data["data"]["nodes"].append(dict(data["data"]["nodes"][0]))
    with pytest.raises(GraphFormatError, match="already exists"):
        ExecNetwork.import_graph(data)
    with pytest.raises(GraphFormatError, match="missing.json.*cannot be read"):
        ExecNetwork.from_file(tmp_path / "missing.json")
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(GraphFormatError, match="bin.json"):
        ExecNetwork.from_file(tmp_path / "bin.json")
    with pytest.raises(GraphFormatError, match="driver_type"):
        ExecNetwork.import_graph({**DATA, "driver_type": "neo4j"})


def test_missing_ids_raise_exec_network_key_error() -> None:
    graph = ExecNetwork.import_graph(DATA)
    for call in (
        lambda: graph.get_variable("nope@1"),
        lambda: graph.get_latest_variable("nope"),
        lambda: graph.get_operation("op-nope"),
        lambda: graph.get_edge("edge-nope"),
        lambda: graph.get_session("nope"),
        lambda: graph.get_operations_by_variable("nope@1"),
        lambda: graph.remove_variable("nope@1"),
        lambda: graph.bfs("nope@1"),
    ):
        with pytest.raises(ExecNetworkKeyError, match="nope"):
            call()
    assert graph.get_versions("nope") == []
    assert graph.filter_by_operation("op-nope").is_empty


def test_file_round_trip_is_atomic_and_exact(tmp_path: Path) -> None:
    graph = ExecNetwork.import_graph(DATA)
    target = tmp_path / "out" / "graph.json"
    graph.to_file(target)
    assert json.loads(target.read_text(encoding="utf-8")) == DATA
    assert [p.name for p in target.parent.iterdir()] == ["graph.json"]
    old = os.umask(0o022)
    try:
        graph.to_file(target)
    finally:
        os.umask(old)
    assert target.stat().st_mode & 0o777 == 0o644


def test_removal_cascades_and_reserved_ids() -> None:
    graph = ExecNetwork.import_graph(DATA)
    op = graph.search_operations(name_pattern="^memory_system.search_vector_store$")[0]
    edges_before = graph.edge_count
    n_op_edges = len(graph.filter_by_operation(op.op_id).edges)
    graph.remove_operation(op.op_id)
    assert graph.edge_count == edges_before - n_op_edges
    session = graph.search_sessions(category="memory_search")[0]
    graph.remove_session(session.session_id)
    assert not graph.search_variables(class_name="query")
    other = ExecNetwork(graph_id="g2")
    sentinel_session = RuntimeSession(Session(session_id="__none__", graph_id="g", filename="f", lineno=1))
    with pytest.raises(ValueError, match="reserved"):
        other.add_session(sentinel_session)
    sentinel_op = RuntimeOp(OpRecord(op_id="__none_op__", graph_id="g", session_id="s", filename="f", lineno=1))
    with pytest.raises(ValueError, match="reserved"):
        other.add_operation(sentinel_op)
    copied = other.add_session(graph.get_all_sessions()[0])
    assert copied.graph_id == "g2" and other.session_count == 1


def test_exports_and_imports_never_alias_nested_metadata() -> None:
    data = json.loads(TEXT)
    graph = ExecNetwork.import_graph(data)
    query = next(n for n in data["data"]["nodes"] if n["class_name"] == "query")
    query["metadata"]["evidence"].append("U9:D9:9")  # the caller edits its own dict afterwards
    exported = graph.export_graph()
    node = next(n for n in exported["data"]["nodes"] if n["class_name"] == "query")
    assert "U9:D9:9" not in node["metadata"]["evidence"]
    node["metadata"]["evidence"].clear()  # and edits the export
    again = next(n for n in graph.export_graph()["data"]["nodes"] if n["class_name"] == "query")
    assert again["metadata"]["evidence"]
