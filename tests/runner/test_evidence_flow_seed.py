"""``--evidence-flow-seed``: the graph-search agent starts from the no-LLM trail and sees its hint."""

import json
from pathlib import Path

import pytest

from graphtrace import answer
from membase.clients import ScriptedChatModel
from toolkits.attribution import cli as attribution_cli

BENCH = Path(__file__).resolve().parents[2] / "examples" / "faultbench"
REASON = "The operation dropped the critical information from its output, so no later step could recover it."


@pytest.mark.skipif(not (BENCH / "mem0").is_dir(), reason="examples/faultbench not present")
@pytest.mark.parametrize("seeded", [True, False])
def test_seed_adds_frontier_and_hint(tmp_path: Path, seeded: bool) -> None:
    built = []

    def factory(ctx):
        ann = ctx.case.metadata["annotation"]
        model = ScriptedChatModel([answer(ann["final_error_type"], ann["final_op_id"], REASON)])
        built.append((ann, model))
        return model

    out = tmp_path / "seed.json"
    args = [str(BENCH), "mem0", "--output-path", str(out), "--exploration-strategy", "graph_search",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--max-iters", "4",
            "--bootstrap-samples", "0", "--max-retries", "0", "--use-system-prior",
            "--evidence-flow-seed" if seeded else "--no-evidence-flow-seed"]
    assert attribution_cli.main(args, model_factory=factory) == 0
    assert json.loads(out.read_text())["metrics"]["failed_cases"] == 0
    for ann, model in built:
        sent = json.dumps([c.messages for c in model.calls])
        assert ("evidence-flow check suggests" in sent) == seeded
        assert (ann["final_op_id"] in sent) == seeded  # the suspicion names the faulty op
        assert "Mem0" in sent or "mem0" in sent  # the built-in prior is kept either way
