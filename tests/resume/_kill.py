"""Real, deterministic interruptions for the resume tests, installed inside a driver process.

A driver (``python -m tests.resume._<cli>_driver …``) calls :func:`install` first; the
environment then says where the process sends itself SIGKILL (nothing is cleaned up, as after
``kill -9`` or a power cut of the process):

* ``MEMTRACE_TEST_KILL=before:<file name>:<n>`` — at the n-th atomic write of a file of that name,
  after the temporary file is written and synced, before it is renamed into place;
* ``after:<file name>:<n>`` — right after that rename;
* ``torn:journal:<n>`` — while appending the n-th line of the attribution journal, half of it
  written and flushed.

Drivers also log every model call (``MEMTRACE_TEST_CALLS``, one line each, flushed at once, so a
killed process keeps its count) and touch ``MEMTRACE_TEST_HANGING`` when a model call they were
told to block on has started, so that the test can interrupt a process that is mid-call.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

KILL = "MEMTRACE_TEST_KILL"
CALLS = "MEMTRACE_TEST_CALLS"
HANGING = "MEMTRACE_TEST_HANGING"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def install() -> None:
    """Arm the kill point named by ``MEMTRACE_TEST_KILL`` (nothing when unset)."""
    spec = os.environ.get(KILL)
    if not spec:
        return
    when, name, nth = spec.split(":")
    target = int(nth)
    seen = 0
    if when == "torn":
        from toolkits._journal import ResultJournal

        real_append = ResultJournal.append

        def append(self, item):  # noqa: ANN001, ANN202
            nonlocal seen
            seen += 1
            if seen == target:
                line = json.dumps(item, ensure_ascii=False) + "\n"
                self._fh.write(line[: len(line) // 2])
                self._fh.flush()
                _die()
            return real_append(self, item)

        ResultJournal.append = append
        return
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):  # noqa: ANN001, ANN202
        nonlocal seen
        hit = Path(os.fsdecode(dst)).name == name
        if hit:
            seen += 1
        if hit and seen == target and when == "before":
            _die()
        real_replace(src, dst, *args, **kwargs)
        if hit and seen == target and when == "after":
            _die()

    os.replace = replace


def log_call(text: str) -> None:
    """Append one line to the call log (when ``MEMTRACE_TEST_CALLS`` is set)."""
    path = os.environ.get(CALLS)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")


def calls(path: Path) -> list[str]:
    """The logged calls (empty when none was made)."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def mark_hanging() -> None:
    """Tell the test that a blocking model call has started."""
    path = os.environ.get(HANGING)
    if path:
        Path(path).write_text("hanging", encoding="utf-8")
