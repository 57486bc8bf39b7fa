"""Pieces shared by the three runners: tracing switch, graph files, failure records, bounded pools."""

from __future__ import annotations

import contextvars
import json
import logging
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from membase.utils.io import atomic_write_json

__all__ = [
    "Failure",
    "RunReport",
    "bounded_map",
    "graph_file",
    "read_graph",
    "tracing_switch",
    "write_graph",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

GRAPH_FILES = {
    "construction": "graph_construction.json",
    "search": "graph_search.json",
    "evaluation": "graph_evaluation.json",
}


def graph_file(traced_data_dir: str | Path, user_id: str, stage: str) -> Path:
    """`<traced_data_dir>/<user_id>/graph_<stage>.json`."""
    return Path(traced_data_dir) / user_id / GRAPH_FILES[stage]


def read_graph(path: Path) -> Any | None:
    """Import an exported graph, or None when the file does not exist."""
    if not path.is_file():
        return None
    from smartcomment.runtime.network import ExecNetwork

    return ExecNetwork.import_graph(json.loads(path.read_text(encoding="utf-8")))


def write_graph(graph: Any, path: Path) -> Path:
    """Export `graph` to `path` atomically (indent 4, not ASCII-escaped, like MemBase)."""
    return atomic_write_json(path, graph.export_graph(), indent=4)


@contextmanager
def tracing_switch(on: bool) -> Iterator[None]:
    """Turn smartcomment recording on/off for this run only (the current context and the worker
    threads started from it), restoring the previous state after; other runs are not affected."""
    import smartcomment

    with smartcomment.tracing_enabled(on):
        yield


@dataclass(frozen=True, kw_only=True)
class Failure:
    """One message or question that failed; the run went on."""

    stage: str
    user_id: str
    item_id: str
    error: str
    """`ErrorType: message` (one line)."""

    def as_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"stage": self.stage, "user_id": self.user_id, "item_id": self.item_id, "error": self.error}


def describe(exc: BaseException) -> str:
    """One-line `ErrorType: message`."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class RunReport:
    """What a runner did: users done/skipped, failures, output files, token usage."""

    stage: str
    users_done: list[str] = field(default_factory=list)
    users_skipped: list[str] = field(default_factory=list)
    users_failed: dict[str, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Evaluation only, per question type and `"all"`: `n`, `failed`, each metric's mean with failed
    questions counted as 0, and `mean_over_scored` (means over the scored questions only)."""
    items_done: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_failure(self, user_id: str, item_id: str, exc: BaseException) -> None:
        """Record one failed item (and log it with the traceback at debug level)."""
        failure = Failure(stage=self.stage, user_id=user_id, item_id=item_id, error=describe(exc))
        logger.warning("%s failed for %s / %s: %s", self.stage, user_id, item_id, failure.error)
        logger.debug("".join(traceback.format_exception(exc)))
        with self._lock:
            self.failures.append(failure)

    def add_recorded_failure(self, user_id: str, item_id: str, error: str) -> None:
        """Record one failed item that a layer reported (kept in its `failures`) instead of raising."""
        text = error.strip().splitlines()[0] if error.strip() else "error"
        failure = Failure(stage=self.stage, user_id=user_id, item_id=item_id, error=text)
        logger.warning("%s failed for %s / %s: %s", self.stage, user_id, item_id, failure.error)
        with self._lock:
            self.failures.append(failure)

    def __getstate__(self) -> dict[str, Any]:
        # a report travels back from a worker process or a Ray task; its lock does not
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def merge(self, part: RunReport) -> None:
        """Add the report of one trajectory's task (run elsewhere) to this run's report."""
        with self._lock:
            self.users_done.extend(part.users_done)
            self.users_skipped.extend(part.users_skipped)
            self.users_failed.update(part.users_failed)
            self.failures.extend(part.failures)
            self.outputs.extend(part.outputs)
            self.usage.update(part.usage)
            self.items_done += part.items_done

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "stage": self.stage,
            "users_done": self.users_done,
            "users_skipped": self.users_skipped,
            "users_failed": self.users_failed,
            "items_done": self.items_done,
            "failures": [f.as_dict() for f in self.failures],
            "outputs": self.outputs,
            "usage": self.usage,
            "metrics": self.metrics,
        }

    def save(self, path: str | Path) -> Path:
        """Write the report atomically."""
        return atomic_write_json(path, self.as_dict())


def bounded_map(fn: Callable[[T], R], items: Iterable[T], max_workers: int) -> list[R]:
    """`[fn(x) for x in items]` on at most `max_workers` threads, results in input order.

    Each call runs in a copy of the caller's context, so ContextVars (tracing) carry over. The
    first exception raised by `fn` cancels the calls not yet started and propagates.
    """
    items = list(items)
    if max_workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, x) for x in items]
        try:
            return [f.result() for f in futures]
        except BaseException:
            # An error that escapes `fn` stops the batch: calls not yet started are dropped.
            for future in futures:
                future.cancel()
            raise
