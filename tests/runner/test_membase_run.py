"""`python -m membase run` -> `run_error_attribution.py <run folder>`: attribute your own system's
failures (no annotations), end to end on a small LoCoMo slice with fake models."""

import json
from collections import Counter

import pytest

from graphtrace import answer
from membase.cli import main as membase_main
from membase.clients import ScriptedChatModel
from toolkits.attribution import cli as attribution_cli

from .conftest import interrupt_after_the_run

REPORT_KEYS = {"query_id", "query", "golden_answers", "golden_answers_id", "prediction", "prediction_id",
               "source_evidence_ids", "graph_path", "error_attribution_result"}
REASON = (
    "The answering step had the buffer that states the date in its context and still said it does not know, "
    "so the response is the first operation that went wrong; nothing earlier lost the fact."
)


def _slice(locomo_path, folder):
    """Conversation 1, first 12 turns of session 1, the questions answerable from them, one adversarial."""
    conversation = json.loads(locomo_path.read_text())[0]
    conv = {k: conversation["conversation"][k] for k in ("speaker_a", "speaker_b", "session_1_date_time")}
    conv["session_1"] = conversation["conversation"]["session_1"][:12]
    turns = {t["dia_id"] for t in conv["session_1"]}
    qa = [q for q in conversation["qa"] if q.get("evidence") and set(q["evidence"]) <= turns and q["category"] != 5]
    adversarial = dict(next(q for q in conversation["qa"] if q["category"] == 5), evidence=["D1:3"])
    path = folder / "slice.json"
    path.write_text(json.dumps([{"sample_id": conversation["sample_id"], "conversation": conv,
                                 "qa": [*qa, adversarial], "event_summary": {}}]))
    return path, len(qa)


@pytest.fixture
def membase_run(locomo_path, tmp_path):
    dataset, answerable = _slice(locomo_path, tmp_path)
    layer = tmp_path / "lc.json"
    layer.write_text(json.dumps({"layer_type": "Long-Context", "context_window": 4000}))
    run_dir = tmp_path / "run"
    code = membase_main(["run", "--layer-config", str(layer), "--dataset", str(dataset), "--output-dir", str(run_dir),
                         "--quiet", "--top-k", "1", "--qa-model", "fake:I do not know",
                         "--judge-model", 'fake:{"label": "WRONG"}', "--metrics", "llm_judge"])
    assert code == 0
    return run_dir, answerable, dataset, layer


def _attribute(run_dir, out, *extra, split=None, model_factory=None):
    args = [str(run_dir), *([split] if split else []), "--output-path", str(out), "--no-progress", *extra]
    return attribution_cli.main(args, model_factory=model_factory)


def test_a_membase_run_folder_is_attributed_without_gold_labels(membase_run, tmp_path, capsys):
    from smartcomment.runtime.network import ExecNetwork

    run_dir, answerable, _, _ = membase_run
    out = tmp_path / "attr.json"
    assert _attribute(run_dir, out, "--exploration-strategy", "evidence_flow",
                      "--starting-nodes-type", "source_evidence") == 0
    printed = capsys.readouterr().out.strip()
    data = json.loads(out.read_text())
    dist = data["metrics"]["prediction_distribution"]
    top = ", ".join(f"{t}={n}" for t, n in dist["by_error_type"].items() if n)
    assert printed == f"{answerable} failed questions ({dist['failed_cases']} not attributed): {top} -> {out}"
    assert data["source"] == "membase_run" and data["split"] == "long_context" and data["complete"] is True
    graph_file = run_dir / "traced_data" / "locomo-1" / "graph_evaluation.json"
    assert data["sampled_graph_paths"] == [str(graph_file)]
    m = data["metrics"]
    assert "error_type_prediction_accuracy" not in m and "confusion_matrix" not in m  # no gold labels
    assert m["total_cases"] == answerable and m["skipped_adversarial"] == 1 and m["judged_failures"] == answerable + 1
    dist = m["prediction_distribution"]
    assert sum(dist["by_error_type"].values()) == dist["attributed_cases"] == answerable - m["failed_cases"]
    assert sum(dist["by_operation_name"].values()) == dist["attributed_cases"]
    graph = ExecNetwork.from_file(graph_file)
    blamed = Counter(graph.get_operation(r["error_attribution_result"]["op_id"]).category
                     for r in data["results"] if r["attribution_failure"] is None)
    assert dist["by_operation_category"] == dict(blamed) and "(none)" not in dist["by_operation_category"]
    for r in data["results"]:
        assert REPORT_KEYS <= set(r)
        assert set(r["error_attribution_result"]) == {"error_type", "op_id", "reason"}
        assert "final_error_type" not in r and "is_error_type_correct" not in r
        assert graph.get_variable(r["golden_answers_id"]).class_name == "golden_answers"
        assert graph.get_variable(r["prediction_id"]).class_name == "prediction"
        assert graph.get_variable(r["query_id"]).class_name == "query"
        assert ", ".join(r["golden_answers"]) == graph.get_variable(r["golden_answers_id"]).value
        assert r["source_evidence_ids"] and r["starting_evidence_ids"] == r["source_evidence_ids"]
        assert all(graph.get_variable(e).category == "message" for e in r["source_evidence_ids"])
        assert r["graph_path"] == str(graph_file)
    # the blamed operations are counted by name and category
    ops = {(r["attributed_operation"] or {}).get("op_name") for r in data["results"] if not r["attribution_failure"]}
    assert ops <= set(dist["by_operation_name"])


def test_any_strategy_and_pseudo_evidence_work_on_a_run_folder(membase_run, tmp_path):
    run_dir, answerable, _, _ = membase_run
    graph = json.loads((run_dir / "traced_data" / "locomo-1" / "graph_evaluation.json").read_text())
    qa_op = next(op["op_id"] for op in graph["data"]["operations"] if op["op_name"] == "question-answering")

    def factory(ctx):
        return ScriptedChatModel([answer("ResponseError", qa_op, REASON)])

    out = tmp_path / "lc.json"
    assert _attribute(run_dir, out, "--exploration-strategy", "long_context", "--retrieval-type", "sparse",
                      "--use-system-prior", "--max-iters", "2", split="long_context", model_factory=factory) == 0
    data = json.loads(out.read_text())
    assert data["metrics"]["prediction_distribution"]["by_error_type"]["ResponseError"] == answerable
    assert all(r["starting_evidence_ids"] for r in data["results"])  # retrieved from the run's messages


def test_a_run_with_nothing_wrong_is_one_clear_line(locomo_path, tmp_path, capsys):
    dataset, _ = _slice(locomo_path, tmp_path)
    layer = tmp_path / "lc.json"
    layer.write_text(json.dumps({"layer_type": "Long-Context"}))
    assert membase_main(["run", "--layer-config", str(layer), "--dataset", str(dataset), "--output-dir",
                         str(tmp_path / "ok"), "--quiet", "--top-k", "1", "--qa-model", "fake:7 May 2023",
                         "--judge-model", 'fake:{"label": "CORRECT"}', "--metrics", "llm_judge"]) == 0
    capsys.readouterr()
    assert _attribute(tmp_path / "ok", tmp_path / "x.json", "--exploration-strategy", "evidence_flow") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "no wrongly answered question" in err and "\n" not in err


def test_a_folder_that_is_neither_needs_the_split(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _attribute(tmp_path, tmp_path / "x.json")
    assert exit_info.value.code == 2 and "give the MemTraceBench split" in capsys.readouterr().err


def test_an_interrupted_run_folder_keeps_its_run_metrics(membase_run, tmp_path, monkeypatch):

    run_dir, answerable, _, _ = membase_run
    interrupt_after_the_run(monkeypatch)
    out = tmp_path / "partial.json"
    assert _attribute(run_dir, out, "--exploration-strategy", "evidence_flow",
                      "--starting-nodes-type", "source_evidence") == 130
    m = json.loads(out.read_text())["metrics"]
    assert m["skipped_adversarial"] == 1 and m["prediction_distribution"]["total_cases"] == answerable
