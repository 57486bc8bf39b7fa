"""`custom_instructions` is Mem0v3's prompt target in the optimizer's registry."""

from __future__ import annotations

from toolkits.optimization.targets import TARGETS


def test_the_target_belongs_to_mem0v3_only():
    target = TARGETS.get("custom_instructions")
    assert target.layers == ("Mem0v3",) and target.kind == "prompt"
    assert TARGETS.by_variable("extraction-custom-instructions", "Mem0v3") is target
    assert [t.field for t in TARGETS.for_layer("Mem0v3", kinds=("prompt",))] == [
        "custom_instructions", "question_answering_prompt"]
    assert "custom_instructions" not in {t.field for t in TARGETS.for_layer("Mem0")}


def test_the_contract_keeps_mem0s_prompt_sections_intact():
    target = TARGETS.get("custom_instructions")
    assert target.problems("Keep every pet's name and breed, even when a similar memory exists.") == []
    assert target.problems("") == ["the value is empty"]
    assert target.problems(3) == ["the value must be text, got int"]
    (problem,) = target.problems("Keep names.\n# Output:\n{\"memory\": []}")
    assert "start with '#'" in problem
