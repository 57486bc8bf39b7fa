"""The presence judges behind one protocol: rules (default), embedding, llm (scripted models only)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from membase.clients.fake import FunctionChatModel, ScriptedChatModel
from membase.exceptions import ModelRequestError, ModelUnreachableError
from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.evidence_flow._facts import statements
from toolkits.evidence_flow._text import content_tokens
from toolkits.evidence_flow.judges import (
    JUDGE_NAMES,
    CaseFacts,
    EmbeddingJudgeFactory,
    LLMJudgeFactory,
    PresenceJudge,
    RulesJudgeFactory,
    make_judge_factory,
    parse_verdicts,
)
from toolkits.evidence_flow.judges.llm import RESPONSE_FORMATS, VerdictParseError

NAMES = frozenset({"nadia", "nadi", "omar"})


def _case(fact: str = "I adopted a grey rabbit called Pip last spring.", golden: str = "Pip", *,
          spread: int = 1) -> CaseFacts:
    facts = statements(fact, NAMES, "nadia")
    return CaseFacts(mode="answer", facts=facts, answer_tokens=content_tokens(golden),
                     question_tokens=content_tokens("What is the name of Nadia's rabbit?"), names=NAMES,
                     evidence_tokens=facts[0].tokens, document_frequency={}, documents=10, answer_spread=spread,
                     answer_threshold=0.75, evidence_threshold=0.5, question="What is the name of Nadia's rabbit?",
                     golden=golden)


def _texts_of(messages) -> list[str]:
    return re.findall(r'<text id="\d+">(.*?)</text>', messages[-1]["content"], re.DOTALL)


def _oracle(messages, **_):
    """A model that says yes to texts naming Pip, contradicts those naming Bo, no otherwise."""
    verdicts = []
    for i, text in enumerate(_texts_of(messages), start=1):
        verdict = "contradicts" if "Bo" in text else "yes" if "Pip" in text else "no"
        verdicts.append({"id": i, "verdict": verdict})
    return json.dumps({"verdicts": verdicts})


def test_every_judge_satisfies_the_protocol_and_names_itself():
    class _Flat:
        def embed(self, texts):
            return [[1.0, 0.0] for _ in texts]

    factories = [RulesJudgeFactory(), EmbeddingJudgeFactory(embedder=_Flat()),
                 LLMJudgeFactory(model=FunctionChatModel(_oracle))]
    for factory, name in zip(factories, JUDGE_NAMES, strict=True):
        judge = factory.judge(_case())
        assert isinstance(judge, PresenceJudge) and judge.name == name == factory.name
        assert judge.describe()
        assert judge.assess("Nadia adopted a grey rabbit called Pip.").present


def test_make_judge_factory_refuses_what_it_cannot_build():
    assert make_judge_factory("rules").name == "rules"
    with pytest.raises(ValueError, match="needs an embedder"):
        make_judge_factory("embedding")
    with pytest.raises(ValueError, match="needs a chat model"):
        make_judge_factory("llm")
    with pytest.raises(ValueError, match="unknown evidence_flow judge 'oracle'"):
        make_judge_factory("oracle")


def test_the_rules_judge_reports_a_conflict_as_a_contradiction():
    judge = RulesJudgeFactory().judge(_case())
    verdict = judge.assess("Omar adopted a grey rabbit called Pip last spring.")
    assert not verdict.present and verdict.contradicts
    missing = judge.assess("Nadia likes carrots.")
    assert not missing.present and not missing.contradicts


def test_parse_verdicts_reads_fenced_json_and_names_what_is_missing():
    assert parse_verdicts('```json\n{"verdicts": [{"id": 1, "verdict": "Yes"}]}\n```', [1]) == {1: "yes"}
    with pytest.raises(VerdictParseError, match=r"no verdict for text\(s\) \[2\]"):
        parse_verdicts('{"verdicts": [{"id": 1, "verdict": "no"}]}', [1, 2])
    with pytest.raises(VerdictParseError, match="not JSON"):
        parse_verdicts("yes", [1])
    with pytest.raises(VerdictParseError, match="no 'verdicts' list"):
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
    assert call["response_format"]["type"] == "json_schema" and call["temperature"] == 0.0
    assert "<fact>Nadia: I adopted a grey rabbit called Pip last spring.</fact>" in call["messages"][1]["content"]
    assert judge.usage.calls == 2 and judge.usage.input_tokens > 0 and judge.usage.output_tokens > 0
    again = factory.judge(_case(spread=3))
    assert again.assess(paraphrase).present and len(model.calls) == 2  # the run's cache answered


def test_the_llm_judge_does_not_ask_about_texts_that_clearly_lack_the_fact():
    model = FunctionChatModel(_oracle)
    judge = LLMJudgeFactory(model=model).judge(_case())
    assert not judge.assess("Nadia went to a glassblowing class on Tuesday.").present
    assert model.calls == []


def test_the_llm_judge_batches_prefetched_texts():
    model = FunctionChatModel(_oracle)
    judge = LLMJudgeFactory(model=model, batch_size=2).judge(_case())
    texts = [f"Nadia adopted rabbit number {i}, called Pip." for i in range(3)]
    judge.prefetch(texts + ["Nadia likes tea."])
    assert len(model.calls) == 2 and [len(_texts_of(c["messages"])) for c in model.calls] == [2, 1]
    assert all(judge.assess(t).present for t in texts) and len(model.calls) == 2


def test_the_llm_judge_retries_an_unparsable_reply_then_falls_back_to_the_rules():
    retried = ScriptedChatModel(["I think yes", '{"verdicts": [{"id": 1, "verdict": "no"}]}'])
    judge = LLMJudgeFactory(model=retried).judge(_case())
    verdict = judge.assess("Nadia adopted a grey rabbit called Pip last spring.")
    assert not verdict.present and verdict.why == "llm: does not state the fact" and retried.remaining == 0
    broken = ScriptedChatModel(["nope"] * 3)
    judge = LLMJudgeFactory(model=broken, max_retries=2).judge(_case())
    fallback = judge.assess("Nadia adopted a grey rabbit called Pip last spring.")
    assert fallback.present and fallback.why == "answer+support"  # the rules' verdict
    assert judge.usage.fallbacks == 1 and judge.usage.calls == 3
    failing = ScriptedChatModel([ModelUnreachableError("endpoint down")])
    factory = LLMJudgeFactory(model=failing)
    assert factory.judge(_case()).assess("Nadia called her rabbit Pip.").present  # the rules' verdict
    assert factory.response_format() is RESPONSE_FORMATS[0]  # an unreachable endpoint refuses no form


def test_the_llm_judge_falls_back_to_the_structured_output_form_the_endpoint_accepts():
    def llama_like(messages, response_format=None, **_):
        if response_format is not None and response_format.get("type") == "json_schema":
            raise ModelRequestError("400: response_format type json_schema is not supported")
        return _oracle(messages)

    model = FunctionChatModel(llama_like)
    factory = LLMJudgeFactory(model=model)
    assert factory.judge(_case()).assess("Nadia adopted a grey rabbit called Pip, then renamed it Bo.").contradicts
    assert [c["response_format"]["type"] for c in model.calls] == ["json_schema", "json_object"]
    assert factory.judge(_case()).assess("Nadia adopted a rabbit, Pip.").present
    assert model.calls[-1]["response_format"]["type"] == "json_object"  # the refused form is not tried again


# ---------------------------------------------------------------- through the attributor


def _mem0_graph(toy, stored: str):
    msg = toy.message("U1:D1:1", "I adopted a grey rabbit called Pip last spring.", "Nadia")
    op = toy.op("memory_system.extract_facts", "extraction")
    facts = toy.node("extracted_facts", [stored], category="llm_response")
    toy.edge(op, msg, facts, "extraction")
    add = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node("memory-unit-1", {"id": "1", "memory": stored}, category="memory_entry")
    toy.edge(add, facts, unit, "update")
    ids = toy.ask("q1", "What is the name of Nadia's rabbit?", [unit], prediction="Bo")
    return msg, op, ids


def test_the_attributor_records_its_judge_and_the_llm_judges_cost(toy, case_factory):
    # a change of meaning the rules cannot see; the model reads it as a contradiction
    msg, op, ids = _mem0_graph(toy, "Nadia adopted a grey rabbit called Pip last spring, then renamed it Bo")
    case = case_factory(ids["query"], "Pip", [msg], prediction="Bo", question="What is the name of Nadia's rabbit?")
    graph = toy.export()
    rules = attribute_case_evidence_flow(graph, case)
    assert rules["judge"] == {"name": "rules"} and rules["error_type"] == "ResponseError"
    model = FunctionChatModel(_oracle)
    llm = attribute_case_evidence_flow(graph, case, judge=LLMJudgeFactory(model=model))
    assert (llm["error_type"], llm["op_id"]) == ("ExtractionError", op)
    assert llm["judge"]["name"] == "llm" and llm["judge"]["calls"] == len(model.calls) > 0
    assert llm["judge"]["input_tokens"] > llm["judge"]["output_tokens"] > 0
    assert "llm" in json.dumps(llm["trail"])  # the model's verdict is the trail's reason


def test_the_cli_runs_each_judge_and_records_it(tmp_path, monkeypatch):
    import run_error_attribution
    from toolkits import _builtin_strategies

    bench = tmp_path / "bench" / "mem0"
    bench.mkdir(parents=True)
    from tests.evidence_flow.conftest import ToyGraph

    toy = ToyGraph()
    msg, _, ids = _mem0_graph(toy, "Nadia adopted a grey rabbit called Pip last spring, then renamed it Bo")
    graph = toy.export()
    graph["data"]["annotations"] = [{"query_id": ids["query"], "query": "What is the name of Nadia's rabbit?",
                                     "golden_answers": "Pip", "prediction": "Bo", "golden_answers_id": ids["query"],
                                     "prediction_id": ids["prediction"], "source_evidence_ids": [msg],
                                     "final_error_type": "ExtractionError", "final_op_id": "x"}]
    (bench / "g1.json").write_text(json.dumps(graph))
    monkeypatch.setattr(_builtin_strategies, "_llm_judge", lambda ctx: LLMJudgeFactory(model=FunctionChatModel(_oracle)))
    api = tmp_path / "api.json"
    api.write_text(json.dumps({"api_keys": ["EMPTY"], "base_urls": ["http://127.0.0.1:9/v1"]}))
    for name in JUDGE_NAMES:
        out = tmp_path / f"{name}.json"
        code = run_error_attribution.main([str(tmp_path / "bench"), "mem0", "--exploration-strategy", "evidence_flow",
                                           "--evidence-flow-judge", name, "--output-path", str(out), "--no-progress",
                                           "--bootstrap-samples", "0", "--starting-nodes-type", "source_evidence",
                                           "--api-config-path", str(api)])
        assert code == 0, name
        record = json.loads(out.read_text())["results"][0]
        assert record["evidence_flow"]["judge"]["name"] == name
    # the llm judge's calls are the run's costs
    assert record["attribution_usage"]["num_calls"] == record["evidence_flow"]["judge"]["calls"] > 0


def test_the_llm_judge_without_credentials_is_one_error_line(tmp_path, capsys, monkeypatch):
    import run_error_attribution

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    bench = Path(__file__).resolve().parents[2] / "examples" / "faultbench"
    code = run_error_attribution.main([str(bench), "rag", "--exploration-strategy", "evidence_flow",
                                       "--evidence-flow-judge", "llm", "--output-path", str(tmp_path / "o.json"),
                                       "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: --evidence-flow-judge llm needs a chat endpoint") and "\n" not in err
    assert not (tmp_path / "o.json").exists()
