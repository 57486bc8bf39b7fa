"""Run one configuration bundle over a dataset with the membase runners, and read what came out.

:func:`run_pipeline` is construction → search → evaluation (``membase.runners``) for every
trajectory of a dataset, into one folder: memories under ``<folder>/<user_id>/``, graphs under
``<folder>/traced_data/<user_id>/graph_{construction,search,evaluation}.json``, the search
results ``<folder>/<top_k>_<start>_<end>.json`` and their ``…_evaluation.json``, the runners'
reports, and the token-cost files ``memory_construction_token_cost_<user_id>.json``. A bundle's
``answer_context_budget`` cuts every answering context to that many tokens (traced as
``parameter:answer_context_budget``, an input of the cut).

With ``PipelineSettings.workers`` > 1 the conversations are built, searched and answered in that
many worker processes (membase's fan-out, :mod:`membase.runners._executors`); the files are the
same as a one-process run writes. The QA and judge models travel as recipes
(:func:`membase.runners._portable_models.model_recipe`); one that cannot is refused before
anything is built.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError
from toolkits.optimization.bundle import MemoryConfigBundle

__all__ = [
    "TOKEN_COST_PREFIX",
    "PipelineError",
    "PipelineResult",
    "PipelineSettings",
    "chat_model_from_spec",
    "run_pipeline",
    "trim_dataset",
]

TOKEN_COST_PREFIX = "memory_construction_token_cost"
_STORAGE_KEYS = {"Mem0": ("qdrant_path", "history_db_path")}
"""Layer fields that point outside the run folder; cleared so every run stores its own memory."""


class PipelineError(MemTraceError, RuntimeError):
    """A run produced nothing usable (e.g. every user failed to build); one-line message."""


@dataclass(frozen=True, kw_only=True)
class PipelineSettings:
    """How a bundle is run and scored (identical settings make two runs comparable)."""

    top_k: int
    qa_model: Any
    judge_model: Any | None
    metrics: tuple[str, ...] = ("f1", "bleu", "llm_judge")
    qa_batch_size: int = 4
    judge_batch_size: int = 4
    tracing: bool = True
    show_progress: bool = True
    context_builder: Any = None
    """``fn(memories) -> context`` of the answering step (None: membase's default)."""
    qa_max_tokens: int | None = 256
    """Output-token cap of an answer."""
    judge_max_tokens: int | None = 64
    """Output-token cap of a verdict."""
    workers: int = 1
    """Conversations built, searched and answered at the same time in worker processes (1: in this
    process, one after the other). Outputs are the same for any count, so it is not part of
    :meth:`describe` and a run may resume with another count."""

    def describe(self) -> dict[str, Any]:
        """The settings as JSON (model names, not objects)."""
        return {
            "top_k": self.top_k,
            "qa_model": getattr(self.qa_model, "model", str(self.qa_model)),
            "judge_model": getattr(self.judge_model, "model", None) if self.judge_model is not None else None,
            "metrics": list(self.metrics),
            "qa_batch_size": self.qa_batch_size,
            "judge_batch_size": self.judge_batch_size,
            "qa_max_tokens": self.qa_max_tokens,
            "judge_max_tokens": self.judge_max_tokens,
            **({"context_builder": repr(self.context_builder)} if self.context_builder is not None else {}),
        }


@dataclass(kw_only=True)
class PipelineResult:
    """What a run left behind."""

    folder: Path
    user_ids: list[str]
    summary: dict[str, dict[str, Any]]
    """``summarize_metrics`` of the run: per question type and ``all``."""
    outputs: list[dict[str, Any]]
    """One evaluation record per question (``qa_pair``, ``prediction``, ``metrics``, ``error``)."""
    search_results_path: Path
    evaluation_path: Path
    graph_paths: dict[str, Path] = field(default_factory=dict)
    """User id → ``graph_evaluation.json`` (tracing runs only)."""
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, Any]:
        """Means over all questions (failed ones count 0) plus ``n`` and ``failed``."""
        return dict(self.summary.get("all", {"n": 0, "failed": 0}))


def chat_model_from_spec(
    spec: str,
    *,
    api_config_path: str | None = None,
    timeout: float = 120.0,
    max_retries: int = 3,
    cache_dir: str | None = None,
) -> Any:
    """A membase chat model: ``fake:<reply>`` gives a fixed-reply fake and ``py:<module>:<factory>``
    the model ``factory()`` returns (as ``python -m membase`` accepts; both can be rebuilt in a
    worker process), anything else an OpenAI-compatible client on the credential pool (the api
    config file, else ``OPENAI_BASE_URL``/``OPENAI_API_KEY``).

    Raises:
        membase.exceptions.ConfigError: No credentials for a real model, or a ``py:`` spec that does
            not import.
    """
    if spec.startswith(("fake:", "py:")):
        from membase.clients.specs import resolve_chat_model

        return resolve_chat_model(spec)
    from membase.clients import ChatClient, CredentialPool

    pool = CredentialPool.resolve(api_config_path=api_config_path)
    return ChatClient(spec, credentials=pool, timeout=timeout, max_retries=max_retries, cache_dir=cache_dir)


def trim_dataset(dataset: Any, *, max_sessions: int | None = None, max_questions: int | None = None) -> Any:
    """Cut every trajectory to its first ``max_sessions`` sessions, keeping only the questions whose
    evidence lies there (and that have evidence), then at most ``max_questions`` per trajectory."""
    from membase.types import MemoryDataset

    if max_sessions is None and max_questions is None:
        return dataset
    trajectories, qa_lists = [], []
    for traj, qas in dataset:
        if max_sessions is not None:
            traj = traj.model_copy(update={"sessions": list(traj.sessions)[:max_sessions]})
            ids = {m.id for m in traj.messages}
            qas = [q for q in qas if q.metadata.get("evidence") and set(q.metadata["evidence"]) <= ids]
        if max_questions is not None:
            qas = list(qas)[:max_questions]
        trajectories.append(traj)
        qa_lists.append(list(qas))
    return MemoryDataset(name=dataset.name, trajectories=trajectories, qa_pair_lists=qa_lists, issues=list(dataset.issues))


def _layer_fields(bundle: MemoryConfigBundle) -> dict[str, Any]:
    fields = bundle.layer_fields()
    for key in _STORAGE_KEYS.get(bundle.backend, ()):
        if fields.get(key) not in (None, ":memory:"):
            fields[key] = None
    return fields


def run_pipeline(
    bundle: MemoryConfigBundle,
    dataset: Any,
    folder: str | Path,
    settings: PipelineSettings,
    *,
    start_idx: int | None = None,
    end_idx: int | None = None,
) -> PipelineResult:
    """Build, search and evaluate ``dataset`` with ``bundle`` into ``folder``.

    Args:
        bundle: The configuration (layer config, QA template, top-k).
        dataset: A ``MemoryDataset`` (already sliced).
        folder: Output folder (memories, graphs, results).
        settings: Models, metrics, batch sizes, tracing.
        start_idx: Recorded in the results file name (``<top_k>_<start>_<end>.json``).
        end_idx: Idem.

    Returns:
        The per-question outputs, their summary and the graph paths.

    Raises:
        PipelineError: No user could be built or evaluated.
        membase.exceptions.FATAL_ERRORS: An unreachable endpoint or a bad configuration.
    """
    from membase.runners._executors import FanOut, shared_workers

    plan = FanOut(workers=max(1, min(settings.workers, len(dataset.trajectories))))  # one conversation: inline
    if not plan.inline:
        _check_portable(settings)
    with shared_workers(plan):  # the three stages start their worker processes once
        return _run_stages(bundle, dataset, Path(folder), settings, plan, start_idx=start_idx, end_idx=end_idx)


def _check_portable(settings: PipelineSettings) -> None:
    """Refuse models and a context builder that worker processes cannot rebuild (before any work)."""
    import pickle

    from membase.exceptions import ConfigError
    from membase.runners._portable_models import model_recipe

    try:
        model_recipe(settings.qa_model, role="qa model", needs_pickle=True)
        if settings.judge_model is not None:
            model_recipe(settings.judge_model, role="judge model", needs_pickle=True)
        if settings.context_builder is not None:
            pickle.dumps(settings.context_builder)
    except ConfigError as exc:
        raise PipelineError(f"--workers {settings.workers}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - pickle raises several types
        raise PipelineError(f"--workers {settings.workers}: the context builder cannot be sent to worker processes "
                            f"({exc}); use a module-level one, or run with one worker") from None


def _run_stages(bundle: MemoryConfigBundle, dataset: Any, folder: Path, settings: PipelineSettings, plan: Any, *,
                start_idx: int | None, end_idx: int | None) -> PipelineResult:
    from membase.evaluation.prompts import QA_TEMPLATE
    from membase.runners import (
        ConstructionRunner,
        ConstructionRunnerConfig,
        EvaluationRunner,
        EvaluationRunnerConfig,
        SearchRunner,
        SearchRunnerConfig,
    )
    from membase.runners._common import graph_file

    traced = folder / "traced_data"
    fields = _layer_fields(bundle)
    top_k = bundle.top_k or settings.top_k
    common = {
        "layer_type": bundle.backend, "memory_config": fields, "save_dir": str(folder),
        "traced_data_save_dir": str(traced), "tracing": settings.tracing, "strict": True,
        "show_progress": settings.show_progress,
    }
    construction = ConstructionRunner(ConstructionRunnerConfig(
        **common, rerun=True, num_workers=1, token_cost_prefix=TOKEN_COST_PREFIX,
    ), fan_out=plan).run(dataset)
    users = [t.id for t in dataset.trajectories]
    if users and len(construction.users_failed) == len(users):
        first = next(iter(construction.users_failed.values()))
        raise PipelineError(f"no memory could be built ({first}); see {folder / 'construction_report.json'}")
    search_runner = SearchRunner(SearchRunnerConfig(**common, top_k=top_k, start_idx=start_idx, end_idx=end_idx),
                                 fan_out=plan)
    search = search_runner.run(dataset)
    evaluation_runner = EvaluationRunner(
        EvaluationRunnerConfig(
            search_results_path=str(search_runner.results_path), dataset_type="LoCoMo",
            traced_data_save_dir=str(traced), tracing=settings.tracing, strict=True,
            qa_batch_size=settings.qa_batch_size, judge_batch_size=settings.judge_batch_size,
            qa_max_tokens=settings.qa_max_tokens, judge_max_tokens=settings.judge_max_tokens,
            prompt_template=bundle.question_answering_prompt or QA_TEMPLATE,
            metrics=list(settings.metrics), show_progress=settings.show_progress,
            context_budget=bundle.answer_context_budget, layer_type=bundle.backend,
        ),
        qa_model=settings.qa_model,
        judge_model=settings.judge_model if "llm_judge" in settings.metrics else None, fan_out=plan,
        **({"context_builder": settings.context_builder} if settings.context_builder is not None else {}),
    )
    evaluation = evaluation_runner.run()
    outputs = json.loads(evaluation_runner.output_path.read_text(encoding="utf-8"))
    graphs = {}
    if settings.tracing:
        for user in users:
            path = graph_file(traced, user, "evaluation")
            if path.is_file():
                graphs[user] = path
    return PipelineResult(
        folder=folder, user_ids=users, summary=evaluation.metrics, outputs=outputs,
        search_results_path=search_runner.results_path, evaluation_path=evaluation_runner.output_path,
        graph_paths=graphs,
        reports={"construction": construction.as_dict(), "search": search.as_dict(), "evaluation": evaluation.as_dict()},
    )


def per_question(outputs: Sequence[dict[str, Any]], metrics: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Question id → ``{question, golden_answers, question_type, user_id, prediction, error, <metric>: value}``;
    a metric without a value (failed question) reads 0.0, as in the run's means."""
    out: dict[str, dict[str, Any]] = {}
    for record in outputs:
        qa = record.get("qa_pair", {})
        entry: dict[str, Any] = {
            "question": qa.get("question"),
            "golden_answers": qa.get("golden_answers"),
            "question_type": (qa.get("metadata") or {}).get("question_type", "unknown"),
            "user_id": record.get("user_id"),
            "prediction": record.get("prediction"),
            "error": record.get("error"),
        }
        for name in metrics:
            value = (record.get("metrics") or {}).get(name, {}).get("value")
            entry[name] = float(value) if value is not None else 0.0
        out[str(qa.get("id"))] = entry
    return out
