"""Atomic file writes for membase and every package above it (temp file, fsync, rename).

The implementation lives in :mod:`smartcomment.runtime.atomic`, the lowest package, so that the
tracer's graph export shares it; this is the name the rest of the project imports.
"""

from __future__ import annotations

from smartcomment.runtime.atomic import atomic_write_json, atomic_write_text, current_umask

__all__ = ["atomic_write_json", "atomic_write_text", "current_umask"]
