"""The public output API of the attribution command (toolkits.attribution): every field of the
output, assembled from scripted cases without the CLI, and the CLI writing exactly what it assembles."""

from __future__ import annotations

import json
from argparse import Namespace

import pytest

import toolkits.attribution as attribution
from toolkits.attribution import OutputSettings, assemble_output, build_output, build_record, run_costs
from toolkits.attribution.cli import main
from toolkits.bench_utils import load_memtracebench
from toolkits.runner import CaseResult, RunCosts
from toolkits.strategies import register_strategy, unregister_strategy

from .conftest import OP_EXTRACT_5, OP_UPDATE_5

OUTPUT_KEYS = ["complete", "source", "split", "exploration_strategy", "model", "sampled_graph_paths", "results",
               "metrics"]
RECORD_KEYS = {  # the annotation's fields, then ours (spec §6.4, extended)
    "query_id", "query", "golden_answers", "golden_answers_id", "prediction", "prediction_id", "source_evidence_ids",
    "final_error_type", "final_op_id", "graph_path", "error_attribution_result", "is_error_type_correct",
    "is_op_id_correct", "attributed_operation", "attribution_failure", "attribution_attempts", "attribution_seconds",
    "attribution_cached", "attribution_usage", "starting_evidence_ids",
}
BENCHMARK_METRICS = {
    "total_cases", "error_type_prediction_accuracy", "operation_identifier_prediction_accuracy", "cases_by_graph",
    "error_attribution_cost", "joint_accuracy", "failed_cases", "by_error_type", "confusion_matrix",
    "confidence_intervals_95", "non_memory_errors", "by_dataset_source", "cost_totals", "failures",
}


def _results(n: int) -> list[CaseResult]:
    """Case 0 right with details, case 1 failed, case 2 reused from the cache, the rest a wrong type."""
    usage = {"input_tokens": 7, "output_tokens": 2, "num_calls": 1}
    results = [CaseResult(index=0, prediction={"error_type": "ExtractionError", "op_id": OP_EXTRACT_5, "reason": "lost"},
                          elapsed_seconds=3.0, attempts=1, usage=usage, evidence_ids=["U1:D2:2@1"],
                          details={"evidence_flow": {"status": "blamed"}}),
               CaseResult(index=1, prediction=None, failure="the endpoint timed out", attempts=2),
               CaseResult(index=2, prediction={"error_type": "RetrievalError", "op_id": "op-x", "reason": "r"},
                          cached=True, reused_from="cache")]
    results += [CaseResult(index=i, prediction={"error_type": "ResponseError", "op_id": OP_UPDATE_5, "reason": "r"},
                           elapsed_seconds=1.0, attempts=1, usage=usage) for i in range(3, n)]
    return results


def test_the_public_api_is_documented():
    for name in attribution.__all__:
        assert getattr(attribution, name).__doc__, name


def test_a_benchmark_output_keeps_every_field(bench_dir):
    graphs, cases = load_memtracebench(str(bench_dir), "mem0", filter_non_memory_errors=True)
    settings = OutputSettings(dataset_dir=str(bench_dir), split="mem0", exploration_strategy="scripted", model="m",
                              seed=1, bootstrap_samples=20)
    results = _results(len(cases))
    out = build_output(settings, cases, Namespace(results=results, costs=run_costs(results)), graphs=graphs)

    assert list(out) == OUTPUT_KEYS
    assert (out["complete"], out["source"], out["split"], out["exploration_strategy"], out["model"]) == (
        True, "memtracebench", "mem0", "scripted", "m")
    assert out["sampled_graph_paths"] == [str(bench_dir / "mem0" / "a.json"), str(bench_dir / "mem0" / "b.json")]
    first, failed, cached = out["results"][:3]
    assert set(first) == RECORD_KEYS | {"evidence_flow"} and first["evidence_flow"] == {"status": "blamed"}
    assert all(set(r) == RECORD_KEYS for r in out["results"][1:])
    assert first["attributed_operation"] == {"op_name": "memory_system.extract_facts", "category": "extraction"}
    assert first["is_error_type_correct"] and first["is_op_id_correct"]
    assert (first["attribution_seconds"], first["attribution_attempts"], first["starting_evidence_ids"]) == (
        3.0, 1, ["U1:D2:2@1"])
    assert failed["error_attribution_result"] == {"error_type": "", "op_id": "", "reason": "the endpoint timed out"}
    assert failed["attribution_failure"] == "the endpoint timed out" and failed["attributed_operation"] is None
    assert cached["attribution_cached"] is True

    m = out["metrics"]
    assert set(m) == BENCHMARK_METRICS
    assert list(m)[:5] == ["total_cases", "error_type_prediction_accuracy",
                           "operation_identifier_prediction_accuracy", "cases_by_graph", "error_attribution_cost"]
    assert list(m)[-2:] == ["cost_totals", "failures"]
    assert m["total_cases"] == len(cases) == 4 and m["failed_cases"] == 1
    assert m["failures"] == [{"query_id": failed["query_id"], "graph_path": failed["graph_path"],
                              "failure": "the endpoint timed out"}]
    assert m["cost_totals"] == {"executed_cases": 3, "cached_cases": 1, "failed_cases": 1, "total_input_tokens": 14,
                                "total_output_tokens": 4, "total_model_calls": 2, "total_seconds": 4.0}
    assert set(m["by_dataset_source"]) == {"LoCoMo", "LongMemEval"}
    assert m["confidence_intervals_95"]["joint_accuracy"] is not None  # settings.bootstrap_samples used


def test_a_run_folder_output_keeps_every_field(bench_dir):
    _, cases = load_memtracebench(str(bench_dir), "mem0", filter_non_memory_errors=True)
    settings = OutputSettings(dataset_dir="runs/lc", split="long_context", run_mode=True)
    for case in cases:
        case.metadata["graph_path"] = "runs/lc/traced_data/u/graph_evaluation.json"
    results = _results(len(cases))
    records = [build_record(settings, c, r) for c, r in zip(cases, results, strict=True)]
    out = assemble_output(settings, cases, records, RunCosts(), complete=False,
                          extra_metrics={"judged_failures": 5, "skipped_adversarial": 1})

    assert list(out) == OUTPUT_KEYS and out["source"] == "membase_run" and out["complete"] is False
    unscored = RECORD_KEYS - {"is_error_type_correct", "is_op_id_correct"}  # no gold labels in a run folder
    assert set(out["results"][0]) == unscored | {"evidence_flow"}
    assert all(set(r) == unscored for r in out["results"][1:])
    assert out["sampled_graph_paths"] == ["runs/lc/traced_data/u/graph_evaluation.json"]
    assert list(out["metrics"]) == [
        "total_cases", "failed_cases", "non_memory_errors", "cases_by_graph", "error_attribution_cost",
        "prediction_distribution", "judged_failures", "skipped_adversarial", "cost_totals", "failures"]
    assert out["metrics"]["prediction_distribution"]["by_error_type"]["ResponseError"] == 1


def test_a_result_list_of_another_length_is_refused(bench_dir):
    _, cases = load_memtracebench(str(bench_dir), "mem0", filter_non_memory_errors=True)
    settings = OutputSettings(dataset_dir=str(bench_dir), split="mem0")
    with pytest.raises(ValueError):
        build_output(settings, cases, Namespace(results=_results(len(cases))[:-1], costs=RunCosts()))


def test_the_command_writes_what_the_api_assembles(bench_dir, tmp_path):
    class Scripted:
        usage = {"input_tokens": 3, "output_tokens": 1, "num_calls": 1}
        failure = None

        def __init__(self, index: int) -> None:
            self.prediction = {"error_type": "UpdateError", "op_id": OP_UPDATE_5, "reason": f"case {index}"}

    register_strategy("scripted_api", lambda ctx: Scripted(ctx.case_index), needs_model=False, replace=True)
    out = tmp_path / "o.json"
    try:
        assert main([str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "scripted_api",
                     "--no-provide-starting-nodes", "--no-progress", "--bootstrap-samples", "0",
                     "--model-name", "m"]) == 0
    finally:
        unregister_strategy("scripted_api")
    written = json.loads(out.read_text(encoding="utf-8"))
    graphs, cases = load_memtracebench(str(bench_dir), "mem0", filter_non_memory_errors=True)
    results = [CaseResult(index=i, prediction=r["error_attribution_result"], elapsed_seconds=r["attribution_seconds"],
                          attempts=r["attribution_attempts"], usage=r["attribution_usage"],
                          evidence_ids=r["starting_evidence_ids"]) for i, r in enumerate(written["results"])]
    settings = OutputSettings(dataset_dir=str(bench_dir), split="mem0", exploration_strategy="scripted_api", model="m",
                              bootstrap_samples=0)
    expected = build_output(settings, cases, Namespace(results=results, costs=run_costs(results)), graphs=graphs)
    assert written == expected
    assert [r["error_attribution_result"]["reason"] for r in written["results"]] == [f"case {i}" for i in range(4)]


def test_the_command_and_its_scripts_stay_small():
    """Every function of the attribution command (and the thin scripts) at McCabe complexity 15 or less."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (the dev extra)")
    paths = ["toolkits/attribution", "toolkits/retrieval_cli.py", "toolkits/report/cli.py",
             "toolkits/optimization/command.py", "run_error_attribution.py", "eval_retrieval_performance.py",
             "generate_report.py", "run_optimization.py"]
    done = subprocess.run([ruff, "check", "--isolated", "--select", "C901", "--config", "lint.mccabe.max-complexity=15",
                           "--output-format", "concise", *paths], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
