"""Failures that are not memory errors get their own status, are counted, and blame no memory op."""

from __future__ import annotations

import json

import pytest

from toolkits.attribution import cli as attribution_cli
from toolkits.evidence_flow import STATUSES, attribute_case_evidence_flow
from toolkits.evidence_flow._triage import judge_error
from toolkits.metrics import AttributionRecord, attribution_metrics

NAMES = frozenset({"nadia", "omar", "lisbon"})
QUESTION = "Which city did Nadia move to?"


def _graph(toy, stored: str = "Nadia moved to Lisbon in March"):
    msg = toy.message("U1:D1:1", "Big news: I moved to Lisbon in March!", "Nadia")
    toy.message("U1:D1:2", "Congratulations, enjoy the tram rides.", "Omar")
    op = toy.op("memory_system.extract_facts", "extraction")
    facts = toy.node("extracted_facts", [stored], category="llm_response")
    toy.edge(op, msg, facts, "extraction")
    add = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node("memory-unit-1", {"id": "1", "memory": stored}, category="memory_entry")
    toy.edge(add, facts, unit, "update")
    return msg, op, unit


@pytest.mark.parametrize("prediction", ["Lisbon", "She moved to Lisbon.", "Nadia now lives in lisbon"])
def test_a_prediction_that_states_the_golden_answer_is_a_judge_error(toy, case_factory, prediction):
    msg, _, unit = _graph(toy)
    ids = toy.ask("q1", QUESTION, [unit], prediction=prediction)
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Lisbon", [msg],
                                                                     prediction=prediction, question=QUESTION))
    assert result["status"] == "llm_judge_error" and result["status"] in STATUSES
    assert result["error_type"] is None and result["op_id"] is None  # never blamed on a memory op
    assert result["triage"]["kind"] == "LLMAsAJudgeError" and "LLMAsAJudgeError" in result["reason"]
    assert result["best_guess"] == {"error_type": "ResponseError", "op_id": ids["qa"]}  # what the flow alone says


@pytest.mark.parametrize(("golden", "prediction"), [
    ("Lisbon", "Porto"),                                 # another answer
    ("Lisbon", "Lisbon or Porto"),                       # an alternative offered
    ("Lisbon", "She did not move to Lisbon"),            # negated
    ("Lisbon", "I don't know, maybe Lisbon"),            # hedged
    ("3 March 2024", "4 March 2024"),                    # the date differs
    ("3 March 2024", "3 March 2024 or 10 March 2024"),   # a second date
    ("2 dogs", "2 dogs and 3 dogs"),                     # another number of the same kind
    ("Omar", "Omar and Nadia"),                          # a second person of the conversation
    ("Yes", "Yes"),                                      # a yes/no answer has no words to compare
])
def test_a_prediction_that_does_not_state_the_answer_exactly_is_no_judge_error(golden, prediction):
    assert judge_error(golden, prediction, names=NAMES, question="Who helped?") is None


def test_a_name_the_question_asks_about_may_stand_beside_the_answer():
    assert judge_error("Lisbon", "Nadia moved to Lisbon", names=NAMES, question=QUESTION) is not None
    assert judge_error("Omar", "Omar helped Nadia", names=NAMES, question="Who helped Nadia pack?") is not None


def test_a_golden_answer_no_message_supports_is_an_annotation_error(toy, case_factory):
    msg, _, unit = _graph(toy)
    ids = toy.ask("q1", QUESTION, [unit], prediction="Lisbon")
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], "Valparaiso", [msg],
                                                                     prediction="Lisbon", question=QUESTION))
    assert result["status"] == "annotation_error" and result["error_type"] is None and result["op_id"] is None
    assert result["triage"]["kind"] == "AnnotationError" and "valparaiso" in result["reason"]


@pytest.mark.parametrize(("golden", "question"), [
    ("Lisbon tram", QUESTION),                            # one of its words is said: worded otherwise, not wrong
    ("12 April 2024", "When did Nadia move?"),            # a date a reader may compute
    ("12Aprl 2024", "When did Nadia move?"),              # the same date glued to a misspelt month
    ("5pm", "When did Nadia's train leave?"),             # a time written as one word
    ("Sailing", "What hobby would Nadia likely take up in Lisbon?"),  # an inference by design
])
def test_answers_a_reader_may_derive_are_no_annotation_error(toy, case_factory, golden, question):
    msg, _, unit = _graph(toy)
    ids = toy.ask("q1", question, [unit], prediction="Porto")
    result = attribute_case_evidence_flow(toy.export(), case_factory(ids["query"], golden, [msg], prediction="Porto",
                                                                     question=question))
    assert result["status"] not in ("annotation_error", "llm_judge_error")


def test_triage_can_be_switched_off(toy, case_factory):
    msg, op, unit = _graph(toy, "Nadia moved in March")
    ids = toy.ask("q1", QUESTION, [unit], prediction="Lisbon")
    case = case_factory(ids["query"], "Lisbon", [msg], prediction="Lisbon", question=QUESTION)
    assert attribute_case_evidence_flow(toy.export(), case)["status"] == "llm_judge_error"
    off = attribute_case_evidence_flow(toy.export(), case, triage=False)
    assert (off["status"], off["error_type"], off["op_id"]) == ("attributed", "ExtractionError", op)


def test_metrics_count_non_memory_failures_and_never_score_them_as_a_memory_op():
    records = [
        {"final_error_type": "ResponseError", "final_op_id": "op-1", "attribution_failure": "evidence_flow ...",
         "error_attribution_result": {"error_type": "", "op_id": "", "reason": "r"},
         "evidence_flow": {"status": "llm_judge_error", "triage": {"kind": "LLMAsAJudgeError"}}},
        {"final_error_type": "ExtractionError", "final_op_id": "op-2", "attribution_failure": None,
         "error_attribution_result": {"error_type": "ExtractionError", "op_id": "op-2", "reason": "r"},
         "evidence_flow": {"status": "attributed"}},
        {"final_error_type": "RetrievalError", "final_op_id": "op-3", "attribution_failure": "evidence_flow ...",
         "error_attribution_result": {"error_type": "", "op_id": "", "reason": "r"},
         "evidence_flow": {"status": "annotation_error", "triage": {"kind": "AnnotationError"}}},
    ]
    scored = [AttributionRecord.from_result(r) for r in records]
    assert [r.non_memory_error for r in scored] == ["LLMAsAJudgeError", None, "AnnotationError"]
    metrics = attribution_metrics(scored, bootstrap_samples=0)
    assert metrics["non_memory_errors"] == {"LLMAsAJudgeError": 1, "AnnotationError": 1}
    assert metrics["failed_cases"] == 2 and metrics["operation_identifier_prediction_accuracy"] == pytest.approx(1 / 3)
    assert metrics["by_error_type"]["ResponseError"]["non_memory_errors"]["LLMAsAJudgeError"] == 1


def test_the_cli_reports_the_non_memory_status_and_counts_it(toy, tmp_path, capsys):
    msg, _, unit = _graph(toy)
    ids = toy.ask("q1", QUESTION, [unit], prediction="Lisbon")
    graph = toy.export()
    graph["data"]["annotations"] = [{"query_id": ids["query"], "query": QUESTION, "golden_answers": "Lisbon",
                                     "prediction": "Lisbon", "source_evidence_ids": [msg],
                                     "final_error_type": "ResponseError", "final_op_id": ids["qa"]}]
    (tmp_path / "bench" / "mem0").mkdir(parents=True)
    (tmp_path / "bench" / "mem0" / "g.json").write_text(json.dumps(graph))
    out = tmp_path / "out.json"
    code = attribution_cli.main([str(tmp_path / "bench"), "mem0", "--exploration-strategy", "evidence_flow",
                                       "--output-path", str(out), "--no-progress", "--bootstrap-samples", "0"])
    assert code == 0
    data = json.loads(out.read_text())
    record = data["results"][0]
    assert record["evidence_flow"]["triage"]["kind"] == "LLMAsAJudgeError"
    assert record["attribution_failure"].startswith("evidence_flow llm_judge_error")
    assert data["metrics"]["non_memory_errors"] == {"LLMAsAJudgeError": 1, "AnnotationError": 0}
    assert "LLMAsAJudgeError=1" in capsys.readouterr().out
