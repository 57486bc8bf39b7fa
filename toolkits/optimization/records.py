"""Records that travel between the loop's stages and into its JSON files.

An :class:`Attribution` is one failed question's verdict (error type, operation, reason) plus
the question it explains; it is what ``error_attribution.json`` lists, what
:func:`toolkits.optimization.grouping.group_attributions` assigns to targets, and what the
optimizers turn into feedback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toolkits.stored_values import decode_stored_text, unquote

__all__ = ["Attribution", "decode_stored_text", "strip_run_dates", "unquote"]


class Attribution(BaseModel):
    """One attributed failure: the reference's prediction dump plus the case it explains."""

    model_config = ConfigDict(extra="ignore")

    error_type: str
    """One of the five memory error types (``ResponseError`` ...)."""
    op_id: str
    """The attributed operation (empty when the attributor named a stage but no operation)."""
    reason: str = ""
    """Why this operation is the earliest decisive fault."""
    query_full_node_id: str | None = None
    """The failed question's query node."""
    query: str | None = None
    golden_answer: str | None = None
    prediction: str | None = None
    source: str = "attribution"
    """Who produced it: the strategy name, or ``disabled`` for the ``--disable-memtrace`` ablation."""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def coerce(cls, value: Any) -> Attribution:
        """Accept an :class:`Attribution`, a pydantic prediction, or a dict with the same keys."""
        if isinstance(value, Attribution):
            return value
        if hasattr(value, "model_dump"):
            value = value.model_dump()
        if isinstance(value, Mapping):
            return cls.model_validate(dict(value))
        return cls(
            error_type=str(getattr(value, "error_type", "")),
            op_id=str(getattr(value, "op_id", "")),
            reason=str(getattr(value, "reason", "")),
        )


_RUN_DATE_LINE = re.compile(r"^[ \t]*(?:[-*][ \t]*)?Today's date is \d{4}-\d{2}-\d{2}\.?[ \t]*\n?", re.MULTILINE)


def strip_run_dates(text: Any) -> Any:
    """Remove the ``Today's date is YYYY-MM-DD.`` lines a layer renders into its default prompt per run.

    mem0 writes the day of the run into its default fact-extraction prompt; a prompt filled from
    the graph and rewritten by the optimizer would carry that day into every later run.
    """
    return _RUN_DATE_LINE.sub("", text) if isinstance(text, str) else text
