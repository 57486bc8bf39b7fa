"""The ``llm`` presence judge against a real llama.cpp server (Gemma-3-270M, CPU).

A 270M base model cannot judge paraphrase; this checks the plumbing only: the judge's structured
request is accepted by a real OpenAI-compatible endpoint, every text the rules are unsure of gets a
verdict (the model's, or the rules' after an unparsable reply), and the attribution completes with
the judge's calls and tokens recorded. The stored memory words the fact anew ("pet bunny"), so the
hybrid judge has to ask the model about it. Skipped where llama-cpp-python or the GGUF package is not installed
(``scripts/install_llama_cpp.sh``).
"""

from __future__ import annotations

import pytest

from membase.clients import ChatClient, CredentialPool
from membase.clients.guard import allow_model_requests
from tests._llama_server import MODEL_ALIAS as MODEL
from tests._llama_server import llama_server as start_llama_server
from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.evidence_flow.judges import LLMJudgeFactory

# slow: starts a real llama.cpp server for the LLM judge (minutes on 2 cores)
pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    with start_llama_server(tmp_path_factory.mktemp("gguf"), n_ctx=4096, chat_format="gemma") as base_url:
        yield base_url


def test_the_llm_judge_completes_an_attribution_against_a_real_server(llama_server, toy, case_factory):
    msg = toy.message("U1:D1:1", "I adopted a grey rabbit called Pip last spring.", "Nadia")
    op = toy.op("memory_system.extract_facts", "extraction")
    facts = toy.node("extracted_facts", ["Nadia has a pet bunny named Pip"], category="llm_response")
    toy.edge(op, msg, facts, "extraction")
    add = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node("memory-unit-1", {"id": "1", "memory": "Nadia has a pet bunny named Pip"},
                    category="memory_entry")
    toy.edge(add, facts, unit, "update")
    ids = toy.ask("q1", "What is the name of Nadia's rabbit?", [unit], prediction="Bo")
    client = ChatClient(MODEL, credentials=CredentialPool(["sk-local"], [llama_server]), timeout=200, max_retries=1)
    with allow_model_requests():
        result = attribute_case_evidence_flow(
            toy.export(), case_factory(ids["query"], "Pip", [msg], prediction="Bo"),
            judge=LLMJudgeFactory(model=client, max_retries=1),
        )
    judge = result["judge"]
    assert judge["name"] == "llm" and judge["calls"] >= 1 and judge["input_tokens"] > 0
    assert judge["asked"] >= 1 and judge["fallbacks"] <= judge["asked"]
    assert result["status"] in ("attributed", "abstained", "op_not_found", "evidence_absent")
