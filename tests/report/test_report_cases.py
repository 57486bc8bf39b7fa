"""From a chart to the case to fix: examples with viewer links per blamed op, the prompt each op
depends on, Mem0's decision split, replay recovery gain, non-memory verdicts and missing graphs."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.report.conftest import FAULTBENCH
from toolkits.report import cli as report_cli
from toolkits.report.case_details import case_id_of, decision_event_of, viewer_folder_of
from toolkits.report.graphs import GraphStore
from toolkits.report.pipeline import analyse
from toolkits.report.rendering import render_cases
from toolkits.report.stats import summary_for_prompt

DECISION_OP = "memory_system.update_memory_decision"


@pytest.fixture(scope="module")
def faultbench_report(all_outputs, tmp_path_factory) -> tuple[dict, str]:
    folder = tmp_path_factory.mktemp("faultbench_report")
    code = report_cli.main(["--data-path", *map(str, all_outputs), "--save-folder", str(folder), "--no-llm",
                                 "--no-png", "--top-operations", "100"])
    assert code == 0
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    return data, (folder / "error_analysis_report.md").read_text(encoding="utf-8")


def _params(link: str) -> dict[str, str]:
    parts = urlsplit(link)
    assert (parts.scheme, parts.netloc, parts.path) == ("http", "localhost:8501", "/")
    return {k: v[0] for k, v in parse_qs(parts.query).items()}


def test_faultbench_report_shows_examples_with_viewer_links_for_every_blamed_op(faultbench_report, all_outputs):
    data, markdown = faultbench_report
    records = [r for p in all_outputs for r in json.loads(p.read_text(encoding="utf-8"))["results"]]
    rows = data["statistics"]["blamed_operations"]["by_name"]
    assert len(rows) >= 6
    for row in rows:
        assert 1 <= len(row["examples"]) <= 3 and len(row["examples"]) == min(3, row["count"])
        assert f"*Examples blamed on `{row['op_name']}` ({len(row['examples'])} of {row['count']})*" in markdown
        for example in row["examples"]:
            record = records[example["index"]]  # a question id recurs across the splits
            assert record["query_id"] == example["query_id"]
            assert example["question"] == record["query"] and example["reason"]
            assert example["golden_answer"] == ", ".join(record["golden_answers"])
            params = _params(example["viewer_link"])
            graph_file = Path(record["graph_path"])
            # the folder the viewer is started on is the benchmark, above the split folders
            assert Path(params["folder"]).resolve() == FAULTBENCH.resolve()
            assert params["graph"] == graph_file.stem and (Path(params["folder"]) / graph_file.parent.name
                                                           / f"{params['graph']}.json").is_file()
            assert params["case"] == case_id_of(record["query_id"]) and "@" not in params["case"]
            assert f"]({example['viewer_link']})" in markdown


def test_each_blamed_op_names_the_prompt_it_depends_on(faultbench_report):
    rows = {r["op_name"]: r for r in faultbench_report[0]["statistics"]["blamed_operations"]["by_name"]}
    assert set(rows[DECISION_OP]["prompt_targets"]) == {"custom_update_memory_prompt"}
    assert set(rows["memory_system.extract_facts"]["prompt_targets"]) == {"custom_fact_extraction_prompt"}
    assert set(rows["question-answering"]["prompt_targets"]) == {"question_answering_prompt"}
    assert set(rows["memory_system.retrieve"]["prompt_targets"]) == {"(no prompt target)"}
    targets = {t["target"]: t for t in faultbench_report[0]["statistics"]["prompt_targets"]}
    assert targets["custom_update_memory_prompt"]["operations"] == {DECISION_OP: rows[DECISION_OP]["count"]}
    assert sum(t["count"] for t in targets.values()) == faultbench_report[0]["statistics"]["attributed"]


def test_update_decisions_split_into_add_update_delete_none(faultbench_report):
    data, markdown = faultbench_report
    row = next(r for r in data["statistics"]["blamed_operations"]["by_name"] if r["op_name"] == DECISION_OP)
    events = row["decision_events"]
    assert list(events) == ["ADD", "UPDATE", "DELETE", "NONE"] and sum(events.values()) == row["count"]
    types = row["error_types"]
    assert events["DELETE"] == types.get("DeletionError", 0)
    assert events["UPDATE"] == types.get("UpdateError", 0)
    assert events["ADD"] + events["NONE"] == types.get("ExtractionError", 0)
    assert f"ADD {events['ADD']}, UPDATE {events['UPDATE']}, DELETE {events['DELETE']}" in markdown


def test_decision_event_is_read_from_the_trails_lost_memory_unit():
    op = "op-1"

    def step(node: str, note: str = "") -> dict:
        return {"stage": "lifecycle", "present": False, "op_id": op, "node_id": node, "note": note}

    assert decision_event_of(None, op, error_type="UpdateError",
                             trail=[step("memory-unit-a@1", "memory-unit-a deleted; no unit holds it")]) == ("DELETE", "trail")
    assert decision_event_of(None, op, error_type="DeletionError", trail=[step("memory-unit-a@3")]) == ("UPDATE", "trail")
    assert decision_event_of(None, op, error_type="UpdateError", trail=[step("memory-unit-a@1")]) == ("ADD", "trail")
    assert decision_event_of(None, op, error_type="DeletionError", trail=None) == ("DELETE", "verdict")


def test_viewer_folder_is_the_folder_above_a_split_or_traced_data():
    assert viewer_folder_of("bench/mem0/g.json") == "bench"
    assert viewer_folder_of("runs/rag/traced_data/conv-1.json") == "runs/rag"
    assert viewer_folder_of("graphs/custom/g.json", split="custom") == "graphs"
    assert viewer_folder_of("elsewhere/g.json") == "elsewhere"


def _mem0_records(outputs_dir: Path) -> tuple[dict, list[dict]]:
    data = json.loads((outputs_dir / "mem0.json").read_text(encoding="utf-8"))
    return data, [r for r in data["results"] if not r["attribution_failure"]]


def test_replay_results_give_the_recovery_gain_per_op_and_per_prompt_target(outputs_dir, tmp_path: Path):
    data, records = _mem0_records(outputs_dir)
    analysis = analyse([outputs_dir / "mem0.json"])
    op_of = {f.query_id: f.op_name for f in analysis.facts}
    decision = [r for r in records if op_of[r["query_id"]] == DECISION_OP]
    assert len(decision) >= 3
    for i, record in enumerate(decision):
        record["replay"] = {"rescued": i % 3 != 2, "prediction": "a repaired answer", "judge_label": "CORRECT",
                            "new_calls": 4, "tokens": 900, "seconds": 1.5}
    decision[0]["counterfactual_label"] = {"error_type": "UpdateError", "op_id": decision[0]["final_op_id"]}
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({**data, "results": records}), encoding="utf-8")
    folder = tmp_path / "report"
    assert report_cli.main(["--data-path", str(path), "--save-folder", str(folder), "--no-llm", "--no-png"]) == 0
    out = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    replay = out["statistics"]["replay"]
    rescued = sum(1 for i in range(len(decision)) if i % 3 != 2)
    assert (replay["replayed"], replay["rescued"]) == (len(decision), rescued)
    assert replay["recovery_gain"] == pytest.approx(rescued / len(decision))
    assert replay["by_op"] == [{"op_name": DECISION_OP, "replayed": len(decision), "rescued": rescued,
                                "recovery_gain": pytest.approx(rescued / len(decision))}]
    assert [r["target"] for r in replay["by_prompt_target"]] == ["custom_update_memory_prompt"]
    assert replay["tokens"] == 900 * len(decision) and replay["new_calls"] == 4 * len(decision)
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    assert f"Repairing `custom_update_memory_prompt` rescues {rescued} of {len(decision)} failure(s)." in markdown
    assert f"Repairing `{DECISION_OP}` rescues {rescued} of {len(decision)} failure(s)." in markdown
    prompt = summary_for_prompt(out["statistics"])  # the report model sees the recovery gain too
    assert f"rescued {rescued} of {len(decision)}: {DECISION_OP} {rescued}/{len(decision)}." in prompt


def test_no_replay_means_no_recovery_section(faultbench_report):
    data, markdown = faultbench_report
    assert data["statistics"]["replay"] is None and "Recovery gain" not in markdown


def test_non_memory_verdicts_are_their_own_rows_and_never_blamed_on_an_op(outputs_dir, tmp_path: Path):
    data, records = _mem0_records(outputs_dir)
    judge, annotation, spelled = records[0], records[1], records[2]
    # what the attribution runner writes for evidence_flow's triage of a non-memory failure
    judge.update(error_attribution_result=None, attribution_failure="evidence_flow llm_judge_error: stated",
                 evidence_flow={"status": "llm_judge_error", "triage": {
                     "status": "llm_judge_error", "kind": "LLMAsAJudgeError",
                     "reason": "the prediction states the golden answer; the judge said WRONG"}})
    annotation["error_attribution_result"] = {"error_type": "AnnotationError", "op_id": "",
                                              "reason": "no message supports the gold answer"}
    spelled.update(error_attribution_result=None, attribution_failure="judge said wrong",
                   evidence_flow={"status": "llm_as_a_judge_error_candidate"})  # another writer's spelling
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({**data, "results": records}), encoding="utf-8")
    analysis = analyse([path])
    stats = analysis.statistics
    counts = stats["error_types"]["overall"]["counts"]
    assert counts["LLMAsAJudgeError"] == 2 and counts["AnnotationError"] == 1
    assert stats["attributed"] == len(records) - 3 and stats["non_memory_verdicts"] == 3 and stats["failed"] == 0
    assert stats["failed_attributions"] == []
    assert sum(r["count"] for r in stats["blamed_operations"]["by_name"]) == len(records) - 3
    assert all("LLMAsAJudgeError" not in r["error_types"] for r in stats["blamed_operations"]["by_name"])
    funnel = stats["loss_funnel"]["overall"]
    assert funnel["cases"] == len(records) - 3 and funnel["non_memory"] == 3
    cases = stats["non_memory"]["cases"]
    assert [c["label"] for c in cases] == ["LLMAsAJudgeError", "AnnotationError", "LLMAsAJudgeError"]
    assert cases[0]["reason"] == "the prediction states the golden answer; the judge said WRONG"
    assert cases[2]["reason"] == "judge said wrong"
    assert "Not memory errors (not shown to you): LLMAsAJudgeError 2, AnnotationError 1." in summary_for_prompt(stats)
    rendered, _ = render_cases(analysis.inputs.records, GraphStore(), max_op_xml_tokens=1000)
    assert {c.query_id for c in rendered}.isdisjoint({r["query_id"] for r in (judge, annotation, spelled)})


def test_a_deleted_or_unreadable_graph_is_listed_in_no_llm_mode(outputs_dir, tmp_path: Path, capsys):
    data = json.loads((outputs_dir / "rag.json").read_text(encoding="utf-8"))
    broken = tmp_path / "broken.json"
    broken.write_text('{"graph_id": "truncated', encoding="utf-8")
    data["results"][0]["graph_path"] = str(tmp_path / "deleted.json")
    data["results"][2]["graph_path"] = str(broken)
    path = tmp_path / "rag.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    folder = tmp_path / "report"
    assert report_cli.main(["--data-path", str(path), "--save-folder", str(folder), "--no-llm", "--no-png"]) == 0
    err = capsys.readouterr().err
    assert "no longer exists" in err and "cannot be loaded" in err and "Traceback" not in err
    out = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert [u["index"] for u in out["unrenderable_cases"]] == [0, 2]
    assert [u["index"] for u in out["statistics"]["unavailable_graphs"]] == [0, 2]
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    assert "## Unrenderable cases (graph missing or unreadable)" in markdown and "deleted.json" in markdown


def test_every_example_link_opens_a_case_in_the_viewers_queue(faultbench_report, tmp_path: Path):
    """The contract with annotation_interface: the viewer's own lookup finds each linked case."""
    workqueue = pytest.importorskip("annotation_interface.workqueue", reason="the viewer's queue module")
    from annotation_interface.dataset import open_dataset

    data, _ = faultbench_report
    links = [e["viewer_link"] for row in data["statistics"]["blamed_operations"]["by_name"] for e in row["examples"]]
    folders = {_params(link)["folder"] for link in links}
    assert len(folders) == 1
    items = workqueue.queue_items(open_dataset(folders.pop(), tmp_path / "index"))
    for link in links:
        params = _params(link)
        item = workqueue.find_item(items, graph=params["graph"], case=params["case"])
        assert item is not None and (item.graph_stem, item.qa_id) == (params["graph"], params["case"]), link
