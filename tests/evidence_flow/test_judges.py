"""The presence judges behind one protocol: rules (default), embedding, llm (scripted models only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membase.clients.fake import FunctionChatModel
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
)
from toolkits.evidence_flow.judges.prompts import read_question

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
    return read_question(messages[-1]["content"])[1]


def _oracle(messages, **_):
    """A model that says yes to texts naming Pip, contradicts those naming Bo, no otherwise."""
    verdicts = ["contradicts" if "Bo" in text else "yes" if "Pip" in text else "no" for text in _texts_of(messages)]
    return json.dumps({"v": verdicts})


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
    from toolkits import _builtin_strategies
    from toolkits.attribution import cli as attribution_cli

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
        code = attribution_cli.main([str(tmp_path / "bench"), "mem0", "--exploration-strategy", "evidence_flow",
                                           "--evidence-flow-judge", name, "--output-path", str(out), "--no-progress",
                                           "--bootstrap-samples", "0", "--starting-nodes-type", "source_evidence",
                                           "--api-config-path", str(api)])
        assert code == 0, name
        record = json.loads(out.read_text())["results"][0]
        assert record["evidence_flow"]["judge"]["name"] == name
    # the llm judge's calls are the run's costs
    assert record["attribution_usage"]["num_calls"] == record["evidence_flow"]["judge"]["calls"] > 0


def test_the_llm_judge_without_credentials_is_one_error_line(tmp_path, capsys, monkeypatch):
    from toolkits.attribution import cli as attribution_cli

    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    bench = Path(__file__).resolve().parents[2] / "examples" / "faultbench"
    code = attribution_cli.main([str(bench), "rag", "--exploration-strategy", "evidence_flow",
                                       "--evidence-flow-judge", "llm", "--output-path", str(tmp_path / "o.json"),
                                       "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: --evidence-flow-judge llm needs a chat endpoint") and "\n" not in err
    assert not (tmp_path / "o.json").exists()
