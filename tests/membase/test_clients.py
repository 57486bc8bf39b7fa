from __future__ import annotations

import json

import pytest

from membase.clients import (
    ChatClient,
    CredentialPool,
    FakeEmbedder,
    FunctionChatModel,
    ScriptedChatModel,
    build_embedder,
)
from membase.clients.cache import DiskCache, cache_key
from membase.exceptions import ConfigError, ModelRequestsBlockedError


def test_credential_pool_round_robin_and_validation(tmp_path):
    pool = CredentialPool(["k1", "k2"], ["http://a/v1", "http://b/v1"])
    assert [pool.credential_for(i).base_url for i in range(4)] == ["http://a/v1", "http://b/v1"] * 2
    assert "k1" not in repr(pool.credential_for(0))
    with pytest.raises(ConfigError, match="same length"):
        CredentialPool(["k1"], ["a", "b"])
    with pytest.raises(ConfigError, match="at least one"):
        CredentialPool([], [])
    cfg = tmp_path / "api_config.json"
    cfg.write_text(json.dumps({"api_keys": ["x"], "base_urls": ["http://127.0.0.1:1/v1"]}))
    assert CredentialPool.from_api_config(cfg).credential_for(5).api_key == "x"
    with pytest.raises(ConfigError, match="not found"):
        CredentialPool.from_api_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        CredentialPool.from_api_config(tmp_path / "bad.json")


def test_credential_pool_from_env(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="no model credentials"):
        CredentialPool.from_env()
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")
    cred = CredentialPool.from_env().credential_for(0)
    assert (cred.api_key, cred.base_url) == ("EMPTY", "http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="both"):
        CredentialPool.resolve(api_keys=["a"])


def test_real_client_refuses_when_requests_are_blocked():
    client = ChatClient("m", credentials=CredentialPool(["k"], ["http://127.0.0.1:9/v1"]))
    with pytest.raises(ModelRequestsBlockedError, match="ALLOW_MODEL_REQUESTS"):
        client.complete([{"role": "user", "content": "hi"}])
    assert client.usage.requests == 0


def test_chat_client_replays_from_disk_cache_without_a_request(tmp_path):
    client = ChatClient("m", credentials=CredentialPool(["k"], ["http://127.0.0.1:9/v1"]), cache_dir=tmp_path)
    messages = [{"role": "user", "content": "hi"}]
    key = cache_key({"model": "m", "messages": messages, "params": {"temperature": 0.0}})
    DiskCache(tmp_path).put(key, {"text": "cached!", "input_tokens": 3, "output_tokens": 1, "model": "m"})
    result = client.complete(messages)  # requests are blocked, so this must come from the cache
    assert (result.text, result.cached) == ("cached!", True)
    assert client.usage.as_dict()["cached_requests"] == 1 and client.usage.input_tokens == 3
    with pytest.raises(ModelRequestsBlockedError):
        client.complete(messages, temperature=0.5)  # different parameters: a miss


def test_fake_chat_models_record_calls_and_count_tokens():
    fn_model = FunctionChatModel(lambda messages, **kw: messages[-1]["content"].upper())
    result = fn_model.complete([{"role": "user", "content": "two words"}], max_tokens=5)
    assert result.text == "TWO WORDS" and result.output_tokens == 2
    assert fn_model.calls[0].max_tokens == 5 and fn_model.usage.requests == 1

    scripted = ScriptedChatModel(["a", RuntimeError("boom"), "c"])
    assert scripted.complete([]).text == "a"
    with pytest.raises(RuntimeError, match="boom"):
        scripted.complete([])
    assert scripted.complete([]).text == "c"
    with pytest.raises(IndexError, match="ran out"):
        scripted.complete([])


def test_fake_embedder_is_deterministic_and_similarity_aware():
    emb = FakeEmbedder(dim=64)
    a, b, c = emb.embed(["where does alice live", "Alice lives where?", "stock market crash"])
    assert emb.embed(["where does alice live"])[0] == a
    dot = lambda x, y: sum(p * q for p, q in zip(x, y, strict=True))  # noqa: E731
    assert abs(dot(a, a) - 1.0) < 1e-9
    assert dot(a, b) > dot(a, c)


def test_build_embedder_specs():
    assert build_embedder("fake:32").dim == 32
    assert build_embedder("fake", dim=16).dim == 16
    assert build_embedder("huggingface:all-MiniLM-L6-v2").dim == 384
    with pytest.raises(ConfigError, match="unknown embedder provider"):
        build_embedder("nope:x")
    with pytest.raises(ConfigError, match="384-d"):
        build_embedder("huggingface:all-MiniLM-L6-v2", dim=2560)
