"""Shared pieces of the schema records: metadata holder, timestamps, source locations.

Records are plain ``__slots__`` classes rather than pydantic models: the tracer creates one per
variable, edge and op on the host's hot path, so construction must be cheap. Validation happens
once, at the JSON boundary (:mod:`smartcomment.schema._validate`).
"""

from __future__ import annotations

import copy
import gc
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Any

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
_TIMESTAMP_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?")

_last_ms = -1
_last_text = ""


def now_timestamp() -> str:
    """Return the local time as ``YYYY-MM-DD HH:MM:SS.mmm`` (millisecond precision)."""
    global _last_ms, _last_text
    ms = int(time.time() * 1000)
    if ms == _last_ms:
        return _last_text
    lt = time.localtime(ms // 1000)
    text = (
        f"{lt.tm_year:04d}-{lt.tm_mon:02d}-{lt.tm_mday:02d} "
        f"{lt.tm_hour:02d}:{lt.tm_min:02d}:{lt.tm_sec:02d}.{ms % 1000:03d}"
    )
    _last_ms, _last_text = ms, text
    return text


def is_valid_timestamp(value: Any) -> bool:
    """Tell whether ``value`` parses with :data:`TIMESTAMP_FORMAT`."""
    return isinstance(value, str) and _parses(value)


@lru_cache(maxsize=8192)  # records of one graph share few distinct timestamps
def _parses(value: str) -> bool:
    if not _TIMESTAMP_SHAPE.fullmatch(value):
        return False
    try:
        datetime.strptime(value if "." in value else value + ".0", TIMESTAMP_FORMAT)
    except ValueError:
        return False
    return True


def copy_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """Copy a metadata dict; nested containers are copied too, so callers never share them."""
    if any(isinstance(v, (dict, list)) for v in metadata.values()):
        return copy.deepcopy(metadata)
    return dict(metadata)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects (export/import)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class MetadataModel:
    """A record with a private metadata dict, exposed as a copy through :attr:`metadata`."""

    __slots__ = ("_metadata",)

    @property
    def metadata(self) -> dict[str, Any]:
        """A shallow copy of the record's metadata."""
        return dict(self._metadata)

    def update_metadata(self, metadata: dict[str, Any]) -> None:
        """Merge ``metadata`` into the record's metadata (``dict.update`` semantics)."""
        self._metadata.update(metadata)


class TraceableModel(MetadataModel):
    """A record with a creation time and the source location that created it."""

    __slots__ = ("created_at", "filename", "lineno")

    def _init_location(self, created_at: str | None, filename: str, lineno: int) -> None:
        if not isinstance(lineno, int) or isinstance(lineno, bool) or lineno < 0:
            raise ValueError(f"lineno must be an integer >= 0, got {lineno!r}")
        self.created_at = created_at if created_at is not None else now_timestamp()
        self.filename = filename
        self.lineno = lineno

    @property
    def trigger_point(self) -> str:
        """``"{filename}:{lineno}"`` of the code that created the record."""
        return f"{self.filename}:{self.lineno}"

    def model_dump(self) -> dict[str, Any]:  # pragma: no cover - overridden
        """The record as a JSON-ready dict (each record type defines it)."""
        raise NotImplementedError

    def model_copy(self):
        """Return an independent copy of the record."""
        return type(self).model_validate(self.model_dump())

    @classmethod
    def model_validate(cls, data: dict[str, Any]):
        """Build a record from its exported dict (computed keys are ignored)."""
        from smartcomment.schema._validate import validate_record

        return validate_record(cls, data, where=cls.__name__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.model_dump().items())
        return f"{type(self).__name__}({fields})"
