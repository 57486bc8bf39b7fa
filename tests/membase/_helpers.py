"""Shared helpers of the membase tests: a two-session conv-26 slice and a scripted pipeline run."""

from __future__ import annotations

import re
from pathlib import Path

from membase.clients import FunctionChatModel
from membase.datasets import load_locomo
from membase.runners import (
    ConstructionRunner,
    ConstructionRunnerConfig,
    EvaluationRunner,
    EvaluationRunnerConfig,
    SearchRunner,
    SearchRunnerConfig,
)
from membase.types import MemoryDataset

FIXED_ANSWER = "7 May 2023"


def conv26_two_sessions(locomo_path: Path, max_questions: int = 8) -> MemoryDataset:
    """conv-26 (`locomo-1`) cut to its first two sessions, with questions whose evidence lies there."""
    dataset = load_locomo(locomo_path)
    traj, qas = dataset[0]
    traj = traj.model_copy(update={"sessions": traj.sessions[:2]})
    ids = {m.id for m in traj.messages}
    kept = [q for q in qas if q.metadata["evidence"] and set(q.metadata["evidence"]) <= ids][:max_questions]
    return MemoryDataset(name="LoCoMo", trajectories=[traj], qa_pair_lists=[kept])


def judge_by_reference(messages, **_kw) -> str:
    """Fake judge: CORRECT iff the graded answer equals the reference answer."""
    prompt = messages[-1]["content"]
    reference = re.search(r"Reference answer: (.*)", prompt).group(1).strip()
    answer = re.search(r"Answer to grade: (.*)", prompt).group(1).strip()
    return '{"label": "CORRECT"}' if reference == answer else '{"label": "WRONG"}'


def run_pipeline(layer_type: str, memory_config: dict, dataset: MemoryDataset, out: Path, *, top_k: int = 3,
                 qa_model=None, judge_model=None):
    """Run the three stages; returns `(reports, search_runner, evaluation_runner)`."""
    common = {"layer_type": layer_type, "memory_config": memory_config, "save_dir": str(out / "memory"),
              "traced_data_save_dir": str(out / "traced"), "show_progress": False}
    construction = ConstructionRunner(ConstructionRunnerConfig(**common)).run(dataset)
    search_runner = SearchRunner(SearchRunnerConfig(**common, top_k=top_k))
    search = search_runner.run(dataset)
    evaluation_runner = EvaluationRunner(
        EvaluationRunnerConfig(search_results_path=str(search_runner.results_path),
                               traced_data_save_dir=str(out / "traced"), show_progress=False),
        qa_model=qa_model or FunctionChatModel(lambda _m, **_k: FIXED_ANSWER, model="fake-qa"),
        judge_model=judge_model or FunctionChatModel(judge_by_reference, model="fake-judge"),
    )
    evaluation = evaluation_runner.run()
    return (construction, search, evaluation), search_runner, evaluation_runner
