"""Input validation, overview resolution and case rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.report.conftest import FAULTBENCH, MISSING_OP
from toolkits.report.graphs import GraphStore
from toolkits.report.inputs import ReportInputError, load_attribution_inputs, records_from_json
from toolkits.report.overviews import Overview, OverviewError, builtin_overview, resolve_overview
from toolkits.report.rendering import keep_last_tokens, render_cases


def test_whole_output_and_results_list_are_both_accepted(outputs_dir: Path, tmp_path: Path):
    data = json.loads((outputs_dir / "rag.json").read_text(encoding="utf-8"))
    listed = tmp_path / "results.json"
    listed.write_text(json.dumps(data["results"]), encoding="utf-8")
    whole = load_attribution_inputs([outputs_dir / "rag.json"])
    bare = load_attribution_inputs([listed])
    assert [r.query_id for r in whole.records] == [r.query_id for r in bare.records]
    assert whole.splits == ("rag",) and bare.splits == ()
    assert whole.records[0].split == "rag" and bare.records[0].split is None
    assert [r.attributed for r in whole.records] == [r.attributed for r in bare.records]
    assert sum(not r.attributed for r in whole.records) == 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json", "is not JSON"),
        (json.dumps({"data": {"nodes": []}}), "is not an attribution output"),
        (json.dumps([]), "holds no attribution records"),
        (json.dumps([{"query_id": "q", "final_error_type": "UpdateError"}]), "has no 'error_attribution_result'"),
        (json.dumps(["a string"]), "not an attribution record"),
        (json.dumps(42), "is not an attribution output"),
    ],
)
def test_non_attribution_inputs_are_refused_with_one_line(tmp_path: Path, content: str, expected: str):
    path = tmp_path / "input.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ReportInputError) as info:
        load_attribution_inputs([path])
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_a_benchmark_graph_file_is_not_mistaken_for_an_attribution_output():
    graph_file = sorted((FAULTBENCH / "mem0").glob("*.json"))[0]
    with pytest.raises(ReportInputError, match="not an attribution output"):
        load_attribution_inputs([graph_file])
    with pytest.raises(ReportInputError, match="not found"):
        load_attribution_inputs([graph_file.with_name("missing.json")])


def test_golden_answers_as_a_string_are_not_split_into_characters():
    records, _ = records_from_json(
        [{"query_id": "q", "query": "?", "golden_answers": "Paris", "prediction": "Rome",
          "error_attribution_result": {"error_type": "ResponseError", "op_id": "op", "reason": "r"}}]
    )
    assert records[0].golden_answer == "Paris"
    records, _ = records_from_json(
        [{"query_id": "q", "golden_answers": ["Paris", "France"],
          "error_attribution_result": {"error_type": "ResponseError", "op_id": "op", "reason": "r"}}]
    )
    assert records[0].golden_answer == "Paris, France"
    assert records[0].prediction == "" and records[0].source_evidence_ids == ()


# ------------------------------------------------------------------------------------ overviews


def test_overview_auto_uses_the_single_memory_system_else_generic():
    assert resolve_overview(None, memory_systems=["mem0", "mem0"]).source == "builtin:mem0"
    assert resolve_overview("auto", memory_systems=["mem0", "rag"]).source == "builtin:generic"
    assert resolve_overview(None, memory_systems=[]).source == "builtin:generic"
    assert resolve_overview("Long-Context").source == "builtin:long_context"
    for name in ("generic", "long_context", "rag", "mem0", "evermemos"):
        assert len(builtin_overview(name)) > 400


def test_overview_from_a_file_from_text_and_a_missing_path(tmp_path: Path):
    path = tmp_path / "mine.md"
    path.write_text("My system stores facts.\n", encoding="utf-8")
    assert resolve_overview(str(path)) .text == "My system stores facts."
    assert resolve_overview("A cache in front of a vector store.").source == "inline"
    # one-line overviews with slashes are text, not paths
    for text in ("Mem0 with ADD/UPDATE/DELETE decisions per fact.", "A store that keeps and/or merges facts"):
        assert resolve_overview(text) == Overview(text=text, source="inline")
    for path in ("overviews/missing", "my overview.md", "notes.txt"):
        with pytest.raises(OverviewError, match="looks like a path"):
            resolve_overview(path)
    with pytest.raises(OverviewError, match="no such file"):
        resolve_overview(str(tmp_path / "nope.md"))
    (tmp_path / "empty.txt").write_text("  \n", encoding="utf-8")
    with pytest.raises(OverviewError, match="empty"):
        resolve_overview(str(tmp_path / "empty.txt"))


# ------------------------------------------------------------------------------------ rendering


def _typical(records) -> int:
    """A case with a real op and source evidence (not the fixture's deliberate deviations)."""
    return next(i for i, r in enumerate(records)
                if i > 0 and r.attributed and r.op_id != MISSING_OP and r.source_evidence_ids)


def test_cases_render_with_their_operation_subgraph_and_evidence(outputs_dir: Path):
    inputs = load_attribution_inputs([outputs_dir / "mem0.json"])
    graphs = GraphStore()
    with pytest.warns(UserWarning, match=MISSING_OP):
        rendered, unrenderable = render_cases(inputs.records, graphs, max_op_xml_tokens=600_000)
    assert unrenderable == []
    assert len(rendered) == len(inputs.records)
    i = _typical(inputs.records)
    first, record = rendered[i], inputs.records[i]
    graph = graphs.graph_for(record)
    assert f"Error type: {record.error_type}" in first.text
    assert f"Attributed operation id: {record.op_id}" in first.text
    assert f"Question:\n{record.query}" in first.text
    assert f"Golden answer:\n{record.golden_answer}" in first.text
    assert f"Model prediction:\n{record.prediction}" in first.text
    assert graph.filter_by_operation(record.op_id).to_xml() in first.text
    evidence_value = graph.get_variable(record.source_evidence_ids[0]).value
    assert "Source Evidence 1:" in first.text
    assert (evidence_value if isinstance(evidence_value, str) else json.dumps(evidence_value, indent=2,
            ensure_ascii=False)) in first.text
    assert "does not exist in the execution graph" in rendered[-1].text
    assert "Evidence-flow trail" not in first.text  # these records carry no trail


def test_a_case_with_a_trail_shows_it_in_one_line(outputs_dir: Path, tmp_path: Path):
    data = json.loads((outputs_dir / "rag.json").read_text(encoding="utf-8"))
    record = next(r for r in data["results"] if not r["attribution_failure"])
    record["evidence_flow"] = {"status": "attributed", "trail": [
        {"stage": "evidence", "present": True, "op_name": None},
        {"stage": "construction", "present": True, "op_name": "memory_system.add"},
        {"stage": "construction", "present": True, "op_name": "memory_system.add"},
        {"stage": "store", "present": True, "op_name": None},
        {"stage": "retrieval", "present": False, "op_name": "memory_system.retrieve"}]}
    path = tmp_path / "rag.json"
    path.write_text(json.dumps({**data, "results": [record]}), encoding="utf-8")
    [case], _ = render_cases(load_attribution_inputs([path]).records, GraphStore(), max_op_xml_tokens=1000)
    assert ("Evidence-flow trail (+ still present, - lost): evidence+ → construction+ memory_system.add → store+ "
            "→ retrieval- memory_system.retrieve\n") in case.text


def test_op_xml_keeps_its_last_tokens(outputs_dir: Path):
    inputs = load_attribution_inputs([outputs_dir / "mem0.json"])
    with pytest.warns(UserWarning):
        rendered, _ = render_cases(inputs.records, GraphStore(), max_op_xml_tokens=50)
    i = _typical(inputs.records)
    case = rendered[i]
    assert case.xml_truncated
    xml = GraphStore().graph_for(inputs.records[i]).filter_by_operation(inputs.records[i].op_id).to_xml()
    tail = case.text.split("tokens.)\n", 1)[1]
    assert xml.endswith(tail) and len(tail) < len(xml)
    text, cut = keep_last_tokens("abc", 10)
    assert (text, cut) == ("abc", False)


def test_a_graph_that_no_longer_exists_makes_only_that_case_unrenderable(outputs_dir: Path, tmp_path: Path):
    data = json.loads((outputs_dir / "long_context.json").read_text(encoding="utf-8"))
    data["results"][0]["graph_path"] = str(tmp_path / "moved.json")
    path = tmp_path / "out.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    inputs = load_attribution_inputs([path])
    rendered, unrenderable = render_cases(inputs.records, GraphStore(), max_op_xml_tokens=1000)
    assert [u.index for u in unrenderable] == [0]
    assert "no longer exists" in unrenderable[0].reason
    assert len(rendered) == len(inputs.records) - 1


def test_relative_graph_paths_resolve_against_the_input_folder(outputs_dir: Path, tmp_path: Path):
    data = json.loads((outputs_dir / "rag.json").read_text(encoding="utf-8"))
    bench = tmp_path / "bench"
    bench.mkdir()
    for record in data["results"]:
        name = Path(record["graph_path"]).name
        (bench / name).write_bytes(Path(record["graph_path"]).read_bytes())
        record["graph_path"] = f"bench/{name}"
    path = tmp_path / "out.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    inputs = load_attribution_inputs([path])
    store = GraphStore()
    assert all(store.graph_for(r) is not None for r in inputs.records)


def test_keep_last_tokens_with_a_tokenizer(monkeypatch):
    from toolkits.report import rendering

    class Words:  # a stand-in for tiktoken's encoding: one token per space-separated word
        def encode(self, text, disallowed_special=()):
            return text.split(" ")

        def decode(self, tokens):
            return " ".join(tokens)

    monkeypatch.setattr(rendering, "_encoding", lambda: Words())
    assert keep_last_tokens("a b c d e", 2) == ("d e", True)
    assert keep_last_tokens("a b", 2) == ("a b", False)


def test_malformed_fields_of_a_record_do_not_stop_the_report():
    base = {"query_id": "q", "error_attribution_result": {"error_type": "RetrievalError", "op_id": "op", "reason": "r"}}
    for evidence, expected in ((5, ()), ({"U1:D1:1@1": 1}, ()), (None, ()), ("U1:D1:1@1", ("U1:D1:1@1",)),
                               (["U1:D1:1@1", 7], ("U1:D1:1@1", "7"))):
        records, _ = records_from_json([{**base, "source_evidence_ids": evidence}])
        assert records[0].source_evidence_ids == expected, evidence
        assert records[0].attributed


def test_a_utf8_file_with_a_byte_order_mark_is_read(outputs_dir: Path, tmp_path: Path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + (outputs_dir / "rag.json").read_bytes())
    assert len(load_attribution_inputs([path]).records) == len(load_attribution_inputs([outputs_dir / "rag.json"]).records)


def test_a_file_that_is_not_utf8_is_one_line(tmp_path: Path):
    path = tmp_path / "latin1.json"
    path.write_bytes('[{"query": "caf\xe9"}]'.encode("latin-1"))
    with pytest.raises(ReportInputError, match="not UTF-8") as info:
        load_attribution_inputs([path])
    assert "\n" not in str(info.value)


def test_graphs_are_held_a_few_at_a_time_and_read_once_per_pass(all_outputs: list[Path], tmp_path: Path, monkeypatch):
    """A MemTraceBench report names dozens of graphs of up to ~100 MB: they are not all kept in
    memory. Records of one graph are handled together, even when the input interleaves them."""
    from smartcomment.runtime.network import ExecNetwork
    from toolkits.report.pipeline import analyse

    records = []
    for path in all_outputs:
        records += [r for r in json.loads(path.read_text(encoding="utf-8"))["results"] if not r["attribution_failure"]]
    by_graph: dict[str, list[dict]] = {}
    for r in records:
        by_graph.setdefault(r["graph_path"], []).append(r)
    assert len(by_graph) >= 6
    interleaved = [group[i] for i in range(max(map(len, by_graph.values()))) for group in by_graph.values()
                   if i < len(group)]  # A B C … A B C …: no two records of a graph side by side
    # the same graphs named by two input files (a relative and an absolute path) are one graph
    first = [{**r, "graph_path": str(Path(r["graph_path"]).relative_to(FAULTBENCH.parent))} for r in interleaved[:5]]
    (tmp_path / "faultbench").symlink_to(FAULTBENCH)
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps(first), encoding="utf-8")
    two.write_text(json.dumps(interleaved[5:]), encoding="utf-8")

    loads: list[str] = []
    live: list[GraphStore] = []
    held: list[int] = []
    real = ExecNetwork.from_file.__func__

    def counting(cls, path, *args, **kwargs):
        loads.append(str(Path(path).resolve()))
        held.append(len(live[0]._graphs) if live else 0)
        return real(cls, path, *args, **kwargs)

    monkeypatch.setattr(ExecNetwork, "from_file", classmethod(counting))
    analysis = analyse([one, two])
    assert len(loads) == len(set(loads)) == len(by_graph)  # statistics: each graph read once
    assert analysis.statistics["blamed_operations"]["unresolved"] == 1  # only the fixture's MISSING_OP
    store = analysis.graphs
    live.append(store)
    loads.clear()
    with pytest.warns(UserWarning, match=MISSING_OP):
        rendered, unrenderable = render_cases(analysis.inputs.records, store, max_op_xml_tokens=100)
    assert unrenderable == [] and [c.index for c in rendered] == list(range(len(interleaved)))
    assert len(loads) == len(set(loads)) and set(loads) <= {str(Path(p).resolve()) for p in by_graph}
    assert max(held) < store.max_loaded < len(by_graph)  # a few graphs in memory at a time, never all
