"""Append-only journal of finished cases, kept beside an output file while a run goes on.

Writing the whole output after every finished case costs O(cases) per case, O(cases²) per run.
The journal costs O(1) per case instead: one JSON line per finished case, appended and flushed
to the operating system at once (a crash of the process loses nothing), and forced to disk at
most once per ``sync_interval_s`` and when the journal is closed (a power cut loses at most that
interval). The output file itself is written once, atomically, when the run ends or is
interrupted; the journal is then removed (kept after an interruption, so that a rerun resumes).

Line format (JSON lines, UTF-8): a header ``{"format": "memtrace-attribution-journal",
"version": 1}``, then one object per case, ``{"key": <cache key>, "index": <case index>,
"entry": <cache entry or null>, "record": <output record>}``. A torn last line (the process died
while writing it) and any other unreadable line are skipped when the journal is read back.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path
from typing import Any, TextIO

__all__ = ["JOURNAL_FORMAT", "JOURNAL_SUFFIX", "ResultJournal", "journal_path"]

JOURNAL_FORMAT = "memtrace-attribution-journal"
JOURNAL_VERSION = 1
JOURNAL_SUFFIX = ".journal.jsonl"


def journal_path(output_path: str | os.PathLike[str]) -> Path:
    """The journal that belongs to an output file: ``<output>.journal.jsonl`` beside it."""
    output = Path(output_path)
    return output.with_name(output.name + JOURNAL_SUFFIX)


class ResultJournal:
    """One output's journal: read the entries of an earlier run, then append new ones.

    Args:
        path: The journal file (see :func:`journal_path`).
        sync_interval_s: Longest time between two ``fsync`` calls while appending.
    """

    def __init__(self, path: str | os.PathLike[str], *, sync_interval_s: float = 1.0) -> None:
        self.path = Path(path)
        self.sync_interval_s = sync_interval_s
        self._fh: TextIO | None = None
        self._last_sync = 0.0
        self._dirty = False

    def read(self) -> list[dict[str, Any]]:
        """The case lines of an existing journal (empty if there is none or it is not ours).

        Unreadable lines are skipped with one warning that counts them.
        """
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        except OSError as exc:
            warnings.warn(f"journal {self.path} cannot be read ({exc}); starting without it", stacklevel=2)
            return []
        if not lines or not _is_header(lines[0]):
            if lines:
                warnings.warn(f"{self.path} is not a MemTrace journal; it will be replaced", stacklevel=2)
            return []
        entries: list[dict[str, Any]] = []
        bad = 0
        for line in lines[1:]:
            try:
                item = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(item, dict) and isinstance(item.get("key"), str):
                entries.append(item)
            else:
                bad += 1
        if bad:
            warnings.warn(f"journal {self.path}: {bad} unreadable line(s) skipped", stacklevel=2)
        return entries

    def open(self, *, keep_existing: bool) -> None:
        """Open for appending; ``keep_existing=False`` (or a foreign file) starts a new journal.

        Raises:
            OSError: If the journal cannot be created.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keep = keep_existing and self._has_header()
        self._fh = open(self.path, "a" if keep else "w", encoding="utf-8")  # noqa: SIM115 - closed in close()
        if not keep:
            self._fh.write(json.dumps({"format": JOURNAL_FORMAT, "version": JOURNAL_VERSION}) + "\n")
        elif not self._ends_with_newline():
            self._fh.write("\n")  # a torn last line stays on its own line, where it is skipped
        self._fh.flush()
        self._last_sync = time.monotonic()

    def append(self, item: dict[str, Any]) -> None:
        """Append one case line and flush it (fsync at most every ``sync_interval_s``).

        Raises:
            OSError: If the line cannot be written (disk full …).
        """
        if self._fh is None:
            raise RuntimeError("the journal is not open")
        self._fh.write(json.dumps(item, ensure_ascii=False) + "\n")
        self._fh.flush()
        self._dirty = True
        now = time.monotonic()
        if now - self._last_sync >= self.sync_interval_s:
            os.fsync(self._fh.fileno())
            self._last_sync = now
            self._dirty = False

    def close(self) -> None:
        """Force the journal to disk and close it (errors are ignored: the lines were flushed)."""
        if self._fh is None:
            return
        try:
            if self._dirty:
                self._fh.flush()
                os.fsync(self._fh.fileno())
        except OSError:
            pass
        finally:
            try:
                self._fh.close()
            except OSError:
                pass
            self._fh = None
            self._dirty = False

    def remove(self) -> None:
        """Close and delete the journal (after its content reached the output file)."""
        self.close()
        self.path.unlink(missing_ok=True)

    def _has_header(self) -> bool:
        try:
            with open(self.path, encoding="utf-8", errors="replace") as fh:
                return _is_header(fh.readline())
        except OSError:
            return False

    def _ends_with_newline(self) -> bool:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(-1, os.SEEK_END)
                return fh.read(1) == b"\n"
        except OSError:  # empty (no last byte) or unreadable: nothing to keep apart
            return True


def _is_header(line: str) -> bool:
    try:
        head = json.loads(line)
    except ValueError:
        return False
    return isinstance(head, dict) and head.get("format") == JOURNAL_FORMAT and head.get("version") == JOURNAL_VERSION
