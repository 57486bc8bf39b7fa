"""Search runner: each question retrieves from its user's memory, traced into the same graph (§4.5).

Per user: reload the memory, import `graph_construction.json` (a missing file starts a new graph
with a warning), open a `memory_search` session, register each question as the context variable
`query` (class `query`, category `message & query`, metadata = QA metadata), call
`layer.retrieve`, and remove the variable. Writes `graph_search.json` per user and the results
file `<save_dir>/<top_k>_<start>_<end>.json` after every user (a crash keeps finished users).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from membase.exceptions import FATAL_ERRORS, MemoryNotFoundError
from membase.layers import build_layer
from membase.runners._common import RunReport, graph_file, read_graph, tracing_switch, write_graph
from membase.runners._executors import NO_PROGRESS, FanOut, TaskCrash, crashed_report, fan_out
from membase.types import MemoryDataset, QuestionAnswerPair, Trajectory
from membase.utils.io import atomic_write_json

__all__ = ["NO_MEMORY_TRACE_ID", "SearchRunner", "SearchRunnerConfig"]

logger = logging.getLogger(__name__)

NO_MEMORY_TRACE_ID = "[NO RETRIEVED MEMORIES]"
QUERY_COMMENT = "A question the memory layer must retrieve memories for."


class SearchRunnerConfig(BaseModel):
    """Settings of a search run."""

    model_config = ConfigDict(extra="forbid")

    layer_type: str
    memory_config: dict[str, Any] = Field(default_factory=dict)
    save_dir: str = "memory"
    traced_data_save_dir: str = "traced_data"
    top_k: int = 10
    tracing: bool = True
    strict: bool = True
    skip_question_types: list[str] = Field(default_factory=list)
    """Question types (QA metadata `question_type`) not searched, e.g. `["adversarial"]`."""
    start_idx: int | None = None
    """Recorded in the results file name (the slice of the dataset given to `run`)."""
    end_idx: int | None = None
    show_progress: bool = True


class SearchRunner:
    """Retrieves memories for every question of a dataset."""

    def __init__(self, config: SearchRunnerConfig,
                 question_filter: Callable[[QuestionAnswerPair], bool] | None = None,
                 *, fan_out: FanOut | None = None) -> None:
        self.config = config
        self.question_filter = question_filter
        self.fan_out = fan_out or FanOut()

    @property
    def results_path(self) -> Path:
        """`<save_dir>/<top_k>_<start>_<end>.json`."""
        cfg = self.config
        return Path(cfg.save_dir) / f"{cfg.top_k}_{cfg.start_idx}_{cfg.end_idx}.json"

    def _keep(self, qa: QuestionAnswerPair) -> bool:
        if qa.metadata.get("question_type") in self.config.skip_question_types:
            return False
        return self.question_filter(qa) if self.question_filter is not None else True

    def run(self, dataset: MemoryDataset) -> RunReport:
        """Search every question; returns the report (results and graphs written as it goes)."""
        from tqdm.auto import tqdm

        report = RunReport(stage="search")
        results: list[dict[str, Any]] = []
        work = [(t, [q for q in qas if self._keep(q)]) for t, qas in dataset]
        try:
            # Written once up front, so a slice with no users still leaves a (empty) results file.
            atomic_write_json(self.results_path, results)
            report.outputs.append(str(self.results_path))
            with tracing_switch(self.config.tracing), tqdm(
                total=sum(len(q) for _, q in work), desc="search", unit="q", disable=not self.config.show_progress
            ) as bar:
                if not self.fan_out.inline:
                    self._run_fanned_out(work, report, results, bar)
                    return report
                for traj, qas in work:
                    try:
                        results.extend(self._run_user(traj, qas, report, bar))
                        report.users_done.append(traj.id)
                    except FATAL_ERRORS:
                        raise
                    except Exception as exc:
                        report.add_failure(traj.id, traj.id, exc)
                        report.users_failed[traj.id] = str(exc)
                    finally:
                        atomic_write_json(self.results_path, results)
        finally:
            report.save(Path(self.config.save_dir) / "search_report.json")
        return report

    def _run_fanned_out(self, work: list[tuple[Trajectory, list[QuestionAnswerPair]]], report: RunReport,
                        results: list[dict[str, Any]], bar: Any) -> None:
        """Each user in a worker; the results file holds the finished users in input order."""
        parts: dict[int, tuple[RunReport, list[dict[str, Any]]]] = {}
        try:
            tasks = [(self.config, traj, qas) for traj, qas in work]
            for index, part in fan_out(_search_user, tasks, self.fan_out):
                if isinstance(part, TaskCrash):
                    part = (crashed_report("search", work[index][0].id, part), [])
                parts[index] = part
                results[:] = [record for i in sorted(parts) for record in parts[i][1]]
                atomic_write_json(self.results_path, results)
                bar.update(len(work[index][1]))
        finally:
            for index in sorted(parts):
                report.merge(parts[index][0])

    def _open_layer(self, traj: Trajectory) -> Any:
        cfg = self.config
        save_dir = str(Path(cfg.save_dir) / traj.id)
        layer = build_layer(cfg.layer_type, user_id=traj.id, save_dir=save_dir, **cfg.memory_config)
        if not layer.load_memory(traj.id):
            layer.cleanup()
            raise MemoryNotFoundError(f"no saved memory for user {traj.id!r} in {save_dir!r}; run construction first")
        return layer

    def _run_user(self, traj: Trajectory, qas: list[QuestionAnswerPair], report: RunReport, bar: Any) -> list[dict]:
        from smartcomment import comment_graph, comment_session

        cfg = self.config
        layer = self._open_layer(traj)
        out: list[dict[str, Any]] = []
        try:
            layer.prefetch_queries([qa.question for qa in qas])
            graph = read_graph(graph_file(cfg.traced_data_save_dir, traj.id, "construction"))
            if graph is None and cfg.tracing:
                logger.warning("no graph_construction.json for %s; its search graph starts empty", traj.id)
            if graph is not None:
                graph.strict = cfg.strict
            graph_kwargs = {"graph": graph} if graph is not None else {
                "user_id": traj.id, "project_id": cfg.layer_type, "strict": cfg.strict}
            with comment_graph(**graph_kwargs) as g, comment_session(
                category="memory_search",
                comment="The memory is searched for each question.",
                metadata={"top_k": cfg.top_k, "strict": cfg.strict},
            ):
                for qa in qas:
                    out.append(self._search_one(layer, qa, traj.id, report))
                    bar.update(1)
            if g is not None:
                report.outputs.append(str(write_graph(g, graph_file(cfg.traced_data_save_dir, traj.id, "search"))))
        finally:
            layer.cleanup()
        return out

    def _search_one(self, layer: Any, qa: QuestionAnswerPair, user_id: str, report: RunReport) -> dict[str, Any]:
        from smartcomment import comment_variable, current_context

        record: dict[str, Any] = {"qa_pair": qa.model_dump(mode="json"), "user_id": user_id}
        qa_id = qa.id
        ctx = current_context()
        registered = False
        try:
            if ctx is not None:
                comment_variable(
                    qa.question, variable_name="query", id_strategy=lambda _q: qa_id, category="message & query",
                    class_name="query", metadata=qa.metadata, comment=QUERY_COMMENT,
                )
                registered = True
            memories = layer.retrieve(qa.question, k=self.config.top_k)
            record["retrieved_memories"] = [m.model_dump(mode="json") for m in memories]
            with report._lock:
                report.items_done += 1
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            report.add_failure(user_id, qa.id, exc)
            record["retrieved_memories"] = []
            record["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            if registered:
                ctx.remove_variable("query")
        return record



def _search_user(config: SearchRunnerConfig, traj: Trajectory, qas: list[QuestionAnswerPair]
                 ) -> tuple[RunReport, list[dict[str, Any]]]:
    """One user's search in a worker process or Ray task: its report and its result records."""
    part = RunReport(stage="search")
    records: list[dict[str, Any]] = []
    with tracing_switch(config.tracing):
        try:
            records = SearchRunner(config)._run_user(traj, qas, part, NO_PROGRESS)
            part.users_done.append(traj.id)
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            part.add_failure(traj.id, traj.id, exc)
            part.users_failed[traj.id] = str(exc)
    return part, records

