"""LLM-judge prompt filling and response parsing.

Unlike the reference (substring `"correct"`, which also matches "incorrect"), the parser reads the
JSON label first and otherwise looks for whole words, with negative verdicts taking precedence.
"""

from __future__ import annotations

import json
import re
from string import Template

from membase.evaluation.prompts import JUDGE_TEMPLATES
from membase.types import QuestionAnswerPair

__all__ = ["fill_judge_prompt", "format_golden_answers", "judge_template_name", "parse_judge_response"]

_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_NEGATIVE = re.compile(r"\b(incorrect|wrong|not\s+(correct|right)|false)\b", re.IGNORECASE)
_POSITIVE = re.compile(r"\b(correct|true|yes)\b", re.IGNORECASE)
_LABEL_KEYS = ("label", "verdict", "judgement", "judgment", "result", "answer")


def judge_template_name(dataset_type: str) -> str:
    """Name of the judge template for a dataset (`locomo-judge` for LoCoMo)."""
    return "locomo-judge" if dataset_type == "LoCoMo" else "default-exact-match"


def format_golden_answers(answers: list[str]) -> str:
    """The single answer, or `[a, b]` when there are several."""
    return answers[0] if len(answers) == 1 else "[" + ", ".join(answers) + "]"


def fill_judge_prompt(template: str, qa: QuestionAnswerPair, prediction: str) -> str:
    """Fill `$question`, `$golden_answers`, `$prediction` (and `$evidence`) of a judge template."""
    return Template(template).safe_substitute(
        question=qa.question,
        golden_answers=format_golden_answers(qa.golden_answers),
        prediction=prediction,
        evidence=", ".join(qa.metadata.get("evidence", [])),
    )


def _label_from_json(text: str) -> str | None:
    for match in _JSON_OBJECT.finditer(text):
        try:
            data = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict):
            for key in _LABEL_KEYS:
                if isinstance(data.get(key), str | bool):
                    return str(data[key])
    return None


def parse_judge_response(content: str) -> float:
    """1.0 when the judge says CORRECT, else 0.0 ("incorrect" and "wrong" are never correct)."""
    label = _label_from_json(content)
    text = label if label is not None else content
    if _NEGATIVE.search(text):
        return 0.0
    return 1.0 if _POSITIVE.search(text) else 0.0


def get_judge_template(name: str) -> str:
    """The template text registered under `name`."""
    if name not in JUDGE_TEMPLATES:
        raise KeyError(f"unknown judge template {name!r}; known: {sorted(JUDGE_TEMPLATES)}")
    return JUDGE_TEMPLATES[name]
