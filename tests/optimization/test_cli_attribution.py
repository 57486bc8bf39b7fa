"""The loop with the graph-search attributor: its model comes from the factory, and failing
attributions are recorded per case while the round completes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

from membase.clients import FunctionChatModel  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def test_graph_search_failures_are_recorded_and_the_round_completes(tmp_path, locomo_file):
    built = []

    def attribution_factory(ctx):
        built.append(ctx.case_index)
        return FunctionChatModel(lambda *_a: ValueError("the attribution model returned garbage"))

    out = tmp_path / "run"
    argv = ["--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"), "--dataset-path",
            str(locomo_file), "--optimization-dir", str(out), "--sample-size", "1", "--optimizer-model", "fake:x",
            "--qa-model", "fake:no idea", "--judge-model", 'fake:{"label": "WRONG"}', "--max-sessions", "1",
            "--max-questions", "2", "--eval-trajectories", "none", "--no-progress"]
    assert optimization_command.main(argv, attribution_model_factory=attribution_factory) == 0
    summary = json.loads((out / "iteration_1" / "iteration_summary.json").read_text())
    assert summary["attribution"] == "graph_search" and sorted(built) == [0, 1]
    assert len(summary["attribution_failures"]) == 2
    assert all("garbage" in f["failure"] for f in summary["attribution_failures"])
    assert json.loads((out / "iteration_1" / "error_attribution.json").read_text()) == []
    assert summary["num_optimizable_errors"] == 0 and summary["targets"] == []
    assert json.loads((out / "iteration_1" / "feedbacks.json").read_text()) == {}
