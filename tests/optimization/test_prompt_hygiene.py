"""What the optimizer is shown: no run date frozen into a rewritten prompt, no repr quotes around questions."""

from __future__ import annotations

from types import SimpleNamespace

from toolkits.optimization.bundle import MemoryConfigBundle
from toolkits.optimization.loop import PromptRoundStep
from toolkits.optimization.records import Attribution, strip_run_dates, unquote
from toolkits.optimization.targets import TARGETS

FACT_PROMPT = ("You collect personal facts from a chat.\n- Today's date is 2026-12-03.\n- Keep names.\n"
               'Reply in json as {"facts": [...]}.')


def test_strip_run_dates_removes_only_the_rendered_date_line():
    assert strip_run_dates(FACT_PROMPT) == 'You collect personal facts from a chat.\n- Keep names.\nReply in json as {"facts": [...]}.'
    kept = "Dates like 2023-05-08 in the messages matter."
    assert strip_run_dates(kept) == kept
    assert strip_run_dates(None) is None


def test_unquote_reads_repr_text_and_leaves_the_rest():
    assert unquote("'When did Mira adopt the parrot?'") == "When did Mira adopt the parrot?"
    assert unquote('"It\'s Tuesday"') == "It's Tuesday"
    assert unquote("plain answer") == "plain answer"
    assert unquote("2023") == "2023"  # a number stays text
    assert unquote(None) is None


def test_a_default_filled_from_the_graph_reaches_the_optimizer_without_the_run_date():
    version = SimpleNamespace(version=1, raw_value=repr(FACT_PROMPT))
    graph = SimpleNamespace(get_versions=lambda name: [version] if name == "fact-extraction-system-prompt" else [])
    targets = TARGETS.select("Mem0", ["custom_fact_extraction_prompt"])
    step = PromptRoundStep(targets=targets, settings=None, attribution=None, optimizers={}, seed=0)
    bundle = MemoryConfigBundle.from_layer_config({"layer_type": "Mem0"})
    effective, filled = step._effective_bundle(bundle, graph)
    assert filled == ["custom_fact_extraction_prompt"]
    shown = effective.get("custom_fact_extraction_prompt")
    assert "Today's date" not in shown and "Keep names." in shown


def test_the_failure_shown_to_the_optimizer_has_no_repr_quotes():
    from toolkits.optimization.optimizer import _failed_case_text

    error = Attribution(error_type="RetrievalError", op_id="", reason="the unit was not retrieved",
                        query="'When did Mira adopt the parrot?'", golden_answer="in May 2023",
                        prediction="'I do not know'")
    text = _failed_case_text(error, graph=None)
    assert "When did Mira adopt the parrot?" in text and "'When did" not in text
    assert "'I do not know'" not in text and "I do not know" in text
