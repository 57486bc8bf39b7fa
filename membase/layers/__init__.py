"""Memory layers and their lazy registries.

`MEMORY_LAYERS_MAPPING[name]` and `CONFIG_MAPPING[name]` import the layer module on first access,
so `import membase.layers` stays cheap and optional dependencies (mem0ai, torch) load only when a
layer that needs them is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Any

from membase.exceptions import ConfigError

__all__ = ["CONFIG_MAPPING", "MEMORY_LAYERS_MAPPING", "LazyMapping", "build_layer", "build_layer_config"]

# name -> (module, layer class, config class)
_REGISTRY: dict[str, tuple[str, str, str]] = {
    "Long-Context": ("membase.layers.long_context", "LongContextLayer", "LongContextConfig"),
    "NaiveRAG": ("membase.layers.naive_rag", "NaiveRAGLayer", "NaiveRAGConfig"),
    "Mem0": ("membase.layers.mem0", "Mem0Layer", "Mem0Config"),
    "Mem0v3": ("membase.layers.mem0v3", "Mem0v3Layer", "Mem0v3Config"),
    "EverMemOS": ("membase.layers.evermemos", "EverMemOSLayer", "EverMemOSConfig"),
}


class LazyMapping(Mapping[str, Any]):
    """Read-only mapping whose values are imported on first access."""

    def __init__(self, registry: dict[str, tuple[str, str, str]], slot: int) -> None:
        self._registry = registry
        self._slot = slot
        self._cache: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self._registry:
            raise KeyError(key)
        if key not in self._cache:
            module = importlib.import_module(self._registry[key][0])
            self._cache[key] = getattr(module, self._registry[key][self._slot])
        return self._cache[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry)

    def __len__(self) -> int:
        return len(self._registry)


MEMORY_LAYERS_MAPPING: Mapping[str, Any] = LazyMapping(_REGISTRY, 1)
CONFIG_MAPPING: Mapping[str, Any] = LazyMapping(_REGISTRY, 2)


def _check_layer_type(layer_type: str) -> None:
    if layer_type not in _REGISTRY:
        raise ConfigError(f"unknown layer_type {layer_type!r}; choose one of {sorted(_REGISTRY)}")


def build_layer_config(layer_type: str, **fields: Any) -> Any:
    """Validate `fields` into the config class of `layer_type`.

    Raises:
        ConfigError: unknown layer type, its optional dependency missing, unknown key, or a value of the
            wrong type.
    """
    from pydantic import ValidationError

    _check_layer_type(layer_type)
    config_cls = CONFIG_MAPPING[layer_type]
    check_requirements = getattr(config_cls, "check_requirements", None)
    if check_requirements is not None:  # e.g. Mem0v3 without its extra: one line with the install command
        check_requirements()
    try:
        return config_cls(**fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<config>'}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"invalid {layer_type} config: {problems}") from None


def build_layer(layer_type: str, config: Any = None, **fields: Any) -> Any:
    """Build a layer from a config object or from config fields."""
    _check_layer_type(layer_type)
    if config is None:
        config = build_layer_config(layer_type, **fields)
    return MEMORY_LAYERS_MAPPING[layer_type](config)
