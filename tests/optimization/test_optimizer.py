"""OptimizerRunner with deterministic agentscope models: stages, files, retries, contracts, history."""

from __future__ import annotations

import json
import re

import pytest

from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall
from toolkits.optimization.optimizer import (
    GradientHistory,
    OptimizerConfig,
    OptimizerRunner,
    TargetTask,
)
from toolkits.optimization.records import Attribution
from toolkits.optimization.targets import TARGETS

QA = TARGETS.get("question_answering_prompt")
FACTS = TARGETS.get("custom_fact_extraction_prompt")
QA_VALUE = "Answer $question from $context."
FACTS_VALUE = 'Extract facts; reply in json {"facts": [...]}.'


@pytest.fixture
def graph_and_ops():
    from smartcomment import comment_graph, comment_op, comment_session, comment_variable

    with comment_graph(user_id="u", project_id="Mem0") as graph, comment_session(category="memory_evaluation"):
        qa_rv = comment_variable(QA_VALUE, to_runtime=True, id_strategy=lambda _: QA.variable, category="prompt")
        facts_rv = comment_variable(FACTS_VALUE, to_runtime=True, id_strategy=lambda _: FACTS.variable, category="prompt")
        for i in range(5):
            comment_op(inputs=[qa_rv, (f"question {i}", {"class_name": "query"})],
                       outputs=[(f"answer {i}", {"class_name": "prediction"})], op_name="question-answering",
                       category="evaluation", comment="answer")
        comment_op(inputs=[facts_rv, ("msg", {"class_name": "message"})], outputs=[("facts", {"class_name": "facts"})],
                   op_name="memory_system.extract_facts", category="extraction", comment="extract")
    ops = {name: [o.op_id for o in graph.get_all_operations() if o.op_name == name]
           for name in ("question-answering", "memory_system.extract_facts")}
    return graph, ops


def _tasks(graph, ops, n_qa=5):
    qa_errors = [Attribution(error_type="ResponseError", op_id=op, reason=f"qa failure {i}", query=f"question {i}")
                 for i, op in enumerate(ops["question-answering"][:n_qa])]
    facts_errors = [Attribution(error_type="ExtractionError", op_id=ops["memory_system.extract_facts"][0],
                                reason="a fact was dropped")]
    return [
        TargetTask(target=QA, node_id=f"{QA.variable}@1", current_value=QA_VALUE, errors=qa_errors),
        TargetTask(target=FACTS, node_id=f"{FACTS.variable}@1", current_value=FACTS_VALUE, errors=facts_errors),
    ]


class Recorder:
    """A model factory: one FunctionChatModel per call, replies computed from the task text."""

    def __init__(self, reply):
        self.reply = reply
        self.calls: list[tuple[int, str, str]] = []  # (call_index, stage, task text)

    def __call__(self, call_index):
        def fn(messages, tools, _choice):
            text = messages[1]["content"] if isinstance(messages[1]["content"], str) else messages[1]["content"][0]["text"]
            stage = ("feedback" if text.startswith("Write feedback") else
                     "aggregation" if text.startswith("Merge") else "update")
            self.calls.append((call_index, stage, text))
            out = self.reply(call_index, stage, text)
            if isinstance(out, BaseException):
                raise out
            return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args=out) if STRUCTURED_OUTPUT_TOOL in tools else "thinking"

        return FunctionChatModel(fn)


def _good_reply(call_index, stage, text):
    if stage == "feedback":
        return {"rationale": "r", "feedback": f"feedback from call {call_index}"}
    if stage == "aggregation":
        merged = re.findall(r"feedback from call \d+|merged\([^)]*\)", text)
        return {"rationale": "r", "aggregated_feedback": "merged(" + " + ".join(merged) + ")"}
    value = "New: answer $question using only $context." if "question-answering-prompt" in text else (
        'Extract dated facts; reply in json {"facts": [...]}.')
    return {"rationale": "r", "improved_value": value}


def _runner(factory, **config):
    return OptimizerRunner(OptimizerConfig(**{"retry_backoff_s": 0.0, **config}), model_factory=factory,
                           sleep=lambda _s: _noop())


async def _noop():
    return None


def test_three_stages_write_the_documented_files(graph_and_ops, tmp_path):
    graph, ops = graph_and_ops
    recorder = Recorder(_good_reply)
    result = _runner(recorder, batch_size_for_summarization=2).run(_tasks(graph, ops), graph, batch_size=3, seed=7,
                                                                   save_folder=tmp_path)
    feedbacks = json.loads((tmp_path / "feedbacks.json").read_text())
    aggregated = json.loads((tmp_path / "aggregated_feedbacks.json").read_text())
    updates = json.loads((tmp_path / "update_results.json").read_text())
    assert list(feedbacks) == ["question-answering-prompt@1", "fact-extraction-system-prompt@1"]
    assert feedbacks["question-answering-prompt@1"] == [f"feedback from call {i}" for i in range(5)]
    assert feedbacks["fact-extraction-system-prompt@1"] == ["feedback from call 5"]
    # one feedback is used as is; five with B=2: first call merges 2, then one more per call
    assert aggregated["fact-extraction-system-prompt@1"] == "feedback from call 5"
    assert [c[0] for c in recorder.calls if c[1] == "aggregation"] == [6, 6, 6, 6]
    assert all(f"feedback from call {i}" in aggregated["question-answering-prompt@1"] for i in range(5))
    assert [c[0] for c in recorder.calls if c[1] == "update"] and {c[0] for c in recorder.calls if c[1] == "update"} == {8, 9}
    assert updates == {"question-answering-prompt@1": "New: answer $question using only $context.",
                       "fact-extraction-system-prompt@1": 'Extract dated facts; reply in json {"facts": [...]}.'}
    assert result.updates["question_answering_prompt"].startswith("New:")
    assert set(result.costs) == {"feedback_generation", "feedback_aggregation", "update"}
    assert result.costs["feedback_generation"]["units"] == 6 and result.costs["feedback_generation"]["average_input_tokens"] > 0
    # the failure's operation subgraph reaches the feedback prompt
    first = next(c for c in recorder.calls if c[1] == "feedback" and c[0] == 0)[2]
    assert "Attributed operation id: " + ops["question-answering"][0] in first and "<graph>" in first


def test_aggregation_shuffle_depends_on_seed_and_call_index(graph_and_ops):
    graph, ops = graph_and_ops

    def order(seed):
        recorder = Recorder(_good_reply)
        _runner(recorder, batch_size_for_summarization=5).run(_tasks(graph, ops), graph, seed=seed)
        text = next(c[2] for c in recorder.calls if c[1] == "aggregation")
        return re.findall(r"feedback from call (\d)", text)

    assert order(1) == order(1)
    assert sorted(order(1)) == ["0", "1", "2", "3", "4"]
    assert any(order(1) != order(s) for s in (2, 3, 4, 5))


def test_failing_call_is_retried_then_recorded_and_the_other_target_still_updates(graph_and_ops, tmp_path):
    graph, ops = graph_and_ops

    def reply(call_index, stage, text):
        if "fact-extraction-system-prompt" in text and stage == "feedback":
            return ConnectionError("endpoint went away")
        return _good_reply(call_index, stage, text)

    recorder = Recorder(reply)
    result = _runner(recorder, max_retries=2).run(_tasks(graph, ops), graph, save_folder=tmp_path)
    attempts = [c for c in recorder.calls if c[1] == "feedback" and "fact-extraction-system-prompt" in c[2]]
    assert len(attempts) == 3  # the first try and two retries
    facts = next(o for o in result.outcomes if o.field == "custom_fact_extraction_prompt")
    assert facts.status == "failed" and "after 3 attempt(s)" in facts.failures[0] and "ConnectionError" in facts.failures[0]
    assert "custom_fact_extraction_prompt" not in result.updates and "question_answering_prompt" in result.updates
    assert result.failures and result.failures[0]["field"] == "custom_fact_extraction_prompt"
    assert result.costs["feedback_generation"]["failed_calls"] == 1


def test_qa_update_that_drops_context_is_rejected_retried_then_dropped(graph_and_ops):
    graph, ops = graph_and_ops

    def reply(call_index, stage, text):
        if stage == "update" and "question-answering-prompt" in text:
            return {"rationale": "r", "improved_value": "Answer $question briefly."}
        return _good_reply(call_index, stage, text)

    recorder = Recorder(reply)
    result = _runner(recorder, contract_retries=1).run(_tasks(graph, ops), graph)
    qa_updates = [c[2] for c in recorder.calls if c[1] == "update" and "question-answering-prompt" in c[2]]
    assert len(qa_updates) == 2 and "rejected" not in qa_updates[0]
    assert "Your previous proposal was rejected" in qa_updates[1] and "$context" in qa_updates[1]
    qa = next(o for o in result.outcomes if o.field == "question_answering_prompt")
    assert qa.status == "rejected" and len(qa.rejected_proposals) == 2
    assert "question_answering_prompt" not in result.updates
    assert any("proposal dropped" in f["error"] and "$context" in f["error"] for f in result.failures)


def test_rejected_proposal_then_a_valid_one_is_accepted(graph_and_ops):
    graph, ops = graph_and_ops
    seen = {"n": 0}

    def reply(call_index, stage, text):
        if stage == "update" and "question-answering-prompt" in text:
            seen["n"] += 1
            value = "Answer $question briefly." if seen["n"] == 1 else "Answer $question from $context, briefly."
            return {"rationale": "r", "improved_value": value}
        return _good_reply(call_index, stage, text)

    result = _runner(Recorder(reply)).run(_tasks(graph, ops), graph)
    assert result.updates["question_answering_prompt"] == "Answer $question from $context, briefly."


def test_gradient_history_is_shown_next_time_and_survives_a_save(graph_and_ops, tmp_path):
    graph, ops = graph_and_ops
    runner = _runner(Recorder(_good_reply), num_gradient_histories=1)
    runner.run(_tasks(graph, ops), graph)
    runner.history.save(tmp_path)
    loaded = GradientHistory.load(tmp_path, maxlen=1)
    assert loaded.get(QA.variable)[0][0] == QA_VALUE and loaded.get(QA.variable)[0][1].startswith("merged(")
    recorder = Recorder(_good_reply)
    resumed = OptimizerRunner(OptimizerConfig(retry_backoff_s=0.0), model_factory=recorder, history=loaded)
    resumed.run(_tasks(graph, ops), graph)
    text = next(c[2] for c in recorder.calls if c[1] == "feedback" and "question-answering-prompt" in c[2])
    assert "### Optimization History" in text and "#### History Record 1" in text and "merged(" in text
    assert GradientHistory.load(tmp_path / "absent", maxlen=3).as_json() == {"maxlen": 3, "records": {}}
    assert GradientHistory(0).get("x") == [] and (GradientHistory(0).add("x", "v", "f") is None)


def test_no_tasks_or_empty_errors_are_refused(graph_and_ops):
    graph, ops = graph_and_ops
    runner = _runner(Recorder(_good_reply))
    with pytest.raises(ValueError, match="no targets"):
        runner.run([], graph)
    with pytest.raises(ValueError, match="no errors"):
        runner.run([TargetTask(target=QA, node_id="x@1", current_value=QA_VALUE, errors=[])], graph)


@pytest.mark.parametrize(("error", "failure"), [(RuntimeError("connection reset"), "RuntimeError: connection reset"),
                                                (None, "timeout: no answer within 0.05 s")])
def test_a_failed_optimizer_call_still_reports_the_tokens_it_spent(error, failure):
    import asyncio

    from agentscope.event import ModelCallEndEvent
    from pydantic import BaseModel

    from toolkits.optimization.optimizer import run_structured_reply

    class Schema(BaseModel):
        value: str

    class Agent:
        async def reply_stream(self, *args, **kwargs):
            yield ModelCallEndEvent(reply_id="r", input_tokens=7, output_tokens=3)
            if error is not None:
                raise error
            await asyncio.sleep(10)  # hangs until the timeout
            yield None

    outcome = asyncio.run(run_structured_reply(Agent(), "task", Schema, 0.05))
    assert outcome.value is None and outcome.failure == failure
    assert (outcome.input_tokens, outcome.output_tokens, outcome.calls) == (7, 3, 1)
