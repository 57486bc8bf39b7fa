"""ChatClient against a real OpenAI-compatible server: llama-cpp-python serving Gemma-3-270M.

The model is a small *base* model: these tests check plumbing (chat, JSON mode, max_tokens,
timeouts, token accounting, caching, the evaluation runner), never answer quality.
CI builds llama-cpp-python with `scripts/install_llama_cpp.sh` (the default native build crashes).
"""

from __future__ import annotations

import json

import pytest

from membase.clients import ChatClient, CredentialPool
from membase.clients.guard import allow_model_requests
from membase.exceptions import ModelUnreachableError
from tests._llama_server import MODEL_ALIAS as MODEL
from tests._llama_server import llama_server as start_llama_server

# slow: starts a real llama.cpp server (tens of seconds per test)
pytestmark = [pytest.mark.integration, pytest.mark.slow]

@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    with start_llama_server(tmp_path_factory.mktemp("gguf"), n_ctx=2048, chat_format="gemma") as base_url:
        yield base_url


@pytest.fixture
def client(llama_server):
    with allow_model_requests():
        yield ChatClient(MODEL, credentials=CredentialPool(["sk-local"], [llama_server]), timeout=120, max_retries=1)


def test_chat_and_token_accounting(client):
    result = client.complete([{"role": "system", "content": "You are terse."},
                              {"role": "user", "content": "Name a colour."}], max_tokens=8)
    assert isinstance(result.text, str) and result.model
    assert result.input_tokens > 0 and 0 < result.output_tokens <= 8
    result2 = client.complete([{"role": "user", "content": [{"type": "text", "text": "Say hi."}]}], max_tokens=4)
    assert client.usage.requests == 2
    assert client.usage.input_tokens == result.input_tokens + result2.input_tokens
    assert client.usage.output_tokens == result.output_tokens + result2.output_tokens


def test_json_mode_returns_valid_json(client):
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
              "required": ["city"]}
    result = client.complete([{"role": "user", "content": "Alice lives in Lyon. Reply in JSON with her city."}],
                             response_format={"type": "json_object", "schema": schema}, max_tokens=40)
    data = json.loads(result.text)
    assert isinstance(data, dict) and isinstance(data["city"], str)


def test_disk_cache_replays_without_a_request(client, tmp_path):
    cached = ChatClient(MODEL, credentials=client.credentials, cache_dir=tmp_path)
    messages = [{"role": "user", "content": "Count to three."}]
    with allow_model_requests():
        first = cached.complete(messages, max_tokens=6)
    second = cached.complete(messages, max_tokens=6)  # requests blocked again: must come from disk
    assert (second.text, second.cached, first.cached) == (first.text, True, False)
    assert cached.usage.cached_requests == 1 and cached.usage.requests == 2


def test_evaluation_runner_over_http(client, tmp_path):
    from membase.runners import EvaluationRunner, EvaluationRunnerConfig

    results = tmp_path / "10_None_None.json"
    results.write_text(json.dumps([{
        "user_id": "u1",
        "qa_pair": {"id": "qa-1", "question": "Where does Alice live?", "golden_answers": ["Lyon"]},
        "retrieved_memories": [{"content": "Alice lives in Lyon.", "metadata": {"trace_id": "memory-unit-1"}}],
    }]))
    runner = EvaluationRunner(
        EvaluationRunnerConfig(search_results_path=str(results), traced_data_save_dir=str(tmp_path / "t"),
                               prompt_template="$context\nQ: $question\nA:", qa_max_tokens=8,
                               metrics=["f1", "bleu"], show_progress=False),
        qa_model=client,
    )
    report = runner.run()
    assert report.failures == []
    out = json.loads(runner.output_path.read_text())
    assert isinstance(out[0]["prediction"], str) and set(out[0]["metrics"]) == {"f1", "bleu"}
    assert report.usage["qa_model"]["requests"] == 1


def test_timeout_is_one_clear_error(llama_server):
    slow = ChatClient(MODEL, credentials=CredentialPool(["sk-local"], [llama_server]), timeout=0.05,
                      max_retries=0)
    with allow_model_requests(), pytest.raises(ModelUnreachableError, match="timed out after 1 attempts"):
        slow.complete([{"role": "user", "content": "Write a long story about the sea."}], max_tokens=400)
    assert slow.usage.failed_requests == 1 and slow.usage.requests == 0
