"""The flat-log strategy is the paper's ablation unless --obs-identities asks for ours."""

import json

import pytest

from graphtrace import answer
from membase.clients import ScriptedChatModel

from .conftest import OP_EXTRACT_5
from .test_cli_attribution import REASON


def _texts(model):
    out = []
    for call in model.calls:
        for m in call.messages:
            c = m.get("content")
            out.append(c if isinstance(c, str) else "".join(p.get("text", "") for p in c or [] if isinstance(p, dict)))
    return "\n".join(out)


@pytest.mark.parametrize("identities", [False, True])
def test_the_runner_strategy_shows_ids_and_lineage_only_when_asked(bench_dir, tmp_path, identities):
    from toolkits.attribution import cli as attribution_cli

    models = []

    def factory(ctx):
        models.append(ScriptedChatModel([("view_log_window", {"offset": 1, "limit": 128000}),
                                         answer("ExtractionError", OP_EXTRACT_5, REASON)]))
        return models[-1]

    out = tmp_path / "obs.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "operation_block_search",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0",
            "--max-iters", "4", *(["--obs-identities"] if identities else [])]
    assert attribution_cli.main(args, model_factory=factory) == 0
    assert json.loads(out.read_text())["metrics"]["failed_cases"] == 0
    seen = _texts(models[0])
    assert ("<full_node_id>" in seen) is identities  # variable ids in the log
    assert ("full_node_id: U1:D2:2@1" in seen) is identities  # the evidence's id in the hint
    assert ("operations touching it" in seen) is identities  # lineage from the graph's edges
    assert f"### Operation {OP_EXTRACT_5}" in seen  # op ids stay in the log's blocks either way
