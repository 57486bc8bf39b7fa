"""Adapters from :class:`toolkits.strategies.StrategyContext` to each package's case entry point.

Each adapter imports its package on first call, so a missing optional package only fails the
strategy that needs it (as a recorded per-case failure, with the package named).
"""

from __future__ import annotations

import threading
from typing import Any

from toolkits.metrics import ERROR_TYPES
from toolkits.strategies import StrategyContext

__all__ = ["evidence_flow", "graph_search", "long_context", "operation_block_search"]


async def graph_search(ctx: StrategyContext) -> Any:
    """The graph-search agent of :mod:`graphtrace`."""
    from graphtrace.agent import attribute_case_graph_search

    cfg = ctx.config
    starting_ids = ctx.evidence_ids
    if starting_ids is None:
        evidence_kind = None
    else:
        evidence_kind = "pseudo" if ctx.evidence_is_pseudo else "real"
    custom_prior = ctx.custom_prior_knowledge
    if cfg.evidence_flow_seed:
        starting_ids, custom_prior = _evidence_flow_seed(ctx, starting_ids)
        evidence_kind = evidence_kind or "pseudo"
    return await attribute_case_graph_search(
        ctx.graph,
        ctx.case,
        model=ctx.build_model(),
        timeout=ctx.timeout,
        max_trace_nodes=cfg.max_trace_nodes,
        max_iters=cfg.max_iters,
        starting_node_ids=starting_ids,
        evidence_kind=evidence_kind,
        memory_system=ctx.memory_system,
        custom_prior=custom_prior,
        context_window=cfg.context_window,
        max_context_limit=cfg.max_context_limit,
        keep_recent=cfg.keep_recent,
    )


class _LazyMiniLM:
    """The local MiniLM embedder, loaded on first use (evidence_flow's second opinion on
    paraphrases). Where it is not installed, ``embed`` raises and evidence_flow goes without."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            if self._model is None:
                from toolkits._embeddings import make_embedder

                self._model = make_embedder("local")
        return self._model.embed(texts)


_SECOND_OPINION = _LazyMiniLM()
# One llm-judge factory per run config (its verdict cache is shared by the run's cases).
_LLM_JUDGES: dict[str, Any] = {}
_LLM_JUDGES_LOCK = threading.Lock()


def _llm_judge(ctx: StrategyContext) -> Any:
    """The ``llm`` presence judge on the run's credentials (``evidence_flow_judge_model``, else ``model``)."""
    from membase.clients.chat import ChatClient
    from membase.clients.credentials import CredentialPool
    from toolkits._base import resolve_api_pool
    from toolkits.evidence_flow.judges import LLMJudgeFactory

    cfg = ctx.config
    name = cfg.evidence_flow_judge_model or cfg.model
    key = repr((name, cfg.api_config_path, cfg.base_urls, cfg.cache_dir))
    with _LLM_JUDGES_LOCK:
        factory = _LLM_JUDGES.get(key)
        if factory is None:
            pool = resolve_api_pool(cfg)
            creds = [pool.credential_for(i) for i in range(pool.size)]
            cache = f"{cfg.cache_dir}/evidence_flow_judge" if cfg.cache_dir else None
            client = ChatClient(name, credentials=CredentialPool([c.api_key for c in creds], [c.base_url for c in creds]),
                                cache_dir=cache)
            factory = _LLM_JUDGES[key] = LLMJudgeFactory(model=client)
    return factory


def _judge(ctx: StrategyContext) -> Any:
    name = getattr(ctx.config, "evidence_flow_judge", "rules")
    if name == "llm":
        return _llm_judge(ctx)
    if name == "embedding":
        from toolkits.evidence_flow.judges import EmbeddingJudgeFactory

        return EmbeddingJudgeFactory(embedder=_SECOND_OPINION)
    return name


def _run_evidence_flow(ctx: StrategyContext) -> dict[str, Any]:
    """The no-LLM attribution of the case with exactly the evidence the runner provided."""
    from toolkits.evidence_flow import attribute_case_evidence_flow

    return attribute_case_evidence_flow(
        ctx.graph,
        ctx.case,
        ctx.evidence_ids,
        evidence_is_pseudo=bool(ctx.evidence_is_pseudo),
        # no starting nodes given (--no-provide-starting-nodes): never read the annotations
        allow_annotated_fallback=ctx.evidence_ids is not None,
        judge=_judge(ctx),
        triage=getattr(ctx.config, "evidence_flow_triage", True),
    )


def _evidence_flow_seed(ctx: StrategyContext, starting_ids: list[str] | None) -> tuple[list[str], str]:
    """Starting ids extended by the evidence_flow frontier, and the prior text plus its hint.

    The hint is appended to the prior the agent would have had (the custom one, else the built-in
    prior of the memory system), so seeding never removes guidance.
    """
    from graphtrace.prompts import SYSTEM_PRIOR_INSTRUCTIONS
    from toolkits.evidence_flow import evidence_flow_seed

    result = _run_evidence_flow(ctx)
    seed = evidence_flow_seed(result, max_nodes=max(1, ctx.config.max_trace_nodes // 2))
    ids = list(dict.fromkeys([*(starting_ids or []), *seed["frontier"]]))
    base = ctx.custom_prior_knowledge or SYSTEM_PRIOR_INSTRUCTIONS.get(ctx.memory_system or "", "")
    prior = f"{base}\n\n{seed['hint']}" if base else seed["hint"]
    return ids, prior


async def operation_block_search(ctx: StrategyContext) -> Any:
    """The flat-log (OBS) agent of :mod:`obstrace`."""
    from obstrace.agent import attribute_case_obs

    cfg = ctx.config
    return await attribute_case_obs(
        ctx.graph,
        ctx.case,
        model=ctx.build_model(),
        evidence_nodes=ctx.evidence_ids,
        max_iters=cfg.max_iters,
        context_window=cfg.context_window,
        keep_recent=cfg.keep_recent,
        max_context_limit=cfg.max_context_limit,
        timeout=ctx.timeout,
        identities=cfg.obs_identities,
    )


async def long_context(ctx: StrategyContext) -> Any:
    """The long-context baseline of :mod:`obstrace` (whole flattened trace in one prompt)."""
    from obstrace.long_context import attribute_case_long_context

    cfg = ctx.config
    return await attribute_case_long_context(
        ctx.graph,
        ctx.case,
        model=ctx.build_model(),
        evidence_nodes=ctx.evidence_ids,
        max_iters=cfg.max_iters,
        full_log_token_limit=cfg.full_log_token_limit,
        timeout=ctx.timeout,
    )


class _Outcome:
    """Minimal outcome for strategies that return plain dicts."""

    def __init__(self, prediction: dict[str, str] | None, failure: str | None,
                 details: dict[str, Any] | None = None) -> None:
        self.prediction = prediction
        self.failure = failure
        self.details = details
        self.usage = {"input_tokens": 0, "output_tokens": 0, "num_calls": 0}


#: What of an evidence_flow result goes into the output record as its ``evidence_flow`` object
#: (the report's loss funnel reads the trail there).
_FLOW_DETAIL_KEYS = ("status", "confidence", "trail", "evidence", "best_guess", "judge", "triage")


def evidence_flow(ctx: StrategyContext) -> Any:
    """The no-LLM attributor (:mod:`toolkits.evidence_flow`); runs in a worker thread.

    A result with a known error type is a prediction (its op id may be empty when the flow
    could name the stage but not the operation); anything else — an abstention below the
    confidence threshold, evidence that cannot be found, an unknown query — is a failure carrying
    the attributor's status and reason, so it is counted wrong, never as a guess.
    """
    result = _run_evidence_flow(ctx)
    details = {"evidence_flow": {k: result[k] for k in _FLOW_DETAIL_KEYS if k in result}}
    error_type = result.get("error_type")
    if error_type in ERROR_TYPES and result.get("status") in ("attributed", "op_not_found"):
        outcome = _Outcome(
            {"error_type": error_type, "op_id": result.get("op_id") or "", "reason": str(result.get("reason", ""))},
            None,
            details,
        )
    else:
        outcome = _Outcome(None, f"evidence_flow {result.get('status', 'failed')}: {result.get('reason', '')}", details)
    judge = result.get("judge") or {}
    outcome.usage = {"input_tokens": judge.get("input_tokens", 0), "output_tokens": judge.get("output_tokens", 0),
                     "num_calls": judge.get("calls", 0)}
    return outcome
