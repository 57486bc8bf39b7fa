"""Where along the memory pipeline a case's critical information was lost.

The pipeline stages of the loss funnel, in order: ``extraction`` (the information is captured
into memory), ``update/deletion`` (it survives every later version and delete), ``store`` (it is
held when the question is asked), ``retrieval`` (it reaches the answering context) and
``answer`` (the answer uses it).

One logic places every case: the stage its verdict's error type implies (an ``ExtractionError``
is a loss at extraction, ``UpdateError`` and ``DeletionError`` at update/deletion, and so on), so
the funnel and the error-type table count the same cases at the same stages. A record that carries
an ``evidence_flow`` trail is *checked* against it — the trail says stage by stage whether the
information was still present — and a case whose trail places the loss elsewhere is a
*contradiction*: it stays at its verdict's stage and is listed with both stages, never moved
silently. Non-memory verdicts (``LLMAsAJudgeError``, ``AnnotationError``) lose nothing along the
pipeline and are kept out of the funnel.

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
    "trail_summary",
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
    """One of :data:`FUNNEL_STAGES` (the verdict's), or None when the error type implies none."""
    basis: str
    """``error_type`` (placed by the verdict) or ``unknown``."""
    trail_stage: str | None = None
    """The stage the ``evidence_flow`` trail shows the loss at (None: no trail, or it does not say)."""

    @property
    def contradicts(self) -> bool:
        """True when the trail places the loss at another stage than the verdict."""
        return self.trail_stage is not None and self.stage is not None and self.trail_stage != self.stage

    @property
    def agrees_with_error_type(self) -> bool | None:
        """Whether the trail agrees with the verdict (None when there is no usable trail or no stage)."""
        if self.trail_stage is None or self.stage is None:
            return None
        return self.trail_stage == self.stage


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
    """The loss stage of one record: the stage its error type implies, checked against its trail."""
    by_type = loss_stage_from_error_type(error_type)
    trail = find_trail(record)
    trail_stage = loss_stage_from_trail(trail) if trail else None
    return LossStage(stage=by_type, basis="unknown" if by_type is None else "error_type", trail_stage=trail_stage)


def trail_summary(trail: Sequence[Mapping[str, Any]] | None, *, limit: int = 8) -> str:
    """The trail in one line: ``stage+ op`` / ``stage- op`` per step (``+`` present, ``-`` lost),
    consecutive repeats of one stage and op merged, at most ``limit`` entries (the last kept)."""
    if not trail:
        return ""
    parts: list[str] = []
    previous: tuple[str, bool | None, str] | None = None
    for step in trail:
        present = _present(step)
        key = (str(step.get("stage") or "?"), present, str(step.get("op_name") or ""))
        if key == previous:
            continue
        previous = key
        mark = "+" if present else "-" if present is False else "?"
        parts.append(f"{key[0]}{mark}" + (f" {key[2]}" if key[2] else ""))
    if len(parts) > limit:
        parts = [parts[0], "…", *parts[-(limit - 1):]]
    return " → ".join(parts)
