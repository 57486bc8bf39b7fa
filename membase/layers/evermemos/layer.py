"""EverMemOS layer: our implementation of its online pipeline behind the `MemBaseLayer` interface."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from membase.exceptions import ConfigError
from membase.layers.base import MemBaseLayer
from membase.layers.evermemos.config import EverMemOSConfig
from membase.layers.evermemos.manager import OnlineMemoryManager
from membase.layers.evermemos.memcell import new_event_id
from membase.layers.evermemos.trace import EverMemOSTracer
from membase.layers.tracing import query_variable, trace_message
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
        from membase.layers.evermemos.fake import make_evermemos_fake

        return make_evermemos_fake(model=llm.model)
    from membase.clients import ChatClient, CredentialPool

    if llm.api_config_path:
        credentials = CredentialPool.from_api_config(llm.api_config_path)
    elif llm.api_key or llm.base_url:
        credentials = CredentialPool([llm.api_key or "EMPTY"], [llm.base_url])
    else:
        credentials = None  # read from the environment
    return ChatClient(llm.model, credentials=credentials, cache_dir=llm.cache_dir)


def _build_embedder(config: EverMemOSConfig) -> Any:
    from membase.clients import build_embedder

    emb = config.embedding_config
    if emb.provider == "fake":
        return build_embedder("fake", dim=emb.embedding_dims)
    if emb.provider == "minilm":
        return build_embedder(f"huggingface:{emb.model}", dim=emb.embedding_dims)
    return build_embedder(
        f"openai:{emb.model}", dim=emb.embedding_dims, base_url=emb.base_url, api_key=emb.api_key
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

    # -- ingestion ---------------------------------------------------------------------------------
    def add_message(self, message: Message, **kwargs: Any) -> None:
        """Buffer one message; close and enrich a memcell when the boundary says so."""
        message_rv = trace_message(message, message.content, variable_name="raw_input", speaker_key="speaker")
        try:
            record = self.manager.add_message(
                role=message.role, name=message.name, content=message.content, timestamp=message.timestamp
            )
            self.tracer.record_ingest(record, message_rv)
            if record.memcell is not None and record.memcell.failure:
                self.failures.append({"message_id": message.id, "error": record.memcell.failure})
        except Exception as exc:  # one bad message must not stop the run
            error = f"({type(exc).__name__}) {exc}"
            logger.warning("EverMemOS failed on message %s: %s", message.id, error)
            self.failures.append({"message_id": message.id, "error": error})
        finally:
            if message_rv is not None:
                from smartcomment import current_context

                ctx = current_context()
                if ctx is not None:
                    try:
                        ctx.remove_variable("raw_input")
                    except NameError:
                        pass

    def flush(self) -> None:
        """Close whatever is still buffered into a final memcell."""
        record = self.manager.flush()
        self.tracer.record_flush(record)
        if record is not None and record.memcell is not None and record.memcell.failure:
            self.failures.append({"message_id": "<flush>", "error": record.memcell.failure})

    # -- retrieval -----------------------------------------------------------------------------------
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
