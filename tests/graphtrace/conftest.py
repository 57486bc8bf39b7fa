"""Fixtures for the graph-search tests: the MemTraceBench-like graph exported by smartcomment 0.1.2."""

from __future__ import annotations

import json

import pytest

CLOCK = "2030-01-01 00:00:00.000"


@pytest.fixture(scope="session")
def bench_graph_json(fixtures_dir):
    return json.loads((fixtures_dir / "sc012_memtracebench_like.json").read_text(encoding="utf-8"))


@pytest.fixture
def bench_graph(bench_graph_json):
    network = pytest.importorskip("smartcomment.runtime.network")
    return network.ExecNetwork.import_graph(bench_graph_json)


@pytest.fixture
def clock():
    return lambda: CLOCK
