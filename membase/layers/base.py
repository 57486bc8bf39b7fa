"""The memory-layer interface every system implements (spec §4.3).

A layer is built from its config (`Layer(config)`), ingests messages one at a time, answers
`retrieve(query, k)` with `MemoryEntry` objects, and persists itself under `config.save_dir`.
Layers record their own operations with smartcomment; the runners open the graph and sessions.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator

from membase.exceptions import ConfigError
from membase.layers.buffer import MessageBufferMixin
from membase.types import MemoryEntry, Message
from membase.utils.io import atomic_write_json
from membase.utils.patching import PatchSpec

__all__ = ["MemBaseConfig", "MemBaseLayer", "MessageBufferMixin", "redact_secrets"]

CONFIG_FILENAME = "config.json"


REDACTED = "***"
_SECRET_WORDS = frozenset({"key", "token", "secret", "password"})


def is_secret_key(name: str) -> bool:
    """Whether a config field name holds a credential: it contains `api_key`, or one of its
    word components (split on `_`, `-`, `.`, camelCase) is key/token/secret/password/apikey."""
    if "api_key" in name.lower() or "apikey" in name.lower():
        return True
    words = re.split(r"[_\-.\s]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name))
    return any(w.lower() in _SECRET_WORDS for w in words if w)


def redact_secrets(value: Any) -> Any:
    """A copy of `value` with the value of every secret-named key (at any depth) replaced by `"***"`.

    Only text (or containers of it) is hidden: None, "" and numbers stay as they are (nothing to
    hide; `token_budget: 512` is no credential, and an unset field stays visibly unset).
    """
    if isinstance(value, dict):
        return {k: (REDACTED if isinstance(k, str) and is_secret_key(k) and _holds_text(v) else redact_secrets(v))
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_secrets(v) for v in value]
    return value


def _holds_text(value: Any) -> bool:
    if isinstance(value, str):
        return value != ""
    if isinstance(value, dict):
        return any(_holds_text(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_text(v) for v in value)
    return False


class MemBaseConfig(BaseModel):
    """Base of every layer config. Unknown keys are rejected (typos fail loudly)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    user_id: str
    """The trajectory id this memory belongs to."""
    save_dir: str = "memory"
    """Folder holding this user's persisted memory."""

    @field_validator("save_dir")
    @classmethod
    def _not_a_file(cls, value: str) -> str:
        if Path(value).is_file():
            raise ValueError(f"save_dir {value!r} is a file; give a folder path")
        return value

    def get_llm_models(self) -> list[str]:
        """Names of the chat models this layer calls (for cost accounting)."""
        return []


class MemBaseLayer(ABC):
    """Abstract memory layer."""

    layer_type: ClassVar[str] = "MemBase"
    """Registry key; also the graph `project_id`."""
    config_cls: ClassVar[type[MemBaseConfig]] = MemBaseConfig

    def __init__(self, config: MemBaseConfig) -> None:
        if not isinstance(config, self.config_cls):
            raise ConfigError(
                f"{type(self).__name__} needs a {self.config_cls.__name__}, got {type(config).__name__}"
            )
        self.config = config

    # -- ingestion ---------------------------------------------------------------------------
    @abstractmethod
    def add_message(self, message: Message, **kwargs: Any) -> None:
        """Ingest one message."""

    def add_messages(self, messages: list[Message], **kwargs: Any) -> None:
        """Ingest messages in order (layers with a batch path override this)."""
        for message in messages:
            self.add_message(message, **kwargs)

    def flush(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Process whatever is still pending in buffers (called once after the last message)."""

    # -- retrieval and editing ----------------------------------------------------------------
    @abstractmethod
    def retrieve(self, query: str, k: int = 10, **kwargs: Any) -> list[MemoryEntry]:
        """Return up to `k` memories relevant to `query`."""

    @abstractmethod
    def delete(self, memory_id: str) -> bool:
        """Delete one memory unit; True when it existed."""

    @abstractmethod
    def update(self, memory_id: str, **kwargs: Any) -> bool:
        """Update one memory unit; True when it existed."""

    # -- persistence ----------------------------------------------------------------------------
    @abstractmethod
    def save_memory(self) -> None:
        """Persist the memory under `config.save_dir`."""

    @abstractmethod
    def load_memory(self, user_id: str | None = None) -> bool:
        """Load persisted memory; False when there is none, ValueError for another user's memory."""

    def prefetch_queries(self, queries: list[str]) -> None:  # noqa: B027 - optional hook
        """Hint the questions about to be retrieved (lets a layer batch their embeddings)."""

    def token_usage(self) -> dict[str, Any]:
        """Token counters of the models this layer called, keyed by model role (empty: no models)."""
        return {}

    def get_patch_specs(self) -> list[PatchSpec]:
        """Callables to wrap while messages are ingested (token monitoring)."""
        return []

    def cleanup(self) -> None:  # noqa: B027 - optional hook, no-op by default
        """Release resources (clients, file handles). Safe to call twice."""

    # -- helpers for subclasses ------------------------------------------------------------------
    @property
    def save_path(self) -> Path:
        """`config.save_dir` as a Path."""
        return Path(self.config.save_dir)

    def _write_config_file(self) -> Path:
        """Write `save_dir/config.json` = `{"layer_type": ..., **config}`, secrets replaced by `"***"`."""
        return atomic_write_json(
            self.save_path / CONFIG_FILENAME,
            redact_secrets({"layer_type": self.layer_type, **self.config.model_dump(mode="json")}),
        )

    def _check_config_file(self, user_id: str | None = None) -> bool:
        """Return False when no saved config exists; raise ValueError when it is another user's."""
        path = self.save_path / CONFIG_FILENAME
        if not path.is_file():
            return False
        stored = json.loads(path.read_text(encoding="utf-8"))
        expected = user_id or self.config.user_id
        if stored.get("user_id") != expected:
            raise ValueError(
                f"memory in {str(self.save_path)!r} belongs to user {stored.get('user_id')!r}, not {expected!r}"
            )
        return True
