"""The iterative LLM report (spec §8.1), on agentscope 2.x, that survives failures.

:class:`ReportRunner` sends the rendered cases in consecutive batches of ``batch_size``, strictly
one after the other. For each batch a fresh agent (no tools, credential slot = batch index)
receives the current report and the batch's cases and answers with a structured
:class:`~toolkits.report.prompts.ReportVersion` whose ``report`` replaces the current one.

Beyond the reference:

* every version is saved as soon as it is made (:class:`~toolkits.report.versions.VersionStore`),
  and a rerun with the same input and settings resumes after the last saved batch;
* a batch whose model call fails (API error, timeout, no structured answer, empty report) is
  retried with backoff; if it still fails the run stops and returns the last good report with a
  one-line failure, instead of raising;
* tokens, model calls and time are counted per runner, failed attempts included.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from toolkits._base import AgentBaseConfig, redact, resolve_api_pool

from .prompts import (
    PROMPT_VERSION,
    REPORT_AGENT_NAME,
    ReportVersion,
    build_system_prompt,
    build_task_prompt,
)
from .rendering import RenderedCase, number_case
from .versions import VersionStore, run_fingerprint

__all__ = ["BatchResult", "ReportConfig", "ReportOutcome", "ReportRunner"]

VERSIONS_FOLDER = "report_versions"


class ReportConfig(AgentBaseConfig):
    """Settings of a report run (reference names and defaults, plus new fields)."""

    model: str = "gpt-5.4"
    project: str = "error_analysis_report"
    batch_size: int = Field(default=4, ge=1)
    """Cases per batch (one model reply per batch)."""
    max_op_xml_tokens: int = Field(default=600_000, ge=1)
    """Each case's operation XML keeps at most its last this many tokens."""
    max_retries: int = Field(default=2, ge=0)
    """Retries of a failing batch before the run stops."""
    retry_backoff_s: float = Field(default=2.0, ge=0.0)
    """First retry delay in seconds (doubles per retry)."""
    batch_timeout_s: float | None = Field(default=None, gt=0.0)
    """Wall-clock limit of one batch attempt (None: no limit)."""
    max_iters: int = Field(default=1, ge=1)
    """Reasoning steps per batch; a reply without the structured report then gets one forced call."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Output-token cap per model call (None: the endpoint's default)."""
    llama_cpp_compat: bool = False
    """Apply the llama.cpp server workarounds to the chat model."""


@dataclass(kw_only=True)
class BatchResult:
    """One attempt at one batch."""

    version: ReportVersion | None
    failure: str | None
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "num_calls": 0})
    seconds: float = 0.0
    error: BaseException | None = field(default=None, repr=False)


@dataclass(kw_only=True)
class ReportOutcome:
    """What a report run produced."""

    report: str | None
    """The last good report (None when no batch has finished)."""
    batches_total: int
    batches_done: int
    """Finished batches, resumed ones included."""
    resumed_batches: int
    """Batches taken from saved versions instead of being run."""
    version_paths: list[str]
    failure: str | None = None
    """One line when a batch failed for good (the run stopped there)."""
    costs: dict[str, Any] = field(default_factory=dict)
    """``input_tokens``, ``output_tokens``, ``model_calls``, ``minutes`` (totals over every
    attempt, saved versions included) and ``attempts``."""

    @property
    def complete(self) -> bool:
        """True when every batch has a report version."""
        return self.failure is None and self.batches_done == self.batches_total


ModelFactory = Callable[[int], Any]
"""``fn(batch_index) -> agentscope chat model`` (0-based batch index)."""


FAILURE_LIMIT = 400
"""Characters of a batch failure line kept (after the keys in it are masked)."""


def _one_line(text: str) -> str:
    # whole, never cut: the text may hold a key, and a key cut in half would escape the mask
    return " ".join(str(text).split())


def _cut(text: str, limit: int = FAILURE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ReportRunner:
    """Writes the report batch by batch.

    Args:
        config: Settings.
        model_factory: Builds the chat model of a batch; default: an OpenAI-compatible model
            (:func:`membase.clients.build_openai_chat_model`) on the batch's credential slot.
        sleep: Awaitable sleep used for retry backoff (tests pass a no-op).
    """

    def __init__(
        self,
        config: ReportConfig,
        *,
        model_factory: ModelFactory | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.config = config
        self._model_factory = model_factory
        self._sleep = sleep
        self._pool = None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The keys of the resolved credential pool (for redaction)."""
        return self._pool.secrets if self._pool is not None else ()

    def check_credentials(self) -> None:
        """Resolve the credential pool now (raises ``CredentialError`` before any model call)."""
        if self._model_factory is None and self._pool is None:
            self._pool = resolve_api_pool(self.config)

    def _default_model(self, batch_index: int) -> Any:
        from membase.clients import build_openai_chat_model

        self.check_credentials()
        assert self._pool is not None
        credential = self._pool.credential_for(batch_index)
        cfg = self.config
        return build_openai_chat_model(
            cfg.model,
            credential.api_key,
            credential.base_url,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            stream=cfg.stream,
            llama_cpp_compat=cfg.llama_cpp_compat,
            timeout=cfg.batch_timeout_s or 600.0,
            max_retries=0,  # retries belong to the batch loop
        )

    def batches(self, cases: Sequence[RenderedCase]) -> list[list[str]]:
        """The numbered case chunks of each batch (``#### Failed Case <n>`` counts over all cases)."""
        size = self.config.batch_size
        numbered = [number_case(case, i + 1) for i, case in enumerate(cases)]
        return [numbered[i : i + size] for i in range(0, len(numbered), size)]

    def fingerprint(self, cases: Sequence[RenderedCase], *, overview: str, statistics: str) -> str:
        """The fingerprint of a run over ``cases`` (see :mod:`toolkits.report.versions`)."""
        return run_fingerprint(
            cases=[c.text for c in cases],
            batch_size=self.config.batch_size,
            overview=overview,
            statistics=statistics,
            prompt_version=PROMPT_VERSION,
            model_settings={"model": self.config.model, "temperature": self.config.temperature,
                            "max_tokens": self.config.max_tokens},
        )

    async def _attempt(self, batch_index: int, system_prompt: str, task: str) -> BatchResult:
        from agentscope.agent import Agent, InjectionConfig, ReActConfig

        from membase.clients import StructuredReply

        reply = StructuredReply()
        usage = reply.usage
        started = time.perf_counter()

        def result(version: ReportVersion | None, failure: str | None, error: BaseException | None = None) -> BatchResult:
            return BatchResult(version=version, failure=failure, usage=usage,
                               seconds=time.perf_counter() - started, error=error)

        try:
            model = (self._model_factory or self._default_model)(batch_index)
            agent = Agent(
                name=REPORT_AGENT_NAME,
                system_prompt=system_prompt,
                model=model,
                react_config=ReActConfig(max_iters=self.config.max_iters, structured_output_grace_iters=1),
                injection_config=InjectionConfig(inject_runtime_state=False),
            )

            drive = reply.drive(agent, task, ReportVersion)
            if self.config.batch_timeout_s is None:
                await drive
            else:
                await asyncio.wait_for(drive, self.config.batch_timeout_s)
        except TimeoutError as exc:
            if self.config.batch_timeout_s is not None and time.perf_counter() - started >= self.config.batch_timeout_s:
                return result(None, f"timeout: no report within {self.config.batch_timeout_s:g} s", exc)
            return result(None, f"model error: {type(exc).__name__}: {_one_line(str(exc))}", exc)
        except Exception as exc:  # noqa: BLE001 - any model/API failure is this attempt's failure
            return result(None, f"model error: {type(exc).__name__}: {_one_line(str(exc))}", exc)
        message = reply.final
        if message is None:
            return result(None, "model error: the reply produced no final message")
        raw = message.structured_output
        if raw is None:
            reason = getattr(message.finished_reason, "value", message.finished_reason)
            if reason == "interrupted" and self.config.batch_timeout_s is not None:
                return result(None, f"timeout: no report within {self.config.batch_timeout_s:g} s")
            return result(None, f"no report: the model finished ({reason}) without a structured report")
        try:
            version = ReportVersion.model_validate(raw)
        except ValueError as exc:
            return result(None, f"invalid report: {_one_line(str(exc))}")
        if not version.report.strip():
            return result(None, "invalid report: the model returned an empty report")
        return result(version, None)

    async def arun(
        self,
        cases: Sequence[RenderedCase],
        *,
        overview: str,
        statistics: str,
        save_folder: str | Path,
        restart: bool = False,
        on_batch: Callable[[int, dict[str, Any]], None] | None = None,
    ) -> ReportOutcome:
        """Write (or resume) the report over ``cases``.

        Args:
            cases: The rendered cases, in the order they are sent.
            overview: Target-system overview text.
            statistics: Statistical summary shown to the model in every batch.
            save_folder: Where versions are saved (``<save_folder>/report_versions``).
            restart: Discard saved versions instead of resuming from them.
            on_batch: Called with ``(batch_number, version_payload)`` after each finished batch
                (resumed batches are not reported).

        Returns:
            The outcome; a batch that fails for good sets ``failure`` instead of raising.

        Raises:
            ValueError: No cases, or the folder holds versions of another run (without ``restart``).
            toolkits._base.CredentialError: No usable credentials (before any model call).
        """
        if not cases:
            raise ValueError("no renderable attributed case to report on")
        batches = self.batches(cases)
        store = VersionStore(Path(save_folder) / VERSIONS_FOLDER, self.fingerprint(cases, overview=overview, statistics=statistics))
        if restart:
            store.clear()
        saved = store.resumable()
        if not saved and store.has_foreign_versions():
            raise ValueError(
                f"{store.folder} holds report versions of another input or settings (or damaged ones); pass "
                "--restart to discard them, or choose another --save-folder"
            )
        saved = saved[: len(batches)]
        if len(saved) < len(batches):
            self.check_credentials()
        costs = {"input_tokens": 0, "output_tokens": 0, "model_calls": 0, "seconds": 0.0, "attempts": 0}
        for data in saved:
            usage = data.get("usage") or {}
            costs["input_tokens"] += int(usage.get("input_tokens", 0))
            costs["output_tokens"] += int(usage.get("output_tokens", 0))
            costs["model_calls"] += int(usage.get("num_calls", 0))
            costs["seconds"] += float(data.get("seconds", 0.0))
            costs["attempts"] += int(data.get("attempts", 1))
        report: str | None = saved[-1]["report"] if saved else None
        paths = [str(store.path_for(i + 1)) for i in range(len(saved))]
        system_prompt = build_system_prompt(overview)
        failure: str | None = None
        done = len(saved)
        for batch_index in range(len(saved), len(batches)):
            chunk = batches[batch_index]
            task = build_task_prompt(
                current_report=report, cases=chunk, statistics=statistics, final=batch_index == len(batches) - 1
            )
            attempts = 0
            batch_usage = {"input_tokens": 0, "output_tokens": 0, "num_calls": 0}
            batch_seconds = 0.0
            outcome: BatchResult | None = None
            for attempt in range(self.config.max_retries + 1):
                if attempt:
                    await self._sleep(self.config.retry_backoff_s * 2 ** (attempt - 1))
                attempts += 1
                outcome = await self._attempt(batch_index, system_prompt, task)
                for key in batch_usage:
                    batch_usage[key] += outcome.usage[key]
                batch_seconds += outcome.seconds
                if outcome.version is not None:
                    break
            costs["input_tokens"] += batch_usage["input_tokens"]
            costs["output_tokens"] += batch_usage["output_tokens"]
            costs["model_calls"] += batch_usage["num_calls"]
            costs["seconds"] += batch_seconds
            costs["attempts"] += attempts
            assert outcome is not None
            if outcome.version is None:
                failure = _cut(redact(
                    f"batch {batch_index + 1}/{len(batches)} failed after {attempts} attempt(s): {outcome.failure}",
                    self.secrets,
                ))  # mask first, then cut
                break
            start = sum(len(b) for b in batches[:batch_index])
            payload = {
                "batches_total": len(batches),
                "case_indices": [c.index for c in cases[start : start + len(chunk)]],
                "query_ids": [c.query_id for c in cases[start : start + len(chunk)]],
                "model": self.config.model,
                "report": redact(outcome.version.report, self.secrets),
                "rationale": redact(outcome.version.rationale, self.secrets),
                "usage": batch_usage,
                "seconds": batch_seconds,
                "attempts": attempts,
            }
            paths.append(str(store.save(batch_index + 1, payload)))
            report = payload["report"]
            done = batch_index + 1
            if on_batch is not None:
                on_batch(done, payload)
        seconds = costs.pop("seconds")
        costs["minutes"] = seconds / 60.0
        return ReportOutcome(
            report=report,
            batches_total=len(batches),
            batches_done=done,
            resumed_batches=len(saved),
            version_paths=paths,
            failure=failure,
            costs=costs,
        )

    def run(self, cases: Sequence[RenderedCase], **kwargs: Any) -> ReportOutcome:
        """Synchronous wrapper of :meth:`arun`."""
        return asyncio.run(self.arun(cases, **kwargs))
