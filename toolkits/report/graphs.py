"""The execution graphs behind the records: a few in memory at a time, missing ones remembered.

A record names its graph by ``graph_path`` (as the attribution run saw it). The path is tried as
written, then relative to the folder of the input file, so an output moved together with its
benchmark still resolves; two spellings of the same file are one graph. A graph that cannot be
loaded makes its cases *unrenderable* (listed in the report, kept out of the model batches); the
rest of the report goes on.

A benchmark report names dozens of graphs, some of them hundreds of megabytes once imported, so
the store keeps only the :attr:`GraphStore.max_loaded` most recently used ones; the passes over
the records (:meth:`GraphStore.by_graph`) visit the records of one graph together, so each file
is read once per pass however the input orders its records.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

from .inputs import ReportRecord

__all__ = ["GraphStore", "OpInfo", "memory_system_of", "dataset_source_of"]

# membase layer names (graph metadata ``layer_type``) -> the split names used everywhere else
_LAYER_TO_SPLIT = {
    "long-context": "long_context",
    "long_context": "long_context",
    "naiverag": "rag",
    "rag": "rag",
    "mem0": "mem0",
    "evermemos": "evermemos",
}


@dataclass(frozen=True, kw_only=True)
class OpInfo:
    """Name and category of an operation, as recorded in the graph."""

    op_name: str
    category: str


class GraphStore:
    """Loads graph files on demand, keeps the most recently used few, and answers the questions
    the report asks of them.

    Args:
        max_loaded: Graphs kept in memory at once (the least recently used is dropped first).
    """

    def __init__(self, max_loaded: int = 2) -> None:
        if max_loaded < 1:
            raise ValueError(f"max_loaded must be >= 1, got {max_loaded}")
        self.max_loaded = max_loaded
        self._graphs: OrderedDict[str, Any] = OrderedDict()
        self._errors: dict[str, str] = {}
        self._keys: dict[tuple[str, str], str] = {}

    def resolve_path(self, record: ReportRecord) -> Path | None:
        """The existing file the record's ``graph_path`` points to, or None."""
        if not record.graph_path:
            return None
        given = Path(record.graph_path)
        candidates = [given]
        if not given.is_absolute():
            candidates.append(Path(record.source_file).parent / given)
        return next((p for p in candidates if p.is_file()), None)

    def by_graph(self, records: Iterable[ReportRecord]) -> list[ReportRecord]:
        """The records reordered so that those of one graph are consecutive (graphs in the order
        they first appear, records of a graph in input order)."""
        groups: dict[str, list[ReportRecord]] = {}
        for record in records:
            groups.setdefault(self._key(record), []).append(record)
        return [record for group in groups.values() for record in group]

    def graph_for(self, record: ReportRecord) -> Any | None:
        """The record's ``ExecNetwork``, or None when it cannot be loaded (see :meth:`error_for`)."""
        key = self._key(record)
        if key in self._graphs:
            self._graphs.move_to_end(key)
            return self._graphs[key]
        if key in self._errors:
            return None
        path = self.resolve_path(record)
        if path is None:
            self._errors[key] = (
                "the record names no graph_path" if not record.graph_path
                else f"graph file {record.graph_path!r} no longer exists"
            )
            return None
        from smartcomment.runtime.network import ExecNetwork

        while len(self._graphs) >= self.max_loaded:  # make room before reading: peak = max_loaded
            self._graphs.popitem(last=False)
        try:
            graph = ExecNetwork.from_file(path)
        except Exception as exc:  # noqa: BLE001 - any broken file makes its cases unrenderable, not the run
            self._errors[key] = f"graph file {str(path)!r} cannot be loaded ({type(exc).__name__}: {_one_line(str(exc))})"
            return None
        self._graphs[key] = graph
        return graph

    def error_for(self, record: ReportRecord) -> str | None:
        """Why the record's graph is unavailable (after :meth:`graph_for` returned None)."""
        return self._errors.get(self._key(record))

    def op_info(self, record: ReportRecord, op_id: str | None) -> OpInfo | None:
        """Name and category of ``op_id`` in the record's graph; None if unknown or unloadable."""
        if not op_id:
            return None
        graph = self.graph_for(record)
        if graph is None:
            return None
        try:
            op = graph.get_operation(op_id)
        except (KeyError, ValueError):
            return None
        return OpInfo(op_name=str(op.op_name or "(unnamed)"), category=str(op.category or "(none)"))

    def _key(self, record: ReportRecord) -> str:
        """The resolved file (one key for every spelling of a path), else the record's own words."""
        named = (record.source_file, record.graph_path or "")
        key = self._keys.get(named)
        if key is None:
            path = self.resolve_path(record)
            key = str(path.resolve()) if path is not None else "\0".join(("missing", *named))
            self._keys[named] = key
        return key


def memory_system_of(record: ReportRecord, graph: Any | None) -> str:
    """The memory system of a record: its split, else the graph's layer, else the graph folder."""
    if record.split:
        return record.split
    if graph is not None:
        layer = str(graph.metadata.get("layer_type") or "").strip().lower()
        if layer in _LAYER_TO_SPLIT:
            return _LAYER_TO_SPLIT[layer]
        if layer:
            return layer
    if record.graph_path:
        folder = Path(record.graph_path).parent.name
        if folder in MEMTRACEBENCH_SPLITS:
            return folder
    return "unknown"


def dataset_source_of(record: ReportRecord, graph: Any | None) -> str:
    """The dataset a record's conversation comes from (LoCoMo, LongMemEval …) or ``unknown``."""
    own = record.raw.get("dataset_source")
    if isinstance(own, str) and own:
        return own
    if graph is not None:
        for key in ("memtracebench_dataset_source", "dataset_source", "dataset_cls"):
            value = graph.metadata.get(key)
            if isinstance(value, str) and value:
                return value
    return "unknown"


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
