"""Automatic attribution of one question from the viewer.

* offline: ``toolkits.evidence_flow.attribute_case_evidence_flow`` (no model, a fraction of a
  second); its result is read defensively — ``error_type``, ``op_id``, ``reason``, ``status`` and
  ``trail`` are used, any other key (e.g. a ``confidence``) is shown as is;
* with a model: one case through ``toolkits.runner.MemTraceRunner`` with an LLM strategy
  (``graph_search`` by default), when credentials resolve (``--api-config`` or the
  ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` environment; ``toolkits._base`` resolves them).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .loader import ParsedGraph
from .parser import QARecord

__all__ = [
    "EVIDENCE_MODES",
    "LLM_STRATEGIES",
    "MODEL_FACTORY",
    "LLMSettings",
    "case_for",
    "llm_availability",
    "memory_system_of",
    "run_evidence_flow",
    "run_llm_attribution",
    "suggested_edge",
    "warm_evidence_flow",
]

LLM_STRATEGIES = ("graph_search", "operation_block_search", "long_context")
_PROJECT_TO_SYSTEM = {"mem0": "mem0", "naiverag": "rag", "rag": "rag", "long-context": "long_context",
                      "long_context": "long_context", "evermemos": "evermemos"}
_KNOWN_KEYS = ("error_type", "op_id", "reason", "status", "trail")

MODEL_FACTORY: Callable[[Any], Any] | None = None
"""Chat-model factory handed to the runner (None = the runner's OpenAI-compatible default).
Tests set it to a factory of ``membase.clients.ScriptedChatModel``."""


def case_for(qa: QARecord, graph_path: str = "") -> Any:
    """The ``FailedQueryCase`` of a question (its benchmark annotation when it has one)."""
    from toolkits.bench_utils import FailedQueryCase

    metadata: dict[str, Any] = {"graph_path": graph_path}
    if qa.annotation is not None:
        metadata["annotation"] = qa.annotation
    return FailedQueryCase(
        query_full_node_id=qa.query_full_node_id,
        query=qa.question,
        golden_answer=qa.case_golden_answer,
        prediction=str((qa.annotation or {}).get("prediction", qa.prediction or "")),
        source_evidence_full_node_ids=qa.case_evidence_ids,
        judge_response=qa.judge_response,
        metadata=metadata,
    )


def memory_system_of(pg: ParsedGraph) -> str | None:
    """The built-in prior that fits the graph (from its ``project_id`` / layer type)."""
    for key in (pg.index.project_id, pg.index.metadata.get("layer_type"), pg.path.parent.name):
        if isinstance(key, str) and key.lower() in _PROJECT_TO_SYSTEM:
            return _PROJECT_TO_SYSTEM[key.lower()]
    return None


def warm_evidence_flow(pg: ParsedGraph) -> threading.Thread:
    """Index the graph for ``evidence_flow`` in a background thread, so that the first run on a
    big graph does not pay for it (about a second of CPU on a 46k-node graph). A graph the
    attributor cannot read is left to :func:`run_evidence_flow`, which reports it."""
    from toolkits.evidence_flow import prepare_graph

    def warm() -> None:
        try:
            prepare_graph(pg.network)
        except Exception:  # noqa: BLE001, S110 - the run itself reports what is wrong with the graph
            return
        gc.freeze()  # the index lives as long as the graph (see views._graph)

    thread = threading.Thread(target=warm, name=f"evidence_flow warm-up {pg.path.name}", daemon=True)
    thread.start()
    return thread


EVIDENCE_MODES = ("retrieved", "annotated")
"""Starting evidence of evidence_flow: ``retrieved`` is ``run_error_attribution.py``'s default
(pseudo source evidence from the CLI's default retrieval), ``annotated`` its
``--starting-nodes-type source_evidence``."""
_pool_lock = threading.Lock()
_pools: dict[str, Any] = {}


def _retriever_pool(config: Any) -> Any:
    """One retriever pool per process, so a graph's retrieval index is built once, not per click."""
    from toolkits.runner import MemTraceRunner

    with _pool_lock:
        key = config.exploration_strategy
        if key not in _pools:
            _pools[key] = MemTraceRunner(config).retriever_pool()
        return _pools[key]


def _normalise(raw: Any, elapsed: float, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raw = {"status": "error", "reason": f"evidence_flow returned {type(raw).__name__}, not a dict"}
    trail = raw.get("trail")
    steps = [dict(s) for s in trail if isinstance(s, dict)] if isinstance(trail, list) else []
    op_id = raw.get("op_id")
    return {
        "error_type": raw.get("error_type") or None,
        "op_id": op_id if isinstance(op_id, str) and op_id else None,
        "reason": str(raw.get("reason") or ""),
        "status": str(raw.get("status") or ("attributed" if raw.get("error_type") else "unknown")),
        "trail": steps,
        "extra": {**{k: v for k, v in raw.items() if k not in _KNOWN_KEYS}, **(extra or {})},
        "elapsed_s": elapsed,
    }


def run_evidence_flow(pg: ParsedGraph, qa: QARecord, mode: str | None = None) -> dict[str, Any]:
    """Run the no-LLM attributor; never raises (an exception becomes ``status: "error"``).

    Args:
        pg: The graph.
        qa: The question.
        mode: ``None`` calls the attributor directly on the annotated evidence (no retrieval, no
            second opinion); ``"retrieved"`` / ``"annotated"`` run it exactly as
            ``run_error_attribution.py --exploration-strategy evidence_flow`` does with that
            starting evidence (:data:`EVIDENCE_MODES`), so the page and the CLI agree.

    Returns:
        ``{error_type, op_id, reason, status, trail: [step dicts], extra: {other keys},
        elapsed_s}``.
    """
    if mode is not None:
        return _run_as_cli(pg, qa, mode)
    from toolkits.evidence_flow import attribute_case_evidence_flow

    case = case_for(qa, str(pg.path))
    started = time.perf_counter()
    try:
        raw = attribute_case_evidence_flow(pg.network, case, case.source_evidence_full_node_ids or None)
    except Exception as exc:  # noqa: BLE001 - shown in the page, the app keeps running
        raw = {"status": "error", "reason": f"evidence_flow failed: {type(exc).__name__}: {exc}"}
    return _normalise(raw, time.perf_counter() - started)


def _run_as_cli(pg: ParsedGraph, qa: QARecord, mode: str) -> dict[str, Any]:
    from toolkits.runner import MemTraceConfig, MemTraceRunner

    if mode not in EVIDENCE_MODES:
        raise ValueError(f"evidence mode {mode!r} is not one of {', '.join(EVIDENCE_MODES)}")
    case = case_for(qa, str(pg.path))
    started = time.perf_counter()
    try:
        config = MemTraceConfig(exploration_strategy="evidence_flow", model="none")
        runner = MemTraceRunner(config, retriever_pool=_retriever_pool(config))
        result = runner.run([case], pg.network, use_source_evidence_nodes=mode == "annotated",
                            use_pseudo_source_evidence=mode == "retrieved").results[0]
    except Exception as exc:  # noqa: BLE001 - shown in the page, the app keeps running
        raw: dict[str, Any] = {"status": "error", "reason": f"evidence_flow failed: {type(exc).__name__}: {exc}"}
        return _normalise(raw, time.perf_counter() - started)
    details = dict((result.details or {}).get("evidence_flow") or {})
    raw = {**details, **(result.prediction or {})}
    if result.failure:
        raw.update(status="error", reason=result.failure)
    extra = {"starting_evidence": f"{mode}: {', '.join(result.evidence_ids or []) or 'none'}"}
    return _normalise(raw, time.perf_counter() - started, extra)


def suggested_edge(pg: ParsedGraph, op_id: str | None, trail: list[dict[str, Any]] | None = None) -> str | None:
    """An edge of ``op_id`` to annotate: the one touching the last trail node checked at that op,
    else the op's first edge."""
    if not op_id:
        return None
    edges = pg.index.op_edges.get(op_id) or []
    if not edges:
        return None
    for step in reversed(trail or []):
        node = step.get("node_id")
        if step.get("op_id") == op_id and node:
            for e in edges:
                if node in (e.target, e.source):
                    return e.edge_id
    return edges[0].edge_id


@dataclass(frozen=True, kw_only=True)
class LLMSettings:
    """How the app runs an LLM strategy."""

    model: str = "gpt-4.1-mini"
    api_config: str | None = None
    strategy: str = "graph_search"
    case_timeout_s: float = 900.0


def llm_availability(settings: LLMSettings, environ: dict[str, str] | None = None) -> tuple[bool, str]:
    """Whether credentials resolve, and the note the page shows."""
    from toolkits._base import AgentBaseConfig, CredentialError, resolve_api_pool

    try:
        pool = resolve_api_pool(AgentBaseConfig(api_config_path=settings.api_config), environ)
    except CredentialError as exc:
        if settings.api_config:
            return False, f"LLM attribution is off: {exc}"
        return False, ("LLM attribution is off: no credentials. Start the app with `--api-config api_config.json` "
                       '(`{"api_keys": [...], "base_urls": [...]}`) or set OPENAI_BASE_URL and OPENAI_API_KEY.')
    return True, f"{settings.strategy} with {settings.model} on {pool.size} endpoint(s)"


def run_llm_attribution(pg: ParsedGraph, qa: QARecord, settings: LLMSettings,
                        model_factory: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Attribute one question with an LLM strategy; never raises.

    Returns:
        ``{prediction: {error_type, op_id, reason} | None, failure: str | None, usage, elapsed_s,
        strategy, model}``.
    """
    from toolkits.runner import MemTraceConfig, MemTraceRunner

    case = case_for(qa, str(pg.path))
    out: dict[str, Any] = {"prediction": None, "failure": None, "usage": {}, "elapsed_s": 0.0,
                           "strategy": settings.strategy, "model": settings.model}
    started = time.perf_counter()
    try:
        config = MemTraceConfig(model=settings.model, api_config_path=settings.api_config,
                                exploration_strategy=settings.strategy, max_retries=1,
                                case_timeout_s=settings.case_timeout_s, retrieval_type="sparse")
        runner = MemTraceRunner(config, model_factory=model_factory or MODEL_FACTORY)
        evidence = bool(case.source_evidence_full_node_ids)
        report = runner.run([case], pg.network, use_source_evidence_nodes=evidence,
                            use_pseudo_source_evidence=not evidence, memory_system=memory_system_of(pg))
        result = report.results[0]
        out.update(prediction=result.prediction, failure=result.failure, usage=dict(result.usage))
    except Exception as exc:  # noqa: BLE001 - credentials, imports, …: shown in the page
        out["failure"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"
    out["elapsed_s"] = time.perf_counter() - started
    return out
