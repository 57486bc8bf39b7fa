"""Construction runner: feed every trajectory to a fresh layer, one traced graph per user (§4.5).

Per user: `comment_graph(user_id=<trajectory id>, project_id=<layer type>, strict=True)`; one
`memory_construction` session per conversation session (id = the dataset's session id), then an
auto-id `memory_construction` session around `flush()`; the graph goes to
`<traced_data_dir>/<user_id>/graph_construction.json`. A message that raises is recorded and the
run goes on (unless `fail_fast`). A user whose memory is already saved is skipped (resume) unless
`rerun`.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from membase.exceptions import ModelRequestsBlockedError, ModelUnreachableError
from membase.layers import build_layer
from membase.runners._common import RunReport, bounded_map, graph_file, tracing_switch, write_graph
from membase.types import MemoryDataset, Trajectory
from membase.utils.io import atomic_write_json
from membase.utils.patching import MonkeyPatcher

__all__ = ["ConstructionRunner", "ConstructionRunnerConfig"]

logger = logging.getLogger(__name__)

# Errors that would fail every remaining message the same way: stop instead of recording each.
FATAL_ERRORS = (ModelUnreachableError, ModelRequestsBlockedError)


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


class ConstructionRunner:
    """Builds the memory of each trajectory of a dataset."""

    def __init__(self, config: ConstructionRunnerConfig) -> None:
        self.config = config
        self._progress_lock = threading.Lock()

    def user_save_dir(self, user_id: str) -> str:
        """Memory folder of one user."""
        return str(Path(self.config.save_dir) / user_id)

    def run(self, dataset: MemoryDataset) -> RunReport:
        """Build every trajectory of `dataset`; returns the report (also saved as JSON)."""
        from tqdm.auto import tqdm

        report = RunReport(stage="construction")
        total = sum(len(t.messages) for t in dataset.trajectories)
        with tracing_switch(self.config.tracing), tqdm(
            total=total, desc="construction", unit="msg", disable=not self.config.show_progress
        ) as bar:
            bounded_map(lambda traj: self._run_user(traj, report, bar), dataset.trajectories,
                        self.config.num_workers)
        report.save(Path(self.config.save_dir) / "construction_report.json")
        return report

    def _clear_saved_memory(self, user_id: str) -> None:
        # Only a folder holding a layer save (its config.json) is removed, never an arbitrary one.
        folder = Path(self.user_save_dir(user_id))
        if (folder / "config.json").is_file():
            logger.info("rerun: removing the saved memory of %s in %s", user_id, folder)
            shutil.rmtree(folder)

    def _run_user(self, traj: Trajectory, report: RunReport, bar: Any) -> None:
        cfg = self.config
        if cfg.rerun:
            self._clear_saved_memory(traj.id)
        layer = build_layer(cfg.layer_type, user_id=traj.id, save_dir=self.user_save_dir(traj.id), **cfg.memory_config)
        try:
            if not cfg.rerun and layer.load_memory(traj.id):
                logger.info("memory of %s already built; skipped (use rerun to rebuild)", traj.id)
                report.users_skipped.append(traj.id)
                with self._progress_lock:
                    bar.update(len(traj.messages))
                return
            graph = self._build(layer, traj, report, bar)
            layer.save_memory()
            usage = layer.token_usage()
            if usage:
                atomic_write_json(Path(layer.config.save_dir) / "token_cost.json", usage)
                with report._lock:
                    report.usage[traj.id] = usage
            if graph is not None:
                path = write_graph(graph, graph_file(cfg.traced_data_save_dir, traj.id, "construction"))
                report.outputs.append(str(path))
            report.users_done.append(traj.id)
        except FATAL_ERRORS:
            raise
        except Exception as exc:  # one user must not sink the others
            report.add_failure(traj.id, traj.id, exc)
            report.users_failed[traj.id] = str(exc)
        finally:
            layer.cleanup()

    def _build(self, layer: Any, traj: Trajectory, report: RunReport, bar: Any) -> Any:
        from smartcomment import comment_graph, comment_session

        cfg = self.config
        metadata = {
            "save_dir": layer.config.save_dir,
            "layer_type": cfg.layer_type,
            "traj_metadata": traj.metadata,
            "traced_data_save_dir": cfg.traced_data_save_dir,
            "dataset_cls": "LoCoMo" if traj.id.startswith("locomo-") else "MemoryDataset",
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
                try:
                    layer.flush()
                except FATAL_ERRORS:
                    raise
                except Exception as exc:
                    report.add_failure(traj.id, "flush", exc)
        return graph

    def _add(self, layer: Any, message: Any, user_id: str, report: RunReport) -> None:
        try:
            layer.add_message(message.model_copy(deep=True))
            with report._lock:
                report.items_done += 1
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            if self.config.fail_fast:
                raise
            report.add_failure(user_id, message.id, exc)
        if self.config.message_delay > 0:
            time.sleep(self.config.message_delay)
