"""Every version of the LLM report, saved as it is made, so that a rerun resumes.

Version ``k`` is the report after batch ``k``. It is written atomically to
``<save_folder>/report_versions/version_<k>.json`` (with the report, the model's rationale, the
batch's cases, usage and seconds) plus a ``.md`` copy of the text for reading and diffing; the
``.md`` is written first, so the ``.json`` — what a rerun resumes from — is never there without
it. Each file carries the *fingerprint* of the run — a hash of the rendered cases, the batch
size, the overview, the statistics shown to the model, the prompt version and the model's name,
temperature and token cap — and only versions with the current fingerprint are resumed: a rerun
with other input or settings never continues a report it did not start.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json, atomic_write_text

__all__ = ["VERSION_FORMAT", "VersionStore", "run_fingerprint"]

VERSION_FORMAT = "memtrace-report-version/1"
_NAME = re.compile(r"^version_(\d{3,})\.(json|md)$")


def run_fingerprint(
    *,
    cases: Sequence[str],
    batch_size: int,
    overview: str,
    statistics: str,
    prompt_version: str,
    model_settings: Mapping[str, Any] | None = None,
) -> str:
    """SHA-256 of everything that decides what the model is shown, batch by batch, and of the
    model settings that decide its answer (``model_settings``: name, temperature, token cap)."""
    blob = json.dumps(
        {
            "prompt_version": prompt_version,
            "model_settings": dict(model_settings or {}),
            "batch_size": batch_size,
            "overview": overview,
            "statistics": statistics,
            "cases": list(cases),
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class VersionStore:
    """The ``report_versions`` folder of one save folder.

    Args:
        folder: The ``report_versions`` folder (created on the first save).
        fingerprint: The current run's fingerprint (:func:`run_fingerprint`).
    """

    def __init__(self, folder: str | Path, fingerprint: str) -> None:
        self.folder = Path(folder)
        self.fingerprint = fingerprint

    def path_for(self, batch: int, suffix: str = "json") -> Path:
        """File of version ``batch`` (1-based)."""
        return self.folder / f"version_{batch:03d}.{suffix}"

    def _entries(self) -> dict[int, dict[str, Any] | None]:
        found: dict[int, dict[str, Any] | None] = {}
        if not self.folder.is_dir():
            return found
        for path in self.folder.iterdir():
            match = _NAME.match(path.name)
            if not match or match.group(2) != "json":
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            found[int(match.group(1))] = data if isinstance(data, dict) else None
        return found

    def resumable(self) -> list[dict[str, Any]]:
        """Versions 1..k of this run (stops at the first missing, unreadable or foreign one)."""
        entries = self._entries()
        out: list[dict[str, Any]] = []
        batch = 1
        while True:
            data = entries.get(batch)
            if (
                data is None
                or data.get("format") != VERSION_FORMAT
                or data.get("fingerprint") != self.fingerprint
                or not isinstance(data.get("report"), str)
            ):
                return out
            out.append(data)
            batch += 1

    def has_foreign_versions(self) -> bool:
        """True when the folder holds versions that belong to another run."""
        return any(
            data is None or data.get("fingerprint") != self.fingerprint for data in self._entries().values()
        )

    def clear(self) -> int:
        """Delete every saved version (only files named like versions); returns how many."""
        removed = 0
        if not self.folder.is_dir():
            return removed
        for path in self.folder.iterdir():
            if _NAME.match(path.name):
                path.unlink()
                removed += 1
        return removed

    def save(self, batch: int, payload: dict[str, Any]) -> Path:
        """Write version ``batch`` (JSON with the format and fingerprint added, plus the ``.md`` text)."""
        data = {"format": VERSION_FORMAT, "fingerprint": self.fingerprint, "batch": batch, **payload}
        atomic_write_text(self.path_for(batch, "md"), str(payload.get("report", "")).rstrip() + "\n")
        return atomic_write_json(self.path_for(batch), data)  # last: a rerun resumes from this file
