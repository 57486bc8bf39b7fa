"""Scripted QA and judge models that worker processes can rebuild (``py:`` specs of ``run_optimization.py``).

``py:tests.resume._optimization_scripted:qa_model`` answers with the first words of the message
in its context (``Speaker … says: …`` lines) that shares most words with the question, so answers
differ from conversation to conversation; ``…:judge_model`` says
CORRECT when a word of four letters or more of the answer is in the reference answer. Both are
module-level functions, so a spawned worker builds the same models from the spec.
"""

from __future__ import annotations

import re
from typing import Any

from membase.clients.fake import FunctionChatModel

__all__ = ["judge_model", "qa_model"]

_WORD = re.compile(r"[A-Za-z0-9]{4,}")


def _answer(messages: list[dict[str, Any]], **_kw: Any) -> str:
    prompt = messages[-1]["content"]
    question = re.search(r"Question: (.*)", prompt)
    asked = {w.lower() for w in _WORD.findall(question.group(1))} if question else set()
    said = [line.partition(" says: ")[2] for line in prompt.splitlines() if " says: " in line]
    if not said:
        return "no memory"
    best = max(said, key=lambda line: len(asked & {w.lower() for w in _WORD.findall(line)}))  # first on ties
    return " ".join(best.split()[:8])


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
