"""Where along the memory pipeline a case's critical information was lost.

The pipeline stages of the loss funnel, in order: ``extraction`` (the information is captured
into memory), ``update/deletion`` (it survives every later version and delete), ``store`` (it is
held when the question is asked), ``retrieval`` (it reaches the answering context) and
``answer`` (the answer uses it).

The loss stage of a case comes from its ``evidence_flow`` trail when the record carries one —
the trail says stage by stage whether the information was still present — and otherwise from the
attributed error type (an ``ExtractionError`` is a loss at extraction, and so on).

Where the trail is read (:func:`find_trail`): the record-level object that the attribution
runner writes for ``evidence_flow`` records,
``"evidence_flow": {"status": …, "confidence": …, "trail": [step, …]}``, where each step is
``toolkits.evidence_flow``'s ``{"stage", "present", "op_id", "op_name", "node_id", "score",
"note"}`` (only ``stage`` and ``present`` are used); for outputs of other writers also
``error_attribution_result.trail``, ``evidence_flow_trail`` and ``trail``, as a list or as that
list serialised to a string. Trails are read defensively: stage names are mapped through a table
of aliases (several versions of ``evidence_flow`` name them differently), unknown stages are
ignored, and a trail that says nothing usable falls back to the error type.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "FUNNEL_STAGES",
    "LossStage",
    "find_trail",
    "loss_stage_from_error_type",
    "loss_stage_from_trail",
    "loss_stage_of",
]

FUNNEL_STAGES: tuple[str, ...] = ("extraction", "update/deletion", "store", "retrieval", "answer")

# trail stage name (lower case) -> funnel stage; "source" marks the evidence itself
_STAGE_ALIASES: dict[str, str] = {
    "evidence": "source",
    "source": "source",
    "source_evidence": "source",
    "message": "source",
    "construction": "extraction",
    "extraction": "extraction",
    "extract": "extraction",
    "capture": "extraction",
    "lifecycle": "update/deletion",
    "update": "update/deletion",
    "deletion": "update/deletion",
    "delete": "update/deletion",
    "update/deletion": "update/deletion",
    "store": "store",
    "memory_store": "store",
    "storage": "store",
    "retrieval": "retrieval",
    "retrieve": "retrieval",
    "query": "retrieval",
    "context": "retrieval",
    "answer": "answer",
    "response": "answer",
    "generation": "answer",
}
_ORDER = {stage: i for i, stage in enumerate(("source", *FUNNEL_STAGES))}

_ERROR_TYPE_STAGE = {
    "ExtractionError": "extraction",
    "UpdateError": "update/deletion",
    "DeletionError": "update/deletion",
    "RetrievalError": "retrieval",
    "ResponseError": "answer",
}


@dataclass(frozen=True, kw_only=True)
class LossStage:
    """The funnel stage where a case lost its information, and how that was decided."""

    stage: str | None
    """One of :data:`FUNNEL_STAGES`, or None when neither a trail nor the error type tells."""
    basis: str
    """``trail``, ``error_type`` or ``unknown``."""
    agrees_with_error_type: bool | None = None
    """For trail-based stages: whether the error type implies the same stage (None if no type)."""


def _parse(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text.startswith("["):
        return None
    try:
        return json.loads(text)
    except ValueError:
        try:  # an older writer stringified the list with str()
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None


def find_trail(record: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The ``evidence_flow`` trail stored in an attribution record, wherever a version put it.

    Looks in ``evidence_flow.trail`` (what the attribution runner writes),
    ``error_attribution_result.trail``, ``evidence_flow_trail`` and ``trail``; accepts a list of
    step objects or that list serialised as a string.

    Returns:
        The steps that are objects with a ``stage``, or None when no trail is found.
    """
    prediction = record.get("error_attribution_result")
    flow = record.get("evidence_flow")
    candidates = [
        flow.get("trail") if isinstance(flow, Mapping) else None,
        prediction.get("trail") if isinstance(prediction, Mapping) else None,
        record.get("evidence_flow_trail"),
        record.get("trail"),
    ]
    for candidate in candidates:
        steps = _parse(candidate)
        if isinstance(steps, list):
            usable = [s for s in steps if isinstance(s, Mapping) and isinstance(s.get("stage"), str)]
            if usable:
                return usable
    return None


def loss_stage_from_error_type(error_type: str | None) -> str | None:
    """The funnel stage an error type implies (None for an unknown type)."""
    return _ERROR_TYPE_STAGE.get(error_type or "")


def _present(step: Mapping[str, Any]) -> bool | None:
    value = step.get("present")
    if isinstance(value, bool):
        return value
    return None


def loss_stage_from_trail(trail: Sequence[Mapping[str, Any]]) -> str | None:
    """The funnel stage where the trail shows the information lost; None if it does not say.

    The furthest stage at which the information was still present is found first; the loss is
    the earliest stage at or after it where a step reports it absent, or, when no later step
    reports an absence, the stage right after it.
    """
    steps = []
    for step in trail:
        stage = _STAGE_ALIASES.get(str(step.get("stage", "")).strip().lower())
        present = _present(step)
        if stage is not None and present is not None:
            steps.append((_ORDER[stage], present))
    if not steps:
        return None
    furthest = max((order for order, present in steps if present), default=None)
    if furthest is None:
        # never seen present anywhere: lost at the earliest stage reporting an absence
        first_absent = min(order for order, _ in steps)
        return FUNNEL_STAGES[max(first_absent, 1) - 1]
    absent_after = [order for order, present in steps if not present and order >= furthest]
    if absent_after:
        order = min(absent_after)
        return FUNNEL_STAGES[max(order, 1) - 1]
    if furthest >= len(FUNNEL_STAGES):  # present up to the answer: the trail names no loss
        return None
    return FUNNEL_STAGES[furthest]  # the stage after ``furthest`` (orders are offset by "source")


def loss_stage_of(record: Mapping[str, Any], error_type: str | None) -> LossStage:
    """The loss stage of one record: from its trail when it has a usable one, else its error type."""
    by_type = loss_stage_from_error_type(error_type)
    trail = find_trail(record)
    if trail:
        stage = loss_stage_from_trail(trail)
        if stage is not None:
            agrees = None if by_type is None else by_type == stage
            return LossStage(stage=stage, basis="trail", agrees_with_error_type=agrees)
    if by_type is not None:
        return LossStage(stage=by_type, basis="error_type")
    return LossStage(stage=None, basis="unknown")
