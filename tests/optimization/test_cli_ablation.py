"""--disable-memtrace, a failing optimizer call and a contract-breaking QA update in one real round.

The real mem0ai 1.0.5 layer (fake LLM) runs LoCoMo conversation 1's first session; every answer is
judged wrong. The optimizer model fails every call about the fact-extraction prompt and proposes a
QA template without ``$context``; the update-decision prompt gets a valid proposal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
GOOD_DECISION = "For each new fact choose ADD, UPDATE, DELETE or NONE; prefer UPDATE when dates change."


def _text(messages) -> str:
    content = messages[1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _factory(_call_index):
    def fn(messages, tools, _choice):
        text = _text(messages)
        target_block = text.split("## Failure")[0].split("## Feedback")[0]
        if "fact-extraction-system-prompt" in target_block or "Mem0's fact extraction" in target_block:
            raise ConnectionError("optimizer endpoint dropped the connection")
        if STRUCTURED_OUTPUT_TOOL not in tools:
            return "thinking"
        if text.startswith("Rewrite"):
            value = "Answer $question in one line." if "question-answering-prompt" in target_block else GOOD_DECISION
            return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "r", "improved_value": value})
        return ToolCall(name=STRUCTURED_OUTPUT_TOOL,
                        args={"rationale": "r", "feedback": "be exact", "aggregated_feedback": "be exact"})

    return FunctionChatModel(fn)


@pytest.fixture(scope="module")
def ablation(tmp_path_factory, locomo_file):
    out = tmp_path_factory.mktemp("ablation") / "run"
    argv = [
        "--config-path", str(REPO / "examples" / "configs" / "mem0_offline.json"), "--dataset-path", str(locomo_file),
        "--optimization-dir", str(out), "--sample-size", "1", "--disable-memtrace", "--optimizer-model", "unused",
        "--qa-model", "fake:I do not know", "--judge-model", 'fake:{"label": "WRONG"}', "--max-sessions", "1",
        "--max-questions", "3", "--eval-trajectories", "none", "--optimizer-max-retries", "1", "--retry-backoff", "0",
        "--contract-retries", "1", "--no-progress",
    ]
    assert optimization_command.main(argv, optimizer_model_factory=_factory) == 0
    folder = out / "iteration_1"
    return {name: json.loads((folder / name).read_text()) for name in (
        "iteration_summary.json", "error_attribution.json", "grouped_attributions.json", "feedbacks.json",
        "failed_cases.json", "memory_system_config.json", "update_results.json")} | {"folder": folder}


def test_disable_memtrace_sends_every_failure_to_every_target(ablation):
    from smartcomment.runtime.network import ExecNetwork

    failed = ablation["failed_cases.json"]
    attributions = ablation["error_attribution.json"]
    assert len(failed) == len(attributions) == 3
    graph = ExecNetwork.from_file(ablation["iteration_summary.json"]["graph_path"])
    for attribution, case in zip(attributions, failed, strict=True):
        assert attribution["error_type"] == "ResponseError" and attribution["source"] == "disabled"
        op = graph.get_operation(attribution["op_id"])
        assert op.op_name == "question-answering"
        assert case["query_full_node_id"] in graph.filter_by_operation(op.op_id)
    targets = ablation["grouped_attributions.json"]["targets"]
    assert set(targets) == {"custom_fact_extraction_prompt", "custom_update_memory_prompt", "question_answering_prompt"}
    assert all(len(t["attributions"]) == 3 for t in targets.values())
    summary = ablation["iteration_summary.json"]
    assert summary["attribution"] == "disabled" and summary["num_optimizable_errors"] == 9
    assert summary["num_unoptimizable_errors"] == 0
    assert ablation["feedbacks.json"]["memory-update-decision-prompt@1"] == ["be exact"] * 3


def test_failing_optimizer_call_is_retried_then_recorded_and_the_round_completes(ablation):
    summary = ablation["iteration_summary.json"]
    facts = [f for f in summary["optimization_failures"] if f["field"] == "custom_fact_extraction_prompt"]
    assert len(facts) == 3 and all("after 2 attempt(s)" in f["error"] and "ConnectionError" in f["error"] for f in facts)
    outcome = next(t for t in summary["targets"] if t["field"] == "custom_fact_extraction_prompt")
    assert outcome["status"] == "failed"
    bundle = ablation["memory_system_config.json"]
    # the failed target keeps its value: still unset, so mem0 renders its own default (date included) per run
    assert "custom_fact_extraction_prompt" not in bundle["base_config"]
    assert bundle["base_config"]["custom_update_memory_prompt"] == GOOD_DECISION
    assert ablation["update_results.json"] == {"memory-update-decision-prompt@1": GOOD_DECISION}


def test_qa_update_without_context_is_rejected(ablation):
    summary = ablation["iteration_summary.json"]
    outcome = next(t for t in summary["targets"] if t["field"] == "question_answering_prompt")
    assert outcome["status"] == "rejected" and len(outcome["rejected_proposals"]) == 2
    assert all("$context" in " ".join(p["problems"]) for p in outcome["rejected_proposals"])
    assert any(f["field"] == "question_answering_prompt" and "proposal dropped" in f["error"]
               for f in summary["optimization_failures"])
    assert ablation["memory_system_config.json"]["question_answering_prompt"] is None  # still the default
    assert summary["updated_fields"] == ["custom_update_memory_prompt"]
