"""faultbench: every fault kind on every available layer yields its labelled op, reproducibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.faultbench import ERROR_TYPE_OF, FAULT_KINDS, BuildConfig, build_faultbench, degrade
from toolkits.faultbench.__main__ import main

# Expected (op name, op category) of the faulty op, per split and fault kind.
EXPECTED_OPS = {
    "long_context": {
        "extraction": ("memory_system.memory_update", "update"),
        "update": ("memory_system.memory_update", "update"),
        "deletion": ("memory_system.delete", "update"),
        "retrieval": ("memory_system.retrieve", "retrieval"),
        "response": ("question-answering", "evaluation"),
    },
    "rag": {
        "extraction": ("memory_system.message_buffer_update", "update"),
        "update": ("memory_system.update", "update"),
        "deletion": ("memory_system.delete", "update"),
        "retrieval": ("memory_system.retrieve", "retrieval"),
        "response": ("question-answering", "evaluation"),
    },
}
SPLITS = ["long_context", "rag"]


def _build(out: Path, locomo: Path, seed: int) -> None:
    build_faultbench(BuildConfig(locomo_path=str(locomo), out_dir=str(out), splits=SPLITS, cases_per_kind=1,
                                 seed=seed, max_messages=60))


@pytest.fixture(scope="module")
def bench(tmp_path_factory, locomo_path) -> Path:
    out = tmp_path_factory.mktemp("faultbench")
    _build(out, locomo_path, seed=0)
    return out


def _cases(bench: Path, split: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((bench / split).glob("*.json"))]


@pytest.mark.parametrize("split", SPLITS)
def test_each_fault_kind_yields_its_labelled_op(bench, split):
    graphs = _cases(bench, split)
    kinds = sorted(g["data"]["annotations"][0]["fault"]["kind"] for g in graphs)
    assert kinds == sorted(FAULT_KINDS)
    for graph in graphs:
        annotation = graph["data"]["annotations"][0]
        kind = annotation["fault"]["kind"]
        assert annotation["final_error_type"] == ERROR_TYPE_OF[kind]
        ops = {op["op_id"]: op for op in graph["data"]["operations"]}
        op = ops[annotation["final_op_id"]]
        assert (op["op_name"], op["category"]) == EXPECTED_OPS[split][kind], kind
        assert graph["metadata"]["memtracebench_graph_filename"] == f"{split}-{kind}-{annotation['query_id'][6:-2]}.json"
        node_ids = {n["full_node_id"] for n in graph["data"]["nodes"]}
        for key in ("query_id", "golden_answers_id", "prediction_id"):
            assert annotation[key] in node_ids
        assert set(annotation["source_evidence_ids"]) <= node_ids


@pytest.mark.parametrize("split", SPLITS)
def test_kept_cases_really_fail(bench, split):
    for graph in _cases(bench, split):
        annotation = graph["data"]["annotations"][0]
        scores = [n["value"] for n in graph["data"]["nodes"] if n["class_name"] == "judge_score"]
        assert scores == ["0.0"], annotation["fault"]


def test_loader_reads_it_and_evidence_flow_recovers_every_label(bench):
    pytest.importorskip("toolkits.bench_utils")
    from toolkits.bench_utils import load_memtracebench

    graphs, cases = load_memtracebench(str(bench), splits=SPLITS)
    assert len(cases) == len(SPLITS) * len(FAULT_KINDS)
    for graph, case in zip(graphs, cases, strict=True):
        result = attribute_case_evidence_flow(graph, case)
        annotation = case.metadata["annotation"]
        assert (result["error_type"], result["op_id"]) == (annotation["final_error_type"], annotation["final_op_id"])


def test_same_seed_same_benchmark_other_seed_other_cases(bench, tmp_path, locomo_path):
    _build(tmp_path / "again", locomo_path, seed=0)
    for split in SPLITS:
        first = [g["data"]["annotations"] for g in _cases(bench, split)]
        again = [g["data"]["annotations"] for g in _cases(tmp_path / "again", split)]
        assert first == again
    _build(tmp_path / "other", locomo_path, seed=1)
    assert {p.name for p in (tmp_path / "other" / "rag").glob("*.json")} != {
        p.name for p in (bench / "rag").glob("*.json")}


def test_degrade_removes_only_answer_words():
    from toolkits.evidence_flow import content_tokens

    assert degrade("I moved here from Sweden four years ago.", content_tokens("Sweden")) == (
        "I moved here from four years ago.")


def test_cli_build_and_score(tmp_path, locomo_path, capsys):
    assert main(["build", str(tmp_path), "--locomo", str(locomo_path), "--splits", "rag", "--kinds", "response",
                 "--cases-per-kind", "1"]) == 0
    assert main(["score", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "rag" in out and "1.000" in out
    assert main(["build", str(tmp_path), "--locomo", str(tmp_path / "missing.json"), "--splits", "rag"]) == 2
