"""Prompt templates of the evaluation stage (written for this project).

Placeholders use `string.Template` syntax: `$question`, `$context`, `$golden_answers`,
`$prediction`. Template texts are traced as prompt nodes (`question-answering-prompt`,
`judge_prompt:<name>`), so they are also optimisation handles.
"""

from __future__ import annotations

__all__ = ["DEFAULT_JUDGE_TEMPLATE", "JUDGE_TEMPLATES", "QA_SYSTEM_PROMPT", "QA_TEMPLATE"]

QA_SYSTEM_PROMPT = "You are a helpful assistant."

QA_TEMPLATE = (
    "Answer the question using only what the memories below say about the conversation.\n"
    "Keep the answer short (a phrase or one sentence); for questions about time, give the date.\n\n"
    "Question: $question\n\n"
    "Memories:\n$context"
)

LOCOMO_JUDGE_TEMPLATE = (
    "You grade an answer to a question about a long conversation.\n"
    "Question: $question\n"
    "Reference answer: $golden_answers\n"
    "Answer to grade: $prediction\n\n"
    "Count the answer as CORRECT when it states the same fact as the reference, even in other words, "
    "with more detail, or with a date in another format that names the same day, month or period. "
    "Count it as WRONG when it contradicts the reference, misses its key fact, or says it does not know.\n"
    'Reply with JSON only: {"label": "CORRECT"} or {"label": "WRONG"}.'
)

DEFAULT_JUDGE_TEMPLATE = (
    "Question: $question\n"
    "Reference answer: $golden_answers\n"
    "Answer to grade: $prediction\n\n"
    'Does the answer match the reference? Reply with JSON only: {"label": "CORRECT"} or {"label": "WRONG"}.'
)

JUDGE_TEMPLATES = {
    "locomo-judge": LOCOMO_JUDGE_TEMPLATE,
    "default-exact-match": DEFAULT_JUDGE_TEMPLATE,
}
