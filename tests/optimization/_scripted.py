"""A scripted QA model shared by the optimizer tests: right only under an "Evidence:" template."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

EVIDENCE_TEMPLATE_PREFIX = "Evidence:"


def evidence_template_qa(locomo_file: Path) -> Callable[..., str]:
    """A QA reply function over the first session's two questions of each conversation: the golden
    answer when the prompt starts with ``Evidence:`` (the template the scripted optimizer proposes),
    "no idea" otherwise; so a run scores only once the QA prompt was rewritten."""
    from toolkits.optimization.sampling import load_full_dataset

    full = load_full_dataset(locomo_file, max_sessions=1, max_questions=2)
    answers = {q.question: q.golden_answers[0] for qs in full.qa_pair_lists for q in qs}

    def qa(messages: list[dict[str, Any]], **_kw: Any) -> str:
        prompt = messages[-1]["content"]
        question = re.search(r"Question: (?:\w+: )?(.*)", prompt)
        text = question.group(1).strip() if question else ""
        return answers.get(text, "no idea") if prompt.startswith(EVIDENCE_TEMPLATE_PREFIX) else "no idea"

    return qa
