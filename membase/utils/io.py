"""Atomic file writes: a crash never leaves a half-written results or graph file."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_json", "atomic_write_text"]


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux `/proc`)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # os.umask can only be read by setting it; put it straight back
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write `text` to `path` through a temp file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp creates 0600; give the mode open() would
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_json(path: str | Path, data: Any, *, indent: int | None = 4) -> Path:
    """Serialise `data` as JSON (UTF-8, not ASCII-escaped) and write it atomically."""
    return atomic_write_text(path, json.dumps(data, indent=indent, ensure_ascii=False))
