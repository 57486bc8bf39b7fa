"""The online memory manager: message buffer -> boundary -> memcell -> extraction -> index.

Pure pipeline: every public method returns a record of what happened (buffers before and after,
the boundary verdict, the memcell's successive versions, LLM prompts and replies). The layer hands
the records to the tracer; nothing here knows about smartcomment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from membase.clients.embeddings import Embedder
from membase.layers.evermemos.boundary import (
    BoundaryDecision,
    HardLimitCheck,
    check_hard_limits,
    detect_boundary,
    last_timestamp,
    memcell_summary,
)
from membase.layers.evermemos.config import (
    BoundaryDetectionConfig,
    MemoryExtractionConfig,
    OnlineRetrieverConfig,
)
from membase.layers.evermemos.extraction import (
    ExtractionFailed,
    ExtractionOutcome,
    extract_episode,
    extract_event_log,
    extract_foresight,
)
from membase.layers.evermemos.index import HybridIndex
from membase.layers.evermemos.llm import ChatModel
from membase.layers.evermemos.memcell import MemCell, as_aware, new_event_id, parse_timestamp
from membase.layers.evermemos.retrieval import AgenticRun, HybridRun, agentic_search, hybrid_search

__all__ = ["ExtractionStage", "IngestRecord", "MemcellRecord", "OnlineMemoryManager"]

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class ExtractionStage:
    """One enrichment of a memcell and the unit value after it."""

    kind: Literal["episode", "foresight", "event_log"]
    outcome: ExtractionOutcome[Any]
    unit_after: dict[str, Any] | None
    """None when the stage failed."""


@dataclass(kw_only=True)
class MemcellRecord:
    """A memcell's life: first version, each enrichment, final version (or the failure)."""

    memcell: MemCell
    source: Literal["boundary", "force_split", "flush"]
    unit_v1: dict[str, Any]
    stages: list[ExtractionStage] = field(default_factory=list)
    unit_final: dict[str, Any] | None = None
    failure: str | None = None


@dataclass(kw_only=True)
class IngestRecord:
    """What one `add_message` (or `flush`) did."""

    message: dict[str, Any] | None
    buffer_before: list[dict[str, Any]]
    buffer_after_append: list[dict[str, Any]]
    smart_mask_flag: bool = False
    hard_limit: HardLimitCheck | None = None
    force_split: bool = False
    limit_without_split: bool = False
    """The hard limit was reached but the history was too short to split; the LLM judge ran."""
    decision: BoundaryDecision | None = None
    memcell: MemcellRecord | None = None
    buffer_after_reset: list[dict[str, Any]] | None = None
    """The buffer after the post-memcell reset (None when there was no reset)."""


class OnlineMemoryManager:
    """Per-user EverMemOS state: buffer, memcells, index."""

    def __init__(
        self,
        *,
        llm: ChatModel,
        embedder: Embedder,
        boundary: BoundaryDetectionConfig,
        extraction: MemoryExtractionConfig,
        retrieval: OnlineRetrieverConfig,
        id_factory: Callable[[], str] = new_event_id,
    ) -> None:
        self.llm = llm
        self.embedder = embedder
        self.boundary = boundary
        self.extraction = extraction
        self.retrieval = retrieval
        self.id_factory = id_factory
        self.buffer: list[dict[str, Any]] = []
        self.memcells: list[MemCell] = []
        self.index = HybridIndex(embedder)

    # -- ingestion -------------------------------------------------------------------------
    def add_message(
        self, *, role: str, name: str | None, content: str, timestamp: str | None, **extra: Any
    ) -> IngestRecord:
        """Buffer one message and close a memcell when the boundary says so."""
        ts = parse_timestamp(timestamp) or datetime.now(UTC)
        message = {
            "speaker_id": name or role,
            "speaker_name": name,
            "content": content,
            "timestamp": ts.isoformat(),
            "role": role,
            **extra,
        }
        record = IngestRecord(message=message, buffer_before=list(self.buffer), buffer_after_append=[])
        self.buffer.append(message)
        record.buffer_after_append = list(self.buffer)
        if len(self.buffer) < 2:
            return record
        history, new = self.buffer[:-1], self.buffer[-1:]
        record.smart_mask_flag = (
            self.boundary.use_smart_mask and len(self.buffer) > self.boundary.smart_mask_threshold
        )
        record.hard_limit = check_hard_limits(history, new, self.boundary)
        if record.hard_limit.reached:
            if len(history) >= 2:
                record.force_split = True
                memcell = MemCell(
                    event_id=self.id_factory(),
                    original_data=list(history),
                    timestamp=as_aware(last_timestamp(history) or ts),
                    summary=None,
                    participants=_participants(history),
                )
                record.memcell = self._process_memcell(memcell, "force_split")
                if record.memcell.failure is None:
                    record.buffer_after_reset = self._reset_buffer(record.smart_mask_flag)
                return record
            record.limit_without_split = True
        record.decision = detect_boundary(self.llm, history, new, smart_mask=record.smart_mask_flag)
        if record.decision.result.should_end:
            memcell = MemCell(
                event_id=self.id_factory(),
                original_data=list(history),
                timestamp=as_aware(last_timestamp(history) or ts),
                summary=memcell_summary(record.decision.result, new),
                participants=_participants(history),
            )
            record.memcell = self._process_memcell(memcell, "boundary")
            if record.memcell.failure is None:
                record.buffer_after_reset = self._reset_buffer(record.smart_mask_flag)
        return record

    def flush(self) -> IngestRecord | None:
        """Close whatever is buffered into a final memcell; None when the buffer is empty.

        The buffer is emptied only when the memcell was stored (a failed extraction keeps it).
        """
        if not self.buffer:
            return None
        record = IngestRecord(
            message=None, buffer_before=list(self.buffer), buffer_after_append=list(self.buffer)
        )
        memcell = MemCell(
            event_id=self.id_factory(),
            original_data=list(self.buffer),
            timestamp=as_aware(last_timestamp(self.buffer) or datetime.now(UTC)),
            summary="Final conversation segment",
            participants=_participants(self.buffer),
        )
        record.memcell = self._process_memcell(memcell, "flush")
        if record.memcell.failure is None:  # like add_message: a failed memcell keeps its messages
            self.buffer = []
            record.buffer_after_reset = []
        return record

    def _reset_buffer(self, smart_mask_flag: bool) -> list[dict[str, Any]]:
        # Smart mask keeps the held-out last history message: it opens the next memcell too.
        self.buffer = self.buffer[-2:] if smart_mask_flag else self.buffer[-1:]
        return list(self.buffer)

    def _process_memcell(
        self, memcell: MemCell, source: Literal["boundary", "force_split", "flush"]
    ) -> MemcellRecord:
        record = MemcellRecord(memcell=memcell, source=source, unit_v1=memcell.unit_value())
        plan: list[
            tuple[Literal["episode", "foresight", "event_log"], Callable[..., ExtractionOutcome[Any]]]
        ] = [("episode", extract_episode)]
        if self.extraction.enable_foresight:
            plan.append(("foresight", extract_foresight))
        if self.extraction.enable_event_log:
            plan.append(("event_log", extract_event_log))
        for kind, extractor in plan:
            try:
                outcome = extractor(self.llm, memcell)
            except ExtractionFailed as exc:
                record.stages.append(ExtractionStage(kind=kind, outcome=exc.outcome, unit_after=None))
                record.failure = str(exc)
                logger.warning("memcell %s not stored: %s", memcell.event_id, exc)
                return record
            _apply(memcell, kind, outcome.value)
            record.stages.append(ExtractionStage(kind=kind, outcome=outcome, unit_after=memcell.unit_value()))
        record.unit_final = memcell.unit_value(include_original=False)
        self.index.add(memcell.to_dict())  # indexing may fail (embedder): only then count the memcell
        self.memcells.append(memcell)
        return record

    # -- retrieval ---------------------------------------------------------------------------
    def retrieve(
        self, query: str, k: int
    ) -> tuple[list[tuple[dict[str, Any], float]], HybridRun | AgenticRun | None]:
        """Return `(docs with scores, record)`; `([], None)` for an empty query or index."""
        if not query.strip() or not len(self.index):
            return [], None
        mode = self.retrieval.retrieval_mode
        if mode == "agentic":
            run = agentic_search(self.index, self.llm, query, k, self.retrieval)
            return run.final, run
        if mode == "hybrid":
            hybrid = hybrid_search(self.index, query, k, self.retrieval)
            return hybrid.fused, hybrid
        if mode == "bm25_only":
            hits = self.index.bm25_search(query, k)
            return hits, HybridRun(query=query, sparse=hits, dense=[], fused=hits)
        hits = self.index.embedding_search(query, k)
        return hits, HybridRun(query=query, sparse=[], dense=hits, fused=hits)

    # -- persistence ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """Picklable state."""
        return {
            "memcells": [m.to_dict() for m in self.memcells],
            "message_buffer": list(self.buffer),
            "index": self.index.state(),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Restore `state()`."""
        self.memcells = [MemCell.from_dict(d) for d in state["memcells"]]
        self.buffer = list(state["message_buffer"])
        self.index.load_state(state["index"])


def _participants(messages: list[dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for m in messages:
        if m["speaker_id"] not in seen:
            seen.append(m["speaker_id"])
    return seen


def _apply(memcell: MemCell, kind: str, value: Any) -> None:
    if kind == "episode":
        memcell.subject = value["title"]
        memcell.episode = value["content"]
        memcell.summary = memcell.episode[:200] + "..."
    elif kind == "foresight":
        memcell.foresights = value
    else:
        memcell.event_log = value
