"""Online questions: a dataset (RealMem) whose questions are asked during construction.

When the conversation reaches a message marked `is_task`, the memory is searched and the question
answered and judged right there, inside the construction graph: a `memory_search` session (the
query node and the layer's retrieval op, as the search runner traces them) and a
`memory_evaluation` session (the `question-answering` and `llm-judge` ops, as the evaluation runner
traces them). Then the task message is added to the memory like any other turn (what the user says
while asking is part of the conversation, and RealMem's later memory points cite such turns). `graph_construction.json` is then the complete graph; it is also written as
`graph_evaluation.json`, where the attribution tools look for a run's graphs. The search and
evaluation results files and reports have the names and layout of the offline stages.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
from pathlib import Path
from typing import Any

from membase.clients.chat import ChatModel
from membase.runners._common import RunReport, graph_file
from membase.runners.construction import ConstructionRunner, ConstructionRunnerConfig
from membase.runners.evaluation import (
    EvaluationRunner,
    EvaluationRunnerConfig,
    _Item,
    _usage_since,
    summarize_metrics,
)
from membase.runners.search import SearchRunner, SearchRunnerConfig
from membase.types import MemoryDataset, MemoryEntry, Message, QuestionAnswerPair, Trajectory
from membase.utils.io import atomic_write_json

__all__ = ["OnlineConstructionRunner", "OnlineEvaluator", "is_task_message"]

logger = logging.getLogger(__name__)


def is_task_message(message: Message) -> bool:
    """A message that asks a question of the memory instead of adding to it."""
    return message.metadata.get("is_task") is True


class OnlineEvaluator:
    """Searches, answers and judges the online questions of a dataset as construction reaches them."""

    def __init__(self, *, dataset: MemoryDataset, search: SearchRunnerConfig, evaluation: EvaluationRunnerConfig,
                 qa_model: ChatModel, judge_model: ChatModel | None = None) -> None:
        self.questions: dict[str, QuestionAnswerPair] = {qa.id: qa for qas in dataset.qa_pair_lists for qa in qas}
        self.order = [t.id for t in dataset.trajectories]
        self.searcher = SearchRunner(search)
        self.evaluator = EvaluationRunner(evaluation, qa_model=qa_model, judge_model=judge_model)
        self._usage_before = self.evaluator._model_usage()  # the models may have served other runs
        self.search_report = RunReport(stage="search")
        self.evaluation_report = RunReport(stage="evaluation")
        self._searched: dict[str, list[dict[str, Any]]] = {}
        self._evaluated: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()

    @property
    def results_path(self) -> Path:
        """The search results file (`<save_dir>/<top_k>_<start>_<end>.json`)."""
        return self.searcher.results_path

    @property
    def evaluation_path(self) -> Path:
        """The evaluation results file (`<search results stem>_evaluation.json`)."""
        return self.evaluator.output_path

    def ask(self, layer: Any, message: Message, user_id: str) -> None:
        """Search, answer and judge the question of a task message in the current graph."""
        from smartcomment import comment_session

        qa = self.questions.get(message.id)
        if qa is None:
            logger.warning("task message %s of %s has no question; skipped", message.id, user_id)
            return
        if not self.searcher._keep(qa):  # --skip-question-types
            return
        with comment_session(category="memory_search", comment="The memory is searched for a question "
                             "asked during the conversation.",
                             metadata={"top_k": self.searcher.config.top_k, "online": True}):
            record = self.searcher._search_one(layer, qa, user_id, self.search_report)
        memories = [MemoryEntry.model_validate(m) for m in record.get("retrieved_memories", [])]
        item = _Item(record=record, qa=qa, memories=memories, context=self.evaluator.context_builder(memories))
        if record.get("error"):
            item.error = f"search failed: {record['error']}"
        runner = self.evaluator
        with comment_session(category="memory_evaluation", comment="The question asked during the conversation "
                             "is answered from the retrieved memories and judged.",
                             metadata={"qa_model": runner.qa_model.model, "online": True,
                                       "judge_model": runner.judge_model.model if runner.judge_model else None}):
            runner._answer_all([item], user_id, self.evaluation_report)
            if "llm_judge" in runner.config.metrics:
                runner._judge_all([item], user_id, self.evaluation_report)
        runner._count_done([item], self.evaluation_report)
        with self._lock:
            self._searched.setdefault(user_id, []).append(record)
            self._evaluated.setdefault(user_id, []).append(runner._result(item, user_id))

    def start_user(self, user_id: str) -> None:
        """Forget what an earlier attempt of this user recorded (a rebuild asks every question again)."""
        with self._lock:
            self._searched.pop(user_id, None)
            self._evaluated.pop(user_id, None)

    def reuse_user(self, user_id: str) -> None:
        """Keep the results a previous run wrote for a user whose memory is not rebuilt."""
        searched = [r for r in _read_list(self.results_path) if r.get("user_id") == user_id]
        evaluated = [r for r in _read_list(self.evaluation_path) if r.get("user_id") == user_id]
        with self._lock:
            self._searched[user_id], self._evaluated[user_id] = searched, evaluated
        for report in (self.search_report, self.evaluation_report):
            with report._lock:
                report.users_skipped.append(user_id)

    def finish_user(self, user_id: str, *, failed: str | None) -> None:
        """Mark the user done (or failed) in both reports."""
        for report in (self.search_report, self.evaluation_report):
            with report._lock:
                if failed is None:
                    report.users_done.append(user_id)
                else:
                    report.users_failed[user_id] = failed

    def save(self) -> None:
        """Write both results files and both reports (atomically), users in dataset order."""
        with self._lock:
            searched = [r for u in self.order for r in self._searched.get(u, [])]
            evaluated = [r for u in self.order for r in self._evaluated.get(u, [])]
        atomic_write_json(self.results_path, searched)
        atomic_write_json(self.evaluation_path, evaluated)
        self.search_report.outputs[:] = [str(self.results_path)]
        self.evaluation_report.outputs[:] = [str(self.evaluation_path)]
        runner = self.evaluator
        self.evaluation_report.usage = _usage_since(self._usage_before, runner._model_usage())
        self.evaluation_report.metrics = summarize_metrics(evaluated, runner.config.metrics)
        self.search_report.save(Path(self.searcher.config.save_dir) / "search_report.json")
        self.evaluation_report.save(self.evaluation_path.with_name(f"{self.evaluation_path.stem}_report.json"))


def _read_list(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []


class OnlineConstructionRunner(ConstructionRunner):
    """The construction runner that hands task messages to an :class:`OnlineEvaluator`.

    Without an evaluator task messages are only added to the memory (not asked), so the memory
    is the same with and without online evaluation. Users are built one after another in this
    process.
    """

    def __init__(self, config: ConstructionRunnerConfig, online: OnlineEvaluator | None = None) -> None:
        super().__init__(config)
        self.online = online

    def run(self, dataset: MemoryDataset) -> RunReport:
        """Build every trajectory, asking its online questions on the way."""
        try:
            return super().run(dataset)
        finally:
            if self.online is not None:
                self.online.save()

    def _run_user(self, traj: Trajectory, report: RunReport, bar: Any) -> None:
        if self.online is not None:
            self.online.start_user(traj.id)
        super()._run_user(traj, report, bar)
        if self.online is None:
            return
        if traj.id in report.users_skipped:
            self.online.reuse_user(traj.id)
        else:
            self.online.finish_user(traj.id, failed=report.users_failed.get(traj.id))
            self._copy_graph(traj.id)
        self.online.save()

    def _copy_graph(self, user_id: str) -> None:
        built = graph_file(self.config.traced_data_save_dir, user_id, "construction")
        if built.is_file():  # the complete graph, where the attribution tools read a run
            target = graph_file(self.config.traced_data_save_dir, user_id, "evaluation")
            tmp = target.with_name(f".{target.name}.tmp")
            shutil.copyfile(built, tmp)
            tmp.replace(target)

    def _add(self, layer: Any, message: Any, user_id: str, report: RunReport) -> None:
        if is_task_message(message) and self.online is not None:
            self.online.ask(layer, message, user_id)
        # The request then joins the conversation like any turn: later memory points cite it.
        super()._add(layer, message, user_id, report)
