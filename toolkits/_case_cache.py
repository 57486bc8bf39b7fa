"""Per-case result cache of the attribution runner: one JSON file per finished case.

The file name is the SHA-256 of a canonical identifier (graph, case, every config field that
changes the answer, the run arguments, a prompt/version tag), so a rerun with the same settings
finds finished cases and skips them, while any change of model, strategy or prompts misses.
Writes are atomic (temporary file in the same folder + ``os.replace``): an interrupted run never
leaves a half-written entry, and Ctrl-C loses nothing that finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["CaseCache", "atomic_write_json", "cache_key"]


def cache_key(identifier: dict[str, Any]) -> str:
    """SHA-256 hex digest of the canonical JSON of ``identifier``."""
    blob = json.dumps(identifier, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def atomic_write_json(path: str | os.PathLike[str], payload: Any, *, indent: int | None = 4) -> None:
    """Write JSON to ``path`` atomically (temp file + rename); creates parent folders."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, indent=indent, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class CaseCache:
    """A folder of finished-case results keyed by :func:`cache_key`.

    Args:
        folder: Cache folder (created on first write).
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def path_for(self, key: str) -> Path:
        """File of one entry."""
        return self.folder / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None if absent or unreadable (a corrupt or unreadable entry, or
        an I/O error such as a permission problem, is a miss)."""
        path = self.path_for(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            return None
        return data if isinstance(data, dict) else None

    def check_writable(self) -> None:
        """Create the folder and write/remove a probe file.

        Raises:
            OSError: If entries cannot be written there (checked before a run starts).
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=str(self.folder))
        os.close(fd)
        os.unlink(probe)

    def store(self, key: str, entry: dict[str, Any]) -> None:
        """Write one entry atomically.

        Raises:
            OSError: If the entry cannot be written (the runner warns and goes on).
        """
        atomic_write_json(self.path_for(key), entry)
