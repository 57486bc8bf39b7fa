"""Mem0v3 layer: the real mem0ai 2.x (its additive "v3" pipeline), traced.

mem0ai 2.x replaced the two-prompt pipeline of 1.0.5 (fact extraction, then ADD/UPDATE/DELETE)
with one additive extraction call per message: it reads the recent messages and the existing
memories most similar to the new message and only ever ADDs (no UPDATE or DELETE decision); new
texts whose hash an existing memory already has are dropped; search fuses the semantic score with
BM25 and entity boosts under a semantic threshold. Its one prompt knob is `custom_instructions`
(appended to the extraction prompt); 2.x no longer reads `custom_fact_extraction_prompt` or
`custom_update_memory_prompt`, which is why this is a layer of its own (see docs/mem0v3.md).

mem0ai 2.x conflicts with the 1.0.5 pin of the `Mem0` layer: install it in its own venv with
`pip install -e ".[mem0v3]"`. Our chat model and embedder are plugged in through mem0's provider
factories (`mem0_adapters`, unchanged between the two releases); the vector store is qdrant local
mode under `save_dir/qdrant`; the history database is `save_dir/history.db`. Tracing is applied
from outside (`mem0v3_tracing.Mem0v3Tracer` and `mem0v3_search_tracing.Mem0v3SearchTracer`
patch specs). Failure handling is the Mem0 layer's:
one message's failure is recorded in `layer.failures` and the run continues; fatal client errors
are raised.
"""

from __future__ import annotations

import logging
import os
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from membase.exceptions import FATAL_ERRORS, ConfigError
from membase.layers._common import build_chat_client, build_layer_embedder, registered_message, usage_report
from membase.layers._mem0_store import Mem0StoreMixin
from membase.layers.base import MemBaseConfig, MemBaseLayer
from membase.layers.mem0 import metadata_suffix, reject_ignored_keys
from membase.layers.tracing import query_variable
from membase.types import MemoryEntry, Message
from membase.utils.patching import MonkeyPatcher, PatchSpec

__all__ = ["INSTALL_HINT", "Mem0v3Config", "Mem0v3Layer", "import_mem0v3", "require_mem0v3"]

logger = logging.getLogger(__name__)

INSTALL_HINT = (
    "python -m venv .venv-mem0v3 && .venv-mem0v3/bin/pip install -e '.[mem0v3]' "
    "(mem0ai 2.x conflicts with the mem0ai 1.0.5 of the [mem0] extra: give it its own venv)"
)


def require_mem0v3() -> str:
    """The installed mem0ai version when it is 2.x.

    Raises:
        ConfigError: mem0ai is missing or not 2.x; the message is one line with the install command.
    """
    try:
        found = version("mem0ai")
    except PackageNotFoundError:
        found = None
    if found is None or not found.split(".", 1)[0] == "2":
        have = "not installed" if found is None else f"mem0ai {found} is installed"
        raise ConfigError(f"the Mem0v3 layer needs mem0ai 2.x ({have}): {INSTALL_HINT}")
    return found


def import_mem0v3(mem0_dir: str | Path | None = None) -> Any:
    """Import mem0ai 2.x with telemetry off and its folder under our control.

    Raises:
        ConfigError: mem0ai 2.x is not installed, or mem0 was imported earlier with telemetry on.
    """
    require_mem0v3()
    os.environ["MEM0_TELEMETRY"] = "False"
    if mem0_dir is not None and not os.environ.get("MEM0_DIR"):
        os.environ["MEM0_DIR"] = str(mem0_dir)
    import mem0
    import mem0.memory.telemetry as telemetry

    if telemetry.MEM0_TELEMETRY:
        raise ConfigError(
            "mem0 was imported before membase could switch its telemetry off; set MEM0_TELEMETRY=False "
            "in the environment before anything imports mem0"
        )
    from membase.layers.mem0_adapters import register_providers

    register_providers()
    return mem0


class Mem0v3Config(MemBaseConfig):
    """Mem0v3 layer configuration (JSON keys of the layer-config file)."""

    llm_provider: Literal["openai", "fake"] = "openai"
    """`openai`: any OpenAI-compatible endpoint; `fake`: the deterministic `mem0v3_fake` model."""
    llm_model: str = "gpt-4.1-mini"
    llm_config: dict[str, Any] = Field(default_factory=dict)
    """`temperature` (0.0), `max_tokens` (2000), `api_key`, `base_url`, `api_config_path`, `cache_dir`."""
    embedder_provider: Literal["huggingface", "minilm", "openai", "fake"] = "huggingface"
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_model_dims: int = Field(384, ge=1, strict=True)
    embedding_config: dict[str, Any] = Field(default_factory=dict)
    """`base_url`, `api_key` for an OpenAI-compatible embedding endpoint."""
    collection_name: str | None = None
    """qdrant collection; None uses the user id."""
    qdrant_path: str | None = None
    """qdrant local folder; None uses `save_dir/qdrant`; `:memory:` keeps nothing on disk."""
    history_db_path: str | None = None
    """mem0's SQLite history (and its recent-message buffer); None uses `save_dir/history.db`."""
    custom_instructions: str | None = None
    """Appended to the additive extraction prompt (the layer's optimization target)."""
    search_threshold: float = Field(0.1, ge=0.0, le=1.0)
    """mem0's minimum semantic score for a search candidate (its default, 0.1)."""

    @classmethod
    def check_requirements(cls) -> None:
        """Fail before any trajectory starts when mem0ai 2.x is not installed."""
        require_mem0v3()

    def get_llm_models(self) -> list[str]:
        """The chat model this layer calls."""
        return [self.llm_model]


def _build_chat_model(config: Mem0v3Config) -> Any:
    if config.llm_provider == "fake":
        from membase.clients.cached import cached
        from membase.layers.mem0v3_fake import make_mem0v3_fake

        return cached(make_mem0v3_fake(model=config.llm_model), config.llm_config.get("cache_dir"))
    opts = config.llm_config
    return build_chat_client(
        config.llm_model,
        api_config_path=opts.get("api_config_path"),
        api_key=opts.get("api_key"),
        base_url=opts.get("base_url"),
        cache_dir=opts.get("cache_dir"),
    )


class Mem0v3Layer(Mem0StoreMixin, MemBaseLayer):
    """mem0ai 2.x behind the `MemBaseLayer` interface."""

    layer_type = "Mem0v3"
    config_cls = Mem0v3Config

    def __init__(self, config: Mem0v3Config, *, chat_model: Any = None, embedder: Any = None) -> None:
        """Build the layer.

        Args:
            config: the layer config.
            chat_model: overrides the model built from the config (any `complete(...)` model).
            embedder: overrides the embedder built from the config.
        """
        super().__init__(config)
        import_mem0v3(self.save_path.resolve().parent / ".mem0")
        self.save_path.mkdir(parents=True, exist_ok=True)
        self.chat_model = chat_model if chat_model is not None else _build_chat_model(config)
        self.embedder = embedder if embedder is not None else build_layer_embedder(
            config.embedder_provider, config.embedding_model, config.embedding_model_dims, **config.embedding_config
        )
        self.failures: list[dict[str, str]] = []
        self._qdrant: Any = None
        self.memory: Any = None
        try:
            self.memory = self._build_memory()
            from membase.layers.mem0v3_search_tracing import Mem0v3SearchTracer
            from membase.layers.mem0v3_tracing import Mem0v3Tracer

            embedding_name = getattr(self.embedder, "model_name", "unknown")
            self.tracer = Mem0v3Tracer(self.memory, llm_model=config.llm_model, embedding_model=embedding_name)
            self.search_tracer = Mem0v3SearchTracer(self.memory, embedding_model=embedding_name)
        except BaseException:
            self.cleanup()  # the local qdrant client holds a folder lock: release it
            raise

    def _build_memory(self) -> Any:
        from mem0 import Memory
        from mem0.configs.base import MemoryConfig
        from mem0.embeddings.configs import EmbedderConfig
        from mem0.llms.configs import LlmConfig
        from mem0.vector_stores.configs import VectorStoreConfig
        from qdrant_client import QdrantClient

        from membase.layers.mem0_adapters import EMBEDDER_KEY, PROVIDER

        cfg = self.config
        opts = cfg.llm_config
        qdrant_path = cfg.qdrant_path or str(self.save_path / "qdrant")
        self._qdrant = QdrantClient(":memory:") if qdrant_path == ":memory:" else QdrantClient(path=qdrant_path)
        # mem0's config validators only know their own providers; ours is registered in the factories.
        llm = LlmConfig.model_construct(
            provider=PROVIDER,
            config={
                "chat_model": self.chat_model,
                "model": cfg.llm_model,
                "temperature": opts.get("temperature", 0.0),
                "max_tokens": opts.get("max_tokens", 2000),
            },
        )
        embedder = EmbedderConfig.model_construct(
            provider=PROVIDER,
            config={
                "model": getattr(self.embedder, "model_name", cfg.embedding_model),
                "embedding_dims": cfg.embedding_model_dims,
                "model_kwargs": {EMBEDDER_KEY: self.embedder},
            },
        )
        plain_fields = {
            "history_db_path": cfg.history_db_path or str(self.save_path / "history.db"),
            "custom_instructions": cfg.custom_instructions,
        }
        hint = "the Mem0v3 layer needs mem0ai 2.x; for mem0ai 1.0.5 use the Mem0 layer"
        reject_ignored_keys(MemoryConfig, plain_fields, hint=hint)
        memory_config = MemoryConfig(
            llm=llm,
            embedder=embedder,
            vector_store=VectorStoreConfig(
                provider="qdrant",
                config={
                    "collection_name": cfg.collection_name or cfg.user_id,
                    "embedding_model_dims": cfg.embedding_model_dims,
                    "client": self._qdrant,
                },
            ),
            **plain_fields,
        )
        with warnings.catch_warnings():
            # mem0 asks the (local) qdrant for payload indexes, which local mode ignores with a warning.
            warnings.simplefilter("ignore", UserWarning)
            memory = Memory(memory_config)
        try:
            reject_ignored_keys(MemoryConfig, plain_fields, applied=memory.config, hint=hint)
        except ConfigError:
            memory.db.close()  # the caller's cleanup never sees this Memory
            raise
        return memory

    # -- ingestion ---------------------------------------------------------------------------
    def add_message(self, message: Message, **kwargs: Any) -> None:
        """Send one message through mem0's additive `add`.

        A failure is appended to `failures` as `{"message_id", "error"}` and the run continues;
        fatal client errors (`FATAL_ERRORS`) are raised, also when mem0 wrapped or swallowed them.
        """
        content = message.content + metadata_suffix(message)
        metadata = {**message.metadata, "timestamp": message.timestamp, "speakers": message.name}
        with registered_message(message, content, variable_name="raw_input_1"):
            self._take_fatal_error()  # drop one left over from a failed search
            try:
                with MonkeyPatcher(self.tracer.patch_specs()):
                    self.memory.add(
                        messages={"role": message.role, "content": content, "name": message.name},
                        user_id=self.config.user_id,
                        metadata=metadata,
                    )
            except FATAL_ERRORS:
                self._take_fatal_error()
                raise
            except Exception as exc:  # one bad message must not stop the run
                fatal = self._take_fatal_error()
                if fatal is not None:
                    raise fatal from exc
                error = f"({type(exc).__name__}) {exc}"
                logger.warning("mem0 failed on message %s: %s", message.id, error)
                self.failures.append({"message_id": message.id, "error": error})
                return
            fatal = self._take_fatal_error()
            if fatal is not None:  # mem0 logged it and carried on
                raise fatal

    def _take_fatal_error(self) -> BaseException | None:
        found = None
        for adapter in (getattr(self.memory, "llm", None), getattr(self.memory, "embedding_model", None)):
            take = getattr(adapter, "take_fatal_error", None)
            exc = take() if take is not None else None
            found = found or exc
        return found

    def token_usage(self) -> dict[str, Any]:
        """`{"llm": {...}, "embedder": {...}}` counters of the models used."""
        return usage_report(
            llm=(self.config.llm_model, self.chat_model),
            embedder=(getattr(self.embedder, "model_name", self.config.embedding_model), self.embedder),
        )

    def tracing_patch_specs(self) -> list[PatchSpec]:
        """The tracing patches `add_message` installs (exposed for inspection and reuse)."""
        return self.tracer.patch_specs()

    # -- retrieval -----------------------------------------------------------------------------
    def retrieve(self, query: str, k: int = 10, **kwargs: Any) -> list[MemoryEntry]:
        """Search mem0 (`explain=True`) and return entries whose `trace_id` is `memory-unit-<mem0 id>`."""
        query_rv = query_variable()
        with MonkeyPatcher(self.search_tracer.search_patch_specs()):
            results = self.memory.search(
                query,
                top_k=k,
                filters={"user_id": self.config.user_id},
                threshold=self.config.search_threshold,
                explain=True,
            ).get("results", [])
        entries = []
        for hit in results:
            meta = dict(hit.get("metadata") or {})
            timestamp = meta.get("timestamp")
            entries.append(
                MemoryEntry(
                    content=hit.get("memory", ""),
                    formatted_content=f"Memory: {hit.get('memory', '')}\nTime: {timestamp}",
                    metadata={
                        **meta,
                        "id": hit["id"],
                        "score": hit.get("score"),
                        "score_details": hit.get("score_details"),
                        "created_at": hit.get("created_at"),
                        "updated_at": hit.get("updated_at"),
                        "trace_id": f"memory-unit-{hit['id']}",
                    },
                )
            )
        self.search_tracer.record_search(query_rv, results, k, self.config.search_threshold)  # also clears its state
        return entries

    def get_all(self, limit: int = 1000) -> list[dict[str, Any]]:
        """Every stored memory of this user (mem0's `get_all`)."""
        return self.memory.get_all(filters={"user_id": self.config.user_id}, top_k=limit).get("results", [])
