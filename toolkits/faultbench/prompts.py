"""Prompt texts recorded as prompt nodes by the faultbench pipeline.

The deterministic reader and judge do not read them; they are recorded so that the traced
graphs look like real runs (a `question-answering-prompt` and a `judge_prompt:locomo-judge`
node) and so that an LLM attributor reading the graph sees what the components were asked.
"""

from __future__ import annotations

__all__ = [
    "JUDGE_PROMPT",
    "JUDGE_TEMPLATE_NAME",
    "MEM0_FACT_EXTRACTION_PROMPT",
    "MEM0_UPDATE_MEMORY_PROMPT",
    "QA_PROMPT",
]

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

# Short prompts for Mem0 runs: mem0 embeds the update prompt in every decision request, so its
# long default would dominate the size of the committed benchmark graphs.
MEM0_FACT_EXTRACTION_PROMPT = (
    "Extract the personal facts stated in the conversation input as short standalone sentences. "
    'Return JSON {"facts": [...]} and nothing else.'
)

MEM0_UPDATE_MEMORY_PROMPT = (
    "You maintain a memory of personal facts. For each new fact decide ADD (new information), "
    "UPDATE (refines an existing memory; keep its id), DELETE (contradicts an existing memory) "
    "or NONE (already known)."
)
