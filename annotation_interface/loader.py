"""Read graph files: one-line errors for broken files, one parse per file, one import per graph.

A graph is opened as a :class:`ParsedGraph`: the smartcomment ``ExecNetwork`` (queries, op
subgraphs, XML) plus the viewer's :class:`~annotation_interface.parser.GraphIndex`. The raw
JSON of the file most recently read for the dataset index is kept in a one-slot hand-off, so
opening the graph that was just indexed does not parse its file a second time.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError
from smartcomment.schema.base import gc_paused

from .parser import GraphIndex, NotAGraphError, build_graph_index, is_graph_export

__all__ = ["FileStamp", "GraphFileError", "ParsedGraph", "file_stamp", "load_graph", "read_graph_json"]


class GraphFileError(MemTraceError, ValueError):
    """A graph file that cannot be read, is not JSON, or does not import; the message is one line."""


@dataclass(frozen=True, slots=True)
class FileStamp:
    """Identity of a file's content for caches: absolute path, mtime (ns) and size."""

    path: str
    mtime_ns: int
    size: int


def file_stamp(path: str | os.PathLike[str]) -> FileStamp:
    """The stamp of a file (raises OSError when it cannot be stat'ed)."""
    p = Path(path).resolve()
    st = p.stat()
    return FileStamp(str(p), st.st_mtime_ns, st.st_size)


def read_graph_json(path: str | os.PathLike[str]) -> Any:
    """Parse a JSON file.

    Raises:
        GraphFileError: unreadable, not UTF-8, or invalid JSON (line and column named).
    """
    p = Path(path)
    try:
        blob = p.read_bytes()
    except OSError as exc:
        raise GraphFileError(f"{p.name}: cannot be read ({exc.strerror or exc})") from None
    try:
        with gc_paused():
            return json.loads(blob)
    except UnicodeDecodeError as exc:
        raise GraphFileError(f"{p.name}: not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise GraphFileError(
            f"{p.name}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg}); the file may be truncated"
        ) from None


_handoff_lock = threading.Lock()
_handoff: tuple[FileStamp, Any, GraphIndex | None] | None = None


def remember_raw(stamp: FileStamp, raw: Any, index: GraphIndex | None = None) -> None:
    """Keep the raw JSON (and its index, when built) of one file for the next :func:`load_graph`
    of the same content."""
    global _handoff
    with _handoff_lock:
        _handoff = (stamp, raw, index)


def _take_raw(stamp: FileStamp) -> tuple[Any, GraphIndex | None] | None:
    global _handoff
    with _handoff_lock:
        if _handoff is not None and _handoff[0] == stamp:
            _, raw, index = _handoff
            _handoff = None
            return raw, index
    return None


def forget_raw() -> None:
    """Drop the hand-off slot (frees the memory of the last indexed file)."""
    global _handoff
    with _handoff_lock:
        _handoff = None


@dataclass(kw_only=True)
class ParsedGraph:
    """An opened graph.

    :meth:`memo` keeps derived objects (subgraphs, figures, attribution results) with the graph:
    the graph is shared by every browser session, so is what is computed from it.
    """

    stamp: FileStamp
    network: Any
    """The ``smartcomment.ExecNetwork``."""
    index: GraphIndex
    load_seconds: float
    memo_size: int = 512
    _memo: OrderedDict[Hashable, Any] = field(default_factory=OrderedDict, repr=False)
    _memo_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def path(self) -> Path:
        """Absolute path of the file."""
        return Path(self.stamp.path)

    def memo(self, key: Hashable, build: Callable[[], Any]) -> Any:
        """``build()`` once per key (least recently used entries beyond ``memo_size`` are dropped)."""
        with self._memo_lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        value = build()
        with self._memo_lock:
            self._memo[key] = value
            while len(self._memo) > self.memo_size:
                self._memo.popitem(last=False)
        return value


def load_graph(path: str | os.PathLike[str]) -> ParsedGraph:
    """Parse, index and import one graph file.

    Raises:
        GraphFileError: the file is unreadable, not JSON, not a graph export, or does not
            import (the message names the file and the offending record).
    """
    from smartcomment import ExecNetwork, GraphFormatError

    started = time.perf_counter()
    p = Path(path)
    try:
        stamp = file_stamp(p)
    except OSError as exc:
        raise GraphFileError(f"{p.name}: cannot be read ({exc.strerror or exc})") from None
    handed = _take_raw(stamp)
    raw, index = handed if handed is not None else (read_graph_json(p), None)
    if not is_graph_export(raw):
        raise GraphFileError(f"{p.name}: not a smartcomment graph export (no data.nodes list)")
    try:
        with gc_paused():
            network = ExecNetwork.import_graph(raw)
            if index is None:
                index = build_graph_index(raw)
    except NotAGraphError as exc:
        raise GraphFileError(f"{p.name}: {exc}") from None
    except GraphFormatError as exc:
        raise GraphFileError(f"{p.name}: {' '.join(str(exc).split())}") from None
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise GraphFileError(f"{p.name}: the graph could not be imported ({type(exc).__name__}: {exc})") from None
    return ParsedGraph(stamp=stamp, network=network, index=index, load_seconds=time.perf_counter() - started)
