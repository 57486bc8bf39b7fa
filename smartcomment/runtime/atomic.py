"""Atomic file writes: a crash never leaves a half-written results or graph file.

The project's one implementation. It sits in the lowest package, so that the tracer's graph
export uses it too; everything above imports it as :mod:`membase.utils.io`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_json", "atomic_write_text", "current_umask"]


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


_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:32] or "host"
_SWEPT: set[Path] = set()
_SWEPT_LOCK = threading.Lock()


def _temp_prefix(path: Path) -> str:
    """``.<name>.<host>-<pid>.``: whose temp file it is, so a later run can tell a dead writer's."""
    return f".{path.name}.{_HOST}-{os.getpid()}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def _sweep_stale_temps(path: Path) -> None:
    """Remove temp files of ``path`` that a killed writer on this host left behind (once per process
    and path): a live writer's temp file, or another host's on a shared disk, is never touched."""
    with _SWEPT_LOCK:
        if path in _SWEPT:
            return
        _SWEPT.add(path)
    pattern = re.compile(re.escape(f".{path.name}.{_HOST}-") + r"(\d+)\.[^/]*\.tmp$")
    try:
        entries = [entry.name for entry in os.scandir(path.parent) if entry.name.startswith(f".{path.name}.")]
    except OSError:
        return
    for name in entries:
        match = pattern.match(name)
        if match and int(match.group(1)) != os.getpid() and not _pid_alive(int(match.group(1))):
            with contextlib.suppress(OSError):
                (path.parent / name).unlink()


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write `text` to `path` through a temp file in the same folder and an atomic rename.

    The temp file is named after the writing host and process; the first write of a path in a
    process removes the temp files of writers of this host that died before their rename (a
    SIGKILL mid-write), so a resumed run leaves no ``.<name>.*.tmp`` litter.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(path), suffix=".tmp", dir=path.parent)
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
