"""faultbench: every fault kind on every layer yields its labelled op, reproducibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkits.evidence_flow import attribute_case_evidence_flow, content_tokens
from toolkits.evidence_flow._graph_view import GraphView
from toolkits.faultbench import ERROR_TYPE_OF, FAULT_KINDS, BuildConfig, build_faultbench, degrade
from toolkits.faultbench.__main__ import main

# Expected (op name, op category) of the faulty op, per split and fault kind.
EXPECTED_OPS = {
    "long_context": {
        "extraction": ("memory_system.memory_update", "update"),
        "update": ("memory_system.memory_update", "update"),
        "deletion": ("memory_system.delete", "update"),
        "retrieval": ("memory_system.retrieve", "retrieval"),
    },
    "rag": {
        "extraction": ("memory_system.message_buffer_update", "update"),
        "update": ("memory_system.update", "update"),
        "deletion": ("memory_system.delete", "update"),
        "retrieval": ("memory_system.retrieve", "retrieval"),
    },
    "mem0": {
        "extraction": ("memory_system.extract_facts", "extraction"),
        "update": ("memory_system.update_memory_decision", "update"),
        "deletion": ("memory_system.update_memory_decision", "update"),
        "retrieval": ("memory_system.search_vector_store", "retrieval"),
    },
    "evermemos": {
        "extraction": ("memory_system.extract_memory", "extraction"),
        "update": ("memory_system.update", "update"),
        "deletion": ("memory_system.delete", "update"),
        "retrieval": ("memory_system.agentic_round1_bundle", "retrieval"),
    },
}
for _ops in EXPECTED_OPS.values():
    _ops["response"] = ("question-answering", "evaluation")
SPLITS = list(EXPECTED_OPS)
CONVERSATIONS = (2, 3, 4, 5, 8, 9)


def _config(out: Path, locomo: Path, seed: int, splits=SPLITS) -> BuildConfig:
    return BuildConfig(locomo_path=str(locomo), out_dir=str(out), splits=splits, cases_per_kind=1, seed=seed,
                       max_messages=30, top_k=10, conversations=CONVERSATIONS)


@pytest.fixture(scope="module")
def bench(tmp_path_factory, locomo_path) -> Path:
    out = tmp_path_factory.mktemp("faultbench")
    build_faultbench(_config(out, locomo_path, seed=0))
    return out


def _graphs(bench: Path, split: str) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((bench / split).glob("*.json"))]


def _annotations(bench: Path, split: str) -> list[tuple[dict, dict]]:
    return [(g, a) for g in _graphs(bench, split) for a in g["data"]["annotations"]]


@pytest.mark.parametrize("split", SPLITS)
def test_each_fault_kind_yields_its_labelled_op(bench, split):
    pairs = _annotations(bench, split)
    assert sorted(a["fault"]["kind"] for _, a in pairs) == sorted(FAULT_KINDS)
    for graph, annotation in pairs:
        kind = annotation["fault"]["kind"]
        assert annotation["final_error_type"] == ERROR_TYPE_OF[kind]
        op = next(o for o in graph["data"]["operations"] if o["op_id"] == annotation["final_op_id"])
        assert (op["op_name"], op["category"]) == EXPECTED_OPS[split][kind], kind
        node_ids = {n["full_node_id"] for n in graph["data"]["nodes"]}
        for key in ("query_id", "golden_answers_id", "prediction_id"):
            assert annotation[key] in node_ids
        assert annotation["source_evidence_ids"] and set(annotation["source_evidence_ids"]) <= node_ids


@pytest.mark.parametrize("split", SPLITS)
def test_files_follow_the_memtracebench_layout(bench, split):
    for path in sorted((bench / split).glob("*.json")):
        graph = json.loads(path.read_text())
        assert graph["metadata"]["memtracebench_graph_filename"] == path.name
        assert graph["metadata"]["memtracebench_dataset_source"] == "LoCoMo"
        assert not any(n["filename"].startswith("/") for n in graph["data"]["nodes"])  # no local paths
        assert not graph["metadata"]["save_dir"].startswith("/")


@pytest.mark.parametrize("split", SPLITS)
def test_kept_cases_really_fail(bench, split):
    for graph, annotation in _annotations(bench, split):
        view = GraphView.build(graph)
        judge_ops = [e.op_id for e in view.out_edges[annotation["query_id"]] if view.op_name(e.op_id) == "llm-judge"]
        scores = [view.nodes[e.target].value for op in judge_ops for e in view.op_edges[op]
                  if view.nodes[e.target].class_name == "judge_score"]
        assert scores == ["0.0"], annotation["fault"]


def test_loader_reads_it_and_evidence_flow_recovers_every_label(bench):
    from toolkits.bench_utils import load_memtracebench

    graphs, cases = load_memtracebench(str(bench), splits=SPLITS)
    assert len(cases) == len(SPLITS) * len(FAULT_KINDS)
    for graph, case in zip(graphs, cases, strict=True):
        result = attribute_case_evidence_flow(graph, case)
        annotation = case.metadata["annotation"]
        assert (result["error_type"], result["op_id"]) == (annotation["final_error_type"], annotation["final_op_id"])


def test_same_seed_same_benchmark_other_seed_other_cases(bench, tmp_path, locomo_path):
    splits = ["long_context", "rag"]
    build_faultbench(_config(tmp_path / "again", locomo_path, seed=0, splits=splits))
    for split in splits:
        assert [a for _, a in _annotations(bench, split)] == [a for _, a in _annotations(tmp_path / "again", split)]
    build_faultbench(_config(tmp_path / "other", locomo_path, seed=1, splits=splits))
    assert [a["query_id"] for _, a in _annotations(tmp_path / "other", "rag")] != [
        a["query_id"] for _, a in _annotations(bench, "rag")]


def test_degrade_removes_only_answer_words():
    assert degrade("I moved here from Sweden four years ago.", content_tokens("Sweden")) == (
        "I moved here from four years ago.")


def test_cli_build_and_score(tmp_path, locomo_path, capsys):
    assert main(["build", str(tmp_path), "--locomo", str(locomo_path), "--splits", "rag", "--kinds", "response",
                 "--cases-per-kind", "1"]) == 0
    assert main(["score", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "rag" in out and "1.000" in out
    assert main(["build", str(tmp_path), "--locomo", str(tmp_path / "missing.json"), "--splits", "rag"]) == 2
    assert main(["score", str(tmp_path / "nothing")]) == 2


def test_build_refuses_a_folder_it_did_not_write(tmp_path, locomo_path):
    from toolkits.faultbench import BuildConfig, build_faultbench

    (tmp_path / "mem0").mkdir()
    (tmp_path / "mem0" / "human-labelled.json").write_text("{}")
    with pytest.raises(ValueError, match="not a faultbench output folder"):
        build_faultbench(BuildConfig(locomo_path=str(locomo_path), out_dir=str(tmp_path), splits=("long_context",)))
    assert (tmp_path / "mem0" / "human-labelled.json").exists()
