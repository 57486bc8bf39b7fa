"""The data engine: find the graph files under ``--data`` and keep a cached index of them.

Accepted inputs (spec-tracer §6):

* a single graph file;
* a MemTraceBench folder (``<split>/*.json``) or any folder of graph exports: ``*.json`` at the
  top level, or — when none of those is a graph — every ``*.json`` below it;
* a ``python -m membase`` output folder (``traced_data/<user>/graph_<stage>.json``): where the
  stages sit side by side only the cumulative one is shown (evaluation, else search, else
  construction).

JSON files that are valid but not graph exports (manifests, results, configs) are *skipped* and
listed as such; files that cannot be read or parsed are *errors*, each with a one-line reason,
and the other files still load.

The index (``dataset_index_<first 12 hex of md5(absolute data path)>.json``) records per file
``{graph_name, graph_path, wrong_qas: [{qa_id, query_full_name, question}]}`` plus the file's mtime and
size, question counts and its classification. A file whose mtime or size changed since it was
indexed (a graph file newer than the index) is parsed again; the others are not opened at all.
The spec keeps the index in the app folder; that folder is often read-only (an installed
package) and is part of the source tree, so the index lives in a cache folder instead
(``--index-dir``, default ``$MEMTRACE_CACHE_DIR`` or ``$XDG_CACHE_HOME/memtrace/annotation_interface``
or ``~/.cache/memtrace/annotation_interface``). When no folder is writable the index is kept
in memory and the page says why.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

from .loader import GraphFileError, file_stamp, read_graph_json, remember_raw
from .parser import GraphIndex, build_graph_index, is_graph_export

__all__ = [
    "INDEX_FORMAT",
    "STAGE_FILES",
    "DataPathError",
    "Dataset",
    "FileProblem",
    "GraphEntry",
    "default_index_dir",
    "index_file_name",
    "open_dataset",
]

INDEX_FORMAT = 2
STAGE_FILES = ("graph_evaluation.json", "graph_search.json", "graph_construction.json")
"""``python -m membase`` graph files, most cumulative first."""
_INDEX_PREFIX = "dataset_index_"


class DataPathError(MemTraceError, ValueError):
    """``--data`` names nothing usable (missing path)."""


@dataclass(frozen=True, kw_only=True)
class GraphEntry:
    """One graph file of the dataset."""

    graph_name: str
    """Display name: the path relative to the data folder (the file name for a single file)."""
    file_name: str
    graph_path: str
    """Absolute path."""
    mtime_ns: int
    size: int
    wrong_qas: list[dict[str, str]]
    """``[{qa_id, query_full_name, question}]`` of the wrongly answered questions."""
    counts: dict[str, int]
    """``questions``, ``correct``, ``wrong``, ``unjudged``, ``messages``, ``nodes``, ``annotations``."""
    project_id: str | None = None
    user_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class FileProblem:
    """A JSON file that was not loaded, and why."""

    graph_name: str
    graph_path: str
    message: str


@dataclass(kw_only=True)
class Dataset:
    """The graph files under one ``--data`` path."""

    data_path: Path
    graphs: list[GraphEntry] = field(default_factory=list)
    errors: list[FileProblem] = field(default_factory=list)
    """Files that could not be read (invalid JSON, unreadable, …)."""
    skipped: list[FileProblem] = field(default_factory=list)
    """Valid JSON that is not a graph export, and older stages superseded by a cumulative graph."""
    index_path: Path | None = None
    index_note: str | None = None
    """Why the index could not be saved (None when it was saved or was already up to date)."""
    parsed_files: int = 0
    """Files opened to build this index (0 when the saved index was up to date)."""

    def graph(self, graph_name: str) -> GraphEntry | None:
        """The entry with this display name."""
        return next((g for g in self.graphs if g.graph_name == graph_name), None)

    def wrong_qas(self) -> list[tuple[str, str, str]]:
        """``(graph_name, qa_id, query_full_name)`` of every wrong question, in file order."""
        return [(g.graph_name, q["qa_id"], q["query_full_name"]) for g in self.graphs for q in g.wrong_qas]


def default_index_dir(environ: dict[str, str] | None = None) -> Path:
    """Where index files go unless ``--index-dir`` says otherwise."""
    env = os.environ if environ is None else environ
    if env.get("MEMTRACE_CACHE_DIR"):
        return Path(env["MEMTRACE_CACHE_DIR"]) / "annotation_interface"
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "memtrace" / "annotation_interface"


def index_file_name(data_path: str | os.PathLike[str]) -> str:
    """``dataset_index_<first 12 hex of md5(absolute data path)>.json``."""
    digest = hashlib.md5(str(Path(data_path).resolve()).encode("utf-8"), usedforsecurity=False).hexdigest()
    return f"{_INDEX_PREFIX}{digest[:12]}.json"


def _visible(path: Path, root: Path) -> bool:
    rel = path.relative_to(root).parts
    return not any(part.startswith(".") for part in rel) and not path.name.startswith(_INDEX_PREFIX)


def _json_files(root: Path, recursive: bool) -> list[Path]:
    found = root.rglob("*.json") if recursive else root.glob("*.json")
    return sorted(p for p in found if p.is_file() and _visible(p, root))


def _display_name(path: Path, root: Path) -> str:
    return path.name if root.is_file() else path.relative_to(root).as_posix()


def _entry_from_raw(index: GraphIndex, path: Path, root: Path, stamp: Any) -> dict[str, Any]:
    counts = {"questions": len(index.qas), "messages": len(index.messages), "nodes": index.node_count,
              "annotations": len(index.annotations)}
    for status in ("correct", "wrong", "unjudged"):
        counts[status] = sum(1 for q in index.qas if q.status == status)
    return {
        "kind": "graph",
        "graph_name": _display_name(path, root),
        "file_name": path.name,
        "graph_path": stamp.path,
        "mtime_ns": stamp.mtime_ns,
        "size": stamp.size,
        "wrong_qas": [{"qa_id": q.qa_id, "query_full_name": q.query_full_name, "question": q.question}
                      for q in index.qas if q.status == "wrong"],
        "counts": counts,
        "project_id": index.project_id,
        "user_id": index.user_id,
    }


def _classify(path: Path, root: Path, keep_raw: bool) -> dict[str, Any]:
    """Parse one file into an index record (kind ``graph``, ``not_graph`` or ``error``)."""
    try:
        stamp = file_stamp(path)
    except OSError as exc:
        return {"kind": "error", "graph_path": str(path.resolve()), "graph_name": _display_name(path, root),
                "message": f"cannot be read ({exc.strerror or exc})", "mtime_ns": 0, "size": -1}
    base = {"graph_path": stamp.path, "graph_name": _display_name(path, root), "mtime_ns": stamp.mtime_ns,
            "size": stamp.size}
    try:
        raw = read_graph_json(path)
    except GraphFileError as exc:
        return {**base, "kind": "error", "message": str(exc).removeprefix(f"{path.name}: ")}
    if not is_graph_export(raw):
        return {**base, "kind": "not_graph", "message": "valid JSON but not a graph export (no data.nodes list)"}
    try:
        index = build_graph_index(raw)
        record = _entry_from_raw(index, path, root, stamp)
    except Exception as exc:  # noqa: BLE001 - one broken file must not stop the others
        return {**base, "kind": "error", "message": f"cannot be indexed ({type(exc).__name__}: {exc})"}
    if keep_raw:
        remember_raw(stamp, raw, index)
    return record


def _load_index(path: Path, data_path: Path) -> dict[str, dict[str, Any]]:
    try:
        saved = read_graph_json(path)
    except GraphFileError:
        return {}
    if not isinstance(saved, dict) or saved.get("format") != INDEX_FORMAT or saved.get("data_path") != str(data_path):
        return {}
    files = saved.get("files")
    if not isinstance(files, list):
        return {}
    return {f["graph_path"]: f for f in files if isinstance(f, dict) and isinstance(f.get("graph_path"), str)}


def _fresh(record: dict[str, Any] | None, path: Path) -> bool:
    if record is None:
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    return record.get("mtime_ns") == st.st_mtime_ns and record.get("size") == st.st_size


def _records_for(files: list[Path], root: Path, saved: dict[str, dict[str, Any]],
                 progress: Callable[[int, int, str], None] | None, first_display: Path | None) -> tuple[list[dict], int]:
    records: dict[Path, dict[str, Any]] = {}
    todo = [p for p in files if not _fresh(saved.get(str(p.resolve())), p)]
    # parse the file shown first last, so that its raw JSON is still in the hand-off slot
    todo.sort(key=lambda p: p == first_display)
    for p in files:
        if p not in todo:
            records[p] = saved[str(p.resolve())]
    for i, p in enumerate(todo):
        if progress is not None:
            progress(i, len(todo), p.name)
        records[p] = _classify(p, root, keep_raw=p == first_display)
    return [records[p] for p in files], len(todo)


def _prefer_cumulative(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Drop graph_search/graph_construction files that sit beside a more cumulative stage."""
    best: dict[str, int] = {}
    for r in records:
        p = Path(r["graph_path"])
        if r["kind"] == "graph" and p.name in STAGE_FILES:
            rank = STAGE_FILES.index(p.name)
            best[str(p.parent)] = min(rank, best.get(str(p.parent), rank))
    kept, superseded = [], []
    for r in records:
        p = Path(r["graph_path"])
        if r["kind"] == "graph" and p.name in STAGE_FILES and STAGE_FILES.index(p.name) > best[str(p.parent)]:
            superseded.append({**r, "message": f"superseded by {STAGE_FILES[best[str(p.parent)]]} "
                                                "(the cumulative graph of the same run)"})
        else:
            kept.append(r)
    return kept, superseded


def _save_index(path: Path, data_path: Path, records: list[dict[str, Any]]) -> str | None:
    from membase.utils.io import atomic_write_json

    payload = {"format": INDEX_FORMAT, "data_path": str(data_path),
               "built_at": datetime.now(UTC).isoformat(timespec="seconds"), "files": records}
    try:
        atomic_write_json(path, payload, indent=1)
    except OSError as exc:
        return f"the dataset index could not be saved to {path.parent} ({exc.strerror or exc}); it is kept in memory"
    return None


def open_dataset(
    data_path: str | os.PathLike[str],
    index_dir: str | os.PathLike[str] | None = None,
    *,
    progress: Callable[[int, int, str], None] | None = None,
) -> Dataset:
    """Find and index the graph files under ``data_path``.

    Args:
        data_path: A graph file or a folder.
        index_dir: Folder of the index file (default :func:`default_index_dir`).
        progress: ``fn(done, total, file_name)`` called before each file that must be parsed.

    Raises:
        DataPathError: ``data_path`` does not exist.
    """
    root = Path(data_path).expanduser().resolve()
    if not root.exists():
        raise DataPathError(f"--data {data_path}: no such file or folder")
    folder = Path(index_dir).expanduser() if index_dir is not None else default_index_dir()
    index_path = folder / index_file_name(root)
    saved = _load_index(index_path, root)
    parsed = 0
    if root.is_file():
        records, parsed = _records_for([root], root, saved, progress, root)
    else:
        top = _json_files(root, recursive=False)
        records, parsed = _records_for(top, root, saved, progress, top[0] if top else None)
        if not any(r["kind"] == "graph" for r in records):
            every = _json_files(root, recursive=True)
            known = {r["graph_path"]: r for r in records}
            nested, more = _records_for(every, root, {**saved, **known}, progress, every[0] if every else None)
            records, parsed = nested, parsed + more
    kept, superseded = _prefer_cumulative(records)
    dataset = Dataset(data_path=root, index_path=index_path, parsed_files=parsed)
    for r in kept:
        if r["kind"] == "graph":
            dataset.graphs.append(GraphEntry(**{k: r[k] for k in (
                "graph_name", "file_name", "graph_path", "mtime_ns", "size", "wrong_qas", "counts",
                "project_id", "user_id")}))
        elif r["kind"] == "error":
            dataset.errors.append(FileProblem(graph_name=r["graph_name"], graph_path=r["graph_path"], message=r["message"]))
        else:
            dataset.skipped.append(FileProblem(graph_name=r["graph_name"], graph_path=r["graph_path"], message=r["message"]))
    dataset.skipped.extend(FileProblem(graph_name=r["graph_name"], graph_path=r["graph_path"], message=r["message"])
                           for r in superseded)
    if parsed or set(saved) != {r["graph_path"] for r in records}:
        dataset.index_note = _save_index(index_path, root, records)
    return dataset


def entry_as_dict(entry: GraphEntry) -> dict[str, Any]:
    """A JSON-ready copy of an entry (for tests and debugging)."""
    return asdict(entry)
