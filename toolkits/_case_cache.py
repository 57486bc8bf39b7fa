"""Per-case result cache of the attribution runner: one JSON file per finished case.

The file name is the SHA-256 of a canonical identifier (the graph's content, the case, every
config field that changes the answer, the run arguments, a prompt/version tag), so a rerun with
the same settings finds finished cases and skips them, while any change of graph, model, strategy
or prompts misses. Writes are atomic (temporary file in the same folder + ``os.replace``, mode
from the umask like any other file the user creates): an interrupted run never leaves a
half-written entry, and Ctrl-C loses nothing that finished.

An entry is checked before it is used (:func:`validate_entry`): a damaged or hand-edited entry
(``"time": null``, an unknown error type, …) is a cache miss, never a crash.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

# the project's one atomic writer; re-exported under this module for the attribution code
from membase.utils.io import atomic_write_json
from smartcomment.runtime.errors import MemTraceError
from toolkits.bench_utils import ERROR_TYPES

__all__ = ["CaseCache", "InvalidEntryError", "atomic_write_json", "cache_key", "validate_entry"]

EVIDENCE_SOURCES = ("annotated", "retrieved")
USAGE_KEYS = ("input_tokens", "output_tokens", "num_calls")


class InvalidEntryError(MemTraceError, ValueError):
    """A stored result does not have the shape the runner writes (the message names the field)."""


def cache_key(identifier: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``identifier``."""
    blob = json.dumps(identifier, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def validate_entry(entry: Any) -> dict[str, Any]:
    """Check a stored result and return it normalised.

    A valid entry is a dict with ``error_attribution_result`` = ``{error_type, op_id, reason}``
    (a known error type, strings), ``time`` (a finite number >= 0), and optionally ``usage``
    (non-negative integers), ``evidence_ids`` (a list of strings or null), ``evidence_source``
    (``annotated``, ``retrieved`` or null) and ``details`` (an object keyed by name, or null).

    Raises:
        InvalidEntryError: naming the first field that is wrong.
    """
    if not isinstance(entry, Mapping):
        raise InvalidEntryError(f"expected an object, got {type(entry).__name__}")
    prediction = entry.get("error_attribution_result")
    if not isinstance(prediction, Mapping):
        raise InvalidEntryError("error_attribution_result: expected an object")
    if prediction.get("error_type") not in ERROR_TYPES:
        raise InvalidEntryError(f"error_attribution_result.error_type: unknown type {prediction.get('error_type')!r}")
    for name in ("op_id", "reason"):
        if not isinstance(prediction.get(name), str):
            raise InvalidEntryError(f"error_attribution_result.{name}: expected a string")
    seconds = entry.get("time")
    if not _is_number(seconds) or seconds < 0:
        raise InvalidEntryError(f"time: expected a number >= 0, got {seconds!r}")
    usage = entry.get("usage") or {}
    if not isinstance(usage, Mapping) or any(
        not isinstance(usage.get(k, 0), int) or isinstance(usage.get(k, 0), bool) or usage.get(k, 0) < 0
        for k in USAGE_KEYS
    ):
        raise InvalidEntryError("usage: expected non-negative integers input_tokens, output_tokens, num_calls")
    evidence = entry.get("evidence_ids")
    if evidence is not None and (not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence)):
        raise InvalidEntryError("evidence_ids: expected a list of node ids or null")
    source = entry.get("evidence_source")
    if source is not None and source not in EVIDENCE_SOURCES:
        raise InvalidEntryError(f"evidence_source: expected one of {EVIDENCE_SOURCES} or null, got {source!r}")
    details = entry.get("details")
    if details is not None and (not isinstance(details, Mapping) or not all(isinstance(v, Mapping) for v in details.values())):
        raise InvalidEntryError("details: expected an object of objects or null")
    normalised = {
        "error_attribution_result": {k: prediction[k] for k in ("error_type", "op_id", "reason")},
        "time": float(seconds),
        "usage": {k: int(usage.get(k, 0)) for k in USAGE_KEYS},
        "evidence_ids": list(evidence) if evidence is not None else None,
        "evidence_source": source,
    }
    if details:
        normalised["details"] = {str(k): dict(v) for k, v in details.items()}
    return normalised


class CaseCache:
    """A folder of finished-case results keyed by :func:`cache_key`.

    Args:
        folder: Cache folder (created on first write).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path_for(self, key: str) -> Path:
        """File of one entry."""
        return self.folder / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The stored entry as written, or None if absent or unreadable (a corrupt or unreadable
        entry, or an I/O error such as a permission problem, is a miss). The caller validates it
        with :func:`validate_entry`."""
        path = self.path_for(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            return None
        return data if isinstance(data, dict) else None

    def check_writable(self) -> None:
        """Create the folder and write/remove a probe file.

        Raises:
            OSError: If entries cannot be written there (checked before a run starts).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=str(self.folder))
        os.close(fd)
        os.unlink(probe)

    def store(self, key: str, entry: dict[str, Any]) -> None:
        """Write one entry atomically.

        Raises:
            OSError: If the entry cannot be written (the runner warns and goes on).
        """
        atomic_write_json(self.path_for(key), entry)
