"""The committed benchmark (examples/faultbench) stays loadable, small, complete and recovered."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.faultbench import ERROR_TYPE_OF

BENCH = Path(__file__).resolve().parents[2] / "examples" / "faultbench"
SPLITS = ("long_context", "rag", "mem0", "evermemos")


@pytest.fixture(scope="module")
def loaded():
    if not BENCH.is_dir():
        pytest.skip("examples/faultbench is not in this checkout")
    from toolkits.bench_utils import load_memtracebench

    return load_memtracebench(str(BENCH), splits=list(SPLITS))


def test_every_split_has_every_error_type(loaded):
    _, cases = loaded
    seen = Counter((c.metadata["split"], c.metadata["annotation"]["final_error_type"]) for c in cases)
    assert set(seen) == {(s, t) for s in SPLITS for t in ERROR_TYPE_OF.values()}


def test_evidence_flow_recovers_every_committed_label(loaded):
    for graph, case in zip(*loaded, strict=True):
        annotation = case.metadata["annotation"]
        result = attribute_case_evidence_flow(graph, case)
        assert (result["error_type"], result["op_id"]) == (annotation["final_error_type"], annotation["final_op_id"]), (
            case.metadata.get("graph_filename"))


def test_it_stays_small():
    if not BENCH.is_dir():
        pytest.skip("examples/faultbench is not in this checkout")
    assert sum(p.stat().st_size for p in BENCH.rglob("*.json")) < 5_000_000
