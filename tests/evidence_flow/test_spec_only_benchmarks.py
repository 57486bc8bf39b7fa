"""Regression guard: evidence_flow on the two fault benchmarks built from the specs alone
(``benchmarks/heldout_attribution`` and ``benchmarks/heldout_attribution_c``, by engineers who did
not read evidence_flow). Their first measurements were 0.761/0.717 and 0.810/0.790 (ETA/OIA, the
CLI's default retrieved evidence); the general faults they exposed were fixed (each has its own
unit test), after which they score 0.935/0.935 and 0.952/0.952. These floors keep those fixes.
"""

from __future__ import annotations

import json

import pytest

import run_error_attribution
from benchmarks.heldout_attribution.build import build_benchmark
from benchmarks.heldout_attribution_c.build import build

SPLITS = ("long_context", "rag", "mem0", "evermemos")


def _accuracy(bench, out_dir) -> tuple[float, float]:
    cases = type_right = op_right = 0
    for split in SPLITS:
        out = out_dir / f"{split}.json"
        code = run_error_attribution.main([str(bench), split, "--exploration-strategy", "evidence_flow",
                                           "--output-path", str(out), "--no-progress"])
        assert code == 0
        metrics = json.loads(out.read_text(encoding="utf-8"))["metrics"]
        n = metrics["total_cases"]
        cases += n
        type_right += round(metrics["error_type_prediction_accuracy"] * n)
        op_right += round(metrics["operation_identifier_prediction_accuracy"] * n)
    return type_right / cases, op_right / cases


@pytest.mark.parametrize(("name", "floor"), [("b", 0.92), ("c", 0.94)])
def test_accuracy_on_the_spec_only_benchmarks_stays_above_its_floor(tmp_path, name, floor):
    bench = tmp_path / "bench"
    if name == "b":
        build_benchmark(bench, seed=0)
    else:
        build(bench, seed=0)
    eta, oia = _accuracy(bench, tmp_path)
    assert eta >= floor and oia >= floor, (name, eta, oia)
