"""``MemoryConfigBundle``: everything the loop may change about a memory system, in one JSON file.

A bundle is a layer type (``backend``), that layer's config (``base_config``, the JSON keys of
a ``python -m membase`` layer-config file except ``layer_type``, ``user_id`` and ``save_dir``),
the question-answering template, the search ``top_k`` and the answering step's
``answer_context_budget``. ``get``/``update`` address values
by dotted path (``custom_fact_extraction_prompt``, ``question_answering_prompt``,
``prompt_overrides.boundary-detection-prompt-template``, ``retrieval_config.bm25_top_n`` …);
every update re-validates the whole layer config, so an unknown field fails at once.

Files: ``save(folder)`` writes ``memory_system_config.json`` (the loop's per-round checkpoint);
``export_memory_config(folder)`` writes ``memory_config.json``, a layer-config file that
``python -m membase run --layer-config`` accepts. Secret-named fields (keys, tokens) are
written as ``"***"``; :meth:`MemoryConfigBundle.restore_secrets` puts them back from the
original config when a saved bundle is loaded.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "BUNDLE_FILENAME",
    "MEMORY_CONFIG_FILENAME",
    "BundleError",
    "MemoryConfigBundle",
    "read_json_file",
]

BUNDLE_FILENAME = "memory_system_config.json"
MEMORY_CONFIG_FILENAME = "memory_config.json"
_PER_USER_KEYS = ("user_id", "save_dir")
_SECRET_MARK = "***"
_BUNDLE_FIELDS = ("question_answering_prompt", "top_k", "answer_context_budget")
"""Keys that name a bundle field, not a layer-config field."""


class BundleError(MemTraceError, ValueError):
    """A bundle or config file is missing, unreadable, or invalid (one-line message)."""


def read_json_file(path: str | Path, what: str) -> Any:
    """Parse a JSON file, failing with one line that names ``what`` and the problem.

    Raises:
        BundleError: The file is missing, not UTF-8, or not JSON.
    """
    path = Path(path)
    if path.is_dir():
        raise BundleError(f"{what} {str(path)!r} is a folder, not a JSON file")
    if not path.is_file():
        raise BundleError(f"{what} {str(path)!r} not found")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(f"{what} {str(path)!r} is not valid UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise BundleError(f"{what} {str(path)!r} cannot be read: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BundleError(f"{what} {str(path)!r} is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def _validate_layer_config(backend: str, fields: Mapping[str, Any]) -> None:
    from membase.exceptions import ConfigError
    from membase.layers import build_layer_config

    try:
        build_layer_config(backend, user_id="config-check", **dict(fields))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _split(key: str) -> list[str]:
    parts = key.split(".")
    if not key or any(not p for p in parts):
        raise KeyError(f"bad bundle key {key!r}: use a field name or a dotted path such as 'retrieval_config.rrf_k'")
    return parts


class MemoryConfigBundle(BaseModel):
    """The optimizable configuration of one memory system (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    backend: str = Field(frozen=True)
    """Layer type (``Mem0``, ``EverMemOS``, ``NaiveRAG``, ``Long-Context``)."""
    base_config: dict[str, Any] = Field(default_factory=dict)
    """The layer config fields (no ``layer_type``, ``user_id`` or ``save_dir``)."""
    question_answering_prompt: str | None = None
    """QA ``string.Template`` (``$question``, ``$context``); None = membase's default."""
    top_k: int | None = Field(default=None, ge=1)
    """Memories retrieved per question; None = the command line's ``--top-k``."""
    answer_context_budget: int | None = Field(default=None, ge=1)
    """Token budget of the answering step's context (the formatted memories are cut after it);
    None = no cut (then it is not traced and no attribution can reach it)."""

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from membase.layers import CONFIG_MAPPING

        if value not in CONFIG_MAPPING:
            raise ValueError(f"unknown backend {value!r}; choose one of {sorted(CONFIG_MAPPING)}")
        return value

    @field_validator("base_config", mode="before")
    @classmethod
    def _drop_per_user_keys(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: copy.deepcopy(v) for k, v in value.items() if k not in _PER_USER_KEYS and k != "layer_type"}
        return value

    @model_validator(mode="after")
    def _valid_layer_config(self) -> MemoryConfigBundle:
        _validate_layer_config(self.backend, self.base_config)
        return self

    # -- construction and files ---------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryConfigBundle:
        """Validate a bundle dict (``backend`` is required).

        Raises:
            BundleError: Not a dict, no backend, or invalid fields (one line).
        """
        if not isinstance(data, Mapping):
            raise BundleError(f"a bundle must be a JSON object, got {type(data).__name__}")
        if "backend" not in data:
            raise BundleError("a bundle needs a 'backend' (the layer type, e.g. 'Mem0')")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise BundleError(_one_line(exc)) from None

    @classmethod
    def from_layer_config(cls, data: Mapping[str, Any], *, default_backend: str = "Mem0") -> MemoryConfigBundle:
        """A bundle from a layer-config file (``{"layer_type": ..., fields}``), a bundle dict, or a
        reference MemBase Mem0 config (no ``layer_type``; ``llm_config.openai_base_url`` read as
        ``base_url``).

        Raises:
            BundleError: Invalid config (one line).
        """
        if not isinstance(data, Mapping):
            raise BundleError(f"the config must be a JSON object, got {type(data).__name__}")
        if "backend" in data and "base_config" in data:
            return cls.from_dict(data)
        fields = {k: copy.deepcopy(v) for k, v in data.items() if k != "layer_type"}
        backend = str(data.get("layer_type") or default_backend)
        for section in ("llm_config", "embedding_config"):
            options = fields.get(section)
            if isinstance(options, dict) and "openai_base_url" in options and "base_url" not in options:
                options["base_url"] = options.pop("openai_base_url")
        return cls.from_dict({"backend": backend, "base_config": fields})

    @classmethod
    def load(cls, folder: str | Path) -> MemoryConfigBundle:
        """Read ``<folder>/memory_system_config.json``.

        Raises:
            BundleError: Missing, not UTF-8, not JSON, or invalid.
        """
        path = Path(folder) / BUNDLE_FILENAME
        data = read_json_file(path, "bundle file")
        try:
            return cls.from_dict(data)
        except BundleError as exc:
            raise BundleError(f"bundle file {str(path)!r}: {exc}") from None

    def to_json_dict(self, *, redact: bool = True) -> dict[str, Any]:
        """The JSON form; secret-named config values become ``"***"`` unless ``redact`` is False."""
        data = self.model_dump(mode="json")
        if data.get("answer_context_budget") is None:  # unset: the file and digest stay as before the field existed
            data.pop("answer_context_budget", None)
        if redact:
            from membase.layers.base import redact_secrets

            data["base_config"] = redact_secrets(data["base_config"])
        return data

    def save(self, folder: str | Path) -> Path:
        """Write ``<folder>/memory_system_config.json`` atomically (secrets redacted)."""
        from membase.utils.io import atomic_write_json

        return atomic_write_json(Path(folder) / BUNDLE_FILENAME, self.to_json_dict())

    def export_memory_config(self, folder: str | Path) -> Path:
        """Write ``<folder>/memory_config.json``: a ``python -m membase`` layer-config file."""
        from membase.utils.io import atomic_write_json

        data = self.to_json_dict()
        return atomic_write_json(Path(folder) / MEMORY_CONFIG_FILENAME, {"layer_type": self.backend, **data["base_config"]})

    def restore_secrets(self, original: MemoryConfigBundle | Mapping[str, Any]) -> MemoryConfigBundle:
        """A copy whose ``"***"`` config values are taken from ``original`` (same paths)."""
        source = original.base_config if isinstance(original, MemoryConfigBundle) else dict(original)
        restored = _restore(self.base_config, source)
        return self.model_copy(update={"base_config": restored}) if restored != self.base_config else self

    # -- values -------------------------------------------------------------------------------
    def layer_fields(self) -> dict[str, Any]:
        """The layer config fields for the membase runners (a deep copy)."""
        return copy.deepcopy(self.base_config)

    def get(self, key: str) -> Any:
        """The value at ``key``: a bundle field, or a (dotted) layer-config field.

        Unset layer-config fields read as their config default; an unset dict entry reads as None.

        Raises:
            KeyError: The key names no field.
        """
        parts = _split(key)
        if parts[0] in _BUNDLE_FIELDS and len(parts) == 1:
            return getattr(self, parts[0])
        config = self._layer_config()
        value: Any = config
        for i, part in enumerate(parts):
            if isinstance(value, BaseModel):
                if part not in type(value).model_fields:
                    raise KeyError(f"{self.backend} config has no field {'.'.join(parts[: i + 1])!r}")
                value = getattr(value, part)
            elif isinstance(value, Mapping):
                value = value.get(part)
                if value is None and i < len(parts) - 1:
                    return None
            else:
                raise KeyError(f"{'.'.join(parts[:i])!r} of the {self.backend} config has no field {part!r}")
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else copy.deepcopy(value)

    def with_updates(self, updates: Mapping[str, Any]) -> MemoryConfigBundle:
        """A new bundle with every ``key -> value`` of ``updates`` applied (validated together).

        Raises:
            KeyError: A key names no field.
            BundleError: The result is not a valid config.
        """
        data = self.model_dump()
        for key, value in updates.items():
            parts = _split(key)
            if parts[0] in _BUNDLE_FIELDS and len(parts) == 1:
                data[parts[0]] = value
                continue
            self.get(key)  # raises KeyError for a key the layer config does not have
            node = data["base_config"]
            for part in parts[:-1]:
                child = node.get(part)
                if not isinstance(child, dict):  # an unset section: the config fills its defaults
                    child = {}
                    node[part] = child
                node = child
            node[parts[-1]] = copy.deepcopy(value)
        return MemoryConfigBundle.from_dict(data)

    def update(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value`` in place (the whole layer config is re-validated).

        Raises:
            KeyError: The key names no field.
            BundleError: The result is not a valid config.
        """
        new = self.with_updates({key: value})
        self.base_config = new.base_config
        self.question_answering_prompt = new.question_answering_prompt
        self.top_k = new.top_k
        self.answer_context_budget = new.answer_context_budget

    def digest(self) -> str:
        """SHA-256 of the canonical JSON (secrets included), to recognise identical bundles."""
        blob = json.dumps(self.to_json_dict(redact=False), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _layer_config(self) -> Any:
        from membase.layers import build_layer_config

        return build_layer_config(self.backend, user_id="config-check", **self.base_config)


def _restore(saved: Any, original: Any) -> Any:
    if saved == _SECRET_MARK and original is not None:
        return copy.deepcopy(original)
    if isinstance(saved, dict) and isinstance(original, Mapping):
        return {k: _restore(v, original.get(k)) for k, v in saved.items()}
    if isinstance(saved, list) and isinstance(original, list) and len(saved) == len(original):
        return [_restore(a, b) for a, b in zip(saved, original, strict=True)]
    return saved


def _one_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "bundle"
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc != "bundle" else msg)
    return "; ".join(parts)
