"""evidence_flow inside the attribution runner: an abstention is a failure, counted wrong."""

from __future__ import annotations

import json
from pathlib import Path

from toolkits import _builtin_strategies
from toolkits.attribution import cli as attribution_cli

BENCH = Path(__file__).resolve().parents[2] / "examples" / "faultbench"


def _run(tmp_path: Path, split: str) -> dict:
    out = tmp_path / f"{split}.json"
    code = attribution_cli.main([str(BENCH), split, "--exploration-strategy", "evidence_flow",
                                       "--no-provide-starting-nodes", "--no-progress", "--output-path", str(out)])
    assert code == 0
    return json.loads(out.read_text())


def test_attributions_score_and_abstentions_count_as_failed(tmp_path, monkeypatch):
    plain = _run(tmp_path, "long_context")["metrics"]
    assert plain["failed_cases"] == 0 and plain["joint_accuracy"] >= 0.9

    def never_sure(ctx):
        from toolkits.evidence_flow import attribute_case_evidence_flow

        return attribute_case_evidence_flow(ctx.graph, ctx.case, ctx.evidence_ids, evidence_is_pseudo=False,
                                            allow_annotated_fallback=False, min_confidence=1.01)

    monkeypatch.setattr(_builtin_strategies, "_run_evidence_flow", never_sure)
    data = _run(tmp_path, "long_context")
    metrics = data["metrics"]
    assert metrics["failed_cases"] == metrics["total_cases"] > 0
    assert metrics["error_type_prediction_accuracy"] == 0.0 and metrics["operation_identifier_prediction_accuracy"] == 0.0
    assert all("abstained" in (r.get("attribution_failure") or "") for r in data["results"])
