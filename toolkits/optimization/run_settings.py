"""The settings an optimization folder's rounds were run with, so that a resume never mixes runs.

A rerun resumes after the last complete round and builds on that round's bundle and gradient
history. That is only right when the rounds were run with the same starting configuration and
the same settings: after an edit of ``--config-path`` (or another QA model, other targets …),
the old rounds would be continued with the new settings and the final evaluation would compare
the *new* initial configuration with a final one grown from the *old* one. So the settings that
decide a round's result are saved as ``<dir>/run_settings.json`` when the run starts, and a
relaunch whose settings differ is refused while complete rounds (or, for the parameter loop, a
round's search trials) exist (``--rerun`` starts over).
Operational flags (batch sizes, retries, timeouts, progress bars, caches) are not part of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from smartcomment.runtime.errors import MemTraceError

__all__ = ["RUN_SETTINGS_FILENAME", "RunSettingsMismatchError", "check_run_settings", "configuration_digest"]

RUN_SETTINGS_FILENAME = "run_settings.json"


class RunSettingsMismatchError(MemTraceError, ValueError):
    """The folder's complete rounds were run with other settings (one-line message)."""


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def configuration_digest(bundle: Any) -> str:
    """SHA-256 of a starting ``MemoryConfigBundle`` with its secrets masked (a new key is no change)."""
    blob = json.dumps(bundle.to_json_dict(redact=True), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def check_run_settings(folder: str | Path, settings: Mapping[str, Any], *, has_results: bool) -> None:
    """Refuse settings that differ from those of the folder's results, then record them.

    Args:
        folder: The optimization folder.
        settings: JSON-able settings that decide a round's result.
        has_results: Whether the folder holds results a rerun would build on (a complete round,
            a search's trials). Without any nothing can be mixed, and the saved settings are
            simply replaced.

    Raises:
        RunSettingsMismatchError: Results exist and their saved settings differ (or the saved
            file is unreadable).
    """
    path = Path(folder) / RUN_SETTINGS_FILENAME
    current = json.loads(json.dumps(dict(settings), ensure_ascii=False))  # the form it is saved in
    if has_results and path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(saved, dict):
                raise ValueError(f"a JSON {type(saved).__name__}, not an object")
        except (OSError, ValueError) as exc:
            raise RunSettingsMismatchError(
                f"{str(path)!r} is unreadable ({exc}); the complete rounds cannot be checked against this run: "
                "pass --rerun to start over, or use another --optimization-dir"
            ) from None
        differing = [k for k in sorted(set(saved) | set(current)) if saved.get(k) != current.get(k)]
        if differing:
            diff = ", ".join(f"{k} {_shown(saved.get(k))} -> {_shown(current.get(k))}" for k in differing)
            raise RunSettingsMismatchError(
                f"the complete rounds in {str(Path(folder))!r} were run with other settings ({diff}); rerun with "
                "the same settings, use another --optimization-dir, or pass --rerun to start over"
            )
    # A folder written before this file existed has rounds but no record: they are taken as they are.
    atomic_write_json(path, current)
