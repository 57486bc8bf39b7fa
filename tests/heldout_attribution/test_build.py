"""The held-out benchmark builds loadable cases whose labels point at the faulted op."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from benchmarks.heldout_attribution.build import EXPECTED_OP_NAMES, build_benchmark
from benchmarks.heldout_attribution.plans import FAULT_KINDS, PLAN_TABLE
from toolkits.bench_utils import ERROR_TYPES, load_memtracebench


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("heldout")
    manifest = build_benchmark(out, seed=3)
    graphs, cases = load_memtracebench(out, download=False)
    return out, manifest, graphs, cases


def test_every_planned_case_loads_with_one_annotation(built):
    _, manifest, graphs, cases = built
    assert len(cases) == len(PLAN_TABLE) == len(manifest["cases"])
    assert Counter(c.metadata["split"] for c in cases) == Counter(k.split("/")[0].replace("lc", "long_context")
                                                                  for k, *_ in PLAN_TABLE)
    assert {c.metadata["dataset_source"] for c in cases} == {"heldout-synthetic"}


def test_labels_point_at_an_existing_op_of_the_faulted_stage(built):
    _, manifest, graphs, cases = built
    rows = {r["final_op_id"]: r for r in manifest["cases"]}
    for graph, case in zip(graphs, cases, strict=True):
        annotation = case.metadata["annotation"]
        row = rows[annotation["final_op_id"]]
        kind = FAULT_KINDS[row["fault_kind"]]
        assert annotation["final_error_type"] == kind.error_type
        assert annotation["final_error_type"] in ERROR_TYPES
        op = graph.get_operation(annotation["final_op_id"])
        expected = "question-answering" if kind.stage == "answer" else EXPECTED_OP_NAMES[(kind.layer, kind.stage)]
        assert op.op_name == expected, (row["case_id"], row["fault_kind"])
        assert graph.filter_by_operation(op.op_id).edge_count > 0


def test_annotation_ids_name_the_question_its_evidence_and_answers(built):
    _, _, graphs, cases = built
    for graph, case in zip(graphs, cases, strict=True):
        annotation = case.metadata["annotation"]
        query = graph.get_variable(case.query_full_node_id)
        assert query.class_name == "query" and query.category == "message & query"
        assert query.metadata["evidence"] == [e.rsplit("@", 1)[0] for e in case.source_evidence_full_node_ids]
        for evidence in case.source_evidence_full_node_ids:
            assert graph.get_variable(evidence).category == "message"
        assert graph.get_variable(annotation["prediction_id"]).class_name == "prediction"
        assert graph.get_variable(annotation["golden_answers_id"]).class_name == "golden_answers"
        judged = [o for o in graph.get_operations_by_variable(annotation["prediction_id"]) if o.op_name == "llm-judge"]
        assert judged, "the failed answer is judged"


def test_no_record_names_the_fault_or_its_label(built):
    out, manifest, _, _ = built
    # "delete" is left out: a Mem0 DELETE writes the spec's own delete_marker in any run.
    tells = {"Error", "fault", "heldout_attribution", *(k.split("/")[1] for k in FAULT_KINDS)} - {"delete"}
    for row in manifest["cases"]:
        data = json.loads((out / row["file"]).read_text(encoding="utf-8"))
        data["data"].pop("annotations")
        records = [r for part in data["data"].values() for r in part]
        text = json.dumps([{k: r.get(k) for k in ("op_name", "comment", "metadata", "category", "class_name", "name")}
                           for r in records])
        assert not [t for t in tells if t in text], row["case_id"]
