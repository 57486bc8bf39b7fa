"""Chat models for the report writer named on the command line.

``--model fake:<text>`` gives a deterministic offline model whose every batch answers with
``<text>`` as the report (or, when ``<text>`` is a JSON object with a ``report`` key, with that
object's ``report`` and ``rationale``), so the whole LLM path runs with no key and no network — the
way ``python -m membase`` accepts ``fake:<reply>`` for its QA and judge models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["FAKE_PREFIX", "fake_model_factory", "is_fake_model"]

FAKE_PREFIX = "fake:"


def is_fake_model(spec: str) -> bool:
    """True for a ``fake:<text>`` model spec."""
    return spec.startswith(FAKE_PREFIX)


def fake_model_factory(spec: str) -> Callable[[int], Any]:
    """``fn(batch_index) -> model`` for a ``fake:<text>`` spec (a fresh model per batch)."""
    from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall

    text = spec[len(FAKE_PREFIX):]
    answer = {"rationale": "fixed reply of the fake model", "report": text}
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("report"), str):
        answer = {"rationale": str(parsed.get("rationale", answer["rationale"])), "report": parsed["report"]}

    def factory(batch_index: int) -> Any:
        del batch_index
        return FunctionChatModel(lambda _messages, _tools, _choice: ToolCall(name=STRUCTURED_OUTPUT_TOOL, args=answer))

    return factory
