"""`run_error_attribution.py <run> --verify replay`: replay verdicts on records and metrics, labels, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from graphtrace import answer
from membase.clients import ScriptedChatModel
from tests.replay._helpers import make_run
from tests.replay.conftest import RAG_CONFIG
from toolkits.attribution import cli as attribution_cli

REASON = "The question's search did not return the document stating the answer, so the reader never saw it."
REPO = Path(__file__).resolve().parents[2]


def _graph(run: Path) -> Path:
    return run / "traced_data" / "locomo-1" / "graph_evaluation.json"


def _retrieval_ops(run: Path) -> dict[str, str]:
    """Query node id → the op id of its memory_system.retrieve in the run's graph."""
    data = json.loads(_graph(run).read_text())["data"]
    retrieve = {op["op_id"] for op in data["operations"] if op.get("op_name") == "memory_system.retrieve"}
    return {e["source_full_node_id"]: e["op_id"] for e in data["edges"]
            if e["op_id"] in retrieve and e["source_full_node_id"].startswith("query:")}


def _blame_retrieval(run: Path) -> Any:
    """model_factory: each case's scripted agent blames the case's own retrieval."""
    ops = _retrieval_ops(run)

    def factory(ctx: Any) -> ScriptedChatModel:
        return ScriptedChatModel([answer("RetrievalError", ops[ctx.case.query_full_node_id], REASON)])

    return factory


def test_graph_search_output_gains_replay_verdicts(rag_run: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gs.json"
    code = attribution_cli.main(
        [str(rag_run), "--exploration-strategy", "graph_search", "--output-path", str(out), "--no-progress",
         "--max-iters", "3", "--max-retries", "0", "--starting-nodes-type", "source_evidence",
         "--verify", "replay"], model_factory=_blame_retrieval(rag_run))
    assert code == 0
    data = json.loads(out.read_text())
    records = data["results"]
    assert records and all(r["error_attribution_result"]["error_type"] == "RetrievalError" for r in records)
    for record in records:
        replay = record["replay"]
        assert replay["status"] == "replayed" and replay["stage"] == "retrieval"
        assert isinstance(replay["rescued"], bool) and replay["judge_label"] in ("CORRECT", "WRONG")
        assert {"new_calls", "tokens", "seconds", "prediction"} <= set(replay)
        assert replay["rescued"] == (replay["judge_label"] == "CORRECT")  # every case was wrong before
    metrics = data["metrics"]["replay"]
    rescued = sum(r["replay"]["rescued"] for r in records)
    assert rescued >= 1
    assert metrics["replayed_cases"] == len(records)
    assert metrics["rescued"] == rescued and metrics["not_rescued"] == len(records) - rescued
    assert metrics["rescued_share"] == round(rescued / len(records), 4)
    assert metrics["by_error_type"]["RetrievalError"]["rescued"] == rescued
    assert f"replay: {rescued} of {len(records)} repaired case(s) rescued" in capsys.readouterr().out
    assert not out.with_name(out.name + ".replay.jsonl").exists()  # the journal goes once the output is written


def _hand_built(run: Path, path: Path, count: int = 2) -> list[dict[str, Any]]:
    """Records naming real ops of the run: retrieval blames, and a response blame last."""
    ops = list(_retrieval_ops(run).items())[:count]
    records = []
    for i, (query, op_id) in enumerate(ops):
        error = "ResponseError" if i == len(ops) - 1 else "RetrievalError"
        records.append({"query_id": query, "graph_path": str(_graph(run)),
                        "error_attribution_result": {"error_type": error, "op_id": op_id},
                        "attributed_operation": {"op_name": "memory_system.retrieve"}})
    path.write_text(json.dumps({"results": records, "metrics": {}}))
    return records


def _verify_from(run: Path, source: Path, out: Path, *extra: str) -> int:
    return attribution_cli.main([str(run), "--exploration-strategy", "evidence_flow", "--output-path", str(out),
                                       "--no-progress", "--verify", "replay", "--from", str(source), *extra])


def _fresh_run(locomo: Path, tmp_path: Path) -> Path:
    """A run of its own: its call cache holds the run's calls and nothing a replay added."""
    return make_run(locomo, tmp_path / "run", RAG_CONFIG, max_messages=40)


def test_offline_replay_of_an_uncached_call_fails_that_case_only(locomo_path: Path, tmp_path: Path) -> None:
    """A repaired retrieval changes the reader's context: that call is new, so offline its case fails."""
    run = _fresh_run(locomo_path, tmp_path)
    source = tmp_path / "in.json"
    _hand_built(run, source, count=8)
    out = tmp_path / "out.json"
    assert _verify_from(run, source, out, "--replay-offline") == 0
    data = json.loads(out.read_text())
    replays = [r["replay"] for r in data["results"]]
    failed = [r for r in replays if r["status"] == "failed"]
    assert failed, "no repair needed a call outside the run's cache"
    assert all("not in the run's call cache" in r["error"] for r in failed)
    assert any(r["status"] == "replayed" and r["stage"] == "retrieval" for r in replays)  # the run went on
    assert replays[-1]["status"] == "replayed" and replays[-1]["stage"] == "response"
    assert data["metrics"]["replay"]["failed"] == len(failed)


def test_offline_replay_without_any_cache_fails_every_case_and_finishes(rag_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(rag_run, run)
    shutil.rmtree(run / "call_cache")
    _hand_built(run, tmp_path / "in.json")
    out = tmp_path / "out.json"
    assert _verify_from(run, tmp_path / "in.json", out, "--replay-offline") == 0
    replays = [r["replay"] for r in json.loads(out.read_text())["results"]]
    assert [r["status"] for r in replays] == ["failed", "failed"]
    assert all("not in the run's call cache" in r["error"] for r in replays)


def test_an_interrupted_verification_resumes_from_its_journal(rag_run: Path, tmp_path: Path) -> None:
    records = _hand_built(rag_run, tmp_path / "in.json")
    out = tmp_path / "out.json"
    journal = out.with_name(out.name + ".replay.jsonl")
    first = records[0]
    qa_id = first["query_id"].split(":", 1)[1].rsplit("@", 1)[0]
    key = f"locomo-1|{qa_id}|{first['error_attribution_result']['op_id']}|retrieval"
    done = {"status": "replayed", "stage": "retrieval", "rescued": True, "note": "finished before the kill"}
    journal.write_text(json.dumps({"key": key, "outcome": done}) + "\n" + '{"key": "cut by a ki')
    assert _verify_from(rag_run, tmp_path / "in.json", out) == 0
    verified = json.loads(out.read_text())["results"]
    assert verified[0]["replay"] == done  # taken from the journal, not replayed again
    assert verified[1]["replay"]["stage"] == "response"  # the unfinished one ran
    assert not journal.exists()


def test_a_memtracebench_folder_is_refused_before_any_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.json"
    code = attribution_cli.main([str(REPO / "examples" / "faultbench"), "rag", "--exploration-strategy",
                                       "evidence_flow", "--output-path", str(out), "--no-progress", "--verify", "replay"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1 and err[0].startswith("error:") and "replay_manifest.json" in err[0]
    assert not out.exists()


@pytest.mark.slow
def test_replay_search_labels_and_the_labels_score_a_strategy(rag_run: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    out, labels = tmp_path / "ef.json", tmp_path / "labels"
    code = attribution_cli.main([str(rag_run), "--exploration-strategy", "evidence_flow", "--output-path",
                                       str(out), "--no-progress", "--starting-nodes-type", "source_evidence",
                                       "--verify", "replay", "--replay-search", "earliest",
                                       "--replay-labels-out", str(labels)])
    assert code == 0
    data = json.loads(out.read_text())
    labelled = [r for r in data["results"] if r["counterfactual_label"].get("op_id")]
    assert labelled, "no case of the run is rescued by any single-op repair"
    for record in labelled:
        label = record["counterfactual_label"]
        assert label["error_type"] in ("ExtractionError", "UpdateError", "DeletionError", "RetrievalError")
        assert 1 <= label["searched"] <= label["candidates"]
    cf = data["metrics"]["replay"]["counterfactual"]
    assert cf["labelled"] == len(labelled) and cf["cases"] == len(data["results"])
    written = sorted((labels / "rag").glob("*.json"))
    assert [str(p) for p in written] == data["metrics"]["replay"]["labels_written"]
    annotations = json.loads(written[0].read_text())["data"]["annotations"]
    assert {a["final_op_id"] for a in annotations} <= {r["counterfactual_label"]["op_id"] for r in labelled}
    assert all(a["label_source"] == "counterfactual_replay" for a in annotations)
    capsys.readouterr()

    scored = tmp_path / "scored.json"
    assert attribution_cli.main([str(labels), "rag", "--exploration-strategy", "evidence_flow",
                                       "--output-path", str(scored), "--no-progress",
                                       "--starting-nodes-type", "source_evidence"]) == 0
    line = capsys.readouterr().out
    assert "ETA=" in line and "OIA=" in line
    metrics = json.loads(scored.read_text())["metrics"]
    assert metrics["total_cases"] == len(labelled)
    assert metrics["error_type_prediction_accuracy"] == cf["error_type_agreement"]
