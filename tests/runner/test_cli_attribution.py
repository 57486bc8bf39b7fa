"""End to end: benchmark folder -> attribution_cli.main -> output JSON, with scripted models."""

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphtrace import answer
from membase.clients import ScriptedChatModel
from toolkits.attribution import cli as attribution_cli

from .conftest import OP_EXTRACT_5, OP_SEARCH_1, OP_UPDATE_5, child_env

REASON = (
    "The extraction step received the message stating the move from Sweden but produced no fact about it, "
    "so no memory unit ever held the answer; later operations could not recover it."
)
REPO = Path(__file__).resolve().parents[2]


def scripted(plan):
    """model_factory: case key (graph_id, golden answer, final type) -> list of turns."""
    built = []

    def factory(ctx):
        ann = ctx.case.metadata["annotation"]
        turns = plan[(ctx.graph.graph_id, ann["final_error_type"])]
        model = ScriptedChatModel(turns)
        built.append((ctx.graph.graph_id, ann["final_error_type"], model))
        return model

    factory.built = built
    return factory


BASE_ARGS = ["--exploration-strategy", "long_context", "--starting-nodes-type", "source_evidence", "--no-progress",
             "--max-iters", "3", "--bootstrap-samples", "200"]


def test_end_to_end_metrics_and_failure_isolation(bench_dir, tmp_path, capsys):
    plan = {
        ("graph-aaaa", "ExtractionError"): [answer("ExtractionError", OP_EXTRACT_5, REASON)],  # both right
        ("graph-aaaa", "RetrievalError"): [answer("ResponseError", OP_SEARCH_1, REASON)],  # op only
        ("graph-bbbb", "UpdateError"): [RuntimeError("upstream 500 from provider")],  # raises -> failed
        ("graph-bbbb", "ResponseError"): [answer("ResponseError", OP_UPDATE_5, REASON)],  # type only
    }
    factory = scripted(plan)
    out = tmp_path / "out" / "result.json"
    code = attribution_cli.main(
        [str(bench_dir), "mem0", "--output-path", str(out), *BASE_ARGS, "--max-retries", "0"], model_factory=factory
    )
    assert code == 0
    data = json.loads(out.read_text())
    m = data["metrics"]
    assert m["total_cases"] == 4  # the AnnotationError case is filtered out
    assert m["error_type_prediction_accuracy"] == 0.5
    assert m["operation_identifier_prediction_accuracy"] == 0.5
    assert m["joint_accuracy"] == 0.25
    assert m["failed_cases"] == 1
    assert m["cases_by_graph"] == {str(bench_dir / "mem0" / "a.json"): 2, str(bench_dir / "mem0" / "b.json"): 2}
    assert data["sampled_graph_paths"] == sorted(m["cases_by_graph"])
    assert set(m["by_dataset_source"]) == {"LoCoMo", "LongMemEval"}
    assert m["confusion_matrix"]["UpdateError"]["FAILED"] == 1
    assert m["error_attribution_cost"]["average_input_tokens"] > 0
    lo, hi = m["confidence_intervals_95"]["joint_accuracy"]
    assert lo <= 0.25 <= hi
    results = data["results"]
    assert [r["final_error_type"] for r in results] == ["ExtractionError", "RetrievalError", "UpdateError", "ResponseError"]
    assert results[0]["is_error_type_correct"] and results[0]["is_op_id_correct"]
    assert results[0]["golden_answers_id"] == "golden_answers:list:x@1"  # annotation copied whole
    assert results[2]["error_attribution_result"] == {
        "error_type": "", "op_id": "", "reason": results[2]["attribution_failure"]
    }
    assert not results[2]["is_error_type_correct"] and not results[2]["is_op_id_correct"]
    assert data["complete"] is True
    assert "upstream 500" in results[2]["attribution_failure"]
    assert m["failures"][0]["failure"] == results[2]["attribution_failure"]
    assert results[0]["starting_evidence_ids"] == ["U1:D2:2@1"]
    # the long-context prompt really held the whole trace, not only the task text (which already
    # names the golden answer): every operation block of the graph, after the "Execution trace:" label
    model = next(mdl for g, t, mdl in factory.built if t == "ExtractionError")
    task = next(m for m in model.calls[0].messages if m["role"] == "user")
    text = task["content"] if isinstance(task["content"], str) else "".join(p["text"] for p in task["content"])
    trace = text.split("Execution trace:", 1)[1]
    ops = [op["op_id"] for op in json.loads((bench_dir / "mem0" / "a.json").read_text())["data"]["operations"]]
    assert len(ops) > 5 and all(f"### Operation {op}" in trace for op in ops)
    assert "ETA=0.5000" in capsys.readouterr().out


def test_operation_block_search_strategy_with_scripted_tools(bench_dir, tmp_path):
    turns = [("inspect_trace", {}), ("grep_log", {"pattern": "Sweden"}), answer("ExtractionError", OP_EXTRACT_5, REASON)]
    plan = {k: list(turns) for k in [("graph-aaaa", "ExtractionError"), ("graph-aaaa", "RetrievalError"),
                                      ("graph-bbbb", "UpdateError"), ("graph-bbbb", "ResponseError")]}
    out = tmp_path / "obs.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "operation_block_search",
            "--retrieval-type", "sparse", "--no-progress", "--max-iters", "6", "--bootstrap-samples", "0"]
    assert attribution_cli.main(args, model_factory=scripted(plan)) == 0
    data = json.loads(out.read_text())
    assert data["metrics"]["failed_cases"] == 0
    assert data["metrics"]["error_type_prediction_accuracy"] == 0.25
    assert all(r["starting_evidence_ids"] for r in data["results"])  # pseudo evidence was retrieved


def test_evidence_flow_strategy_needs_no_credentials(bench_dir, tmp_path):
    out = tmp_path / "ef.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0"]
    assert attribution_cli.main(args) == 0
    data = json.loads(out.read_text())
    assert data["metrics"]["total_cases"] == 4
    assert data["metrics"]["error_attribution_cost"]["average_input_tokens"] == 0


def test_secrets_never_reach_outputs_or_cache(bench_dir, tmp_path):
    secret = "sk-test-SECRET-4242"
    cfg = tmp_path / "api.json"
    cfg.write_text(json.dumps({"api_keys": [secret], "base_urls": ["http://127.0.0.1:9/v1"]}))

    def factory(ctx):
        assert ctx.credential.api_key == secret
        if ctx.case.metadata["annotation"]["final_error_type"] == "UpdateError":
            return ScriptedChatModel([PermissionError(f"401 invalid key {secret}")])
        return ScriptedChatModel([answer("ExtractionError", OP_EXTRACT_5, REASON + f" (echo {secret})")])

    out = tmp_path / "s.json"
    cache = tmp_path / "cache"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--api-config-path", str(cfg), "--cache-dir", str(cache),
            *BASE_ARGS, "--max-retries", "0", "--embedding-api-key", "emb-key-777777"]
    assert attribution_cli.main(args, model_factory=factory) == 0
    text = out.read_text()
    assert secret not in text and "emb-key-777777" not in text
    assert "***" in text
    for f in cache.rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes()


def test_bad_inputs_exit_2(tmp_path, capsys, bench_dir):
    with pytest.raises(SystemExit) as exc:
        attribution_cli.main([str(bench_dir), "mem0", "--output-path", str(tmp_path / "x.txt")])
    assert exc.value.code == 2
    code = attribution_cli.main([str(tmp_path / "nowhere"), "rag", "--output-path", str(tmp_path / "x.json"), "--no-progress"])
    assert code == 2
    assert "place its JSON files" in capsys.readouterr().err
    code = attribution_cli.main([str(bench_dir), "mem0", "--output-path", str(tmp_path / "x.json"), "--sample-size", "3", "--no-progress"])
    assert code == 2 and "--sample-size" in capsys.readouterr().err
    code = attribution_cli.main([str(bench_dir), "mem0", "--output-path", str(tmp_path / "x.json"),
                                       "--exploration-strategy", "long_context", "--no-progress"])
    assert code == 2 and "no credentials" in capsys.readouterr().err


def test_sampling_keeps_all_cases_of_chosen_graphs(bench_dir, tmp_path):
    out = tmp_path / "sample.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--sample-size", "1", "--seed", "42", "--no-progress", "--starting-nodes-type", "source_evidence"]
    assert attribution_cli.main(args) == 0
    data = json.loads(out.read_text())
    assert len(data["sampled_graph_paths"]) == 1
    assert data["metrics"]["total_cases"] == 2


DRIVER = textwrap.dedent(
    """
    import asyncio, sys
    sys.path.insert(0, {repo!r})
    from toolkits.attribution import cli as attribution_cli
    from graphtrace import answer
    from membase.clients import FunctionChatModel, ScriptedChatModel

    def factory(ctx):
        if ctx.case.metadata["annotation"]["final_error_type"] == "UpdateError":
            async def hang(messages, tools, choice):
                await asyncio.sleep(3600)
            return FunctionChatModel(hang)
        return ScriptedChatModel([answer("ExtractionError", {op!r}, {reason!r})])

    sys.exit(attribution_cli.main(sys.argv[1:], model_factory=factory))
    """
)


@pytest.mark.slow
def test_kill_and_rerun_resumes_from_the_journal(bench_dir, tmp_path):
    """SIGKILL mid-run: the finished cases survive in the journal; a rerun (no cache) resumes."""
    from toolkits._journal import journal_path

    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(repo=str(REPO), op=OP_EXTRACT_5, reason=REASON))
    out = tmp_path / "resume.json"
    journal = journal_path(out)
    args = [str(bench_dir), "mem0", "--output-path", str(out), *BASE_ARGS, "--batch-size", "1"]
    env = child_env(REPO)
    proc = subprocess.Popen([sys.executable, str(driver), *args], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not journal.exists() or len(journal.read_text().splitlines()) < 3:  # header + cases 1 and 2
            assert proc.poll() is None, "the driver exited before it was killed"
            assert time.monotonic() < deadline, "no journal lines appeared"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    lines = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    assert [line["record"]["final_error_type"] for line in lines] == ["ExtractionError", "RetrievalError"]
    assert not out.exists() and not list(tmp_path.glob(".resume.json.*"))  # no half-written output

    executed = []

    def factory(ctx):
        executed.append(ctx.case.metadata["annotation"]["final_error_type"])
        return ScriptedChatModel([answer("UpdateError", OP_UPDATE_5, REASON)])

    assert attribution_cli.main(args, model_factory=factory) == 0
    assert executed == ["UpdateError", "ResponseError"]  # the journalled cases were not run again
    data = json.loads(out.read_text())
    assert [r["attribution_cached"] for r in data["results"]] == [True, True, False, False]
    assert data["results"][0]["error_attribution_result"]["op_id"] == OP_EXTRACT_5
    assert data["metrics"]["cost_totals"]["cached_cases"] == 2
    assert data["metrics"]["failed_cases"] == 0 and data["complete"] is True
    assert not journal.exists()  # folded into the output, then removed


def test_graph_search_strategy_with_scripted_agent(bench_dir, tmp_path):
    explore = ("explore_graph_trace_node", {"include_variable_value": True})
    plan = {
        ("graph-aaaa", "ExtractionError"): [explore, answer("ExtractionError", OP_EXTRACT_5, REASON)],
        ("graph-aaaa", "RetrievalError"): [answer("RetrievalError", "op-does-not-exist", REASON)] * 3,  # invalid op
        ("graph-bbbb", "UpdateError"): ["I am thinking."] * 20,  # never answers within max_iters
        ("graph-bbbb", "ResponseError"): [answer("ResponseError", OP_UPDATE_5, REASON)],
    }
    factory = scripted(plan)
    out = tmp_path / "gs.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "graph_search",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--max-iters", "3", "--bootstrap-samples", "0",
            "--max-retries", "0", "--use-system-prior"]
    assert attribution_cli.main(args, model_factory=factory) == 0
    data = json.loads(out.read_text())
    results = data["results"]
    assert results[0]["is_error_type_correct"] and results[0]["is_op_id_correct"]
    assert results[1]["attribution_failure"] and results[1]["error_attribution_result"]["error_type"] == ""  # op id rejected
    assert results[2]["attribution_failure"] and results[2]["error_attribution_result"]["error_type"] == ""
    assert results[3]["is_error_type_correct"] and not results[3]["is_op_id_correct"]
    m = data["metrics"]
    assert (m["failed_cases"], m["error_type_prediction_accuracy"], m["joint_accuracy"]) == (2, 0.5, 0.25)
    first = next(mdl for g, t, mdl in factory.built if t == "ExtractionError")
    sent = json.dumps([c.messages for c in first.calls])
    assert "U1:D2:2@1" in sent  # the evidence node was in the starting frontier


def test_flags_reach_the_strategy(bench_dir, tmp_path):
    from toolkits.strategies import register_strategy, unregister_strategy

    seen = []

    def record(ctx):
        seen.append(ctx)
        return answer("ResponseError", OP_UPDATE_5, REASON)

    class Out:
        def __init__(self, call):
            self.prediction = {"error_type": call.args["error_type"], "op_id": call.args["op_id"], "reason": "r"}
            self.failure = None
            self.usage = {}

    register_strategy("record", lambda ctx: Out(record(ctx)), needs_model=False, replace=True)
    prior = tmp_path / "prior.txt"
    prior.write_text("custom prior text")
    try:
        out = tmp_path / "flags.json"
        base = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "record", "--no-progress",
                "--bootstrap-samples", "0"]
        assert attribution_cli.main([*base, "--no-provide-starting-nodes", "--use-system-prior",
                                           "--custom-prior", str(prior), "--max-trace-nodes", "6"]) == 0
        assert all(c.evidence_ids is None and c.memory_system == "mem0" for c in seen)
        assert seen[0].custom_prior_knowledge == "custom prior text" and seen[0].config.max_trace_nodes == 6
        seen.clear()
        assert attribution_cli.main([*base, "--retrieval-type", "sparse", "--num-starting-points", "2"]) == 0
        # BM25 hits with a non-positive score are dropped, so a tiny corpus can yield fewer than 2
        assert all(c.evidence_is_pseudo and 1 <= len(c.evidence_ids) <= 2 and c.memory_system is None for c in seen)
    finally:
        unregister_strategy("record")
