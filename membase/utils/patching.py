"""Monkey patching of a layer's model calls during message ingestion (spec §4.7).

A `PatchSpec` says how to read, write and wrap one callable; `MonkeyPatcher` installs the wrapped
callables on enter and restores the originals on exit (in reverse order).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["MonkeyPatcher", "PatchSpec", "make_attr_patch"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class PatchSpec:
    """How to patch one callable."""

    name: str
    """Label; also the key under which the original is saved."""
    getter: Callable[[], Callable[..., Any]]
    """Returns the callable currently installed."""
    setter: Callable[[Callable[..., Any]], None]
    """Installs a callable."""
    wrapper: Callable[[Callable[..., Any]], Callable[..., Any]]
    """Builds the replacement from the original."""


def make_attr_patch(obj: Any, attr: str) -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """Return `(getter, setter)` for `obj.attr`.

    The setter goes through `object.__setattr__` for pydantic models, whose own `__setattr__`
    refuses attributes that are not fields.
    """
    try:
        from pydantic import BaseModel
    except ImportError:  # pragma: no cover - pydantic is a core dependency
        BaseModel = ()  # type: ignore[assignment,misc]

    def getter() -> Any:
        return getattr(obj, attr)

    def setter(value: Any) -> None:
        if isinstance(obj, BaseModel):
            object.__setattr__(obj, attr, value)
        else:
            setattr(obj, attr, value)

    return getter, setter


class MonkeyPatcher:
    """Context manager installing `PatchSpec`s for the duration of a `with` block."""

    def __init__(self, specs: Iterable[PatchSpec]) -> None:
        self._specs = list(specs)
        self._originals: dict[str, Callable[..., Any]] = {}
        self._active = False
        self._depth = 0

    @property
    def active(self) -> bool:
        """Whether the patches are installed."""
        return self._active

    def __enter__(self) -> MonkeyPatcher:
        if self._active:  # nested use: patches stay until the outermost exit
            self._depth += 1
            return self
        installed: list[PatchSpec] = []
        try:
            for spec in self._specs:
                original = spec.getter()
                self._originals[spec.name] = original
                spec.setter(spec.wrapper(original))
                installed.append(spec)
        except BaseException:
            self._restore(installed)
            raise
        self._active = True
        self._depth = 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        if not self._active:
            return
        self._depth -= 1
        if self._depth == 0:
            self._restore(self._specs)

    def _restore(self, specs: list[PatchSpec]) -> None:
        for spec in reversed(specs):
            if spec.name not in self._originals:
                continue
            try:
                spec.setter(self._originals[spec.name])
            except Exception:  # restoring must not hide the original error
                logger.warning("could not restore patched callable %r", spec.name, exc_info=True)
        self._originals.clear()
        self._active = False
