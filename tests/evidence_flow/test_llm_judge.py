"""The ``llm`` presence judge with scripted models: a hybrid that asks only where the rules are unsure,
in one short structured question per visit, batched and cached (no network)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from membase.clients.fake import FunctionChatModel, ScriptedChatModel
from membase.exceptions import ModelRequestError, ModelUnreachableError
from toolkits.evidence_flow._facts import statements
from toolkits.evidence_flow._text import content_tokens
from toolkits.evidence_flow.judges import CaseFacts, LLMJudgeFactory, RulesJudgeFactory, parse_verdicts
from toolkits.evidence_flow.judges.llm import RESPONSE_FORMATS, VerdictParseError
from toolkits.evidence_flow.judges.prompts import PRESENCE_SYSTEM, presence_question, read_question

NAMES = frozenset({"nadia", "omar"})
QUESTION = "What is the name of Nadia's rabbit?"
FACT = "I adopted a grey rabbit called Pip last spring."


def _case(*, spread: int = 1) -> CaseFacts:
    facts = statements(FACT, NAMES, "nadia")
    return CaseFacts(mode="answer", facts=facts, answer_tokens=content_tokens("Pip"),
                     question_tokens=content_tokens(QUESTION), names=NAMES, evidence_tokens=facts[0].tokens,
                     document_frequency={}, documents=10, answer_spread=spread, answer_threshold=0.75,
                     evidence_threshold=0.5, question=QUESTION, golden="Pip")


def _sent(call: Any, key: str) -> Any:
    """A field of a recorded fake-model call (a dict or a record object)."""
    return call[key] if isinstance(call, dict) else getattr(call, key)


def _texts_of(call: Any) -> list[str]:
    return read_question(_sent(call, "messages")[-1]["content"])[1]


def _oracle(messages: list[dict[str, Any]], **_: Any) -> str:
    """Yes to texts naming Pip, contradicts for those naming Bo, no otherwise."""
    texts = read_question(messages[-1]["content"])[1]
    return json.dumps({"v": ["contradicts" if "Bo" in t else "yes" if "Pip" in t else "no" for t in texts]})


def test_the_question_is_short_lines_that_read_back():
    prompt = presence_question("Nadia: I adopted\na rabbit.", "Pip", ["one\ntext", "two"])
    assert prompt.splitlines()[:4] == ["Fact: Nadia: I adopted a rabbit.", "Answer: Pip", "[1] one text", "[2] two"]
    assert read_question(prompt) == ("Pip", ["one text", "two"])
    assert len(PRESENCE_SYSTEM) < 320  # paid on every call


def test_parse_verdicts_reads_fenced_json_and_names_what_is_missing():
    assert parse_verdicts('```json\n{"v": ["Yes", "contradicts"]}\n```', [1, 2]) == {1: "yes", 2: "contradicts"}
    # a model that answers with explicit ids is understood too
    assert parse_verdicts('{"verdicts": [{"id": 2, "verdict": "no"}, {"id": 1, "verdict": "yes"}]}', [1, 2]) == {
        1: "yes", 2: "no"}
    with pytest.raises(VerdictParseError, match=r"no verdict for text\(s\) \[2\]"):
        parse_verdicts('{"v": ["no", "maybe"]}', [1, 2])
    with pytest.raises(VerdictParseError, match="not JSON"):
        parse_verdicts("yes", [1])
    with pytest.raises(VerdictParseError, match="no 'v' list"):
        parse_verdicts('{"answer": "yes"}', [1])


def test_the_llm_judge_asks_structured_atomic_questions_and_caches_them():
    model = FunctionChatModel(_oracle)
    factory = LLMJudgeFactory(model=model)
    judge = factory.judge(_case(spread=3))
    # a paraphrase the rules miss (none of the fact's other words, and "Pip" is said elsewhere too),
    # the model accepts
    paraphrase = "Nadia's new pet bunny is named Pip."
    assert not RulesJudgeFactory().judge(_case(spread=3)).assess(paraphrase).present
    assert judge.assess(paraphrase).present
    contradiction = judge.assess("Nadia adopted a grey rabbit called Pip; no, it is called Bo.")
    assert not contradiction.present and contradiction.contradicts
    call = model.calls[0]
    assert _sent(call, "response_format")["type"] == "json_schema" and _sent(call, "temperature") == 0.0
    assert _sent(call, "messages")[1]["content"].startswith(f"Fact: Nadia: {FACT}\nAnswer: Pip\n[1] ")
    assert judge.usage.calls == 2 and judge.usage.input_tokens > 0 and judge.usage.output_tokens > 0
    again = factory.judge(_case(spread=3))
    assert again.assess(paraphrase).present and len(model.calls) == 2  # the run's cache answered


def test_the_llm_judge_leaves_to_the_rules_what_they_are_sure_of():
    # a call costs tokens; where the rules cannot be wrong in a way the model would fix, none is made
    model = FunctionChatModel(_oracle)
    judge = LLMJudgeFactory(model=model).judge(_case())
    assert not judge.assess("Nadia went to a glassblowing class on Tuesday.").present  # the answer is missing
    assert judge.assess("Nadia adopted a grey rabbit called Pip.").present  # the fact in its own words, nothing added
    assert judge.assess("Omar adopted a grey rabbit called Pip last spring.").contradicts  # a named rules conflict
    assert model.calls == [] and judge.usage.rules_sure == 3
    # new words beside the fact may change it: the model is asked
    assert judge.why_ask("Nadia adopted a grey rabbit called Pip, then gave it to a neighbour.")
    assert not judge.assess("Nadia adopted a grey rabbit called Pip, then renamed it Bo.").present
    assert len(model.calls) == 1


def test_a_sentence_that_restates_the_fact_alone_is_sure_whatever_follows_it():
    # a raw copy of the message inside a prompt or a buffer: the next sentence is another fact, not a
    # change of this one; the same words joined to the fact in one sentence may change it
    judge = LLMJudgeFactory(model=FunctionChatModel(_oracle)).judge(_case())
    copied = f"Nadia: {FACT} She said the hutch came from her uncle's farm."
    assert judge.rules.judge_text(copied)[0].segment == copied  # the rules' best segment holds both sentences
    assert judge.why_ask(copied) is None
    joined = "I adopted a grey rabbit called Pip last spring, and the hutch came from my uncle's farm."
    assert (judge.why_ask(joined) or "").startswith("the fact with new words around it")


def test_the_llm_judge_asks_announced_texts_together_when_one_is_visited():
    model = FunctionChatModel(_oracle)
    judge = LLMJudgeFactory(model=model, batch_size=2).judge(_case())
    texts = [f"Nadia adopted rabbit number {i}, called Pip." for i in range(3)]
    judge.prefetch([*texts, "Nadia likes tea."])
    assert model.calls == []  # announced, not asked: the graph side may never visit them
    assert all(judge.assess(t).present for t in texts)
    assert [_texts_of(c) for c in model.calls] == [texts[:2], texts[2:]]
    assert judge.usage.asked == 3  # "Nadia likes tea." lacks the answer: never asked


def test_a_long_text_is_shown_as_its_sentences_about_the_fact():
    model = FunctionChatModel(_oracle)
    judge = LLMJudgeFactory(model=model, max_text_chars=120).judge(_case(spread=3))
    filler = " ".join(f"Omar repaired bicycle number {i} in the shed." for i in range(12))
    assert judge.assess(f"{filler} Nadia's new pet bunny is named Pip. {filler}").present
    assert [_texts_of(c) for c in model.calls] == [["Nadia's new pet bunny is named Pip."]]


def test_the_llm_judge_retries_an_unparsable_reply_then_falls_back_to_the_rules():
    unsure = "Nadia adopted a grey rabbit called Pip last spring and a kitten."  # new words: the model is asked
    retried = ScriptedChatModel(["I think yes", '{"v": ["no"]}'])
    judge = LLMJudgeFactory(model=retried).judge(_case())
    verdict = judge.assess(unsure)
    assert not verdict.present and verdict.why == "llm: does not state the fact" and retried.remaining == 0
    broken = ScriptedChatModel(["nope"] * 3)
    judge = LLMJudgeFactory(model=broken, max_retries=2).judge(_case())
    fallback = judge.assess(unsure)
    assert fallback.present and fallback.why == "answer+support"  # the rules' verdict
    assert judge.usage.fallbacks == 1 and judge.usage.calls == 3
    failing = ScriptedChatModel([ModelUnreachableError("endpoint down")])
    factory = LLMJudgeFactory(model=failing)
    assert factory.judge(_case()).assess(unsure).present  # the rules' verdict
    assert factory.response_format() is RESPONSE_FORMATS[0]  # an unreachable endpoint refuses no form


def test_the_llm_judge_falls_back_to_the_structured_output_form_the_endpoint_accepts():
    def llama_like(messages: list[dict[str, Any]], response_format: Any = None, **_: Any) -> str:
        if response_format is not None and response_format.get("type") == "json_schema":
            raise ModelRequestError("400: response_format type json_schema is not supported")
        return _oracle(messages)

    model = FunctionChatModel(llama_like)
    factory = LLMJudgeFactory(model=model)
    assert factory.judge(_case()).assess("Nadia adopted a grey rabbit called Pip, then renamed it Bo.").contradicts
    assert [_sent(c, "response_format")["type"] for c in model.calls] == ["json_schema", "json_object"]
    assert factory.judge(_case()).assess("Nadia adopted a rabbit, Pip, and a kitten.").present
    assert _sent(model.calls[-1], "response_format")["type"] == "json_object"  # the refused form is not tried again
