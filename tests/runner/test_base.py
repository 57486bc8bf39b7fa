import json

import pytest

from toolkits._base import AgentBaseConfig, ApiPool, Credential, CredentialError, redact, resolve_api_pool


def test_pool_round_robin_by_index():
    pool = ApiPool(["k1", "k2"], ["http://a/v1", "http://b/v1"])
    assert pool.size == 2
    assert [pool.credential_for(i).base_url for i in range(5)] == ["http://a/v1", "http://b/v1"] * 2 + ["http://a/v1"]
    assert pool.credential_for(3).slot == 1


@pytest.mark.parametrize(
    ("keys", "urls", "fragment"),
    [([], [], "empty"), (["k"], ["a", "b"], "one base URL per key"), (["  "], ["a"], "blank")],
)
def test_pool_rejects_bad_lists(keys, urls, fragment):
    with pytest.raises(CredentialError, match=fragment):
        ApiPool(keys, urls)


def test_secrets_never_in_repr():
    pool = ApiPool(["sk-secret-123"], ["http://a/v1"])
    assert "sk-secret-123" not in repr(pool)
    assert "sk-secret-123" not in repr(pool.credential_for(0))
    assert "sk-secret-123" not in repr(Credential(api_key="sk-secret-123", base_url=None))
    cfg = AgentBaseConfig(api_keys=["sk-secret-123"], base_urls=["http://a/v1"])
    assert "sk-secret-123" not in json.dumps(cfg.model_dump(mode="json"))
    assert "sk-secret-123" not in repr(cfg)


def test_resolution_order(tmp_path):
    path = tmp_path / "api.json"
    path.write_text(json.dumps({"api_keys": ["fk"], "base_urls": ["http://file/v1"]}))
    env = {"OPENAI_BASE_URL": "http://env/v1", "OPENAI_API_KEY": "ek"}
    explicit = AgentBaseConfig(api_keys=["xk"], base_urls=["http://x/v1"], api_config_path=str(path))
    assert resolve_api_pool(explicit, env).credential_for(0).base_url == "http://x/v1"
    assert resolve_api_pool(AgentBaseConfig(api_config_path=str(path)), env).credential_for(0).api_key == "fk"
    from_env = resolve_api_pool(AgentBaseConfig(), env).credential_for(0)
    assert (from_env.base_url, from_env.api_key) == ("http://env/v1", "ek")
    assert resolve_api_pool(AgentBaseConfig(), {"OPENAI_API_BASE": "http://b/v1"}).credential_for(0).api_key == "EMPTY"
    with pytest.raises(CredentialError, match="no credentials"):
        resolve_api_pool(AgentBaseConfig(), {})
    with pytest.raises(CredentialError, match="both"):
        resolve_api_pool(AgentBaseConfig(api_keys=["k"]), env)


def test_api_config_file_errors(tmp_path):
    with pytest.raises(CredentialError, match="not found"):
        ApiPool.from_api_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CredentialError, match="not valid JSON"):
        ApiPool.from_api_config(bad)
    bad.write_text(json.dumps({"api_keys": ["k"]}))
    with pytest.raises(CredentialError, match="must hold"):
        ApiPool.from_api_config(bad)


def test_redact_masks_keys_but_not_placeholders():
    text = "call failed with key sk-abcdef012345 (EMPTY) and sk-abcdef012345 again"
    assert redact(text, ["sk-abcdef012345", "EMPTY", ""]) == "call failed with key *** (EMPTY) and *** again"


def test_redact_skips_short_keys_and_placeholders():
    text = "the test of the dummy ollama server: none, EMPTY, sk-local, key1234"
    secrets = ["test", "dummy", "ollama", "none", "EMPTY", "sk-local", "key1234", "Sk-Local", "TEST"]
    assert redact(text, secrets) == text
