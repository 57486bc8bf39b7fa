from __future__ import annotations

import pytest

from membase.utils.patching import MonkeyPatcher, PatchSpec, make_attr_patch
from membase.utils.token_monitor import TokenLedger, token_monitor


class Llm:
    model = "m1"

    def generate(self, prompt: str) -> str:
        if prompt == "boom":
            raise RuntimeError("boom")
        return "two words"


def test_token_monitor_counts_per_model_and_op_type(tmp_path):
    llm, ledger = Llm(), TokenLedger()
    getter, setter = make_attr_patch(llm, "generate")
    wrapper = token_monitor(
        ledger,
        extract_model_name=lambda *_a, **_k: llm.model,
        extract_input_text=lambda prompt: prompt,
        extract_output_text=lambda out: out,
        classify_op_type=lambda prompt: "update" if prompt.startswith("UPDATE") else "generation",
    )
    with MonkeyPatcher([PatchSpec(name="llm.generate", getter=getter, setter=setter, wrapper=wrapper)]):
        llm.generate("extract facts please")
        llm.generate("UPDATE memory")
        with pytest.raises(RuntimeError):
            llm.generate("boom")
    llm.generate("not counted after the patch")
    stats = ledger.as_dict()["m1"]
    assert stats["generation"]["calls"] == 1 and stats["generation"]["input_tokens"] == 3
    assert stats["update"]["calls"] == 1 and stats["update"]["output_tokens"] == 2
    assert ledger.save(tmp_path / "token_cost.json").is_file()
