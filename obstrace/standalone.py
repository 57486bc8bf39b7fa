"""The one-call OBS API (spec §4.4): a flat log in, an attribution dict out.

``build_obstrace_agent(trace_text, ...)`` returns an :class:`ObsTraceAgent` that attributes
failed cases against one flattened trace::

    from obstrace import build_obstrace_agent, flatten_execution_graph

    agent = build_obstrace_agent(flatten_execution_graph(graph), api_config_path="api_config.json")
    out = agent.solve_case({"question": "...", "golden_answer": "...", "prediction": "..."})
    print(out["error_type"], out["op_id"], out["warning"], out["usage"])

Each ``solve_case`` runs a fresh agentscope agent (no memory carried over from the previous case)
over the same log. The answer is validated by ``finish_attribution`` (the model sees a failed
check and can answer again); a final answer that still fails, a model error or no answer within
``max_iters`` gives empty ``error_type``/``op_id``/``reason`` and a ``warning`` saying why —
``solve_case`` never raises for model misbehaviour.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graphtrace.prompts import (
    TASK_PROMPT_TEMPLATES,
    TRACE_ATTRIBUTION_INSTRUCTIONS,
    TRACE_SEARCH_SYSTEM_PROMPT,
)
from obstrace.notebook import CCTraceNotebook, EvidenceRow

__all__ = ["ObsTraceAgent", "build_obstrace_agent"]

AGENT_NAME = "obstrace"
DEFAULT_TASK_TEMPLATE = TASK_PROMPT_TEMPLATES["operation_block_search"]


def _field(case: Any, *names: str) -> str:
    for name in names:
        value = case.get(name) if isinstance(case, Mapping) else getattr(case, name, None)
        if value is not None:
            return value if isinstance(value, str) else str(value)
    raise ValueError(f"the case has no {' or '.join(repr(n) for n in names)}")


def _evidence_rows(items: Sequence[Any] | None) -> list[EvidenceRow]:
    rows: list[EvidenceRow] = []
    for item in items or ():
        if isinstance(item, EvidenceRow):
            rows.append(item)
            continue
        if not isinstance(item, Mapping) or "value" not in item:
            raise ValueError(f"initial_ranked_ops entries need a 'value' (and 'created_at'), got {item!r}")
        rows.append(EvidenceRow(rank=int(item.get("rank", len(rows) + 1)), created_at=str(item.get("created_at", "")),
                                value=str(item["value"])))
    return rows


@dataclass(kw_only=True)
class ObsTraceAgent:
    """The OBS agent bound to one flat log (built by :func:`build_obstrace_agent`)."""

    notebook: CCTraceNotebook
    """The log, its index and the evidence shown in the hint."""
    model: Any = None
    """A chat model given by the caller (used for every case), or None."""
    model_factory: Callable[[], Any] | None = None
    """Builds an endpoint model per case (its HTTP client is closed after the case), when
    ``model`` is None."""
    system_prompt: str = TRACE_SEARCH_SYSTEM_PROMPT
    task_template: str = DEFAULT_TASK_TEMPLATE
    """Filled with ``instructions``, ``question``, ``golden_answer``, ``prediction``."""
    attribution_instructions: str = TRACE_ATTRIBUTION_INSTRUCTIONS
    max_iters: int = 200
    context_window: int = 272_000
    keep_recent: int = 3
    enable_compression: bool = True
    timeout: float | None = None
    """Wall-clock limit of one case in seconds (None: none)."""

    def task_text(self, case: Any) -> str:
        """The task prompt of a case (``question``/``query``, ``golden_answer``, ``prediction``)."""
        return self.task_template.format(
            instructions=self.attribution_instructions,
            question=_field(case, "question", "query"),
            golden_answer=_field(case, "golden_answer"),
            prediction=_field(case, "prediction"),
        )

    def _agent(self, notebook: CCTraceNotebook, model: Any) -> Any:
        from obstrace.agent import build_obs_agent

        window = self.context_window if self.enable_compression else int(0.9 * model.context_size)
        return build_obs_agent(
            notebook,
            model=model,
            max_iters=self.max_iters,
            context_window=max(1, window),
            keep_recent=self.keep_recent,
            system_prompt=self.system_prompt,
        )

    async def solve_case_async(self, case: Any) -> dict[str, Any]:
        """Attribute one case.

        Args:
            case: A mapping or object with ``question`` (or ``query``), ``golden_answer`` and
                ``prediction``.

        Returns:
            ``question``, ``golden_answer``, ``prediction``, ``error_type``, ``op_id``, ``reason``,
            ``warning`` ("" when the answer passed every check), ``trace_stats``
            (``operation_count``), ``usage`` (``input_tokens``, ``output_tokens``,
            ``total_tokens``, ``num_calls``) and ``elapsed_seconds``.

        Raises:
            ValueError: If the case lacks one of the three texts.
        """
        from obstrace.agent import run_checked_attribution

        started = time.perf_counter()
        task = self.task_text(case)
        notebook = self.notebook.fresh()
        if self.model is None and self.model_factory is None:
            raise ValueError("ObsTraceAgent needs a model or a model_factory")
        model = self.model if self.model is not None else self.model_factory()
        try:
            outcome = await run_checked_attribution(
                self._agent(notebook, model), task, notebook.index.has_op, timeout=self.timeout
            )
        finally:
            if model is not self.model:
                # a client built for this case belongs to this event loop: close it here
                close = getattr(getattr(model, "client", None), "close", None)
                if close is not None:
                    await close()
        prediction = outcome.prediction
        usage = {k: int(outcome.usage.get(k, 0)) for k in ("input_tokens", "output_tokens", "num_calls")}
        return {
            "question": _field(case, "question", "query"),
            "golden_answer": _field(case, "golden_answer"),
            "prediction": _field(case, "prediction"),
            "error_type": prediction.error_type if prediction else "",
            "op_id": prediction.op_id if prediction else "",
            "reason": prediction.reason if prediction else "",
            "warning": "" if prediction else (outcome.failure or "no attribution"),
            "trace_stats": {"operation_count": len(notebook.index)},
            "usage": {**usage, "total_tokens": usage["input_tokens"] + usage["output_tokens"]},
            "elapsed_seconds": time.perf_counter() - started,
        }

    def solve_case(self, case: Any) -> dict[str, Any]:
        """Synchronous :meth:`solve_case_async` (refuses to run inside an event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.solve_case_async(case))
        raise RuntimeError("solve_case() cannot run inside an event loop: await solve_case_async() instead")


def build_obstrace_agent(
    flattened_trace_text: str,
    *,
    system_prompt: str = TRACE_SEARCH_SYSTEM_PROMPT,
    task_template: str = DEFAULT_TASK_TEMPLATE,
    attribution_instructions: str = TRACE_ATTRIBUTION_INSTRUCTIONS,
    initial_ranked_ops: Sequence[Any] | None = None,
    api_config_path: str | None = None,
    endpoint_index: int | None = None,
    model: str = "gpt-4.1-mini",
    temperature: float = 1.0,
    max_iters: int = 200,
    context_window: int = 272_000,
    stream: bool = False,
    enable_compression: bool = True,
    chat_model: Any = None,
    api_key: str | None = None,
    base_url: str | None = None,
    max_context_limit: int = 1_000_000,
    keep_recent: int = 3,
    timeout: float | None = None,
) -> ObsTraceAgent:
    """Build the OBS agent for one flattened trace (the reference's standalone entry point).

    Credentials, in order: ``chat_model`` (any agentscope 2.x chat model, e.g. the library's
    ``ScriptedChatModel``; nothing else is read), ``api_config_path`` (the project's
    ``{"api_keys": [...], "base_urls": [...]}`` file; ``endpoint_index`` picks the pair, default
    the first), ``api_key``/``base_url``, else ``OPENAI_API_KEY`` with ``OPENAI_BASE_URL``.

    Args:
        flattened_trace_text: The log (``flatten_execution_graph(graph)`` is the paper's form).
        system_prompt: System prompt of the agent.
        task_template: Task prompt with ``{instructions}``, ``{question}``, ``{golden_answer}`` and
            ``{prediction}`` fields.
        attribution_instructions: Text put into ``{instructions}``.
        initial_ranked_ops: Starting evidence shown in the hint, best first: ``EvidenceRow``
            objects or mappings with ``value`` and ``created_at`` (no ids: the paper's form).
        api_config_path: Credential file.
        endpoint_index: Which key/URL pair of the file to use (range-checked).
        model: Model name at the endpoint.
        temperature: Sampling temperature.
        max_iters: ReAct iterations per case.
        context_window: Tokens that trigger context compression.
        stream: Stream model responses.
        enable_compression: False moves the compression trigger to agentscope's maximum (90 % of
            the context); agentscope 2.x has no switch that turns the guard off.
        chat_model: A ready chat model, used for every case (overrides every credential argument).
            An HTTP model's client belongs to one event loop: with one, call ``solve_case_async``
            within one loop. Without it a model is built per case and its client closed after it,
            so ``solve_case`` may be called many times (each call runs its own event loop).
        api_key: Key when no file is given.
        base_url: Endpoint when no file is given.
        max_context_limit: Context size of a model built here.
        keep_recent: Tool calls kept verbatim through a compression.
        timeout: Wall-clock limit of one case in seconds.

    Returns:
        The :class:`ObsTraceAgent`.

    Raises:
        ValueError: For an empty trace, a bad ``endpoint_index`` or non-positive limits.
        toolkits._base.CredentialError: If no credentials can be found (a ``ValueError``).
    """
    if not isinstance(flattened_trace_text, str) or not flattened_trace_text.strip():
        raise ValueError("flattened_trace_text is empty: pass flatten_execution_graph(graph)")
    if max_iters < 1 or context_window < 1:
        raise ValueError(f"max_iters and context_window must be >= 1, got {max_iters} and {context_window}")
    factory = None
    if chat_model is None:
        api_key, base_url = _endpoint(api_config_path, endpoint_index, api_key, base_url)

        def factory() -> Any:
            from membase.clients import build_openai_chat_model

            return build_openai_chat_model(
                model, api_key, base_url, temperature=temperature, stream=stream, context_size=max_context_limit
            )

    notebook = CCTraceNotebook(flattened_trace_text, _evidence_rows(initial_ranked_ops))
    return ObsTraceAgent(
        notebook=notebook,
        model=chat_model,
        model_factory=factory,
        system_prompt=system_prompt,
        task_template=task_template,
        attribution_instructions=attribution_instructions,
        max_iters=max_iters,
        context_window=context_window,
        keep_recent=keep_recent,
        enable_compression=enable_compression,
        timeout=timeout,
    )


def _endpoint(
    api_config_path: str | None, endpoint_index: int | None, api_key: str | None, base_url: str | None
) -> tuple[str | None, str | None]:
    """The key and base URL of the endpoint (file, explicit values, then the environment)."""
    import os

    if api_config_path is not None:
        # the project's one reader of api_config.json (validation and messages included)
        from membase.clients import ApiPool

        pool = ApiPool.from_api_config(api_config_path)
        index = 0 if endpoint_index is None else endpoint_index
        if not 0 <= index < pool.size:
            raise ValueError(f"endpoint_index {endpoint_index} is out of range: {api_config_path} has {pool.size} endpoint(s)")
        credential = pool.credential_for(index)
        api_key, base_url = credential.api_key, credential.base_url
    elif api_key is None and base_url is None:
        api_key = os.environ.get("OPENAI_API_KEY")
        base_url = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        if not api_key and not base_url:
            from membase.clients import CredentialError

            raise CredentialError(
                "no credentials for the OBS agent: pass chat_model=, api_config_path=, api_key=/base_url=, "
                "or set OPENAI_API_KEY / OPENAI_BASE_URL"
            )
    return api_key, base_url
