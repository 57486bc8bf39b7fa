"""MemTraceBench loading over the real file layout, the offline message, and judge-op mining."""

from __future__ import annotations

import copy
import json

import pytest

from toolkits.bench_utils import (
    BenchmarkDataMissingError,
    FailedQueryCase,
    collect_failed_queries,
    format_golden_answers,
    load_memtracebench,
)

pytest.importorskip("smartcomment.runtime.network")


def _annotation(query_id: str, error_type: str, golden, op_id: str = "op-x") -> dict:
    return {
        "query_id": query_id,
        "query": "'Where did Caroline move from four years ago?'",
        "golden_answers": golden,
        "golden_answers_id": "golden_answers:list:a7ad38cc5081b7f7978a9b8f83aee5749038e115@1",
        "prediction": "Norway",
        "prediction_id": "prediction:str:0e667424c874766c1f3483bb261cb5dc02e18e4a@1",
        "source_evidence_ids": ["U1:D2:2@1"],
        "final_error_type": error_type,
        "final_op_id": op_id,
    }


@pytest.fixture
def bench_dir(tmp_path, bench_graph_json):
    """A two-file ``mem0`` split in the published layout (smartcomment export + data.annotations)."""
    split = tmp_path / "mem0"
    split.mkdir()
    first = copy.deepcopy(bench_graph_json)
    first["data"]["annotations"] = [
        _annotation(
            "query:locomo-qa-1-2@1",
            "UpdateError",
            ["Sweden", "Stockholm"],
            "op-2893695d32274e23b17111a365ca9afa",
        ),
        _annotation("query:locomo-qa-1-1@1", "AnnotationError", "7 May 2023"),
    ]
    second = copy.deepcopy(bench_graph_json)
    second["metadata"].pop("memtracebench_dataset_source")
    second["data"]["annotations"] = [_annotation("query:locomo-qa-1-1@1", "RetrievalError", "7 May 2023")]
    (split / "b_graph.json").write_text(json.dumps(second), encoding="utf-8")
    (split / "a_graph.json").write_text(json.dumps(first), encoding="utf-8")
    return tmp_path


def test_loads_cases_in_file_order_sharing_graphs(bench_dir):
    graphs, cases = load_memtracebench(bench_dir, "mem0")
    assert [c.query_full_node_id for c in cases] == ["query:locomo-qa-1-2@1", "query:locomo-qa-1-1@1"]
    assert len(graphs) == 2 and graphs[0] is not graphs[1]
    first = cases[0]
    assert first.golden_answer == "[Sweden, Stockholm]"
    assert first.prediction == "Norway" and first.source_evidence_full_node_ids == ["U1:D2:2@1"]
    assert first.judge_response is None
    assert first.metadata["annotation"]["final_op_id"] == "op-2893695d32274e23b17111a365ca9afa"
    assert first.metadata["graph_filename"] == "a_graph.json"
    assert first.metadata["graph_path"] == str(bench_dir / "mem0" / "a_graph.json")
    assert (first.metadata["split"], first.metadata["dataset_source"]) == ("mem0", "LoCoMo")
    # a file without the source key does not crash the loader (reference bug 9)
    assert cases[1].metadata["dataset_source"] == "unknown"
    assert cases[1].golden_answer == "7 May 2023"
    assert "query:locomo-qa-1-2@1" in graphs[0]


def test_non_memory_labels_are_kept_when_filtering_is_off(bench_dir):
    graphs, cases = load_memtracebench(bench_dir, ["mem0"], filter_non_memory_errors=False)
    assert [c.metadata["annotation"]["final_error_type"] for c in cases] == [
        "UpdateError",
        "AnnotationError",
        "RetrievalError",
    ]
    assert graphs[0] is graphs[1]  # one graph object per file, shared by its cases


def test_missing_split_offline_says_where_to_put_the_files(bench_dir):
    with pytest.raises(BenchmarkDataMissingError) as info:
        load_memtracebench(bench_dir, ["mem0", "rag"])
    message = str(info.value)
    assert "MemTraceBench split(s) rag not found under" in message
    assert f"place its JSON files as {bench_dir}/<split>/*.json" in message
    assert "\n" not in message


def test_all_splits_load_what_exists_and_warn_for_the_rest(bench_dir):
    with pytest.warns(UserWarning, match="split 'rag' skipped"):
        _, cases = load_memtracebench(bench_dir, download=False)
    assert len(cases) == 2
    with pytest.raises(BenchmarkDataMissingError, match="download disabled"):
        load_memtracebench(bench_dir / "empty", download=False)


def test_bad_split_and_broken_file(bench_dir):
    with pytest.raises(ValueError, match="unknown MemTraceBench split"):
        load_memtracebench(bench_dir, "letta")
    (bench_dir / "mem0" / "c_broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"c_broken\.json: not a graph file \(JSONDecodeError"):
        load_memtracebench(bench_dir, "mem0")


def test_format_golden_answers():
    assert format_golden_answers(["a", 1]) == "[a, 1]"
    assert format_golden_answers("Sweden") == "Sweden"


def _toy_eval(fixtures_dir) -> dict:
    return json.loads((fixtures_dir / "sc012_toy_evaluation.json").read_text(encoding="utf-8"))


def test_collect_failed_queries_from_judge_ops(fixtures_dir):
    from smartcomment.runtime.network import ExecNetwork

    cases = collect_failed_queries(ExecNetwork.import_graph(_toy_eval(fixtures_dir)))
    assert cases == [
        FailedQueryCase(
            query_full_node_id="query:locomo-qa-1-2@1",
            # as the user asked and the model said it, not smartcomment's stored repr ("'Norway'"): a
            # strategy reading "'When did ...?'" misses its first word, and a report shows the quotes
            query="Where did Caroline move from four years ago?",
            golden_answer="Sweden",
            prediction="Norway",
            source_evidence_full_node_ids=["U1:D2:2@1"],
            judge_response='\'{"label": "WRONG"}\'',
            metadata=cases[0].metadata,
        )
    ]
    assert cases[0].metadata["evidence"] == ["U1:D2:2"]


def test_collect_failed_queries_skips_incomplete_and_rejects_bad_scores(fixtures_dir):
    from smartcomment.runtime.network import ExecNetwork

    data = _toy_eval(fixtures_dir)
    graph = ExecNetwork.import_graph(data)
    for node in graph.get_all_nodes():
        if node.class_name == "judge_response":
            graph.remove_variable(node.full_node_id)
    with pytest.warns(UserWarning, match="skipped: no variable of class .*judge_response"):
        assert collect_failed_queries(graph) == []

    bad = copy.deepcopy(data)
    for node in bad["data"]["nodes"]:
        if node["class_name"] == "judge_score":
            node["value"] = "n/a"
    with pytest.raises(ValueError, match="is not a number: 'n/a'"):
        collect_failed_queries(ExecNetwork.import_graph(bad))


def test_collect_failed_queries_warns_for_unknown_evidence(fixtures_dir):
    from smartcomment.runtime.network import ExecNetwork

    data = _toy_eval(fixtures_dir)
    for node in data["data"]["nodes"]:
        if node["full_node_id"] == "query:locomo-qa-1-2@1":
            node["metadata"]["evidence"] = ["U1:D2:2", "U9:D9:9"]
    with pytest.warns(UserWarning, match="evidence variable 'U9:D9:9'"):
        cases = collect_failed_queries(ExecNetwork.import_graph(data))
    assert cases[0].source_evidence_full_node_ids == ["U1:D2:2@1"]
