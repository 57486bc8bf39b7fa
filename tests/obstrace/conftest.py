"""Fixtures of the obstrace tests: graphs imported from the shared smartcomment 0.1.2 files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest


@pytest.fixture(scope="session")
def load_graph(fixtures_dir: Path) -> Callable[[str], Any]:
    """Return a loader: fixture file name -> imported ``ExecNetwork``."""
    from smartcomment.runtime.network import ExecNetwork

    def load(name: str) -> Any:
        with open(fixtures_dir / name, encoding="utf-8") as handle:
            return ExecNetwork.import_graph(json.load(handle))

    return load


@pytest.fixture(scope="session")
def bench_case(fixtures_dir: Path, load_graph: Callable[[str], Any]) -> tuple[Any, Any, dict[str, Any]]:
    """The annotated case of the MemTraceBench-like fixture: (graph, case, annotation)."""
    with open(fixtures_dir / "sc012_memtracebench_like.json", encoding="utf-8") as handle:
        annotation = json.load(handle)["data"]["annotations"][0]
    case = SimpleNamespace(
        query_full_node_id=annotation["query_id"],
        query=annotation["query"],
        golden_answer=", ".join(annotation["golden_answers"]),
        prediction=annotation["prediction"],
        source_evidence_full_node_ids=list(annotation["source_evidence_ids"]),
    )
    return load_graph("sc012_memtracebench_like.json"), case, annotation


@pytest.fixture(scope="session")
def make_graph() -> Callable[[list[dict[str, Any]]], Any]:
    """Return ``graph_from_spec``."""
    return graph_from_spec


def graph_from_spec(ops: list[dict[str, Any]]) -> Any:
    """Build an ``ExecNetwork`` from a compact spec, for adversarial and hand-made cases.

    Each op dict: ``op_id``, ``created_at``, optional ``op_name``/``category``/``comment``/
    ``metadata``, and ``edges``: ``(source_id, target_id)`` pairs; ``values`` maps a node id to its
    value (default: the id), ``comments`` maps node ids to comments.
    """
    from smartcomment.runtime.network import ExecNetwork

    session = {
        "created_at": "2026-01-01 00:00:00.000", "filename": "t.py", "lineno": 1, "session_id": "s1",
        "session_name": None, "graph_id": "g", "user_id": None, "project_id": None, "comment": None,
        "category": "session", "metadata": {},
    }
    nodes: dict[str, dict[str, Any]] = {}
    operations, edges = [], []
    for n, op in enumerate(ops):
        values = op.get("values", {})
        comments = op.get("comments", {})
        operations.append({
            "created_at": op["created_at"], "filename": "t.py", "lineno": 1, "op_id": op["op_id"],
            "op_name": op.get("op_name"), "comment": op.get("comment"), "category": op.get("category", "operation"),
            "graph_id": "g", "user_id": None, "project_id": None, "session_id": "s1",
            "metadata": op.get("metadata", {}),
        })
        for k, (src, dst) in enumerate(op["edges"]):
            for node_id in (src, dst):
                if node_id not in nodes:
                    name, version = node_id.rsplit("@", 1)
                    nodes[node_id] = {
                        "created_at": op["created_at"], "filename": "t.py", "lineno": 1, "name": name,
                        "version": int(version), "value": values.get(node_id, node_id),
                        "comment": comments.get(node_id), "category": "variable", "graph_id": "g",
                        "user_id": None, "class_name": None, "project_id": None, "session_id": "s1",
                        "metadata": {},
                    }
            edges.append({
                "created_at": op["created_at"], "filename": "t.py", "lineno": 1, "edge_id": f"edge-{n}-{k}",
                "graph_id": "g", "user_id": None, "project_id": None, "session_id": "s1", "op_id": op["op_id"],
                "category": "operation", "source_full_node_id": src, "target_full_node_id": dst,
                "comment": None, "metadata": {},
            })
    return ExecNetwork.import_graph({
        "graph_id": "g", "user_id": None, "project_id": None, "storage_path": None, "strict": False,
        "driver_type": "in_memory", "created_at": "2026-01-01 00:00:00.000", "metadata": {},
        "data": {"nodes": list(nodes.values()), "edges": edges, "operations": operations, "sessions": [session]},
    })
