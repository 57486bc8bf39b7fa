"""A Mem0 config key that mem0 would silently drop is an error (an optimized prompt must take effect)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from membase.exceptions import ConfigError
from membase.layers.mem0 import Mem0Config, reject_ignored_keys


class _AdditiveOnlyConfig(BaseModel):
    """Shaped like mem0ai 2.x's MemoryConfig: no fact-extraction or update prompt, extra keys ignored."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    vector_store: Any = None
    llm: Any = None
    embedder: Any = None
    history_db_path: str = "history.db"
    custom_instructions: str | None = None


def test_a_key_the_config_class_does_not_know_is_named_in_the_error():
    fields = {"history_db_path": "h.db", "custom_fact_extraction_prompt": "Reply in json with facts."}
    with pytest.raises(ConfigError) as info:
        reject_ignored_keys(_AdditiveOnlyConfig, fields)
    message = str(info.value)
    assert "custom_fact_extraction_prompt" in message
    assert "history_db_path" not in message
    assert "Mem0v3" in message


def test_a_value_that_does_not_read_back_is_an_error():
    fields = {"custom_instructions": "Keep pet names."}
    reject_ignored_keys(_AdditiveOnlyConfig, fields)  # known key: accepted before building
    with pytest.raises(ConfigError, match="did not keep the config key.*custom_instructions"):
        reject_ignored_keys(_AdditiveOnlyConfig, fields, applied=_AdditiveOnlyConfig())
    reject_ignored_keys(_AdditiveOnlyConfig, fields, applied=_AdditiveOnlyConfig(custom_instructions="Keep pet names."))


def test_unset_values_need_not_read_back():
    reject_ignored_keys(_AdditiveOnlyConfig, {"custom_instructions": None}, applied=_AdditiveOnlyConfig())


# -- with the real mem0ai 1.0.5 -------------------------------------------------------------------
def _config(tmp_path: Path, **overrides: Any) -> Mem0Config:
    return Mem0Config(
        user_id="u-1",
        save_dir=str(tmp_path / "u-1"),
        llm_provider="fake",
        llm_model="mem0-fake",
        embedder_provider="fake",
        embedding_model_dims=32,
        **overrides,
    )


@pytest.fixture
def mem0_module():
    return pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")


def test_the_layer_refuses_a_mem0_whose_config_lost_the_prompt_keys(tmp_path, monkeypatch, mem0_module):
    import mem0.configs.base

    from membase.layers.mem0 import Mem0Layer

    monkeypatch.setattr(mem0.configs.base, "MemoryConfig", _AdditiveOnlyConfig)
    with pytest.raises(ConfigError, match="ignores the config key.*custom_fact_extraction_prompt"):
        Mem0Layer(_config(tmp_path, custom_fact_extraction_prompt="Reply in json with facts."))


def test_the_layer_refuses_a_mem0_that_drops_a_prompt_it_was_given(tmp_path, monkeypatch, mem0_module):
    from membase.layers.mem0 import Mem0Layer

    real_memory = mem0_module.Memory

    class ForgetfulMemory(real_memory):  # type: ignore[misc, valid-type]
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.config.custom_update_memory_prompt = None

    monkeypatch.setattr(mem0_module, "Memory", ForgetfulMemory)
    with pytest.raises(ConfigError, match="did not keep.*custom_update_memory_prompt"):
        Mem0Layer(_config(tmp_path, custom_update_memory_prompt="Choose ADD, UPDATE, DELETE or NONE."))
    monkeypatch.setattr(mem0_module, "Memory", real_memory)
    layer = Mem0Layer(_config(tmp_path / "ok", custom_update_memory_prompt="Choose ADD, UPDATE, DELETE or NONE."))
    try:
        assert layer.memory.config.custom_update_memory_prompt == "Choose ADD, UPDATE, DELETE or NONE."
    finally:
        layer.cleanup()
