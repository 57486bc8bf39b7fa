"""The target registry, the prompt contracts and the configuration bundle."""

from __future__ import annotations

import json

import pytest

from toolkits.optimization.bundle import BUNDLE_FILENAME, BundleError, MemoryConfigBundle
from toolkits.optimization.contracts import (
    mem0_fact_extraction_contract,
    mem0_update_decision_contract,
    qa_template_contract,
)
from toolkits.optimization.targets import PROMPT_TARGETS, TARGETS, Target, TargetRegistry

MEM0_OFFLINE = {"layer_type": "Mem0", "llm_provider": "fake", "embedder_provider": "fake", "embedding_model_dims": 64}


def test_prompt_targets_match_the_reference_names():
    assert PROMPT_TARGETS == {
        "custom_fact_extraction_prompt": "fact-extraction-system-prompt",
        "custom_update_memory_prompt": "memory-update-decision-prompt",
        "question_answering_prompt": "question-answering-prompt",
    }
    evermemos = [t.variable for t in TARGETS.for_layer("EverMemOS")]
    assert "boundary-detection-prompt-template" in evermemos and "question-answering-prompt" in evermemos
    assert "fact-extraction-system-prompt" not in evermemos


def test_registry_rejects_duplicates_and_selects_by_field_or_variable():
    registry = TargetRegistry([Target(field="a", variable="va"), Target(field="b", variable="vb", kind="parameter")])
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Target(field="a", variable="other"))
    with pytest.raises(ValueError, match="already belongs"):
        registry.register(Target(field="c", variable="va"))
    assert [t.field for t in registry.select("Mem0", ["vb", "a"])] == ["a", "b"]
    assert [t.field for t in registry.for_layer("Mem0", kinds=["parameter"])] == ["b"]
    with pytest.raises(KeyError, match="nope"):
        registry.select("Mem0", ["nope"])


def test_default_prompts_satisfy_their_contracts():
    import os

    os.environ.setdefault("MEM0_TELEMETRY", "False")
    prompts = pytest.importorskip("mem0.configs.prompts")
    from membase.evaluation.prompts import QA_TEMPLATE
    from membase.layers.evermemos.prompts import PROMPT_TEMPLATES

    assert mem0_fact_extraction_contract(prompts.USER_MEMORY_EXTRACTION_PROMPT) == []
    assert mem0_update_decision_contract(prompts.DEFAULT_UPDATE_MEMORY_PROMPT) == []
    assert qa_template_contract(QA_TEMPLATE) == []
    for target in TARGETS.for_layer("EverMemOS"):
        name = target.field.removeprefix("prompt_overrides.")
        if name in PROMPT_TEMPLATES:
            assert target.problems(PROMPT_TEMPLATES[name].default) == []


@pytest.mark.parametrize(
    ("contract", "value", "needle"),
    [
        (qa_template_contract, "Answer $question.", "$context"),
        (qa_template_contract, "Answer $question from $context for $user.", "$user"),
        (mem0_fact_extraction_contract, 'Extract facts as {"facts": []}.', "json"),
        (mem0_fact_extraction_contract, "Reply in json with the list of facts.", '"facts"'),
        (mem0_update_decision_contract, "Decide ADD, UPDATE or DELETE.", "NONE"),
        (mem0_update_decision_contract, "   ", "empty"),
    ],
)
def test_contract_violations_are_named(contract, value, needle):
    problems = contract(value)
    assert problems and needle in " ".join(problems)


def test_evermemos_contract_keeps_placeholders_keys_and_tag():
    target = TARGETS.get("prompt_overrides.boundary-detection-prompt-template")
    from membase.layers.evermemos.prompts import PROMPT_TEMPLATES

    default = PROMPT_TEMPLATES[target.variable].default
    assert target.problems(default.replace("$time_gap", "")) and "time_gap" in target.problems(default.replace("$time_gap", ""))[0]
    assert any("should_end" in p for p in target.problems(default.replace('"should_end"', '"end"')))
    assert any("task tag" in p for p in target.problems(default.split("\n", 1)[1]))
    assert any("$$" in p for p in target.problems(default + " costs $ 5"))


def test_bundle_round_trip_updates_and_secrets(tmp_path):
    config = {**MEM0_OFFLINE, "user_id": "guest", "save_dir": "x",
              "llm_config": {"api_key": "sk-very-secret-key-123", "openai_base_url": "http://h/v1"}}
    bundle = MemoryConfigBundle.from_layer_config(config)
    assert "user_id" not in bundle.base_config and bundle.base_config["llm_config"]["base_url"] == "http://h/v1"
    bundle.update("custom_fact_extraction_prompt", 'Reply in json: {"facts": [...]}')
    bundle.update("question_answering_prompt", "Q: $question C: $context")
    with pytest.raises(KeyError):
        bundle.update("no_such_field", 1)
    with pytest.raises(BundleError):
        bundle.with_updates({"embedding_model_dims": "many"})
    bundle.save(tmp_path)
    text = (tmp_path / BUNDLE_FILENAME).read_text()
    assert "sk-very-secret-key-123" not in text and '"***"' in text
    loaded = MemoryConfigBundle.load(tmp_path).restore_secrets(bundle)
    assert loaded == bundle
    bundle.export_memory_config(tmp_path)
    exported = json.loads((tmp_path / "memory_config.json").read_text())
    assert exported["layer_type"] == "Mem0" and exported["custom_fact_extraction_prompt"].startswith("Reply")


def test_bundle_dotted_paths_into_nested_and_dict_fields():
    bundle = MemoryConfigBundle.from_dict({"backend": "EverMemOS", "base_config": {"llm_config": {"provider": "fake"}}})
    assert bundle.get("retrieval_config.rrf_k") == 60
    assert bundle.get("prompt_overrides.boundary-detection-prompt-template") is None
    changed = bundle.with_updates({"retrieval_config.rrf_k": 7, "top_k": 3})
    assert changed.get("retrieval_config.rrf_k") == 7 and changed.top_k == 3 and bundle.get("retrieval_config.rrf_k") == 60
    with pytest.raises(BundleError, match="placeholders"):
        bundle.with_updates({"prompt_overrides.boundary-detection-prompt-template": "no placeholders"})


@pytest.mark.parametrize("content", [b"\xff\xfe not utf8", b"{not json"])
def test_unreadable_bundle_file_is_one_clear_error(tmp_path, content):
    (tmp_path / BUNDLE_FILENAME).write_bytes(content)
    with pytest.raises(BundleError) as info:
        MemoryConfigBundle.load(tmp_path)
    assert "\n" not in str(info.value) and BUNDLE_FILENAME in str(info.value)
