"""Construction runner: feed every trajectory to a fresh layer, one traced graph per user (§4.5).

Per user: `comment_graph(user_id=<trajectory id>, project_id=<layer type>, strict=True)`; one
`memory_construction` session per conversation session (id = the dataset's session id), then an
auto-id `memory_construction` session around `flush()`; the graph goes to
`<traced_data_dir>/<user_id>/graph_construction.json`. A message that raises is recorded and the
run goes on (unless `fail_fast`); failures a layer records in its `failures` list instead of
raising are copied into the report too. A user whose memory is already saved (`config.json`, written
last) is skipped unless `rerun`; any other build starts by wiping the user's folder, since a build
cannot resume. A user that cannot be built (or cleaned up) is a user failure; the others go on.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from membase.exceptions import FATAL_ERRORS
from membase.layers import build_layer
from membase.layers.base import CONFIG_FILENAME
from membase.runners._common import (
    RunReport,
    bounded_map,
    graph_file,
    tracing_switch,
    write_graph,
)
from membase.runners._executors import NO_PROGRESS, FanOut, TaskCrash, crashed_report, fan_out
from membase.types import MemoryDataset, Trajectory
from membase.utils.io import atomic_write_json
from membase.utils.patching import MonkeyPatcher

__all__ = ["ConstructionRunner", "ConstructionRunnerConfig"]

logger = logging.getLogger(__name__)

# Errors that would fail every remaining message the same way: stop instead of recording each.


class ConstructionRunnerConfig(BaseModel):
    """Settings of a construction run."""

    model_config = ConfigDict(extra="forbid")

    layer_type: str
    memory_config: dict[str, Any] = Field(default_factory=dict)
    """Layer config fields except `user_id` and `save_dir` (set per user)."""
    save_dir: str = "memory"
    """Per-user memories go to `<save_dir>/<user_id>`."""
    traced_data_save_dir: str = "traced_data"
    tracing: bool = True
    strict: bool = True
    """Graph strictness: a traced value that changes under the same identity raises."""
    num_workers: int = 1
    """Users built in parallel."""
    rerun: bool = False
    """Rebuild users whose memory is already saved."""
    fail_fast: bool = False
    """Stop a user at its first failing message instead of recording it and going on."""
    message_delay: float = 0.0
    """Seconds to sleep after each message (rate limiting)."""
    show_progress: bool = True
    token_cost_prefix: str | None = None
    """When set, each user's token usage is also written to `<save_dir>/<prefix>_<user_id>.json`."""


class ConstructionRunner:
    """Builds the memory of each trajectory of a dataset."""

    def __init__(self, config: ConstructionRunnerConfig, *, fan_out: FanOut | None = None) -> None:
        self.config = config
        self.fan_out = fan_out or FanOut()  # processes/Ray; `num_workers` threads apply inline only
        self._progress_lock = threading.Lock()

    def user_save_dir(self, user_id: str) -> str:
        """Memory folder of one user."""
        return str(Path(self.config.save_dir) / user_id)

    def run(self, dataset: MemoryDataset) -> RunReport:
        """Build every trajectory of `dataset`; returns the report (also saved as JSON)."""
        from tqdm.auto import tqdm

        report = RunReport(stage="construction")
        total = sum(len(t.messages) for t in dataset.trajectories)
        try:
            with tracing_switch(self.config.tracing), tqdm(
                total=total, desc="construction", unit="msg", disable=not self.config.show_progress
            ) as bar:
                if self.fan_out.inline:
                    bounded_map(lambda traj: self._run_user(traj, report, bar), dataset.trajectories,
                                self.config.num_workers)
                else:
                    self._run_fanned_out(dataset.trajectories, report, bar)
        finally:  # a run stopped by a fatal error still leaves its report
            report.save(Path(self.config.save_dir) / "construction_report.json")
        return report

    def _run_fanned_out(self, trajectories: list[Trajectory], report: RunReport, bar: Any) -> None:
        parts: dict[int, RunReport] = {}
        try:
            tasks = [(self.config, traj) for traj in trajectories]
            for index, part in fan_out(_construct_user, tasks, self.fan_out):
                if isinstance(part, TaskCrash):
                    part = crashed_report("construction", trajectories[index].id, part)
                parts[index] = part
                bar.update(len(trajectories[index].messages))
        finally:  # input order, as the sequential run writes it; what finished is kept on a stop
            for index in sorted(parts):
                report.merge(parts[index])

    def _user_folder(self, user_id: str) -> Path:
        """The memory folder of one user; refuses an id that would point outside `save_dir`."""
        root = Path(self.config.save_dir).resolve()
        folder = Path(self.user_save_dir(user_id)).resolve()
        if folder == root or root not in folder.parents:
            raise ValueError(f"user id {user_id!r} does not name a folder inside {str(root)!r}")
        return folder

    def _saved_owner(self, user_id: str) -> str | None:
        """The user id recorded in the user's saved `config.json`, or None when there is no save."""
        path = self._user_folder(user_id) / CONFIG_FILENAME
        if not path.is_file():
            return None
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None  # unreadable: treated as an unfinished build and rebuilt
        return str(stored.get("user_id")) if isinstance(stored, dict) else None

    def _clear_saved_memory(self, user_id: str) -> None:
        # Construction cannot resume: whatever a previous (crashed or finished) build left in the
        # user's folder is removed before building, so memories are never added twice.
        folder = self._user_folder(user_id)
        if folder.exists():
            logger.info("removing the previous memory of %s in %s before building", user_id, folder)
            shutil.rmtree(folder)

    def _run_user(self, traj: Trajectory, report: RunReport, bar: Any) -> None:
        cfg = self.config
        layer = None
        try:
            if not cfg.rerun:
                owner = self._saved_owner(traj.id)
                if owner is not None:
                    if owner != traj.id:
                        raise ValueError(f"memory in {self.user_save_dir(traj.id)!r} belongs to user {owner!r}")
                    logger.info("memory of %s already built; skipped (use rerun to rebuild)", traj.id)
                    report.users_skipped.append(traj.id)
                    with self._progress_lock:
                        bar.update(len(traj.messages))
                    return
            self._clear_saved_memory(traj.id)
            layer = build_layer(cfg.layer_type, user_id=traj.id, save_dir=self.user_save_dir(traj.id),
                                **cfg.memory_config)
            graph = self._build(layer, traj, report, bar)
            usage = layer.token_usage()
            if usage:
                atomic_write_json(Path(layer.config.save_dir) / "token_cost.json", usage)
                if cfg.token_cost_prefix:
                    atomic_write_json(Path(cfg.save_dir) / f"{cfg.token_cost_prefix}_{traj.id}.json", usage)
                with report._lock:
                    report.usage[traj.id] = usage
            layer.save_memory()  # writes config.json last: the marker of a finished build
            if graph is not None:
                path = write_graph(graph, graph_file(cfg.traced_data_save_dir, traj.id, "construction"))
                report.outputs.append(str(path))
            report.users_done.append(traj.id)
        except FATAL_ERRORS:
            raise
        except Exception as exc:  # one user must not sink the others
            self._fail_user(traj.id, report, exc)
        finally:
            if layer is not None:
                try:
                    layer.cleanup()
                except Exception as exc:
                    self._fail_user(traj.id, report, exc)

    @staticmethod
    def _fail_user(user_id: str, report: RunReport, exc: BaseException) -> None:
        report.add_failure(user_id, user_id, exc)
        with report._lock:
            if user_id in report.users_done:
                report.users_done.remove(user_id)
            report.users_failed.setdefault(user_id, str(exc))

    def _build(self, layer: Any, traj: Trajectory, report: RunReport, bar: Any) -> Any:
        from membase.datasets import dataset_type_of_user
        from smartcomment import comment_graph, comment_session

        cfg = self.config
        metadata = {
            "save_dir": layer.config.save_dir,
            "layer_type": cfg.layer_type,
            "traj_metadata": traj.metadata,
            "traced_data_save_dir": cfg.traced_data_save_dir,
            "dataset_cls": dataset_type_of_user(traj.id) or "MemoryDataset",
        }
        with comment_graph(user_id=traj.id, project_id=cfg.layer_type, strict=cfg.strict, metadata=metadata) as graph:
            with MonkeyPatcher(layer.get_patch_specs()):
                for i, session in enumerate(traj.sessions, start=1):
                    with comment_session(
                        session_id=session.id,
                        comment=f"It is the {i}th conversational session.",
                        category="memory_construction",
                        metadata=session.metadata,
                    ):
                        for message in session.messages:
                            self._add(layer, message, traj.id, report)
                            with self._progress_lock:
                                bar.update(1)
            with comment_session(comment="It is the finalization stage of memory construction.",
                                 category="memory_construction"):
                seen = len(_layer_failures(layer))
                try:
                    layer.flush()
                except FATAL_ERRORS:
                    raise
                except Exception as exc:
                    report.add_failure(traj.id, "flush", exc)
                finally:
                    self._merge_layer_failures(layer, seen, traj.id, report)
        return graph

    def _add(self, layer: Any, message: Any, user_id: str, report: RunReport) -> None:
        seen = len(_layer_failures(layer))
        try:
            layer.add_message(message.model_copy(deep=True))
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            self._merge_layer_failures(layer, seen, user_id, report)
            if self.config.fail_fast:
                raise
            report.add_failure(user_id, message.id, exc)
        else:
            # A layer that records a failure instead of raising (Mem0, EverMemOS) did not ingest it.
            if not self._merge_layer_failures(layer, seen, user_id, report):
                with report._lock:
                    report.items_done += 1
        if self.config.message_delay > 0:
            time.sleep(self.config.message_delay)

    @staticmethod
    def _merge_layer_failures(layer: Any, seen: int, user_id: str, report: RunReport) -> int:
        """Copy the failures the layer recorded after the first `seen` into the report; returns how many."""
        new = _layer_failures(layer)[seen:]
        for entry in new:
            item_id, error = _failure_fields(entry)
            report.add_recorded_failure(user_id, item_id, error)
        return len(new)


def _construct_user(config: ConstructionRunnerConfig, traj: Trajectory) -> RunReport:
    """One user's build in a worker process or Ray task: its own report, nothing else kept."""
    runner = ConstructionRunner(config)
    part = RunReport(stage="construction")
    with tracing_switch(config.tracing):
        runner._run_user(traj, part, NO_PROGRESS)
    return part


def _layer_failures(layer: Any) -> list[Any]:
    failures = getattr(layer, "failures", None)
    return list(failures) if isinstance(failures, list | tuple) else []


def _failure_fields(entry: Any) -> tuple[str, str]:
    """`(item_id, error)` of a layer failure: a dict or an object with `message_id`/`item_id` and `error`."""
    def field(*names: str) -> Any:
        for name in names:
            value = entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)
            if value is not None:
                return value
        return None

    item_id = field("message_id", "item_id", "id")
    error = field("error", "message", "reason")
    return (str(item_id) if item_id is not None else "<unknown>",
            str(error) if error is not None else str(entry))
