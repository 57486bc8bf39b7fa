"""Content-addressed disk cache of model replies, so reruns replay instead of paying."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json

__all__ = ["DiskCache", "cache_key"]


def cache_key(payload: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of `payload` (model, messages, parameters; never secrets)."""
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DiskCache:
    """One JSON file per key under `root/<2 hex>/<key>.json`."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """Return the stored record or None (unreadable entries count as misses)."""
        path = self._path(key)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None

    def put(self, key: str, record: dict[str, Any]) -> None:
        """Store `record` atomically."""
        atomic_write_json(self._path(key), record, indent=None)
