"""Predictions never depend on the gold labels: scrambling ``final_error_type``/``final_op_id`` of a
benchmark leaves every strategy's predictions unchanged (only the scores move).

The LLM strategies run with a deterministic model whose answer is a hash of what it is shown
(system prompt and task prompt), so a label that leaked into a prompt would change the answer; a
runner or CLI that copied the case's own labels into the prediction would change it too.
"""

import hashlib
import json

import pytest

from graphtrace import answer
from membase.clients import FunctionChatModel
from toolkits.attribution import cli as attribution_cli
from toolkits.bench_utils import ERROR_TYPES

from .conftest import OP_EXTRACT_5, OP_QA_1, OP_SEARCH_1, OP_UPDATE_5

REASON = (
    "The operation received the evidence that states the answer but its output no longer holds it, so every "
    "later step works without the fact; fixing this step alone would have let the answer come out right."
)


def _text(message):
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def hashing_factory(op_ids):
    """A model that answers from a hash of its system prompt and first user message."""

    def factory(ctx):
        def turn(messages, tools, choice):
            seen = [_text(m) for m in messages if m.get("role") == "system"]
            users = [_text(m) for m in messages if m.get("role") == "user"]
            digest = int(hashlib.sha256("\n".join([*seen, users[0] if users else ""]).encode()).hexdigest(), 16)
            return answer(ERROR_TYPES[digest % len(ERROR_TYPES)], op_ids[digest % len(op_ids)],
                          f"{REASON} [{digest % 10_000}]")

        return FunctionChatModel(turn)

    return factory


def _scramble(bench_dir):
    """Rotate the gold labels of the four memory-error annotations across the two files."""
    files = [bench_dir / "mem0" / "a.json", bench_dir / "mem0" / "b.json"]
    data = [json.loads(f.read_text()) for f in files]
    memory = [a for d in data for a in d["data"]["annotations"] if a["final_error_type"] in ERROR_TYPES]
    labels = [(a["final_error_type"], a["final_op_id"]) for a in memory]
    assert len(set(labels)) == 4
    for a, (etype, op) in zip(memory, labels[1:] + labels[:1], strict=True):
        a["final_error_type"], a["final_op_id"] = etype, op
    for f, d in zip(files, data, strict=True):
        f.write_text(json.dumps(d))


@pytest.mark.parametrize("evidence", ["source_evidence", "pseudo_source_evidence"])
@pytest.mark.parametrize("strategy", ["evidence_flow", "long_context", "operation_block_search", "graph_search"])
def test_scrambled_gold_labels_leave_predictions_unchanged(bench_dir, tmp_path, strategy, evidence):
    ops = sorted({OP_EXTRACT_5, OP_UPDATE_5, OP_SEARCH_1, OP_QA_1})
    factory = hashing_factory(ops) if strategy != "evidence_flow" else None

    def run(name):
        out = tmp_path / f"{name}.json"
        args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", strategy,
                "--starting-nodes-type", evidence, "--retrieval-type", "sparse", "--no-progress",
                "--bootstrap-samples", "0", "--max-iters", "3", "--max-retries", "0"]
        assert attribution_cli.main(args, model_factory=factory) == 0
        return json.loads(out.read_text())

    before = run("before")
    _scramble(bench_dir)
    after = run("after")
    assert [r["final_error_type"] for r in before["results"]] != [r["final_error_type"] for r in after["results"]]
    assert [r["error_attribution_result"] for r in after["results"]] == [
        r["error_attribution_result"] for r in before["results"]]
    assert [r["starting_evidence_ids"] for r in after["results"]] == [r["starting_evidence_ids"] for r in before["results"]]
    if strategy != "evidence_flow":
        assert all(r["attribution_failure"] is None for r in before["results"])  # the model's answers were accepted
