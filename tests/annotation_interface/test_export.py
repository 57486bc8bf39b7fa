"""Human labels exported as a MemTraceBench folder feed the benchmark loader and the scorer."""

from __future__ import annotations

import json

import pytest

from annotation_interface import annotations as store
from annotation_interface import export
from annotation_interface.dataset import open_dataset
from annotation_interface.loader import load_graph
from annotation_interface.workqueue import queue_items

OTHER_TYPE = {"ExtractionError": "UpdateError", "UpdateError": "DeletionError", "DeletionError": "RetrievalError",
              "RetrievalError": "ResponseError", "ResponseError": "ExtractionError"}


def _label(ds, item, *, who, flip=False, unsure=False, kind=None):
    """A record for ``item``: the benchmark's own label, or another error type when ``flip``."""
    pg = load_graph(ds.graph(item.graph_name).graph_path)
    qa = pg.index.qa(item.qa_id)
    gold = qa.annotation
    error_type = kind or (OTHER_TYPE[gold["final_error_type"]] if flip else gold["final_error_type"])
    att = store.ManualAttribution(op_id=gold["final_op_id"], error_type=error_type, edge_id=None, reason="seen")
    return store.build_record(graph_file_name=pg.path.name, graph_name=item.graph_name, qa=qa, attribution=att,
                              annotator=who, unsure=unsure)


@pytest.fixture
def labelled(faultbench, tmp_path):
    ds = open_dataset(faultbench, tmp_path / "idx")
    items = [i for i in queue_items(ds) if i.split == "mem0"][:4]
    out = tmp_path / "annotations.json"
    store.save_record(out, _label(ds, items[0], who="ana"))
    store.save_record(out, _label(ds, items[1], who="ana", flip=True))
    store.save_record(out, _label(ds, items[2], who="ana", unsure=True))
    store.save_record(out, _label(ds, items[3], who="ana", kind="LLMAsAJudgeError"))
    return ds, items, out


def test_export_writes_memtracebench_layout_with_the_human_labels(labelled, tmp_path):
    from toolkits.bench_utils import load_memtracebench

    ds, items, out = labelled
    summary = export.export_annotations(ds, store.read_records(out), tmp_path / "bench")
    assert summary.cases == 3 and summary.by_split == {"mem0": 3}  # the unsure-only case is left out
    assert summary.left_out == [f"{items[2].graph_name} {items[2].qa_id}: only unsure labels"]
    records = {(r["graph_name"], r["qa_id"]): r for r in store.read_records(out)}
    _graphs, cases = load_memtracebench(tmp_path / "bench", "mem0", download=False)
    got = {c.query_full_node_id: c.metadata["annotation"] for c in cases}
    # the non-memory label is exported and, as in the real benchmark, dropped by the loader
    assert len(got) == 2
    for item in items[:2]:
        ann = next(a for a in got.values() if a["query_id"].startswith(f"query:{item.qa_id}@"))
        human = records[item.ref]["manual_error_attribution"]
        assert (ann["final_error_type"], ann["final_op_id"]) == (human["error_type"], human["op_id"])
        assert ann["annotated_by"] == ["ana"] and ann["golden_answers"] and ann["source_evidence_ids"]
    with_unsure = export.export_annotations(ds, store.read_records(out), tmp_path / "bench2", include_unsure=True)
    assert with_unsure.cases == 4


def test_export_cli_errors_and_summary(labelled, tmp_path, capsys):
    ds, _, out = labelled
    code = export.main(["--data", str(ds.data_path), "--annotations", str(out), "--out", str(tmp_path / "b"),
                        "--index-dir", str(tmp_path / "idx")])
    printed = capsys.readouterr().out
    assert code == 0 and "exported 3 case(s) in" in printed and "run_error_attribution.py" in printed
    bad = tmp_path / "bad.json"
    bad.write_text('{"x": 1}')
    assert export.main(["--data", str(ds.data_path), "--annotations", str(bad), "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "bad.json" in err and not (tmp_path / "c").exists()
    assert export.main(["--data", str(tmp_path / "nope"), "--annotations", str(out), "--out", str(tmp_path / "c")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_run_error_attribution_scores_a_strategy_against_the_export(labelled, tmp_path):
    from toolkits.attribution import cli as attribution_cli

    ds, items, out = labelled
    export.export_annotations(ds, store.read_records(out), tmp_path / "bench")
    result = tmp_path / "ef.json"
    code = attribution_cli.main([str(tmp_path / "bench"), "mem0", "--exploration-strategy", "evidence_flow",
                                       "--retrieval-type", "sparse", "--output-path", str(result), "--no-progress"])
    assert code == 0
    data = json.loads(result.read_text())
    assert data["metrics"]["total_cases"] == 2
    humans = {r["qa_id"]: r["manual_error_attribution"] for r in store.read_records(out)}
    for rec in data["results"]:
        human = humans[rec["query_id"].split(":", 1)[1].rsplit("@", 1)[0]]
        assert rec["final_error_type"] == human["error_type"]  # scored against the human label
        predicted = rec["error_attribution_result"]["error_type"]
        assert rec["is_error_type_correct"] == (predicted == human["error_type"])
    # the flipped human label, not the benchmark's original annotation, is what was scored
    flipped = next(r for r in data["results"] if r["query_id"].startswith(f"query:{items[1].qa_id}@"))
    assert flipped["final_error_type"] != flipped["fault"]["error"].capitalize() + "Error"


def test_the_page_runs_evidence_flow_as_the_cli_does(faultbench, tmp_path):
    """The page's evidence_flow (annotated evidence) gives the CLI's verdict on every case of a split."""
    from annotation_interface.attribution import run_evidence_flow
    from toolkits.attribution import cli as attribution_cli

    result = tmp_path / "cli.json"
    assert attribution_cli.main([str(faultbench), "mem0", "--exploration-strategy", "evidence_flow",
                                       "--starting-nodes-type", "source_evidence", "--retrieval-type", "sparse",
                                       "--output-path", str(result), "--no-progress"]) == 0
    graphs = {}
    records = json.loads(result.read_text())["results"]
    assert records
    for rec in records:
        pg = graphs.get(rec["graph_path"]) or graphs.setdefault(rec["graph_path"], load_graph(rec["graph_path"]))
        qa = pg.index.qa(rec["query_id"].split(":", 1)[1].rsplit("@", 1)[0])
        page = run_evidence_flow(pg, qa, "annotated")
        cli = rec["error_attribution_result"]
        assert (page["error_type"], page["op_id"]) == (cli["error_type"] or None, cli["op_id"] or None), qa.qa_id
