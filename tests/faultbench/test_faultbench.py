"""faultbench end to end: real layer runs, faults through the layers' own code, labels by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.faultbench._expect import builder_traces, check_case
from tests.faultbench.test_fault_effects import Case, check_fault_effect
from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.faultbench import BuildConfig, build_faultbench, split_specs
from toolkits.faultbench.__main__ import main

# slow: builds fault-injection benchmarks through the real layers
pytestmark = pytest.mark.slow

CONVERSATIONS = (1, 3)


def _config(out: Path, locomo: Path, seed: int, splits=("long_context", "rag"), **extra) -> BuildConfig:
    options = {"cases_per_kind": 1, "max_messages": 24, "conversations": CONVERSATIONS, **extra}
    return BuildConfig(locomo_path=str(locomo), out_dir=str(out), splits=splits, seed=seed, **options)


@pytest.fixture(scope="module")
def bench(tmp_path_factory, locomo_path) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("faultbench")
    report = build_faultbench(_config(out, locomo_path, seed=0))
    return out, report


def _pairs(out: Path, split: str) -> list[tuple[dict, dict]]:
    graphs = [json.loads(p.read_text()) for p in sorted((out / split).glob("*.json"))]
    return [(g, a) for g in graphs for a in g["data"]["annotations"]]


@pytest.mark.parametrize("split", ["long_context", "rag"])
def test_every_case_is_labelled_by_its_fault_and_fails(bench, split):
    out, _ = bench
    pairs = _pairs(out, split)
    kinds = {a["fault"]["kind"] for _, a in pairs}
    assert len(kinds) == len(pairs) >= 6  # one case per fault kind
    assert kinds <= {s.kind for s in split_specs(split)}
    for graph, annotation in pairs:
        check_case(split, graph, annotation)
        check_fault_effect(Case(split, graph, annotation))


@pytest.mark.parametrize("split", ["long_context", "rag"])
def test_no_record_names_the_builder(bench, split):
    out, _ = bench
    for path in sorted((out / split).glob("*.json")):
        graph = json.loads(path.read_text())
        assert builder_traces(graph) == [], path.name
        assert not any(n["filename"].startswith("/") for n in graph["data"]["nodes"])  # no local paths
        assert graph["metadata"]["memtracebench_graph_filename"] == path.name
        assert graph["metadata"]["memtracebench_dataset_source"] == "LoCoMo"


def test_the_manifest_counts_cases_and_drop_reasons(bench):
    out, report = bench
    manifest = json.loads((out / "faultbench_manifest.json").read_text())
    assert manifest["format"] == "faultbench-v2"
    assert len(manifest["cases"]) == len(report.cases) == sum(len(_pairs(out, s)) for s in ("long_context", "rag"))
    assert manifest["dropped"]["baseline_wrong"] > 0


def test_evidence_flow_recovers_the_labels_with_and_without_evidence_ids(bench):
    from toolkits.bench_utils import load_memtracebench

    out, _ = bench
    graphs, cases = load_memtracebench(str(out), splits=["long_context", "rag"])
    for graph, case in zip(graphs, cases, strict=True):
        gold = (case.metadata["annotation"]["final_error_type"], case.metadata["annotation"]["final_op_id"])
        assert (lambda r: (r["error_type"], r["op_id"]))(attribute_case_evidence_flow(graph, case)) == gold
        blind = attribute_case_evidence_flow(graph, case, None, allow_annotated_fallback=False)
        assert (blind["error_type"], blind["op_id"]) == gold, case.metadata["annotation"]["fault"]


def test_same_seed_same_benchmark_other_seed_other_cases(tmp_path, locomo_path):
    def build(name: str, seed: int) -> list[dict]:
        build_faultbench(_config(tmp_path / name, locomo_path, seed=seed, splits=("long_context",),
                                 kinds=("response", "retrieval"), windows_per_conversation=1))
        return [a for _, a in _pairs(tmp_path / name, "long_context")]

    first = build("first", 0)
    assert first and build("again", 0) == first
    assert [a["query_id"] for a in build("other", 1)] != [a["query_id"] for a in first]


def test_a_fault_that_does_not_break_the_answer_is_dropped(tmp_path, locomo_path, monkeypatch):
    """Counterfactual replay: a case is kept only when its fault is what makes the answer wrong."""
    from toolkits.faultbench import _pipeline

    def always_right(question, memories, **_kwargs):
        return "whatever the question, the golden answer"

    monkeypatch.setattr(_pipeline.ExtractiveReader, "answer", lambda self, q, m, **k: always_right(q, m))
    monkeypatch.setattr(_pipeline, "judge_answer", lambda golden, prediction: ('{"label": "CORRECT"}', 1.0))
    report = build_faultbench(_config(tmp_path, locomo_path, seed=0, splits=("long_context",),
                                      kinds=("update", "response"), conversations=(3,), windows_per_conversation=1))
    assert report.cases == []
    assert any(reason.endswith(":answer_still_right") for reason in report.dropped)


@pytest.mark.parametrize("split", ["mem0", "evermemos"])
def test_model_driven_layers_take_their_faults_through_the_fake_model(tmp_path, locomo_path, split):
    """One conversation, construction faults only: the fake model's degraded replies are the faults."""
    pytest.importorskip("mem0") if split == "mem0" else None
    kinds = ("deletion",) if split == "mem0" else ("extraction",)
    report = build_faultbench(_config(tmp_path, locomo_path, seed=0, splits=(split,), kinds=kinds,
                                      conversations=(3,), windows_per_conversation=1))
    pairs = _pairs(tmp_path, split)
    assert pairs and len(pairs) == len(report.cases)
    for graph, annotation in pairs:
        check_case(split, graph, annotation)
        check_fault_effect(Case(split, graph, annotation))
        assert builder_traces(graph) == []


def test_cli_build_and_score(tmp_path, locomo_path, capsys):
    assert main(["build", str(tmp_path), "--locomo", str(locomo_path), "--splits", "long_context", "--kinds",
                 "response", "--conversations", "3", "--max-messages", "24", "--windows", "1"]) == 0
    assert main(["score", str(tmp_path), "--misses"]) == 0
    out = capsys.readouterr().out
    assert "long_context" in out and "response/ignore" in out and "1.000" in out
    assert main(["build", str(tmp_path), "--locomo", str(tmp_path / "missing.json"), "--splits", "rag"]) == 2
    assert main(["build", str(tmp_path), "--cases-per-kind", "0"]) == 2
    assert main(["build", str(tmp_path), "--max-mb-for", "rag=-1"]) == 2
    assert main(["score", str(tmp_path / "nothing")]) == 2


def test_build_refuses_a_folder_it_did_not_write(tmp_path, locomo_path):
    (tmp_path / "mem0").mkdir()
    (tmp_path / "mem0" / "human-labelled.json").write_text("{}")
    with pytest.raises(ValueError, match="not a faultbench output folder"):
        build_faultbench(BuildConfig(locomo_path=str(locomo_path), out_dir=str(tmp_path), splits=("long_context",)))
    assert (tmp_path / "mem0" / "human-labelled.json").exists()


def test_a_size_budget_stops_new_graphs(tmp_path, locomo_path):
    report = build_faultbench(_config(tmp_path, locomo_path, seed=0, splits=("long_context",), conversations=(3,),
                                      max_bytes_by_split={"long_context": 1}))
    assert len(list((tmp_path / "long_context").glob("*.json"))) == 1 and report.cases
