"""Mem0 layer: the real mem0ai 1.0.5 (fact extraction -> ADD/UPDATE/DELETE/NONE decision), traced.

mem0 is imported lazily by `import_mem0()`, which first sets `MEM0_TELEMETRY=False` and, unless
already set, `MEM0_DIR` to the run-level folder `<save_dir>/../.mem0` (mem0 reads both once, at
import, and creates `MEM0_DIR`; being outside every user's folder, a user's rerun never deletes it). Our chat model and embedder are plugged in through mem0's provider
factories (`mem0_adapters`); the vector store is qdrant local mode under `save_dir/qdrant` (one
client per folder, shared with mem0's migrations collection so that nothing lands elsewhere);
the history database lives in `save_dir/history.db`.

Tracing is applied from outside (`mem0_tracing.Mem0Tracer` patch specs, installed with
`MonkeyPatcher` around each `memory.add`). A mem0 failure on one message is logged, appended to
`layer.failures` (`{"message_id", "error"}`) and the run continues; a fatal client error
(`membase.exceptions.FATAL_ERRORS`: unreachable endpoint, blocked requests, bad configuration) is
re-raised, including one that mem0 swallowed inside its update-decision call or a memory action.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from membase.exceptions import FATAL_ERRORS, ConfigError
from membase.layers._common import build_chat_client, build_layer_embedder, registered_message, usage_report
from membase.layers._mem0_store import Mem0StoreMixin
from membase.layers.base import MemBaseConfig, MemBaseLayer
from membase.layers.tracing import query_variable, tracing_active
from membase.types import MemoryEntry, Message
from membase.utils.patching import MonkeyPatcher, PatchSpec

__all__ = ["Mem0Config", "Mem0Layer", "import_mem0", "metadata_suffix", "reject_ignored_keys"]

logger = logging.getLogger(__name__)



def metadata_suffix(message: Message) -> str:
    """The speaker suffix appended to each message's content before mem0 sees it."""
    return (
        f"\nBelow is this message's metadata:\nSpeaker Name: {message.name}\nSpeaker Role: {message.role}\n"
    )


def import_mem0(mem0_dir: str | Path | None = None) -> Any:
    """Import mem0 with telemetry off and its folder under our control.

    Args:
        mem0_dir: value for `MEM0_DIR` when the environment has none (mem0 creates it on import).

    Returns:
        The `mem0` module.

    Raises:
        ConfigError: mem0ai is not installed, or it was imported earlier with telemetry on.
    """
    os.environ["MEM0_TELEMETRY"] = "False"
    if mem0_dir is not None and not os.environ.get("MEM0_DIR"):
        os.environ["MEM0_DIR"] = str(mem0_dir)
    try:
        import mem0
        import mem0.memory.telemetry as telemetry
    except ImportError as exc:
        raise ConfigError(
            f"the Mem0 layer needs mem0ai 1.0.5: pip install 'memtrace-llm[mem0]' ({exc})"
        ) from None
    if telemetry.MEM0_TELEMETRY:
        raise ConfigError(
            "mem0 was imported before membase could switch its telemetry off; set MEM0_TELEMETRY=False "
            "in the environment before anything imports mem0"
        )
    from membase.layers.mem0_adapters import register_providers

    register_providers()
    return mem0


_MEM0_HINT = "the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]'); for mem0ai 2.x use the Mem0v3 layer"


def reject_ignored_keys(
    config_cls: Any, fields: dict[str, Any], *, applied: Any = None, hint: str = _MEM0_HINT
) -> None:
    """Raise when mem0 would silently drop one of `fields` (so an optimized prompt never does nothing).

    pydantic models ignore unknown keyword arguments by default, and a mem0 release may rename a
    key (2.x dropped `custom_fact_extraction_prompt`); a value set by the user or the optimizer
    must reach mem0 or fail loudly.

    Args:
        config_cls: mem0's `MemoryConfig` class.
        fields: the plain (non-provider) keys we pass to it, with their values.
        applied: the config the built `Memory` holds; each set value must read back unchanged.
        hint: what to do instead, appended to the error.

    Raises:
        ConfigError: a key the installed mem0 does not know, or a value it did not keep.
    """
    known = set(getattr(config_cls, "model_fields", {}))
    unknown = sorted(key for key in fields if key not in known)
    if unknown:
        raise ConfigError(
            f"mem0ai {_mem0_version()} ignores the config key(s) {', '.join(unknown)}: {hint}"
        )
    if applied is None:
        return
    lost = sorted(
        key for key, value in fields.items() if value is not None and getattr(applied, key, None) != value
    )
    if lost:
        raise ConfigError(
            f"mem0ai {_mem0_version()} did not keep the config key(s) {', '.join(lost)} that the Mem0 layer set"
        )


def _mem0_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mem0ai")
    except PackageNotFoundError:
        return "(version unknown)"


class Mem0Config(MemBaseConfig):
    """Mem0 layer configuration (JSON keys of the layer-config file)."""

    llm_provider: Literal["openai", "fake"] = "openai"
    """`openai`: any OpenAI-compatible endpoint; `fake`: the deterministic `mem0_fake` model."""
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
    """mem0's SQLite history; None uses `save_dir/history.db`."""
    custom_fact_extraction_prompt: str | None = None
    custom_update_memory_prompt: str | None = None

    def get_llm_models(self) -> list[str]:
        """The chat model this layer calls."""
        return [self.llm_model]


def _build_chat_model(config: Mem0Config) -> Any:
    if config.llm_provider == "fake":
        from membase.clients.cached import cached
        from membase.layers.mem0_fake import make_mem0_fake

        return cached(make_mem0_fake(model=config.llm_model), config.llm_config.get("cache_dir"))
    opts = config.llm_config
    return build_chat_client(
        config.llm_model,
        api_config_path=opts.get("api_config_path"),
        api_key=opts.get("api_key"),
        base_url=opts.get("base_url"),
        cache_dir=opts.get("cache_dir"),
    )


def _build_embedder(config: Mem0Config) -> Any:
    return build_layer_embedder(
        config.embedder_provider, config.embedding_model, config.embedding_model_dims, **config.embedding_config
    )


class Mem0Layer(Mem0StoreMixin, MemBaseLayer):
    """mem0ai 1.0.5 behind the `MemBaseLayer` interface."""

    layer_type = "Mem0"
    config_cls = Mem0Config

    def __init__(self, config: Mem0Config, *, chat_model: Any = None, embedder: Any = None) -> None:
        """Build the layer.

        Args:
            config: the layer config.
            chat_model: overrides the model built from the config (any `complete(...)` model).
            embedder: overrides the embedder built from the config.
        """
        super().__init__(config)
        self.save_path.mkdir(parents=True, exist_ok=True)
        import_mem0(self.save_path.resolve().parent / ".mem0")
        self.chat_model = chat_model if chat_model is not None else _build_chat_model(config)
        self.embedder = embedder if embedder is not None else _build_embedder(config)
        self.failures: list[dict[str, str]] = []
        self._qdrant: Any = None
        self.memory: Any = None
        try:
            self.memory = self._build_memory()
            from membase.layers.mem0_tracing import Mem0Tracer

            self.tracer = Mem0Tracer(
                self.memory,
                llm_model=config.llm_model,
                embedding_model=getattr(self.embedder, "model_name", "unknown"),
            )
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
        self._qdrant = (
            QdrantClient(":memory:") if qdrant_path == ":memory:" else QdrantClient(path=qdrant_path)
        )
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
            "custom_fact_extraction_prompt": cfg.custom_fact_extraction_prompt,
            "custom_update_memory_prompt": cfg.custom_update_memory_prompt,
        }
        reject_ignored_keys(MemoryConfig, plain_fields)
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
            reject_ignored_keys(MemoryConfig, plain_fields, applied=memory.config)
        except ConfigError:
            memory.db.close()  # the caller's cleanup never sees this Memory
            raise
        return memory

    # -- ingestion ---------------------------------------------------------------------------
    def add_message(self, message: Message, **kwargs: Any) -> None:
        """Send one message through mem0's inferring `add`.

        A failure is appended to `failures` as `{"message_id", "error"}` and the run continues;
        fatal client errors (`FATAL_ERRORS`) are raised, also when mem0 swallowed them.
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
        """The fatal error our LLM or embedder adapter saw since the last call (mem0 may have
        swallowed it), or None; both adapters forget theirs."""
        found = None
        for adapter in (getattr(self.memory, "llm", None), getattr(self.memory, "embedding_model", None)):
            take = getattr(adapter, "take_fatal_error", None)
            exc = take() if take is not None else None
            found = found or exc
        return found

    def token_usage(self) -> dict[str, Any]:
        """`{"llm": {...}, "embedder": {...}}` counters (`model`, requests, tokens) of the models used."""
        return usage_report(
            llm=(self.config.llm_model, self.chat_model),
            embedder=(getattr(self.embedder, "model_name", self.config.embedding_model), self.embedder),
        )

    def tracing_patch_specs(self) -> list[PatchSpec]:
        """The tracing patches `add_message` installs (exposed for inspection and reuse)."""
        return self.tracer.patch_specs()

    # -- retrieval -----------------------------------------------------------------------------
    def retrieve(self, query: str, k: int = 10, **kwargs: Any) -> list[MemoryEntry]:
        """Search mem0 and return entries whose `trace_id` is `memory-unit-<mem0 id>`."""
        query_rv = query_variable()
        results = self.memory.search(query, user_id=self.config.user_id, limit=k).get("results", [])
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
                        "created_at": hit.get("created_at"),
                        "updated_at": hit.get("updated_at"),
                        "trace_id": f"memory-unit-{hit['id']}",
                    },
                )
            )
        if tracing_active():
            self.tracer.record_search(query_rv, results, k)
        return entries

    def get_all(self, limit: int = 1000) -> list[dict[str, Any]]:
        """Every stored memory of this user (mem0's `get_all`)."""
        return self.memory.get_all(user_id=self.config.user_id, limit=limit).get("results", [])
