"""The textual-gradient optimizer: attributed failures → feedback → aggregation → a new prompt.

:class:`OptimizerRunner` (spec-attribution §7.2, on agentscope 2.x) takes one
:class:`TargetTask` per target — the target, the id of its variable in the traced graph, its
current value and the attributions grouped onto it — and runs three stages:

1. **feedback**: one call per (target, attribution), ``call_index`` 0, 1, … in task/attribution
   order, all concurrent under a semaphore of ``batch_size``. The prompt shows the target's XML,
   the failure (type, operation, reason, question) with the attributed operation's subgraph, and
   the target's gradient history. → ``feedbacks.json`` ``{node_id: [feedback, …]}``
2. **aggregation**: per target (``call_index`` continues, one per task); a single feedback is used
   as is; otherwise the feedbacks are shuffled with ``random.Random(seed + call_index)`` and folded:
   the first call merges ``batch_size_for_summarization`` (B) items, each next call merges the
   running summary with the next B − 1 (B = 1: one more item per call). →
   ``aggregated_feedbacks.json`` ``{node_id: text}``
3. **update**: per target (``call_index`` continues): the improved value. A value that breaks the
   target's contract is refused, the refusal is shown to the model and the call is repeated
   (``contract_retries`` times); then the proposal is dropped and the target keeps its value.
   → ``update_results.json`` ``{node_id: improved value}`` (accepted updates only)

Every model call is a fresh agentscope ``Agent`` (no tools, structured output) on credential
slot ``call_index % pool size``. A failing call is retried with exponential backoff
(``max_retries``); if it still fails, the unit is recorded as failed: a target whose feedback,
aggregation or update failed keeps its value and the round goes on (the reference aborted
everything). Costs per stage: average input/output tokens and minutes per unit, plus totals.

The gradient history — per target variable, the last ``num_gradient_histories`` pairs (value,
aggregated feedback) — lives in :class:`GradientHistory`, which the loop saves in every iteration
folder (``gradient_history.json``) and reloads on resume (the reference kept it in memory only).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from toolkits._base import AgentBaseConfig, ApiPool, CredentialError, redact, resolve_api_pool
from toolkits.optimization import prompts as P
from toolkits.optimization.contracts import requirements_of
from toolkits.optimization.records import Attribution, unquote
from toolkits.optimization.targets import Target

__all__ = [
    "AGGREGATED_FEEDBACKS_FILENAME",
    "FEEDBACKS_FILENAME",
    "GRADIENT_HISTORY_FILENAME",
    "UPDATE_RESULTS_FILENAME",
    "AggregatedFeedbackSuggestion",
    "FeedbackSuggestion",
    "GradientHistory",
    "OptimizationResult",
    "OptimizerConfig",
    "OptimizerRunner",
    "TargetOutcome",
    "TargetTask",
    "TargetVariableUpdate",
    "fake_optimizer_model",
    "optimizer_model_factory",
]

FEEDBACKS_FILENAME = "feedbacks.json"
AGGREGATED_FEEDBACKS_FILENAME = "aggregated_feedbacks.json"
UPDATE_RESULTS_FILENAME = "update_results.json"
GRADIENT_HISTORY_FILENAME = "gradient_history.json"
STAGES = ("feedback_generation", "feedback_aggregation", "update")


class FeedbackSuggestion(BaseModel):
    """Structured output of a feedback call."""

    rationale: str = Field(description="What the trace shows went wrong and how the value contributed to it.")
    feedback: str = Field(description="Concrete suggestions for changing the target value.")


class AggregatedFeedbackSuggestion(BaseModel):
    """Structured output of an aggregation call."""

    rationale: str = Field(description="How the items were merged.")
    aggregated_feedback: str = Field(description="The merged, non-redundant feedback.")


class TargetVariableUpdate(BaseModel):
    """Structured output of an update call."""

    rationale: str = Field(description="Which feedback points were applied and how.")
    improved_value: str = Field(description="The complete new value of the target.")


class OptimizerConfig(AgentBaseConfig):
    """Settings of the optimizer (reference fields; defaults equal the CLI's, unlike the reference)."""

    num_gradient_histories: int = Field(default=1, ge=0)
    """(value, feedback) pairs kept per target and shown to the feedback stage."""
    batch_size_for_summarization: int = Field(default=4, ge=1)
    """Feedback items merged per aggregation call."""
    max_iters: int = Field(default=3, ge=1)
    """Reasoning steps per call before agentscope forces the structured answer."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Output-token cap per model call."""
    llama_cpp_compat: bool = False
    """Apply the llama.cpp server workarounds to the chat model."""
    max_retries: int = Field(default=2, ge=0)
    """Retries of a failing call."""
    retry_backoff_s: float = Field(default=2.0, ge=0.0)
    """First backoff delay; doubles per retry."""
    call_timeout_s: float | None = Field(default=600.0, gt=0)
    """Wall-clock limit of one call attempt."""
    contract_retries: int = Field(default=2, ge=0)
    """Update calls repeated after a proposal breaks the target's contract."""
    context_size: int = Field(default=1_000_000, ge=1)
    """Context size reported to agentscope."""


@dataclass(frozen=True, kw_only=True)
class TargetTask:
    """One target to optimize this round."""

    target: Target
    node_id: str
    """Full node id of the target variable in the graph (key of the output files)."""
    current_value: Any
    """The value used in this round."""
    errors: list[Attribution]
    """Attributions grouped onto the target (at least one)."""
    graphs: list[Any] | None = None
    """One graph per error (default: the shared graph of ``arun``)."""


@dataclass(kw_only=True)
class TargetOutcome:
    """What happened to one target."""

    field: str
    node_id: str
    status: Literal["updated", "unchanged", "failed", "rejected"] = "unchanged"
    """``updated``: a new accepted value; ``failed``: a stage failed; ``rejected``: every proposal
    broke the contract; ``unchanged``: the model proposed the current value."""
    new_value: Any = None
    feedbacks: list[str] = field(default_factory=list)
    aggregated_feedback: str | None = None
    failures: list[str] = field(default_factory=list)
    """One line per failed call (after its retries)."""
    rejected_proposals: list[dict[str, Any]] = field(default_factory=list)
    """``{"value", "problems"}`` of each refused proposal."""

    def as_json(self) -> dict[str, Any]:
        """JSON form (the summary lists one per target)."""
        return {
            "field": self.field,
            "node_id": self.node_id,
            "status": self.status,
            "num_feedbacks": len(self.feedbacks),
            "failures": list(self.failures),
            "rejected_proposals": list(self.rejected_proposals),
        }


@dataclass(kw_only=True)
class _StageCost:
    units: int = 0
    calls: int = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    unit_seconds: list[float] = field(default_factory=list)

    def as_json(self) -> dict[str, float]:
        n = max(1, self.units)
        return {
            "average_input_tokens": self.input_tokens / n,
            "average_output_tokens": self.output_tokens / n,
            "average_minutes": (sum(self.unit_seconds) / len(self.unit_seconds) / 60.0) if self.unit_seconds else 0.0,
            "units": self.units,
            "calls": self.calls,
            "failed_calls": self.failed_calls,
            "total_input_tokens": self.input_tokens,
            "total_output_tokens": self.output_tokens,
        }


def zero_costs() -> dict[str, dict[str, float]]:
    """The cost block of a round without optimizer calls."""
    return {stage: _StageCost().as_json() for stage in STAGES}


@dataclass(kw_only=True)
class OptimizationResult:
    """What :meth:`OptimizerRunner.arun` returns."""

    updates: dict[str, Any]
    """Target field → accepted new value."""
    outcomes: list[TargetOutcome]
    costs: dict[str, dict[str, float]]

    @property
    def failures(self) -> list[dict[str, str]]:
        """Every failed call and dropped proposal, one record each."""
        out = [{"field": o.field, "error": f} for o in self.outcomes for f in o.failures]
        out += [{"field": o.field, "error": "proposal dropped: " + "; ".join(r["problems"])}
                for o in self.outcomes if o.status == "rejected" for r in o.rejected_proposals[-1:]]
        return out


class GradientHistory:
    """Per target variable, the last ``maxlen`` (value, aggregated feedback) pairs."""

    def __init__(self, maxlen: int) -> None:
        self.maxlen = maxlen
        self._records: dict[str, deque[tuple[str, str]]] = {}

    def get(self, variable: str) -> list[tuple[str, str]]:
        """The records of ``variable``, oldest first."""
        return list(self._records.get(variable, ()))

    def add(self, variable: str, value: Any, feedback: str) -> None:
        """Append one record (dropped at once when ``maxlen`` is 0)."""
        self._records.setdefault(variable, deque(maxlen=self.maxlen)).append((_as_text(value), feedback))

    def as_json(self) -> dict[str, Any]:
        """``{"maxlen": n, "records": {variable: [{"value", "feedback"}, …]}}``."""
        return {
            "maxlen": self.maxlen,
            "records": {v: [{"value": a, "feedback": b} for a, b in recs] for v, recs in self._records.items() if recs},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], maxlen: int) -> GradientHistory:
        """Rebuild (keeping at most ``maxlen`` newest records per variable)."""
        history = cls(maxlen)
        for variable, records in (data.get("records") or {}).items():
            for record in records:
                history.add(variable, record["value"], record["feedback"])
        return history

    def save(self, folder: str | Path) -> Path:
        """Write ``<folder>/gradient_history.json`` atomically."""
        from membase.utils.io import atomic_write_json

        return atomic_write_json(Path(folder) / GRADIENT_HISTORY_FILENAME, self.as_json())

    @classmethod
    def load(cls, folder: str | Path, maxlen: int) -> GradientHistory:
        """Read ``<folder>/gradient_history.json`` (an empty history when the file is absent).

        Raises:
            ValueError: The file is not valid JSON.
        """
        path = Path(folder) / GRADIENT_HISTORY_FILENAME
        if not path.is_file():
            return cls(maxlen)
        try:
            return cls.from_json(json.loads(path.read_text(encoding="utf-8")), maxlen)
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"gradient history {str(path)!r} is unreadable: {exc}") from None


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


@dataclass(kw_only=True)
class _CallOutcome:
    value: BaseModel | None
    failure: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0


async def run_structured_reply(agent: Any, text: str, schema: type[BaseModel], timeout: float | None) -> _CallOutcome:
    """One agent reply with a structured answer; every failure becomes ``failure`` (never raises)."""
    from membase.clients import StructuredReply

    outcome = _CallOutcome(value=None)
    reply = StructuredReply()
    try:
        if timeout is None:
            await reply.drive(agent, text, schema)
        else:
            await asyncio.wait_for(reply.drive(agent, text, schema), timeout)
    except TimeoutError:
        outcome.failure = f"timeout: no answer within {timeout:g} s"
        return outcome
    except Exception as exc:  # noqa: BLE001 - any model/API failure is recorded
        outcome.failure = f"{type(exc).__name__}: {_one_line(str(exc))}"
        return outcome
    finally:
        outcome.input_tokens = reply.usage["input_tokens"]
        outcome.output_tokens = reply.usage["output_tokens"]
        outcome.calls = reply.usage["num_calls"]
    raw = reply.final.structured_output if reply.final is not None else None
    if raw is None:
        reason = getattr(reply.final, "finished_reason", None)
        outcome.failure = f"no structured answer (finished: {getattr(reason, 'value', reason)})"
        return outcome
    try:
        outcome.value = schema.model_validate(raw)
    except ValidationError as exc:
        outcome.failure = f"invalid structured answer: {_one_line(str(exc))}"
    return outcome


class OptimizerRunner:
    """Runs the three optimizer stages over a round's target tasks (see the module docstring).

    Args:
        config: Optimizer settings (model, credentials, retries, history length …).
        model_factory: ``fn(call_index) -> agentscope chat model``; default: an OpenAI-compatible
            model of ``config.model`` on credential slot ``call_index % pool size``.
        api_pool: Credential pool (default: resolved from ``config`` on first use).
        history: Gradient history to continue (default: empty).
        sleep: Coroutine used for backoff delays (tests pass a no-op).
        show_progress: Progress bars per stage.
    """

    def __init__(
        self,
        config: OptimizerConfig,
        *,
        model_factory: Callable[[int], Any] | None = None,
        api_pool: ApiPool | None = None,
        history: GradientHistory | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
        show_progress: bool = False,
    ) -> None:
        self.config = config
        self._model_factory = model_factory
        self._api_pool = api_pool
        self.history = history if history is not None else GradientHistory(config.num_gradient_histories)
        self._sleep = sleep
        self.show_progress = show_progress

    # -- models ---------------------------------------------------------------------------------
    def _secrets(self) -> list[str]:
        secrets = list(self._api_pool.secrets) if self._api_pool else []
        return secrets + [k.get_secret_value() for k in self.config.api_keys or []]

    def _model(self, call_index: int) -> Any:
        if self._model_factory is not None:
            return self._model_factory(call_index)
        from membase.clients import build_openai_chat_model

        if self._api_pool is None:
            self._api_pool = resolve_api_pool(self.config)
        cred = self._api_pool.credential_for(call_index)
        cfg = self.config
        return build_openai_chat_model(
            cfg.model, cred.api_key, cred.base_url, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
            stream=cfg.stream, llama_cpp_compat=cfg.llama_cpp_compat, context_size=cfg.context_size,
            max_retries=0, timeout=cfg.call_timeout_s,
        )

    async def _call(
        self, stage: str, name: str, system_prompt: str, text: str, schema: type[BaseModel], call_index: int,
        cost: _StageCost,
    ) -> tuple[BaseModel | None, str | None]:
        """One logical call with retries; returns (value, failure)."""
        from agentscope.agent import Agent, InjectionConfig, ReActConfig

        cfg = self.config
        failure = None
        for attempt in range(cfg.max_retries + 1):
            try:
                model = self._model(call_index)
                agent = Agent(
                    name=name, system_prompt=system_prompt, model=model,
                    react_config=ReActConfig(max_iters=cfg.max_iters),
                    injection_config=InjectionConfig(inject_runtime_state=False),
                )
            except CredentialError:
                raise
            except Exception as exc:  # noqa: BLE001 - a model that cannot be built is a failed call
                outcome = _CallOutcome(value=None, failure=f"{type(exc).__name__}: {_one_line(str(exc))}")
            else:
                outcome = await run_structured_reply(agent, text, schema, cfg.call_timeout_s)
            cost.calls += max(1, outcome.calls)
            cost.input_tokens += outcome.input_tokens
            cost.output_tokens += outcome.output_tokens
            if outcome.value is not None:
                return outcome.value, None
            failure = redact(outcome.failure or "no answer", self._secrets())
            if attempt < cfg.max_retries:
                await self._sleep(cfg.retry_backoff_s * (2**attempt))
        cost.failed_calls += 1
        attempts = cfg.max_retries + 1
        return None, f"{stage} call {call_index} failed after {attempts} attempt(s): {failure}"

    # -- stages ---------------------------------------------------------------------------------
    async def arun(
        self,
        tasks: Sequence[TargetTask],
        graph: Any,
        *,
        batch_size: int | None = None,
        seed: int | None = None,
        save_folder: str | Path | None = None,
    ) -> OptimizationResult:
        """Run feedback → aggregation → update for every task.

        Args:
            tasks: One task per target, each with at least one error.
            graph: The traced graph the attributions refer to (tasks may carry their own).
            batch_size: Concurrent calls (default 1).
            seed: Seed of the aggregation shuffles (None: unseeded).
            save_folder: Where the stage files go (None: nowhere).

        Returns:
            Accepted updates, one outcome per target, and per-stage costs.

        Raises:
            ValueError: No tasks, a task without errors, or graphs not aligned with errors.
            CredentialError: No credentials and no model factory.
        """
        tasks = list(tasks)
        if not tasks:
            raise ValueError("no targets to optimize")
        for task in tasks:
            if not task.errors:
                raise ValueError(f"target {task.target.field!r} has no errors to learn from")
            if task.graphs is not None and len(task.graphs) != len(task.errors):
                raise ValueError(f"target {task.target.field!r}: {len(task.graphs)} graphs for {len(task.errors)} errors")
        batch_size = batch_size or 1
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if self._model_factory is None and self._api_pool is None:
            self._api_pool = resolve_api_pool(self.config)
        semaphore = asyncio.Semaphore(batch_size)
        outcomes = [TargetOutcome(field=t.target.field, node_id=t.node_id) for t in tasks]
        costs = {stage: _StageCost() for stage in STAGES}
        folder = Path(save_folder) if save_folder is not None else None

        await self._feedback_stage(tasks, graph, outcomes, semaphore, costs["feedback_generation"])
        self._save(folder, FEEDBACKS_FILENAME, {o.node_id: o.feedbacks for o in outcomes})
        n_units = sum(len(t.errors) for t in tasks)
        await self._aggregation_stage(tasks, outcomes, semaphore, costs["feedback_aggregation"], n_units, seed)
        self._save(folder, AGGREGATED_FEEDBACKS_FILENAME,
                   {o.node_id: o.aggregated_feedback for o in outcomes if o.aggregated_feedback is not None})
        await self._update_stage(tasks, graph, outcomes, semaphore, costs["update"], n_units + len(tasks))
        self._save(folder, UPDATE_RESULTS_FILENAME, {o.node_id: o.new_value for o in outcomes if o.status == "updated"})
        for task, outcome in zip(tasks, outcomes, strict=True):
            if outcome.aggregated_feedback is not None:
                self.history.add(task.target.variable, task.current_value, outcome.aggregated_feedback)
        return OptimizationResult(
            updates={o.field: o.new_value for o in outcomes if o.status == "updated"},
            outcomes=outcomes,
            costs={stage: cost.as_json() for stage, cost in costs.items()},
        )

    def run(self, *args: Any, **kwargs: Any) -> OptimizationResult:
        """Synchronous :meth:`arun` (refuses to run inside an event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(*args, **kwargs))
        raise RuntimeError("OptimizerRunner.run() cannot be called inside a running event loop: await arun() instead")

    @staticmethod
    def _save(folder: Path | None, name: str, data: Any) -> None:
        if folder is not None:
            from membase.utils.io import atomic_write_json

            atomic_write_json(folder / name, data)

    def _bar(self, total: int, desc: str) -> Any:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit="call", disable=not self.show_progress, leave=False)

    def _target_xml(self, task: TargetTask, graph: Any) -> str:
        graph = task.graphs[0] if task.graphs else graph
        try:
            return graph.get_variable(task.node_id).to_xml()
        except Exception:  # noqa: BLE001 - a target missing from the graph is still shown by value
            return f"<variable full_node_id=\"{task.node_id}\">\n  <value>{_as_text(task.current_value)}</value>\n</variable>"

    async def _feedback_stage(
        self, tasks: list[TargetTask], graph: Any, outcomes: list[TargetOutcome], semaphore: asyncio.Semaphore,
        cost: _StageCost,
    ) -> None:
        units = [(ti, ei) for ti, task in enumerate(tasks) for ei in range(len(task.errors))]
        cost.units = len(units)
        results: dict[tuple[int, int], str] = {}
        with self._bar(len(units), "optimizer feedback") as bar:

            async def one(call_index: int, ti: int, ei: int) -> None:
                task = tasks[ti]
                error = task.errors[ei]
                case_graph = task.graphs[ei] if task.graphs else graph
                text = P.FEEDBACK_TASK.substitute(
                    role=task.target.description or task.target.field,
                    requirements=requirements_of(task.target.contract),
                    target_xml=self._target_xml(task, graph),
                    failed_case=_failed_case_text(error, case_graph),
                    history=P.format_history(self.history.get(task.target.variable)),
                    graph_guide=P.GRAPH_GUIDE,
                )
                async with semaphore:
                    started = time.perf_counter()
                    value, failure = await self._call("feedback", "optimizer_feedback", P.FEEDBACK_SYSTEM_PROMPT,
                                                      text, FeedbackSuggestion, call_index, cost)
                    cost.unit_seconds.append(time.perf_counter() - started)
                if value is not None:
                    results[(ti, ei)] = value.feedback  # type: ignore[attr-defined]
                else:
                    outcomes[ti].failures.append(str(failure))
                bar.update(1)

            await asyncio.gather(*(one(i, ti, ei) for i, (ti, ei) in enumerate(units)))
        for (ti, ei) in units:
            if (ti, ei) in results:
                outcomes[ti].feedbacks.append(results[(ti, ei)])
        for outcome in outcomes:
            if not outcome.feedbacks:
                outcome.status = "failed"

    async def _aggregation_stage(
        self, tasks: list[TargetTask], outcomes: list[TargetOutcome], semaphore: asyncio.Semaphore,
        cost: _StageCost, first_index: int, seed: int | None,
    ) -> None:
        cost.units = sum(1 for o in outcomes if o.feedbacks)
        b = self.config.batch_size_for_summarization
        with self._bar(cost.units, "optimizer aggregation") as bar:

            async def one(ti: int) -> None:
                outcome, task = outcomes[ti], tasks[ti]
                if not outcome.feedbacks:
                    return
                call_index = first_index + ti
                if len(outcome.feedbacks) == 1:
                    outcome.aggregated_feedback = outcome.feedbacks[0]
                    cost.unit_seconds.append(0.0)
                    bar.update(1)
                    return
                items = list(outcome.feedbacks)
                (random.Random(seed + call_index) if seed is not None else random.Random()).shuffle(items)
                if b == 1:
                    summary, chunks = items[0], [[x] for x in items[1:]]
                    first: list[str] | None = None
                else:
                    summary, first = None, items[:b]
                    rest = items[b:]
                    chunks = [rest[i: i + b - 1] for i in range(0, len(rest), b - 1)]
                elapsed = 0.0
                for chunk in ([first] if first is not None else []) + chunks:
                    merge = chunk if summary is None else [summary, *chunk]
                    text = P.AGGREGATION_TASK.substitute(
                        role=task.target.description or task.target.field, feedbacks=P.format_feedback_list(merge)
                    )
                    async with semaphore:
                        started = time.perf_counter()
                        value, failure = await self._call(
                            "aggregation", "optimizer_feedback_aggregator", P.AGGREGATION_SYSTEM_PROMPT, text,
                            AggregatedFeedbackSuggestion, call_index, cost,
                        )
                        elapsed += time.perf_counter() - started
                    if value is None:
                        outcome.failures.append(str(failure))
                        outcome.status = "failed"
                        cost.unit_seconds.append(elapsed)
                        bar.update(1)
                        return
                    summary = value.aggregated_feedback  # type: ignore[attr-defined]
                outcome.aggregated_feedback = summary
                cost.unit_seconds.append(elapsed)
                bar.update(1)

            await asyncio.gather(*(one(ti) for ti in range(len(tasks))))

    async def _update_stage(
        self, tasks: list[TargetTask], graph: Any, outcomes: list[TargetOutcome], semaphore: asyncio.Semaphore,
        cost: _StageCost, first_index: int,
    ) -> None:
        cost.units = sum(1 for o in outcomes if o.aggregated_feedback is not None)
        with self._bar(cost.units, "optimizer update") as bar:

            async def one(ti: int) -> None:
                outcome, task = outcomes[ti], tasks[ti]
                if outcome.aggregated_feedback is None:
                    return
                call_index = first_index + ti
                rejection = ""
                elapsed = 0.0
                for _ in range(self.config.contract_retries + 1):
                    text = P.UPDATE_TASK.substitute(
                        role=task.target.description or task.target.field,
                        requirements=requirements_of(task.target.contract),
                        target_xml=self._target_xml(task, graph),
                        feedback=outcome.aggregated_feedback,
                        rejection=rejection,
                    )
                    async with semaphore:
                        started = time.perf_counter()
                        value, failure = await self._call(
                            "update", "optimizer_target_updater", P.UPDATE_SYSTEM_PROMPT, text,
                            TargetVariableUpdate, call_index, cost,
                        )
                        elapsed += time.perf_counter() - started
                    if value is None:
                        outcome.failures.append(str(failure))
                        outcome.status = "failed"
                        break
                    proposal = value.improved_value  # type: ignore[attr-defined]
                    problems = task.target.problems(proposal)
                    if not problems:
                        if proposal == task.current_value:
                            outcome.status = "unchanged"
                        else:
                            outcome.status, outcome.new_value = "updated", proposal
                        break
                    outcome.rejected_proposals.append({"value": proposal, "problems": problems})
                    outcome.status = "rejected"
                    rejection = P.format_rejection(proposal, problems)
                cost.unit_seconds.append(elapsed)
                bar.update(1)

            await asyncio.gather(*(one(ti) for ti in range(len(tasks))))


def _failed_case_text(error: Attribution, graph: Any) -> str:
    op_xml = "<graph />"
    if error.op_id:
        try:
            sub = graph.filter_by_operation(error.op_id)
            op_xml = sub.to_xml() if not sub.is_empty else "<graph />"
        except Exception:  # noqa: BLE001 - an unknown op id shows an empty graph
            op_xml = "<graph />"
    return P.format_failed_case(
        error_type=error.error_type, op_id=error.op_id, reason=error.reason, op_graph_xml=op_xml,
        question=unquote(error.query), golden_answer=unquote(error.golden_answer),
        prediction=unquote(error.prediction),
    )


# -- models from a command-line spec ----------------------------------------------------------------

_ALL_FIELDS = ("rationale", "feedback", "aggregated_feedback", "improved_value")


def fake_optimizer_model(reply: str) -> Any:
    """An offline agentscope model that answers every optimizer call with ``reply``.

    ``reply`` may be a JSON object (its keys fill the structured answer: ``rationale``,
    ``feedback``, ``aggregated_feedback``, ``improved_value``) or plain text (used for every field).
    """
    from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ToolCall

    try:
        parsed = json.loads(reply)
    except json.JSONDecodeError:
        parsed = None
    fields = {k: str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else dict.fromkeys(_ALL_FIELDS, reply)

    def turn(_messages: list[dict[str, Any]], tools: list[str], _choice: str | None) -> Any:
        if STRUCTURED_OUTPUT_TOOL in tools:
            return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args=dict(fields))
        return reply

    return FunctionChatModel(turn)


def optimizer_model_factory(spec: str) -> Callable[[int], Any] | None:
    """``fn(call_index) -> model`` for a ``fake:<reply>`` spec; None for a real model name."""
    if not spec.startswith("fake:"):
        return None
    reply = spec.split(":", 1)[1]
    return lambda _call_index: fake_optimizer_model(reply)
