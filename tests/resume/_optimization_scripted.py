"""Scripted QA and judge models that worker processes can rebuild (``py:`` specs of ``run_optimization.py``).

``py:tests.resume._optimization_scripted:qa_model`` answers with the first words of the message
in its context (``Speaker … says: …`` lines) that shares most words with the question, so answers
differ from conversation to conversation; ``…:judge_model`` says
CORRECT when a word of four letters or more of the answer is in the reference answer. Both are
module-level functions, so a spawned worker builds the same models from the spec. Under a QA
template that says :data:`QUOTE` the answer is the whole message and its timestamp (more of the gold
answer's words);
:func:`reflect`, a scripted GEPA reflection model, proposes such a template.
"""

from __future__ import annotations

import re
from typing import Any

from membase.clients.fake import FunctionChatModel

__all__ = ["BETTER_QA", "QUOTE", "judge_model", "qa_model", "reflect"]

_WORD = re.compile(r"[A-Za-z0-9]{4,}")
QUOTE = "Quote the whole message"
"""Under a QA template with this phrase the scripted model answers with the whole message, not its first words."""
BETTER_QA = f"{QUOTE} that answers the question.\nQuestion: $question\nMemories:\n$context"


def _answer(messages: list[dict[str, Any]], **_kw: Any) -> str:
    prompt = messages[-1]["content"]
    question = re.search(r"Question: (.*)", prompt)
    asked = {w.lower() for w in _WORD.findall(question.group(1))} if question else set()
    lines = prompt.splitlines()
    said = [i for i, line in enumerate(lines) if " says: " in line]
    if not said:
        return "no memory"
    best = max(said, key=lambda i: len(asked & {w.lower() for w in _WORD.findall(lines[i])}))  # first on ties
    message = lines[best].partition(" says: ")[2]
    if QUOTE not in prompt:
        return " ".join(message.split()[:8])
    after = lines[best + 1] if best + 1 < len(lines) else ""
    return f"{message} ({after})" if after.startswith("Timestamp:") else message


def _verdict(messages: list[dict[str, Any]], **_kw: Any) -> str:
    prompt = messages[-1]["content"]
    reference = re.search(r"Reference answer: (.*)", prompt)
    answer = re.search(r"Answer to grade: (.*)", prompt)
    if not reference or not answer:
        return '{"label": "WRONG"}'
    gold = {w.lower() for w in _WORD.findall(reference.group(1))}
    said = {w.lower() for w in _WORD.findall(answer.group(1))}
    return '{"label": "CORRECT"}' if gold & said else '{"label": "WRONG"}'


def qa_model() -> FunctionChatModel:
    """The scripted answering model."""
    return FunctionChatModel(_answer, model="scripted-qa")


def judge_model() -> FunctionChatModel:
    """The scripted judge."""
    return FunctionChatModel(_verdict, model="scripted-judge")


def reflect(_prompt: Any) -> str:
    """Scripted GEPA reflection: always proposes :data:`BETTER_QA`."""
    return f"```\n{BETTER_QA}\n```"
