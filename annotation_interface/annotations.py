"""Manual error attributions: validation against the graph and the append-only output file.

The output is one JSON array of records (spec-tracer §6)::

    {"saved_at": "2026-…Z", "graph_id": "<file name>", "query_id": "<query node id>",
     "query": "<question>", "manual_error_attribution":
        {"op_id": "op-…" | null, "error_type": "…", "edge_id": "edge-…" | null, "reason": "…"},
     "graph_name": "<path relative to --data>", "qa_id": "<qa id>",
     "annotator": "<name>", "unsure": false, "comment": "…"}

(``graph_name``, ``qa_id``, ``annotator``, ``unsure`` and ``comment`` are additions: traced_data
folders hold one ``graph_evaluation.json`` per user, so the file name alone does not say which
graph was annotated, and several people label one folder.)

One record per (graph, question, annotator): :func:`save_record` replaces that annotator's
earlier record of the case (a second save is an edit, never a duplicate) and
:func:`delete_record` removes it; other annotators' records are never touched.
:func:`append_record` keeps the reference's append-only behaviour.

Every write reads the array, changes it and writes a temporary file that replaces the output by
an atomic rename, all under an exclusive lock on a sidecar ``.<name>.lock`` file. A crash leaves
the previous file intact, and two browser tabs (or two app processes) saving at once both land.
An output file that exists but is not a JSON array is never overwritten.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

from .parser import GraphIndex, QARecord

__all__ = [
    "ERROR_LABELS",
    "MEMORY_ERROR_TYPES",
    "ManualAttribution",
    "OutputFileError",
    "RecordKey",
    "append_record",
    "build_record",
    "check_output",
    "delete_record",
    "read_records",
    "record_key",
    "save_record",
    "validate_manual",
]

MEMORY_ERROR_TYPES = ("ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError")
ERROR_LABELS = ("AnnotationError", "LLMAsAJudgeError", *MEMORY_ERROR_TYPES)
"""The seven labels of the manual form: two non-memory labels, then the memory error types."""
_NULL_WORDS = frozenset({"", "null", "none"})


class OutputFileError(MemTraceError, ValueError):
    """The output file exists but cannot be read as a JSON array (it is left untouched)."""


@dataclass(frozen=True, kw_only=True)
class ManualAttribution:
    """The four fields of the manual form, checked against the graph."""

    op_id: str | None
    error_type: str
    edge_id: str | None
    reason: str


def _blank(value: str | None) -> str | None:
    text = (value or "").strip()
    return None if text.lower() in _NULL_WORDS else text


def validate_manual(
    index: GraphIndex, *, op_id: str | None, edge_id: str | None, error_type: str | None, reason: str | None
) -> tuple[ManualAttribution | None, list[str]]:
    """Check a manual attribution; return it normalised, or the list of problems.

    Rules: ``op_id`` is empty/``null`` or the id of an op that has edges in this graph; a memory
    error type names an op; ``edge_id`` is required with an op and must exist and belong to it;
    ``error_type`` is one of :data:`ERROR_LABELS`; the reason is not empty.
    """
    problems: list[str] = []
    op = _blank(op_id)
    edge = _blank(edge_id)
    kind = (error_type or "").strip()
    why = (reason or "").strip()
    if kind not in ERROR_LABELS:
        problems.append(f"error type {kind!r} is not one of {', '.join(ERROR_LABELS)}")
    if op is not None and not index.has_op(op):
        problems.append(f"op id {op!r} is not an operation with edges in this graph")
    if op is None and kind in MEMORY_ERROR_TYPES:
        problems.append(f"a {kind} names the faulty operation: fill in the op id")
    if edge is not None:
        rec = index.edges.get(edge)
        if rec is None:
            problems.append(f"edge id {edge!r} is not in this graph")
        elif op is not None and rec.op_id != op:
            problems.append(f"edge {edge!r} belongs to op {rec.op_id!r}, not to {op!r}")
    elif op is not None:
        problems.append("give the edge id of the faulty step (one of the op's edges)")
    if not why:
        problems.append("write the reason (what went wrong at this operation)")
    if problems:
        return None, problems
    return ManualAttribution(op_id=op, error_type=kind, edge_id=edge, reason=why), []


def build_record(*, graph_file_name: str, graph_name: str, qa: QARecord, attribution: ManualAttribution,
                 annotator: str = "", unsure: bool = False, comment: str = "",
                 now: datetime | None = None) -> dict[str, Any]:
    """The saved record of one manual attribution (``annotator`` names who saved it)."""
    stamp = (now or datetime.now(UTC)).astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {
        "saved_at": stamp,
        "graph_id": graph_file_name,
        "query_id": qa.query_full_node_id or qa.qa_id,
        "query": qa.question,
        "manual_error_attribution": asdict(attribution),
        "graph_name": graph_name,
        "qa_id": qa.qa_id,
        "annotator": annotator.strip(),
        "unsure": bool(unsure),
        "comment": comment.strip(),
    }


RecordKey = tuple[str, str, str]
"""``(graph_name, qa_id, annotator)``: one record per case and annotator."""


def record_key(record: Any) -> RecordKey | None:
    """The key of a saved record (None for an entry that is not an annotation record).

    Records written before annotator names existed have the annotator ``""``; records without a
    ``graph_name`` fall back to the file name in ``graph_id``.
    """
    if not isinstance(record, dict):
        return None
    graph = record.get("graph_name") or record.get("graph_id")
    qa_id = record.get("qa_id") or record.get("query_id")
    if not isinstance(graph, str) or not isinstance(qa_id, str):
        return None
    annotator = record.get("annotator")
    return graph, qa_id, annotator.strip() if isinstance(annotator, str) else ""


def _parse(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise OutputFileError(f"output file {str(path)!r} cannot be read ({exc}); nothing was written") from None
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OutputFileError(
            f"output file {str(path)!r} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "it was left untouched: choose another --output-path or fix the file"
        ) from None
    if not isinstance(data, list):
        raise OutputFileError(
            f"output file {str(path)!r} holds a JSON {type(data).__name__}, not an array of annotation records; "
            "it was left untouched: choose another --output-path"
        )
    return data


def read_records(path: str | os.PathLike[str]) -> list[Any]:
    """The records saved so far (``[]`` when the file does not exist or is empty).

    Raises:
        OutputFileError: the file exists but is not a JSON array.
    """
    return _parse(Path(path))


def check_output(path: str | os.PathLike[str]) -> tuple[int, str | None]:
    """``(records saved so far, problem)`` — the problem is None when saving will work."""
    p = Path(path)
    if p.is_dir():
        return 0, f"output path {str(p)!r} is a folder: give a file name"
    parent = next((q for q in p.parents if q.exists()), None)
    if parent is not None and not parent.is_dir():
        return 0, f"output path {str(p)!r} cannot be created: {str(parent)!r} is a file, not a folder"
    try:
        records = _parse(p)
    except OutputFileError as exc:
        return 0, str(exc)
    return len(records), None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    lock_path = path.with_name(f".{path.name}.lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX: the rename still keeps the file whole
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def append_record(path: str | os.PathLike[str], record: dict[str, Any]) -> int:
    """Append one record to the output array atomically; return the number of records now saved.

    Raises:
        OutputFileError: the file exists but is not a JSON array (nothing is written).
        OSError: the folder cannot be written.
    """
    from membase.utils.io import atomic_write_json

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with _locked(p):
        records = _parse(p)
        records.append(record)
        atomic_write_json(p, records, indent=2)
    return len(records)


def save_record(path: str | os.PathLike[str], record: dict[str, Any]) -> tuple[int, bool]:
    """Save one record, replacing the same annotator's earlier record of the same case.

    Returns:
        ``(records now saved, whether an earlier record was replaced)``.

    Raises:
        ValueError: the record has no ``graph_name``/``qa_id``.
        OutputFileError: the file exists but is not a JSON array (nothing is written).
        OSError: the folder cannot be written.
    """
    from membase.utils.io import atomic_write_json

    key = record_key(record)
    if key is None:
        raise ValueError("an annotation record needs graph_name and qa_id")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with _locked(p):
        records = _parse(p)
        kept = [r for r in records if record_key(r) != key]
        replaced = len(kept) != len(records)
        kept.append(record)
        atomic_write_json(p, kept, indent=2)
    return len(kept), replaced


def delete_record(path: str | os.PathLike[str], key: RecordKey) -> bool:
    """Remove the record with this key (one annotator's label of one case); False if none.

    Raises:
        OutputFileError: the file exists but is not a JSON array (nothing is written).
        OSError: the folder cannot be written.
    """
    from membase.utils.io import atomic_write_json

    p = Path(path)
    if not p.exists():
        return False
    with _locked(p):
        records = _parse(p)
        kept = [r for r in records if record_key(r) != key]
        if len(kept) == len(records):
            return False
        atomic_write_json(p, kept, indent=2)
    return True
