"""The fourth held-out benchmark builds, its cases load, labels point at real ops, nothing names the fault."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "heldout_attribution_d"))

from build import build  # noqa: E402

from toolkits.bench_utils import load_memtracebench  # noqa: E402

ERROR_TYPES = {"ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError"}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("hd") / "bench"
    return out, build(out)


def test_cases_load_and_labels_name_existing_ops(bench):
    out, manifest = bench
    assert 60 <= len(manifest) <= 100
    graphs, cases = load_memtracebench(str(out), ["long_context", "rag", "mem0", "evermemos"])
    assert len(cases) == len(manifest)
    for graph, case in zip(graphs, cases, strict=True):
        ann = case.metadata["annotation"]
        assert ann["final_error_type"] in ERROR_TYPES
        assert ann["final_op_id"] in {op.op_id for op in graph.get_all_operations()}
        graph.get_variable(case.query_full_node_id)
        for ev in case.source_evidence_full_node_ids:
            graph.get_variable(ev)


def test_every_split_has_several_error_types(bench):
    _out, manifest = bench
    for split in ("long_context", "rag", "mem0", "evermemos"):
        assert len({m["final_error_type"] for m in manifest if m["split"] == split}) >= 3


def test_nothing_in_the_graphs_names_the_fault(bench):
    out, manifest = bench
    kinds = {m["kind"] for m in manifest}
    for path in out.glob("*/*.json"):
        data = json.loads(path.read_text())
        del data["data"]["annotations"]
        text = json.dumps(data).lower()
        assert "fault" not in text and "inject" not in text
        assert not any(k.lower() in text for k in kinds if k != "response")
