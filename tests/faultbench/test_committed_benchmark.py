"""The committed benchmark (examples/faultbench, v2) stays loadable, small, honest and recovered."""

from __future__ import annotations

import copy
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from tests.faultbench._expect import builder_traces, check_case
from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.faultbench import split_specs

BENCH = Path(__file__).resolve().parents[2] / "examples" / "faultbench"
SPLITS = ("long_context", "rag", "mem0", "evermemos")
GOLD_KEYS = ("final_error_type", "final_op_id", "fault", "prediction_id", "golden_answers_id")


@pytest.fixture(scope="module")
def loaded():
    from toolkits.bench_utils import load_memtracebench

    return load_memtracebench(str(BENCH), splits=list(SPLITS))


@pytest.fixture(scope="module")
def files() -> list[tuple[str, dict]]:
    return [(split, json.loads(p.read_text())) for split in SPLITS for p in sorted((BENCH / split).glob("*.json"))]


def test_it_is_v2_and_stays_small():
    manifest = json.loads((BENCH / "faultbench_manifest.json").read_text())
    assert manifest["format"] == "faultbench-v2"
    assert sum(p.stat().st_size for p in BENCH.rglob("*.json")) < 10_000_000


def test_every_case_is_labelled_by_its_fault_and_fails(files):
    for split, graph in files:
        for annotation in graph["data"]["annotations"]:
            check_case(split, graph, annotation)
            assert annotation["fault"]["kind"] in {s.kind for s in split_specs(split)}


def test_every_split_has_each_error_type_its_layer_has(files):
    seen = {(split, a["final_error_type"]) for split, g in files for a in g["data"]["annotations"]}
    for split in SPLITS:
        wanted = {s.error_type for s in split_specs(split)}
        assert {t for s, t in seen if s == split} == wanted, split


def test_meaning_changing_and_common_word_cases_are_in_it(files):
    faults = [a["fault"] for _, g in files for a in g["data"]["annotations"]]
    kinds = Counter(f["corruption"] for f in faults)
    assert kinds["negate"] >= 3 and kinds["swap_person"] >= 3
    assert sum(f["keeps_words"] for f in faults) >= 6
    assert sum(f["answer_spread"] > 1 for f in faults) >= 3  # the answer's words also occur elsewhere


def test_no_record_names_the_builder(files):
    for split, graph in files:
        assert builder_traces(graph) == [], (split, graph["metadata"]["memtracebench_graph_filename"])


def test_evidence_flow_recovers_most_labels(loaded):
    hits = Counter()
    for graph, case in zip(*loaded, strict=True):
        annotation = case.metadata["annotation"]
        result = attribute_case_evidence_flow(graph, case)
        hits["cases"] += 1
        hits["type"] += result["error_type"] == annotation["final_error_type"]
        hits["op"] += result["op_id"] == annotation["final_op_id"]
    assert hits["type"] / hits["cases"] >= 0.95 and hits["op"] / hits["cases"] >= 0.95, hits


@pytest.mark.slow
def test_scrambled_gold_labels_change_no_prediction(loaded):
    """Label independence: the attributor reads the question, answers and evidence, never the labels."""
    graphs, cases = loaded
    rng = random.Random(0)
    gold = [{k: c.metadata["annotation"].get(k) for k in GOLD_KEYS} for c in cases]
    rng.shuffle(gold)
    for graph, case, wrong in zip(graphs, cases, gold, strict=True):
        scrambled = copy.deepcopy(case)
        scrambled.metadata["annotation"].update(wrong)
        for pseudo in (False, True):
            args = ([], ) if pseudo else ()
            expected = attribute_case_evidence_flow(graph, case, *args, evidence_is_pseudo=pseudo)
            assert attribute_case_evidence_flow(graph, scrambled, *args, evidence_is_pseudo=pseudo) == expected


@pytest.mark.slow
def test_a_loaded_graph_and_its_export_give_the_same_attribution(loaded):
    """The attributor reads an ``ExecNetwork``'s records directly and an export dict by key; both
    paths must index the same graph the same way (trails name nodes, ops, versions and times)."""
    from toolkits.evidence_flow._graph_view import GraphView

    for graph, case in zip(*loaded, strict=True):
        exported = graph.export_graph()
        assert attribute_case_evidence_flow(exported, case) == attribute_case_evidence_flow(graph, case)
        from_records, from_dict = GraphView.build(graph), GraphView.build(exported)
        assert from_records.nodes == from_dict.nodes and from_records.ops == from_dict.ops
        assert from_records.edges == from_dict.edges and from_records.op_edges == from_dict.op_edges
