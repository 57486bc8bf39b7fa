"""EverMemOS layer: our implementation of its online pipeline behind the `MemBaseLayer` interface."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from membase.exceptions import FATAL_ERRORS, ConfigError
from membase.layers._common import build_chat_client, build_layer_embedder, registered_message, usage_report
from membase.layers.base import MemBaseLayer
from membase.layers.evermemos.config import EverMemOSConfig
from membase.layers.evermemos.manager import OnlineMemoryManager
from membase.layers.evermemos.memcell import new_event_id
from membase.layers.evermemos.prompts import uses_prompt_overrides
from membase.layers.evermemos.trace import EverMemOSTracer
from membase.layers.tracing import query_variable
from membase.types import MemoryEntry, Message
from membase.utils.io import atomic_write_json

__all__ = ["EverMemOSLayer"]

logger = logging.getLogger(__name__)

STATE_FILENAME = "memory_state.json"
FAILURES_FILENAME = "failures.json"


class _WithDefaults:
    """Applies the config's temperature / max_tokens to calls that do not set them."""

    def __init__(self, model: Any, *, temperature: float, max_tokens: int) -> None:
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens

    @property
    def usage(self) -> Any:
        return getattr(self.model, "usage", None)

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        kwargs.setdefault("temperature", self.temperature)
        kwargs.setdefault("max_tokens", self.max_tokens)
        return self.model.complete(messages, **kwargs)


def _build_chat_model(config: EverMemOSConfig) -> Any:
    llm = config.llm_config
    if llm.provider == "fake":
        from membase.clients.cached import cached
        from membase.layers.evermemos.fake import make_evermemos_fake

        return cached(make_evermemos_fake(model=llm.model), llm.cache_dir)
    return build_chat_client(
        llm.model,
        api_config_path=llm.api_config_path,
        api_key=llm.api_key,
        base_url=llm.base_url,
        cache_dir=llm.cache_dir,
    )


def _build_embedder(config: EverMemOSConfig) -> Any:
    emb = config.embedding_config
    return build_layer_embedder(
        emb.provider, emb.model, emb.embedding_dims, base_url=emb.base_url, api_key=emb.api_key
    )


class EverMemOSLayer(MemBaseLayer):
    """Buffered messages -> LLM boundary -> memcells -> episode/event-log extraction -> hybrid index."""

    layer_type = "EverMemOS"
    config_cls = EverMemOSConfig

    def __init__(
        self,
        config: EverMemOSConfig,
        *,
        chat_model: Any = None,
        embedder: Any = None,
        id_factory: Callable[[], str] = new_event_id,
    ) -> None:
        """Build the layer.

        Args:
            config: the layer config.
            chat_model: overrides the model built from `llm_config` (any `complete(...)` model).
            embedder: overrides the embedder built from `embedding_config`.
            id_factory: event-id generator (tests pass a counter).
        """
        super().__init__(config)
        if config.clustering_config.enabled or config.profile_config.enabled:
            logger.warning(
                "EverMemOS clustering/profiles are not implemented; they never feed retrieval anyway"
            )
        model = chat_model if chat_model is not None else _build_chat_model(config)
        self.chat_model = _WithDefaults(
            model, temperature=config.llm_config.temperature, max_tokens=config.llm_config.max_tokens
        )
        self.embedder = embedder if embedder is not None else _build_embedder(config)
        self.manager = OnlineMemoryManager(
            llm=self.chat_model,
            embedder=self.embedder,
            boundary=config.boundary_config,
            extraction=config.extraction_config,
            retrieval=config.retrieval_config,
            id_factory=id_factory,
        )
        self.tracer = EverMemOSTracer(
            llm_model=config.llm_config.model,
            embedding_model=getattr(self.embedder, "model_name", config.embedding_config.model),
            foresight=config.extraction_config.enable_foresight,
            event_log=config.extraction_config.enable_event_log,
        )
        self.failures: list[dict[str, str]] = []
        """Messages whose processing failed: `{"message_id", "error"}` (`<flush>` for the final memcell)."""
        self.tracing_errors: list[str] = []
        """Tracing failures (logged; the messages themselves were processed)."""

    # -- ingestion ---------------------------------------------------------------------------------
    @uses_prompt_overrides
    def add_message(self, message: Message, **kwargs: Any) -> None:
        """Buffer one message; close and enrich a memcell when the boundary says so.

        A failure is appended to `failures` and the run continues; fatal client errors
        (`FATAL_ERRORS`) are raised. Tracing failures are logged, never counted as failures.
        """
        with registered_message(
            message, message.content, variable_name="raw_input", speaker_key="speaker"
        ) as message_rv:
            try:
                record = self.manager.add_message(
                    role=message.role, name=message.name, content=message.content, timestamp=message.timestamp
                )
            except FATAL_ERRORS:
                raise
            except Exception as exc:  # one bad message must not stop the run
                self._record_failure(message.id, f"({type(exc).__name__}) {exc}")
                return
            if record.memcell is not None and record.memcell.failure:
                self._record_failure(message.id, record.memcell.failure)
            self._trace(message.id, self.tracer.record_ingest, record, message_rv)

    @uses_prompt_overrides
    def flush(self) -> None:
        """Close whatever is still buffered into a final memcell (kept buffered when that fails)."""
        try:
            record = self.manager.flush()
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            self._record_failure("<flush>", f"({type(exc).__name__}) {exc}")
            return
        if record is not None and record.memcell is not None and record.memcell.failure:
            self._record_failure("<flush>", record.memcell.failure)
        self._trace("<flush>", self.tracer.record_flush, record)

    def _record_failure(self, message_id: str, error: str) -> None:
        logger.warning("EverMemOS failed on message %s: %s", message_id, error)
        self.failures.append({"message_id": message_id, "error": error})

    def _trace(self, message_id: str, record_fn: Callable[..., None], *args: Any) -> None:
        try:
            record_fn(*args)
        except Exception as exc:  # tracing never breaks (or fails) the traced message
            error = f"({type(exc).__name__}) {exc}"
            logger.warning("EverMemOS tracing failed on message %s: %s", message_id, error, exc_info=True)
            self.tracing_errors.append(f"{message_id}: {error}")

    def token_usage(self) -> dict[str, Any]:
        """`{"llm": {...}, "embedder": {...}}` counters (`model`, requests, tokens) of the models used."""
        return usage_report(
            llm=(self.config.llm_config.model, self.chat_model),
            embedder=(getattr(self.embedder, "model_name", self.config.embedding_config.model), self.embedder),
        )

    # -- retrieval -----------------------------------------------------------------------------------
    @uses_prompt_overrides
    def retrieve(self, query: str, k: int = 10, **kwargs: Any) -> list[MemoryEntry]:
        """Hybrid or agentic retrieval; entries carry `trace_id = memory-unit-<event_id>`."""
        query_rv = query_variable()
        docs, run = self.manager.retrieve(query, k)
        self.tracer.record_retrieval(run, query_rv, k, self.config.retrieval_config)
        entries = []
        for doc, score in docs:
            subject, episode = doc.get("subject"), doc.get("episode")
            entries.append(
                MemoryEntry(
                    content=episode or "",
                    formatted_content=f"{subject or 'N/A'}: {episode or 'N/A'}",
                    metadata={
                        "id": doc["event_id"],
                        "subject": subject,
                        "summary": doc.get("summary"),
                        "score": float(score),
                        "timestamp": doc.get("timestamp"),
                        "trace_id": f"memory-unit-{doc['event_id']}",
                    },
                )
            )
        return entries

    def delete(self, memory_id: str) -> bool:
        """EverMemOS has no deletion."""
        raise NotImplementedError(
            "EverMemOS memory units cannot be deleted (the published pipeline has no delete)"
        )

    def update(self, memory_id: str, **kwargs: Any) -> bool:
        """EverMemOS has no in-place update."""
        raise NotImplementedError(
            "EverMemOS memory units cannot be updated (the published pipeline has no update)"
        )

    # -- persistence -----------------------------------------------------------------------------------
    def save_memory(self) -> None:
        """Write `config.json`, `memory_state.json` (memcells, buffer, index) and `failures.json`."""
        self._write_config_file()
        atomic_write_json(self.save_path / STATE_FILENAME, self.manager.state())
        atomic_write_json(self.save_path / FAILURES_FILENAME, self.failures)

    def load_memory(self, user_id: str | None = None) -> bool:
        """Load saved state; False when there is none, ValueError for another user's memory."""
        if not self._check_config_file(user_id):
            return False
        state_path = self.save_path / STATE_FILENAME
        if not state_path.is_file():
            return False
        try:
            self.manager.load_state(json.loads(state_path.read_text(encoding="utf-8")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"{state_path} is not a valid EverMemOS state file ({exc}); delete it and rebuild"
            ) from None
        failures = self.save_path / FAILURES_FILENAME
        if failures.is_file():
            self.failures = json.loads(failures.read_text(encoding="utf-8"))
        return True
