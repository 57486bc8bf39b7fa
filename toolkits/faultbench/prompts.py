"""Prompt texts recorded as prompt nodes by the faultbench pipeline.

The deterministic reader and judge do not read them; they are recorded so that the traced
graphs look like real runs (a `question-answering-prompt` and a `judge_prompt:locomo-judge`
node) and so that an LLM attributor reading the graph sees what the components were asked.
"""

from __future__ import annotations

__all__ = ["JUDGE_PROMPT", "JUDGE_TEMPLATE_NAME", "QA_PROMPT"]

QA_PROMPT = (
    "Question: $question\n"
    "Answer the question using only the memories below. Quote the memory that answers it.\n"
    "$context"
)

JUDGE_TEMPLATE_NAME = "locomo-judge"

JUDGE_PROMPT = (
    "You grade an answer to a question about a long conversation.\n"
    "Question: $question\nReference answer: $golden_answers\nGiven answer: $prediction\n"
    'Reply with JSON {"label": "CORRECT"} when the given answer states the reference answer, '
    'else {"label": "WRONG"}.'
)
