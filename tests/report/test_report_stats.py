"""The statistical report agrees with counts computed here straight from the JSON files."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.report.conftest import MISSING_OP
from toolkits.report.funnel import FUNNEL_STAGES, find_trail, loss_stage_from_trail, loss_stage_of
from toolkits.report.pipeline import analyse

STAGE_OF_TYPE = {
    "ExtractionError": "extraction",
    "UpdateError": "update/deletion",
    "DeletionError": "update/deletion",
    "RetrievalError": "retrieval",
    "ResponseError": "answer",
}


def _raw_records(paths: list[Path]) -> list[tuple[str, dict]]:
    out = []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        out += [(data["split"], r) for r in data["results"]]
    return out


def _ops_of(graph_path: str) -> dict[str, tuple[str, str]]:
    raw = json.loads(Path(graph_path).read_text(encoding="utf-8"))
    return {op["op_id"]: (op["op_name"], op["category"]) for op in raw["data"]["operations"]}


@pytest.fixture(scope="module")
def analysis(all_outputs):
    return analyse(all_outputs, top_operations=100)


def test_error_type_counts_and_shares_per_memory_system(analysis, all_outputs):
    stats = analysis.statistics
    records = _raw_records(all_outputs)
    attributed = [(s, r) for s, r in records if not r["attribution_failure"]]
    assert stats["records"] == len(records)
    assert stats["attributed"] == len(attributed)
    assert stats["failed"] == len(records) - len(attributed) == 1
    for split in {s for s, _ in records}:
        expected = Counter(r["error_attribution_result"]["error_type"] for s, r in attributed if s == split)
        block = stats["error_types"]["by_memory_system"][split]
        assert block["counts"] == dict(expected)
        n = sum(expected.values())
        assert block["shares"] == pytest.approx({t: c / n for t, c in expected.items()})
    overall = Counter(r["error_attribution_result"]["error_type"] for _, r in attributed)
    assert stats["error_types"]["overall"]["counts"] == dict(overall)
    # every faultbench graph names LoCoMo as its source
    assert list(stats["error_types"]["by_dataset_source"]) == ["LoCoMo"]
    assert stats["error_types"]["by_dataset_source"]["LoCoMo"]["counts"] == dict(overall)


def test_most_blamed_operations_are_resolved_in_the_graphs(analysis, all_outputs):
    blamed = analysis.statistics["blamed_operations"]
    names: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    unresolved = 0
    for _, r in _raw_records(all_outputs):
        if r["attribution_failure"]:
            continue
        ops = _ops_of(r["graph_path"])
        op_id = r["error_attribution_result"]["op_id"]
        if op_id in ops:
            names[ops[op_id][0]] += 1
            categories[ops[op_id][1]] += 1
        else:
            unresolved += 1
            names["(unresolved)"] += 1
            categories["(unresolved)"] += 1
    assert unresolved == blamed["unresolved"] == 1  # the fixture's MISSING_OP
    assert {row["op_name"]: row["count"] for row in blamed["by_name"]} == dict(names)
    assert {row["category"]: row["count"] for row in blamed["by_category"]} == dict(categories)
    counts = [row["count"] for row in blamed["by_name"]]
    assert counts == sorted(counts, reverse=True)


def test_loss_funnel_places_cases_by_error_type_without_trails(analysis, all_outputs):
    funnel = analysis.statistics["loss_funnel"]["overall"]
    lost = Counter(
        STAGE_OF_TYPE[r["error_attribution_result"]["error_type"]]
        for _, r in _raw_records(all_outputs)
        if not r["attribution_failure"]
    )
    assert funnel["lost_at"] == {s: lost[s] for s in FUNNEL_STAGES}
    assert funnel["cases"] == sum(lost.values()) and funnel["unknown"] == 0
    assert funnel["trail"] == {"checked": 0, "agrees": 0, "contradicts": 0}
    remaining = sum(lost.values())
    for stage in FUNNEL_STAGES:
        remaining -= lost[stage]
        assert funnel["carried_after"][stage] == remaining
    assert funnel["carried_after"]["answer"] == 0


def test_accuracy_and_confusion_matrix_against_gold_labels(analysis, all_outputs):
    gold = analysis.statistics["gold"]
    records = [r for _, r in _raw_records(all_outputs)]
    assert gold["cases"] == len(records)
    type_ok = sum(1 for r in records if not r["attribution_failure"]
                  and r["error_attribution_result"]["error_type"] == r["final_error_type"])
    op_ok = sum(1 for r in records if not r["attribution_failure"]
                and r["error_attribution_result"]["op_id"] == r["final_op_id"])
    assert gold["error_type_accuracy"] == pytest.approx(type_ok / len(records))
    assert gold["op_accuracy"] == pytest.approx(op_ok / len(records))
    for gold_type, block in gold["by_gold_error_type"].items():
        members = [r for r in records if r["final_error_type"] == gold_type]
        correct = sum(1 for r in members if not r["attribution_failure"]
                      and r["error_attribution_result"]["error_type"] == gold_type)
        assert block["cases"] == len(members)
        assert block["error_type_accuracy"] == pytest.approx(correct / len(members))
    matrix = gold["confusion_matrix"]
    for r in records:
        predicted = r["error_attribution_result"]["error_type"] or "FAILED"
        matrix[r["final_error_type"]][predicted] -= 1
    assert all(v == 0 for row in matrix.values() for v in row.values())


def test_costs_and_failed_attributions(analysis, all_outputs):
    stats = analysis.statistics
    records = [r for _, r in _raw_records(all_outputs)]
    costs = stats["costs"]
    assert costs["input_tokens"]["total"] == sum(r["attribution_usage"]["input_tokens"] for r in records)
    assert costs["seconds"]["max"] == max(r["attribution_seconds"] for r in records)
    failed = stats["failed_attributions"]
    assert [f["failure"] for f in failed] == [r["attribution_failure"] for r in records if r["attribution_failure"]]
    assert failed[0]["memory_system"] == "rag"


def test_results_list_gives_the_same_statistics_as_the_whole_output(tmp_path, all_outputs, analysis):
    lists = []
    for path in all_outputs:
        data = json.loads(path.read_text(encoding="utf-8"))
        target = tmp_path / path.name
        target.write_text(json.dumps(data["results"]), encoding="utf-8")
        lists.append(target)
    again = analyse(lists, top_operations=100).statistics
    # a bare results list names no split: the memory system comes from the graph's layer
    assert again["error_types"]["by_memory_system"] == analysis.statistics["error_types"]["by_memory_system"]
    assert again["blamed_operations"] == analysis.statistics["blamed_operations"]


def test_a_missing_graph_leaves_the_op_unresolved_and_keeps_the_case(tmp_path, outputs_dir):
    data = json.loads((outputs_dir / "long_context.json").read_text(encoding="utf-8"))
    data["results"][0]["graph_path"] = str(tmp_path / "long_context" / "gone.json")
    path = tmp_path / "out.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    stats = analyse([path]).statistics
    assert stats["records"] == len(data["results"])
    assert stats["blamed_operations"]["unresolved"] == 1
    assert stats["error_types"]["by_memory_system"]["long_context"]["attributed"] == len(data["results"])


# ------------------------------------------------------------------------ trails (evidence_flow)

V1_TRAILS = {
    "ExtractionError": [
        {"stage": "evidence", "present": True},
        {"stage": "construction", "present": True},
        {"stage": "construction", "present": False},
    ],
    "UpdateError": [
        {"stage": "evidence", "present": True},
        {"stage": "construction", "present": True},
        {"stage": "lifecycle", "present": True},
        {"stage": "lifecycle", "present": False},
        {"stage": "store", "present": False},
    ],
    "RetrievalError": [
        {"stage": "lifecycle", "present": True},
        {"stage": "store", "present": True},
        {"stage": "retrieval", "present": True},
        {"stage": "context", "present": False},
    ],
    "ResponseError": [
        {"stage": "store", "present": True},
        {"stage": "context", "present": True},
        {"stage": "answer", "present": False},
    ],
}


@pytest.mark.parametrize("error_type", sorted(V1_TRAILS))
def test_evidence_flow_v1_trails_place_the_loss_where_the_type_says(error_type):
    assert loss_stage_from_trail(V1_TRAILS[error_type]) == STAGE_OF_TYPE[error_type]


def test_trail_without_a_later_absence_loses_at_the_next_stage():
    assert loss_stage_from_trail([{"stage": "store", "present": True}]) == "retrieval"
    assert loss_stage_from_trail([{"stage": "context", "present": True}]) == "answer"
    assert loss_stage_from_trail([{"stage": "answer", "present": True}]) is None
    assert loss_stage_from_trail([{"stage": "martian", "present": False}, {"stage": "store"}]) is None


def test_trails_are_found_wherever_a_version_stores_them():
    trail = V1_TRAILS["UpdateError"]
    for record in (
        {"error_attribution_result": {"error_type": "UpdateError", "trail": trail}},
        {"error_attribution_result": {"error_type": "UpdateError", "trail": json.dumps(trail)}},
        {"error_attribution_result": {"error_type": "UpdateError", "trail": str(trail)}},  # str() of the list
        {"evidence_flow": {"trail": trail, "confidence": 0.9}},
        {"evidence_flow_trail": trail},
    ):
        assert find_trail(record) == trail
    assert find_trail({"error_attribution_result": {"trail": "not a trail"}}) is None


def test_a_trail_that_contradicts_its_verdict_is_listed_and_stays_at_the_verdicts_stage(tmp_path, outputs_dir):
    data = json.loads((outputs_dir / "mem0.json").read_text(encoding="utf-8"))
    records = [r for r in data["results"] if not r["attribution_failure"]]
    # a ResponseError-typed case whose trail says the information never reached the context
    records[0]["error_attribution_result"] = {**records[0]["error_attribution_result"], "error_type": "ResponseError"}
    records[0]["evidence_flow"] = {"trail": V1_TRAILS["RetrievalError"]}
    records[1]["error_attribution_result"]["trail"] = V1_TRAILS["UpdateError"]
    records[1]["error_attribution_result"]["error_type"] = "UpdateError"
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({**data, "results": records}), encoding="utf-8")
    stats = analyse([path]).statistics
    funnel = stats["loss_funnel"]["overall"]
    assert funnel["trail"] == {"checked": 2, "agrees": 1, "contradicts": 1}
    expected = Counter(STAGE_OF_TYPE[r["error_attribution_result"]["error_type"]] for r in records)
    assert funnel["lost_at"] == {s: expected[s] for s in FUNNEL_STAGES}  # the verdict places every case
    [listed] = stats["loss_funnel"]["contradictions"]
    assert (listed["query_id"], listed["verdict_stage"], listed["trail_stage"]) == (
        records[0]["query_id"], "answer", "retrieval")
    assert "context-" in listed["trail"] and listed["viewer_link"].startswith("http://localhost:8501/?folder=")
    assert loss_stage_of(records[0], "ResponseError").agrees_with_error_type is False
    assert loss_stage_of(records[0], "ResponseError").stage == "answer"


def test_funnel_and_error_type_table_agree_for_every_case(analysis):
    """One logic: per memory system, the cases lost at each stage are exactly the cases whose
    error type implies that stage in the error-type table."""
    for system, block in analysis.statistics["error_types"]["by_memory_system"].items():
        funnel = analysis.statistics["loss_funnel"]["by_memory_system"][system]
        from_table = Counter()
        for error_type, n in block["counts"].items():
            from_table[STAGE_OF_TYPE[error_type]] += n
        assert funnel["lost_at"] == {s: from_table[s] for s in FUNNEL_STAGES}, system
    for fact in analysis.facts:
        if fact.attributed:
            assert fact.loss_stage == STAGE_OF_TYPE[fact.error_type], fact.query_id


def test_fixture_has_the_deviations_the_tests_rely_on(all_outputs):
    records = [r for _, r in _raw_records(all_outputs)]
    assert any(r["error_attribution_result"]["op_id"] == MISSING_OP for r in records)


def test_real_evidence_flow_trails_under_the_record_key_place_every_loss(tmp_path):
    """The shape the attribution runner writes for evidence_flow records: a record-level
    ``evidence_flow`` object ``{status, confidence, trail}`` next to ``error_attribution_result``."""
    from tests.report.conftest import FAULTBENCH
    from toolkits.bench_utils import load_memtracebench
    from toolkits.evidence_flow import attribute_case_evidence_flow

    graphs, cases = load_memtracebench(FAULTBENCH, download=False)
    records = []
    for graph, case in zip(graphs, cases, strict=True):
        result = attribute_case_evidence_flow(graph, case)
        assert result["status"] == "attributed", case.query_full_node_id
        records.append({
            "query_id": case.query_full_node_id, "graph_path": case.metadata["graph_path"],
            "error_attribution_result": {k: result[k] for k in ("error_type", "op_id", "reason")},
            "evidence_flow": {k: result[k] for k in ("status", "confidence", "trail")},
        })
    path = tmp_path / "evidence_flow.json"
    path.write_text(json.dumps({"split": "all", "exploration_strategy": "evidence_flow", "results": records}))
    analysis = analyse([path])
    funnel = analysis.statistics["loss_funnel"]["overall"]
    assert funnel["trail"] == {"checked": len(records), "agrees": len(records), "contradicts": 0}
    assert analysis.statistics["loss_funnel"]["contradictions"] == []
    for fact in analysis.facts:  # the funnel and the error-type table place every record alike
        assert fact.loss_stage == fact.trail_stage == STAGE_OF_TYPE[fact.error_type], fact.query_id
    expected = Counter(STAGE_OF_TYPE[r["error_attribution_result"]["error_type"]] for r in records)
    assert funnel["lost_at"] == {s: expected[s] for s in FUNNEL_STAGES}
    assert len([s for s in FUNNEL_STAGES if expected[s]]) >= 4  # the benchmark loses information at most stages
