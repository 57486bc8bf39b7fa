"""Held-out benchmark E (benchmarks/heldout_attribution_e): it builds, loads, and its labels hold.

One module-scoped build of the whole catalogue (about 20 s on 2 cores) backs the file-level checks;
the counterfactual checks re-record a few cases with and without their fault.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.heldout_attribution_e.build import CaseError, build, verify_case
from benchmarks.heldout_attribution_e.cases import CATALOGUE
from benchmarks.heldout_attribution_e.dialogues import DIALOGUES, dialogue
from benchmarks.heldout_attribution_e.faults import STAGES, CaseSpec, Fault
from benchmarks.heldout_attribution_e.memsys.pipeline import SPLITS, is_correct, qa_id, record
from toolkits.bench_utils import ERROR_TYPES, collect_failed_queries, load_memtracebench

SPEC_OP_NAMES = {
    "memory_system.memory_update", "memory_system.retrieve", "memory_system.message_buffer_update",
    "memory_system.add", "memory_system.extract_facts", "memory_system.update_memory_decision",
    "memory_system.search_vector_store", "evermemos.boundary_detection", "memory_system.finalize_memory_unit",
    "memory_system.extract_memory", "memory_system.agentic_round1_bundle", "question-answering", "llm-judge",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("heldout_e")
    manifest = build(out)
    return out, manifest


@pytest.fixture(scope="module")
def loaded(built):
    out, _ = built
    return load_memtracebench(out / "bench", list(SPLITS), download=False)


def test_every_catalogued_case_is_built_and_loads(built, loaded):
    out, manifest = built
    graphs, cases = loaded
    assert 80 <= len(CATALOGUE) <= 110
    assert len(manifest["cases"]) == len(CATALOGUE) == len(cases)
    assert {c.metadata["split"] for c in cases} == set(SPLITS)
    assert not (out / "bench" / "manifest.json").exists()
    by_id = {c["case_id"]: c for c in manifest["cases"]}
    for graph, case in zip(graphs, cases, strict=True):
        entry = by_id[Path(case.metadata["graph_filename"]).stem]
        assert entry["split"] == case.metadata["split"]
        assert graph.metadata["memtracebench_graph_filename"] == case.metadata["graph_filename"]
        assert case.golden_answer.strip("[]") == entry["golden_answer"]


def test_labels_name_existing_operations_of_their_graph(loaded):
    graphs, cases = loaded
    for graph, case in zip(graphs, cases, strict=True):
        annotation = case.metadata["annotation"]
        assert annotation["final_error_type"] in ERROR_TYPES
        op_id = annotation["final_op_id"]
        assert graph.filter_by_operation(op_id).edges, f"{case.metadata['graph_filename']}: {op_id} has no edges"
        for key in ("query_id", "prediction_id", "golden_answers_id"):
            graph.get_variable(annotation[key])
        for evidence in case.source_evidence_full_node_ids:
            assert graph.get_variable(evidence).category == "message"


def test_the_labelled_operation_fits_its_error_type(loaded):
    expected = {
        "ExtractionError": {"memory_system.memory_update", "memory_system.message_buffer_update", "memory_system.add",
                            "memory_system.extract_facts", "memory_system.update_memory_decision",
                            "evermemos.boundary_detection", "memory_system.extract_memory"},
        "UpdateError": {"memory_system.memory_update", "memory_system.update_memory_decision"},
        "DeletionError": {"memory_system.update_memory_decision"},
        "RetrievalError": {"memory_system.retrieve", "memory_system.search_vector_store",
                           "memory_system.agentic_round1_bundle"},
        "ResponseError": {"question-answering"},
    }
    for graph, case in zip(*loaded, strict=True):
        annotation = case.metadata["annotation"]
        assert graph.get_operation(annotation["final_op_id"]).op_name in expected[annotation["final_error_type"]]


def test_every_split_has_several_error_types(loaded):
    _, cases = loaded
    types: dict[str, Counter] = {}
    for case in cases:
        types.setdefault(case.metadata["split"], Counter())[case.metadata["annotation"]["final_error_type"]] += 1
    for split in SPLITS:
        assert len(types[split]) >= 3, (split, types[split])


def test_the_failed_question_is_the_one_the_judge_failed(loaded):
    for graph, case in zip(*loaded, strict=True):
        failed = {c.query_full_node_id for c in collect_failed_queries(graph)}
        assert case.query_full_node_id in failed


def test_no_graph_record_names_the_builder_or_a_fault(built):
    out, manifest = built
    kinds = {c["fault_kind"] for c in manifest["cases"]} | {c["stage"] for c in manifest["cases"] if "_" in c["stage"]}
    forbidden = ["heldout", "benchmarks/", "faults.py", "cases.py", "build.py", "dialogues.py", "run.py", "twist",
                 "inject", "fault", *kinds]
    for path in sorted((out / "bench").glob("*/*.json")):
        text = path.read_text(encoding="utf-8")
        lowered = text.lower()
        assert [w for w in forbidden if w.lower() in lowered] == [], path.name
        data = json.loads(text)["data"]
        for key in ("nodes", "edges", "operations", "sessions"):
            for rec in data[key]:
                assert rec["filename"].startswith("memsys/") or rec["filename"] == "<sentinel>", rec["filename"]
        assert {op["op_name"] for op in data["operations"]} <= SPEC_OP_NAMES


def test_case_ids_are_shuffled_and_kinds_stay_in_the_manifest(built):
    out, manifest = built
    positions = {(s.dialogue, s.question, s.split, s.stage) for s in CATALOGUE}
    order = [(c["dialogue"], c["question_key"], c["split"], c["stage"]) for c in manifest["cases"]]
    assert set(order) == positions
    catalogue_order = [(s.dialogue, s.question, s.split, s.stage) for s in CATALOGUE]
    assert order != catalogue_order
    assert [c["case_id"] for c in manifest["cases"]] == [f"e{i:03d}" for i in range(1, len(CATALOGUE) + 1)]
    for path in (out / "bench").glob("*/*.json"):
        annotation = json.loads(path.read_text(encoding="utf-8"))["data"]["annotations"][0]
        assert set(annotation) == {"query_id", "query", "golden_answers", "golden_answers_id", "prediction",
                                   "prediction_id", "source_evidence_ids", "final_error_type", "final_op_id",
                                   "question_type"}


def _one_per_stage() -> list[tuple[int, CaseSpec]]:
    seen, chosen = set(), []
    for position, spec in enumerate(CATALOGUE):
        if (spec.split, spec.stage) not in seen:
            seen.add((spec.split, spec.stage))
            chosen.append((position, spec))
    return chosen


@pytest.mark.parametrize(("position", "spec"), _one_per_stage(), ids=lambda v: v if isinstance(v, int) else
                         f"{v.split}-{v.stage}")
def test_counterfactual_replay(position, spec):
    d = dialogue(spec.dialogue)
    q = d.question(spec.question)
    qid = qa_id(d, q)
    clean = record(d, spec.split, seed=position)
    assert is_correct(q, clean.predictions[qid])
    fault = Fault(spec, d)
    faulted = record(d, spec.split, fault, seed=position)
    assert not is_correct(q, faulted.predictions[qid])
    assert len(fault.fired) == 1
    op = next(o for o in faulted.graph["data"]["operations"] if o["op_id"] == fault.fired[0])
    assert spec.error_type == STAGES[spec.stage][2]
    assert op["op_name"]
    # the same recording code: the faulted graph has the clean graph's operations, by name, in order
    clean_ops = [o["op_name"] for o in clean.graph["data"]["operations"]]
    faulted_ops = [o["op_name"] for o in faulted.graph["data"]["operations"]]
    assert Counter(clean_ops).keys() == Counter(faulted_ops).keys()


def test_a_fault_that_leaves_the_answer_right_is_refused():
    # the other person adopting "2 dogs" still answers "How many dogs did Leo adopt?" with 2
    spec = CaseSpec(1, "dogs", "mem0", "facts", "other_speaker", "other")
    with pytest.raises(CaseError, match="leaves the answer right"):
        verify_case(spec, 0)


def test_a_fault_whose_type_the_store_contradicts_is_refused():
    # a retrieval fault needs the store to hold the answer: after the update fault it does not
    spec = CaseSpec(1, "cats", "mem0", "update", "wrong_merge", "merge", at="D2:4", swap_in="Mia's cats are named")
    verify_case(spec, 0)
    wrong = CaseSpec(1, "cats", "mem0", "delete", "lookalike_conflict", at="D2:1")
    with pytest.raises(Exception, match="did not return|before"):
        verify_case(wrong, 0)


def test_recording_is_deterministic_apart_from_timestamps():
    d = DIALOGUES[1]
    spec = next(s for s in CATALOGUE if s.dialogue == d.index and s.split == "evermemos")
    strip = lambda g: re.sub(r'"created_at": "[^"]*"', "", json.dumps(g))  # noqa: E731
    first = record(d, "evermemos", Fault(spec, d), seed=5).graph
    second = record(d, "evermemos", Fault(spec, d), seed=5).graph
    assert strip(first) == strip(second)
