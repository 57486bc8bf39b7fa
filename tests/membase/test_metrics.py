from __future__ import annotations

import pytest

from membase.evaluation.judge import fill_judge_prompt, format_golden_answers, parse_judge_response
from membase.evaluation.metrics import bleu_score, normalize_answer, token_f1, tokenize_13a
from membase.types import QuestionAnswerPair


@pytest.mark.parametrize(
    "reply, score",
    [
        ('{"label": "CORRECT"}', 1.0),
        ('```json\n{"label": "WRONG"}\n```', 0.0),
        ('{"label": "INCORRECT"}', 0.0),
        ("The answer is incorrect.", 0.0),
        ("CORRECT", 1.0),
        ("Not correct", 0.0),
        ("The answer is not right.", 0.0),
        ("", 0.0),
        ('{"reason": "the date differs"} WRONG', 0.0),
    ],
)
def test_judge_parsing_never_counts_incorrect_as_correct(reply, score):
    assert parse_judge_response(reply) == score


def test_token_f1_squad_normalisation():
    assert normalize_answer("The  Cat, sat!") == "cat sat"
    assert token_f1("the cat sat", ["a cat sat down"]) == pytest.approx(0.8)
    assert token_f1("", [""]) == 1.0 and token_f1("x", [""]) == 0.0
    assert token_f1("Paris", ["London", "paris"]) == 1.0


def test_bleu_unigram_with_13a_tokens():
    assert tokenize_13a("Hello, world. 1,000-2") == ["Hello", ",", "world", ".", "1,000", "-", "2"]
    assert bleu_score("7 May 2023", ["7 May 2023"]) == pytest.approx(1.0)
    assert bleu_score("Sweden", ["Norway"]) < 0.01
    assert 0.0 < bleu_score("in May 2023", ["7 May 2023"]) < 1.0
    assert bleu_score("", ["x"]) == 0.0


def test_judge_prompt_filling():
    qa = QuestionAnswerPair(id="q", question="Where?", golden_answers=["Lyon", "Paris"])
    assert format_golden_answers(["a"]) == "a" and format_golden_answers(["a", "b"]) == "[a, b]"
    text = fill_judge_prompt("$question|$golden_answers|$prediction|$unknown", qa, "Lyon")
    assert text == "Where?|[Lyon, Paris]|Lyon|$unknown"


def test_metric_summary_per_question_type():
    from membase.runners.evaluation import summarize_metrics

    def out(qtype, judge):
        return {"qa_pair": {"metadata": {"question_type": qtype}}, "metrics": {"llm_judge": {"value": judge}}}

    failed = {"qa_pair": {"metadata": {"question_type": "temporal"}}, "metrics": {}, "error": "QA failed"}
    summary = summarize_metrics([out("temporal", 1.0), out("temporal", 0.0), out("single-hop", 1.0), failed,
                                 {"qa_pair": {}, "metrics": {}}])
    # A failed question counts as 0 in the means; the means over scored questions are kept apart.
    assert summary == {
        "all": {"n": 5, "failed": 2, "llm_judge": 2 / 5, "mean_over_scored": {"llm_judge": 2 / 3}},
        "single-hop": {"n": 1, "failed": 0, "llm_judge": 1.0, "mean_over_scored": {"llm_judge": 1.0}},
        "temporal": {"n": 3, "failed": 1, "llm_judge": 1 / 3, "mean_over_scored": {"llm_judge": 0.5}},
        "unknown": {"n": 1, "failed": 1, "llm_judge": 0.0, "mean_over_scored": {}},
    }
    # The configured metrics are reported even when no question got a value.
    only_failed = summarize_metrics([failed], ["f1", "llm_judge"])
    assert only_failed["all"] == {"n": 1, "failed": 1, "f1": 0.0, "llm_judge": 0.0, "mean_over_scored": {}}
    assert summarize_metrics([]) == {}
