"""Evaluation runner: answer each question from its retrieved memories, then score it (§4.5, §4.9).

Per user: import `graph_search.json`, open a `memory_evaluation` session, call the QA model for
every question (at most `qa_batch_size` at once), trace each answer as a `question-answering` op,
compute TokenF1/BLEU, call the judge (at most `judge_batch_size` at once) and trace each verdict
as an `llm-judge` op. Model calls run concurrently; tracing runs afterwards in question order,
so graphs are deterministic. A failing question is recorded (`"error"`) and the run goes on.
Writes `graph_evaluation.json` per user and `<results stem>_evaluation.json` after every user.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from membase.clients.chat import ChatModel
from membase.evaluation.judge import (
    fill_judge_prompt,
    get_judge_template,
    judge_template_name,
    parse_judge_response,
)
from membase.evaluation.metrics import bleu_score, token_f1
from membase.evaluation.prompts import QA_SYSTEM_PROMPT, QA_TEMPLATE
from membase.exceptions import FATAL_ERRORS, DatasetError
from membase.runners._common import (
    RunReport,
    bounded_map,
    describe,
    graph_file,
    read_graph,
    tracing_switch,
    write_graph,
)
from membase.runners._executors import FanOut, TaskCrash, crashed_report, fan_out
from membase.runners._portable_models import add_usage, model_recipe
from membase.types import MemoryEntry, QuestionAnswerPair
from membase.utils.io import atomic_write_json
from membase.utils.tokens import count_tokens, truncate_to_tokens

__all__ = ["EvaluationRunner", "EvaluationRunnerConfig", "default_context_builder", "summarize_metrics"]

logger = logging.getLogger(__name__)

METRICS = ("f1", "bleu", "llm_judge")


def _usage_since(before: dict[str, dict[str, int] | None],
                 after: dict[str, dict[str, int] | None]) -> dict[str, dict[str, int] | None]:
    """Each model's counters ``after`` less those ``before``: the calls and tokens in between."""
    out: dict[str, dict[str, int] | None] = {}
    for role, now in after.items():
        then = before.get(role) or {}
        out[role] = None if now is None else {key: value - then.get(key, 0) for key, value in now.items()}
    return out


def default_context_builder(memories: list[MemoryEntry]) -> str:
    """Number the memories as `### Memory i:` blocks (formatted content when the layer gives one)."""
    return "\n\n".join(
        f"### Memory {i}:\n{m.formatted_content or m.content}" for i, m in enumerate(memories, start=1)
    )


class EvaluationRunnerConfig(BaseModel):
    """Settings of an evaluation run."""

    model_config = ConfigDict(extra="forbid")

    search_results_path: str
    dataset_type: str = "LoCoMo"
    traced_data_save_dir: str = "traced_data"
    tracing: bool = True
    strict: bool = True
    qa_batch_size: int = 4
    judge_batch_size: int = 4
    qa_max_tokens: int | None = 256
    judge_max_tokens: int | None = 64
    judge_json_mode: bool = False
    """Ask the judge for `response_format={"type": "json_object"}`."""
    prompt_template: str = QA_TEMPLATE
    add_question_timestamp: bool = False
    metrics: list[str] = Field(default_factory=lambda: list(METRICS))
    show_progress: bool = True
    context_budget: int | None = Field(default=None, ge=1)
    """Token budget of the answering context: the built context is cut after it (None: no cut).
    When set it is traced as ``parameter:answer_context_budget``, an input of the cut."""
    layer_type: str | None = None
    """The memory layer whose memories are answered from (recorded in the budget's node metadata)."""


@dataclass
class _Item:
    record: dict[str, Any]
    qa: QuestionAnswerPair
    memories: list[MemoryEntry]
    context: str = ""
    uncut_context: str | None = None
    """The built context before the budget cut (None: no budget)."""
    prediction: str | None = None
    judge_response: str | None = None
    error: str | None = None


class EvaluationRunner:
    """Answers and scores every searched question."""

    def __init__(
        self,
        config: EvaluationRunnerConfig,
        *,
        qa_model: ChatModel,
        judge_model: ChatModel | None = None,
        context_builder: Callable[[list[MemoryEntry]], str] = default_context_builder,
        fan_out: FanOut | None = None,
    ) -> None:
        unknown = set(config.metrics) - set(METRICS)
        if unknown:
            from membase.exceptions import ConfigError

            raise ConfigError(f"unknown metrics {sorted(unknown)}; choose from {list(METRICS)}")
        if "llm_judge" in config.metrics and judge_model is None:
            from membase.exceptions import ConfigError

            raise ConfigError("metric llm_judge needs a judge model (or drop it from metrics)")
        self.config = config
        self.qa_model = qa_model
        self.judge_model = judge_model
        self.context_builder = context_builder
        self.fan_out = fan_out or FanOut()
        self._worker_usage: dict[str, Any] | None = None  # summed over the workers of a fanned-out run
        self.judge_template_name = judge_template_name(config.dataset_type)
        self.judge_template = get_judge_template(self.judge_template_name)
        self._budget_tracer: Any = None

    @property
    def output_path(self) -> Path:
        """`<search results stem>_evaluation.json` next to the search results."""
        src = Path(self.config.search_results_path)
        return src.with_name(f"{src.stem}_evaluation.json")

    def _load_results(self) -> list[dict[str, Any]]:
        path = Path(self.config.search_results_path)
        if not path.is_file():
            raise DatasetError(f"search results {str(path)!r} not found; run the search stage first")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"search results {str(path)!r} are not valid JSON ({exc})") from exc
        except UnicodeDecodeError as exc:
            where = f"{exc.reason} at byte {exc.start}"
            raise DatasetError(f"search results {str(path)!r} are not UTF-8 text ({where})") from None
        except OSError as exc:
            raise DatasetError(f"search results {str(path)!r} cannot be read ({exc.strerror or exc})") from None
        if not isinstance(data, list):
            raise DatasetError(f"search results {str(path)!r} must hold a JSON list")
        for index, record in enumerate(data):
            if not isinstance(record, dict) or not isinstance(record.get("user_id"), (str, int)):
                raise DatasetError(f"search results {str(path)!r}: record {index} is not a search result (an object "
                                   f"with a user_id), got {json.dumps(record)[:80]}")
        return data

    def run(self) -> RunReport:
        """Evaluate every searched question; returns the report (outputs written per user)."""
        from tqdm.auto import tqdm

        records = self._load_results()
        by_user: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_user.setdefault(record["user_id"], []).append(record)
        report = RunReport(stage="evaluation")
        outputs: list[dict[str, Any]] = []
        report.outputs.append(str(self.output_path))
        # the models may serve other runs in this process: report only what this run added
        before = self._model_usage()
        self._worker_usage = None
        try:
            atomic_write_json(self.output_path, outputs)  # an empty results file still gives an output
            with tracing_switch(self.config.tracing), tqdm(
                total=len(records), desc="evaluation", unit="q", disable=not self.config.show_progress
            ) as bar:
                if not self.fan_out.inline:
                    self._run_fanned_out(by_user, report, outputs, bar)
                    return report
                for user_id, user_records in by_user.items():
                    try:
                        outputs.extend(self._run_user(user_id, user_records, report))
                        report.users_done.append(user_id)
                    except FATAL_ERRORS:
                        raise
                    except Exception as exc:
                        report.add_failure(user_id, user_id, exc)
                        report.users_failed[user_id] = str(exc)
                    finally:
                        atomic_write_json(self.output_path, outputs)
                    bar.update(len(user_records))
        finally:  # a run stopped by a fatal error still leaves its report (partial metrics)
            report.usage = self._worker_usage or _usage_since(before, self._model_usage())
            report.metrics = summarize_metrics(outputs, self.config.metrics)
            for group, entry in report.metrics.items():
                means = ", ".join(f"{n}={v:.3f}" for n, v in entry.items() if n in METRICS)
                logger.info("evaluation %s: n=%d failed=%d %s", group, entry["n"], entry["failed"], means)
            report.save(self.output_path.with_name(f"{self.output_path.stem}_report.json"))
        return report

    def _model_usage(self) -> dict[str, dict[str, int] | None]:
        """The models' counters now (since each model was made)."""
        return {"qa_model": self.qa_model.usage.as_dict(),
                "judge_model": self.judge_model.usage.as_dict() if self.judge_model is not None else None}

    def _run_fanned_out(self, by_user: dict[str, list[dict[str, Any]]], report: RunReport,
                        outputs: list[dict[str, Any]], bar: Any) -> None:
        """Each user in a worker; the output file holds the finished users in input order."""
        ray = self.fan_out.executor == "ray"
        recipes = (model_recipe(self.qa_model, role="qa model", needs_pickle=not ray),
                   model_recipe(self.judge_model, role="judge model", needs_pickle=not ray)
                   if self.judge_model is not None else None)
        users = list(by_user.items())
        tasks = [(self.config, recipes, self.context_builder, user_id, records) for user_id, records in users]
        parts: dict[int, tuple[RunReport, list[dict[str, Any]]]] = {}
        zero = self.qa_model.usage.__class__().as_dict()
        self._worker_usage = {"qa_model": zero, "judge_model": dict(zero) if self.judge_model is not None else None}
        try:
            for index, part in fan_out(_evaluate_user, tasks, self.fan_out):
                if isinstance(part, TaskCrash):
                    part = (crashed_report("evaluation", users[index][0], part), [], {})
                parts[index] = part[:2]
                for role, usage in part[2].items():
                    self._worker_usage[role] = add_usage(self._worker_usage[role], usage)
                outputs[:] = [out for i in sorted(parts) for out in parts[i][1]]
                atomic_write_json(self.output_path, outputs)
                bar.update(len(users[index][1]))
        finally:
            for index in sorted(parts):
                report.merge(parts[index][0])

    # -- per user -------------------------------------------------------------------------------
    def _run_user(self, user_id: str, records: list[dict[str, Any]], report: RunReport) -> list[dict[str, Any]]:
        from smartcomment import comment_graph, comment_session

        cfg = self.config
        items = []
        for record in records:
            qa = QuestionAnswerPair.model_validate(record["qa_pair"])
            memories = [MemoryEntry.model_validate(m) for m in record.get("retrieved_memories", [])]
            item = _Item(record=record, qa=qa, memories=memories, context=self.context_builder(memories))
            if cfg.context_budget is not None:
                item.uncut_context, item.context = item.context, truncate_to_tokens(item.context, cfg.context_budget)
            if record.get("error"):
                item.error = f"search failed: {record['error']}"
            items.append(item)

        graph = read_graph(graph_file(cfg.traced_data_save_dir, user_id, "search"))
        if graph is None and cfg.tracing:
            logger.warning("no graph_search.json for %s; its evaluation graph starts empty", user_id)
        if graph is not None:
            graph.strict = cfg.strict
        graph_kwargs = {"graph": graph} if graph is not None else {"user_id": user_id, "strict": cfg.strict}
        with comment_graph(**graph_kwargs) as g, comment_session(
            category="memory_evaluation",
            comment="The memory layer is evaluated by answering the questions from retrieved memories.",
            metadata={
                "qa_model": self.qa_model.model,
                "judge_model": self.judge_model.model if self.judge_model else None,
                "qa_batch_size": cfg.qa_batch_size,
                "judge_batch_size": cfg.judge_batch_size,
                "add_question_timestamp": cfg.add_question_timestamp,
            },
        ):
            self._answer_all(items, user_id, report)
            if "llm_judge" in cfg.metrics:
                self._judge_all(items, user_id, report)
        if g is not None:
            report.outputs.append(str(write_graph(g, graph_file(cfg.traced_data_save_dir, user_id, "evaluation"))))
        self._count_done(items, report)
        return [self._result(item, user_id) for item in items]

    # -- question answering -------------------------------------------------------------------------
    def _question_text(self, qa: QuestionAnswerPair) -> str:
        text = qa.question
        if "name" in qa.metadata:
            text = f"{qa.metadata['name']}: {text}"
        if self.config.add_question_timestamp and qa.timestamp:
            text += f"\nQuestion Timestamp: {qa.timestamp}"
        return text

    def _ask(self, item: _Item) -> None:
        if item.error is not None:
            return
        prompt = Template(self.config.prompt_template).safe_substitute(
            question=self._question_text(item.qa), context=item.context
        )
        try:
            result = self.qa_model.complete(
                [{"role": "system", "content": QA_SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
                temperature=0.0, max_tokens=self.config.qa_max_tokens,
            )
            item.prediction = result.text.strip()
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            item.error = f"question answering failed: {describe(exc)}"

    def _answer_all(self, items: list[_Item], user_id: str, report: RunReport) -> None:
        bounded_map(self._ask, items, self.config.qa_batch_size)
        for item in items:
            if item.error is not None:
                report.add_failure(user_id, item.qa.id, RuntimeError(item.error))
        if not _tracing_on():
            return
        from smartcomment import comment_variable

        prompt_rv = comment_variable(
            self.config.prompt_template, to_runtime=True, id_strategy=lambda _t: "question-answering-prompt",
            category="prompt", metadata={"op_type": "question-answering"},
            comment="The prompt template of the question-answering model.",
        )
        for item in items:
            if item.prediction is not None:
                self._trace_answer(item, prompt_rv)

    def _trace_answer(self, item: _Item, prompt_rv: Any) -> None:
        from smartcomment import comment_op, comment_op_scope

        qa_id = item.qa.id
        context_item = (item.context, {"class_name": "context", "category": "memory_context",
                                       "comment": "The retrieved memories formatted for the QA model."})
        memory_inputs = [
            ({"id": m.trace_id}, {"id_strategy": lambda v: v["id"], "identity_only": True})
            for m in item.memories if m.trace_id
        ]
        with comment_op_scope(op_name="question-answering", category="evaluation",
                              comment="The QA model answers the question from the retrieved memories."):
            if item.uncut_context is None:
                comment_op(
                    inputs=memory_inputs, outputs=[context_item],
                    metadata={"source_code": _source_of(self.context_builder)},
                    comment="The retrieved memories are formatted into the context.", reuse_op=True,
                )
            else:
                self._trace_cut(item, memory_inputs, context_item)
            comment_op(
                inputs=[(item.qa.question, {"class_name": "query", "id_strategy": lambda _q: qa_id}),
                        context_item, prompt_rv],
                outputs=[(item.prediction, {"class_name": "prediction", "category": "llm_response",
                                            "comment": "The QA model's answer."})],
                comment="The QA model generates the answer.", reuse_op=True,
            )

    def _trace_cut(self, item: _Item, memory_inputs: list[Any], context_item: tuple[str, dict[str, Any]]) -> None:
        """Memories -> uncut context; uncut context + the budget parameter -> the context the model sees.

        The budget is an input of the step that drops text, so an attribution that finds the
        information in the uncut context and not in the cut one names the op the budget shapes.
        """
        from membase.layers.parameters import ANSWER_CONTEXT_BUDGET, ParameterTracer
        from smartcomment import comment_op

        budget = self.config.context_budget
        assert item.uncut_context is not None and budget is not None
        if self._budget_tracer is None:
            self._budget_tracer = ParameterTracer(self.config.layer_type or "unknown", specs=(ANSWER_CONTEXT_BUDGET,))
        qa_id = item.qa.id
        uncut_item = (item.uncut_context, {
            "class_name": "uncut_context", "category": "memory_context", "id_strategy": lambda _c: f"{qa_id}-uncut",
            "comment": "The retrieved memories formatted, before the context budget cut."})
        comment_op(inputs=memory_inputs, outputs=[uncut_item], metadata={"source_code": _source_of(self.context_builder)},
                   comment="The retrieved memories are formatted into the context.", reuse_op=True)
        before, after = count_tokens(item.uncut_context), count_tokens(item.context)
        cut_item = (item.context, {**context_item[1], "metadata": {
            "context_budget": budget, "tokens_before_cut": before, "tokens_after_cut": after, "cut": after < before}})
        comment_op(inputs=[uncut_item, *self._budget_tracer.handles({ANSWER_CONTEXT_BUDGET.name: budget})],
                   outputs=[cut_item], reuse_op=True,
                   comment=f"The context is cut to the answering budget of {budget} tokens ({before} before the cut).")

    # -- judging ----------------------------------------------------------------------------------
    def _judge(self, item: _Item) -> None:
        if item.prediction is None:
            return
        assert self.judge_model is not None
        prompt = fill_judge_prompt(self.judge_template, item.qa, item.prediction)
        try:
            result = self.judge_model.complete(
                [{"role": "user", "content": prompt}], temperature=0.0, max_tokens=self.config.judge_max_tokens,
                response_format={"type": "json_object"} if self.config.judge_json_mode else None,
            )
            item.judge_response = result.text
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            item.error = f"judge failed: {describe(exc)}"

    def _judge_all(self, items: list[_Item], user_id: str, report: RunReport) -> None:
        bounded_map(self._judge, items, self.config.judge_batch_size)
        for item in items:
            if item.prediction is not None and item.judge_response is None:
                report.add_failure(user_id, item.qa.id, RuntimeError(item.error or "no judge response"))
        if not _tracing_on():
            return
        from smartcomment import comment_variable

        template_rv = comment_variable(
            self.judge_template, to_runtime=True, id_strategy=lambda _t: self.judge_template_name,
            class_name="judge_prompt", category="prompt", metadata={"op_type": "llm-judge"},
            comment="The prompt template of the judge model.",
        )
        for item in items:
            if item.judge_response is not None:
                self._trace_judgement(item, template_rv)

    def _trace_judgement(self, item: _Item, template_rv: Any) -> None:
        from smartcomment import comment_link, comment_op, comment_op_scope

        qa_id = item.qa.id
        score = parse_judge_response(item.judge_response or "")
        judge_item = (item.judge_response, {"class_name": "judge_response", "category": "llm_response",
                                            "comment": "The judge model's verdict."})
        with comment_op_scope(op_name="llm-judge", category="evaluation",
                              comment="The judge model decides whether the answer is correct."):
            comment_op(
                inputs=[
                    (item.qa.question, {"class_name": "query", "id_strategy": lambda _q: qa_id}),
                    (item.qa.golden_answers, {"class_name": "golden_answers", "encoding_fn": ", ".join,
                                              "category": "golden_answers",
                                              "comment": "The reference answers of the question."}),
                    template_rv,
                    (item.prediction, {"class_name": "prediction", "category": "llm_response"}),
                ],
                outputs=[judge_item], comment="The judge model gives its verdict.", reuse_op=True,
            )
            comment_link(
                source=judge_item,
                target=(score, {"class_name": "judge_score", "comment": "The judge score (1.0 correct)."}),
                comment="The verdict is parsed into a score.",
                edge_metadata={"source_code": _source_of(parse_judge_response)},
            )

    # -- results ----------------------------------------------------------------------------------
    def _result(self, item: _Item, user_id: str) -> dict[str, Any]:
        metrics: dict[str, Any] = {}
        if item.prediction is not None:
            refs = item.qa.golden_answers
            if "f1" in self.config.metrics:
                metrics["f1"] = {"value": token_f1(item.prediction, refs), "metadata": {}}
            if "bleu" in self.config.metrics:
                metrics["bleu"] = {"value": bleu_score(item.prediction, refs), "metadata": {}}
            if item.judge_response is not None:
                metrics["llm_judge"] = {"value": parse_judge_response(item.judge_response),
                                        "metadata": {"judge_response": item.judge_response}}
        out = {
            "qa_pair": item.record["qa_pair"],
            "prediction": item.prediction,
            "metrics": metrics,
            "retrieved_memories": item.record.get("retrieved_memories", []),
            "user_id": user_id,
        }
        if item.error is not None:
            out["error"] = item.error
        return out

    @staticmethod
    def _count_done(items: list[_Item], report: RunReport) -> None:
        with report._lock:
            report.items_done += sum(1 for item in items if item.error is None)


def _evaluate_user(config: EvaluationRunnerConfig, recipes: tuple[Callable[[], Any], Callable[[], Any] | None],
                   context_builder: Callable[[list[MemoryEntry]], str], user_id: str, records: list[dict[str, Any]]
                   ) -> tuple[RunReport, list[dict[str, Any]], dict[str, Any]]:
    """One user's evaluation in a worker process or Ray task: report, output records, model usage."""
    qa_model = recipes[0]()
    judge_model = recipes[1]() if recipes[1] is not None else None
    runner = EvaluationRunner(config, qa_model=qa_model, judge_model=judge_model, context_builder=context_builder)
    part = RunReport(stage="evaluation")
    outputs: list[dict[str, Any]] = []
    with tracing_switch(config.tracing):
        try:
            outputs = runner._run_user(user_id, records, part)
            part.users_done.append(user_id)
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            part.add_failure(user_id, user_id, exc)
            part.users_failed[user_id] = str(exc)
    usage = {"qa_model": qa_model.usage.as_dict(),
             "judge_model": judge_model.usage.as_dict() if judge_model is not None else None}
    return part, outputs, usage


def _tracing_on() -> bool:
    from membase.layers.tracing import tracing_active

    return tracing_active()


def _source_of(fn: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return getattr(fn, "__qualname__", repr(fn))


def summarize_metrics(outputs: list[dict[str, Any]], metrics: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per question type, plus `"all"`: `n` questions, `failed` ones, and the mean of each metric.

    A failed question (an `"error"`, or no value for a metric) counts as 0 in the metric means, so
    failures cannot raise a score. `mean_over_scored` keeps each metric's mean over only the
    questions that have a value. `metrics` names the metrics to report (default: every metric
    that some question has).
    """
    names = list(metrics) if metrics is not None else sorted({n for out in outputs for n in out["metrics"]})
    groups: dict[str, list[dict[str, Any]]] = {}
    for out in outputs:
        qtype = str(out["qa_pair"].get("metadata", {}).get("question_type", "unknown"))
        groups.setdefault(qtype, []).append(out)
        groups.setdefault("all", []).append(out)
    summary: dict[str, dict[str, Any]] = {}
    for group, outs in sorted(groups.items()):
        n = len(outs)
        failed = sum(1 for o in outs if "error" in o or any(name not in o["metrics"] for name in names))
        entry: dict[str, Any] = {"n": n, "failed": failed}
        scored: dict[str, float] = {}
        for name in sorted(names):
            values = [o["metrics"][name]["value"] for o in outs if name in o["metrics"]]
            entry[name] = sum(values) / n
            if values:
                scored[name] = sum(values) / len(values)
        entry["mean_over_scored"] = scored
        summary[group] = entry
    return summary
