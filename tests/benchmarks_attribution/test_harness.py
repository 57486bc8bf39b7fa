"""The attribution harness: a tiny benchmark data file builds through the real layers, verifies, scores."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.attribution.__main__ import main
from benchmarks.attribution.build import MANIFEST, build_benchmark
from benchmarks.attribution.data import BenchmarkError, load_benchmark
from benchmarks.attribution.score import misses, score_outputs, table

TINY = Path(__file__).with_name("tiny.json")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny-build")
    return out, build_benchmark(load_benchmark(TINY), out)


def test_cases_are_labelled_by_the_op_where_the_planned_fault_acted(built):
    from toolkits.bench_utils import load_memtracebench

    out, report = built
    assert [(c["case"], c["final_error_type"]) for c in report.cases] == [
        (1, "ExtractionError"), (2, "ResponseError"), (3, "RetrievalError")]
    names = {}
    for split in ("rag", "long_context"):
        graphs, cases = load_memtracebench(str(out), [split])
        for graph, case in zip(graphs, cases, strict=True):
            ops = {op.op_id: op.op_name for op in graph.get_all_operations()}
            names[case.metadata["annotation"]["final_error_type"]] = ops[case.metadata["annotation"]["final_op_id"]]
    assert names == {"ExtractionError": "memory_system.message_buffer_update",
                     "ResponseError": "question-answering", "RetrievalError": "memory_system.retrieve"}


def test_a_fault_that_leaves_the_answer_right_is_dropped_with_its_reason(built):
    out, report = built
    assert [(d["case"], d["reason"]) for d in report.dropped] == [(4, "answer_still_right")]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["dropped"] == report.dropped and len(manifest["cases"]) == 3


def test_nothing_in_the_graphs_names_the_fault(built):
    out, _report = built
    for path in out.glob("*/*.json"):
        data = json.loads(path.read_text())
        del data["data"]["annotations"]
        text = json.dumps(data).lower()
        assert not re.search(r"\bfault|\binject|\bplan\b", text), path.name


def _output(path: Path, rows: list[tuple[str, bool, bool]]) -> Path:
    results = [{"graph_path": f"/x/{name}", "is_error_type_correct": t, "is_op_id_correct": o,
                "error_attribution_result": {"error_type": "UpdateError" if not t else None, "op_id": "op-x"}}
               for name, t, o in rows]
    path.write_text(json.dumps({"results": results}))
    return path


def test_score_counts_an_unattributed_case_as_missed_and_lists_the_misses(built, tmp_path):
    out, _report = built
    output = _output(tmp_path / "run.json", [("tiny-001.json", True, True), ("tiny-003.json", False, True)])
    scored = score_outputs(out, [output])
    assert table(scored, lambda c: c["split"])[-1].split() == ["all", "3", "0.333", "0.667"]
    lines = misses(scored)
    assert len(lines) == 3 and "not attributed" in lines[1] + lines[2] and "UpdateError" in lines[1] + lines[2]


def test_cli_scores_outputs_and_refuses_bad_data_with_one_error_line(built, tmp_path, capsys):
    out, _report = built
    output = _output(tmp_path / "run.json", [("tiny-001.json", True, True)])
    assert main(["score", str(out), str(output)]) == 0
    assert "rag doc_drop" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "attribution-benchmark-v1", "conversations": [], "cases": [
        {"conversation": "nowhere", "split": "rag", "question": "1", "fault": {}}]}))
    assert main(["build", str(bad), str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "case 1" in err and "conversation" in err and "\n" not in err
    with pytest.raises(BenchmarkError, match="field 'evidence'"):
        data = json.loads(TINY.read_text())
        data["conversations"][0]["questions"][0]["evidence"] = [99]
        bad.write_text(json.dumps(data))
        load_benchmark(bad)


def test_a_list_answer_needs_all_its_parts_and_keeps_them_for_the_annotation():
    conv = load_benchmark(TINY).conversations["garden"]
    data = json.loads(TINY.read_text())
    data["conversations"][0]["questions"][0]["answers"] = ["Felix", "his red wheelbarrow"]
    qa = type(conv)(id=conv.id, sessions=conv.sessions, questions={
        "1": data["conversations"][0]["questions"][0]}).qa("1")
    assert qa.golden_answers == ["Felix and his red wheelbarrow"]
    assert qa.metadata["answer_parts"] == ["Felix", "his red wheelbarrow"]
    assert qa.metadata["evidence"] == ["garden:D1:1"]


def test_the_evidence_reader_answers_right_only_when_every_key_reached_its_context():
    from benchmarks.attribution.reader import EvidenceReader, evidence_keys

    texts = ["Nice, what are you planting first?", "Tomatoes go in the raised bed. The bed sits by the north fence."]
    record = {"question": "Where do the tomatoes go?", "answers": ["the raised bed"], "evidence": [2]}
    keys = evidence_keys(record, texts)
    assert keys == ("Tomatoes go in the raised bed.",)
    assert evidence_keys({**record, "keys": ["north fence"]}, texts) == ("north fence",)
    reader = EvidenceReader(keys={record["question"]: keys}, answers={record["question"]: "the raised bed"})
    assert reader.answer("Where do the tomatoes go?", "Nadia: Tomatoes go in the raised bed.") == "the raised bed"
    assert reader.answer("Where do the tomatoes go?", "Nadia: Tomatoes go in the window box.") == "I don't know."
    assert reader.answer("Where do the tomatoes go?", "Nadia: Tomatoes go in the raised bed.",
                         exclude=["Tomatoes go in the raised bed."]) == "I don't know."
    assert reader.answer("Who lent the wheelbarrow?", "anything") == "I don't know."


@pytest.mark.parametrize("name, planned", [("b", 92), ("c", 105), ("d", 85), ("e", 105), ("f", 100)])
def test_every_converted_plan_names_texts_its_conversation_holds(name, planned):
    bench = load_benchmark(Path(__file__).resolve().parents[2] / "benchmarks" / "attribution" / "data" / f"{name}.json")
    assert len(bench.cases) == planned
    for case in bench.cases:
        conv = bench.conversations[case.conversation]
        texts = [f"Speaker {who} (role: user) says: {text}" for _id, who, text, _t in conv.messages()]
        plan = case.fault
        number = plan.message or conv.questions[case.question]["evidence"][0]
        assert 1 <= number <= len(texts), case.number
        if plan.site in ("memory_update", "doc", "buffer", "add") and plan.corruption != "compact":
            olds = [old for old, _new in plan.edits]  # a line edit meets its message
            assert not olds or any(old is None or old in texts[number - 1] for old in olds), case.number
        if plan.error in ("update", "deletion") and plan.after:
            assert plan.after > number or plan.corruption == "compact", case.number
        if plan.error == "response":
            assert case.prediction or plan.edits, case.number  # a planned answer or a misread


@pytest.mark.slow
def test_score_attribute_runs_evidence_flow_on_every_split_of_a_build(built, tmp_path, capsys):
    out, _report = built
    assert main(["score", str(out), "--attribute", str(tmp_path / "runs")]) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "runs").glob("*.json")) == ["long_context.json", "rag.json"]
    totals = [line.split() for line in printed.splitlines() if line.startswith("all ")]
    assert totals and all(t[1] == "3" for t in totals)  # every kept case was attributed and scored
