"""Models for the replay tests, named by ``py:tests.replay._models:<factory>`` specs."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JUDGE_LABEL", "switchable_judge"]

JUDGE_LABEL = {"label": "CORRECT"}
"""What the switchable judge answers; a test changes it between the run and the replay."""


def _grade(_messages: list[dict[str, Any]], **_kwargs: Any) -> str:
    return json.dumps({"label": JUDGE_LABEL["label"]})


def switchable_judge() -> Any:
    """A judge whose verdict is whatever ``JUDGE_LABEL`` says when it is asked (not deterministic across runs)."""
    from membase.clients.fake import FunctionChatModel

    return FunctionChatModel(_grade, model="switchable-judge")
