"""Stopping the browser's process tree: no helper process may outlive the stop and write on.

CI once failed removing Chromium's profile: a helper process was still writing into it after the
main process had exited. These run without Chromium, on a shell that forks a writer.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from annotation_interface.browser import _group_alive, _remove_tree, _stop

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")

# The writer ignores SIGTERM, like a helper busy flushing its files; only SIGKILL ends it.
WRITER = 'trap "" TERM; i=0; while :; do i=$((i+1)); : > "$1/f$i"; sleep 0.01; done'


def _spawn_tree(folder) -> subprocess.Popen[bytes]:
    script = f"sh -c '{WRITER}' writer \"$1\" & wait"
    proc = subprocess.Popen(["sh", "-c", script, "parent", str(folder)], start_new_session=True)
    deadline = time.monotonic() + 10
    while not any(folder.iterdir()):
        assert time.monotonic() < deadline, "the writer never started"
        time.sleep(0.02)
    return proc


def test_stop_ends_every_process_of_the_group_and_nothing_writes_afterwards(tmp_path):
    folder = tmp_path / "profile"
    folder.mkdir()
    proc = _spawn_tree(folder)
    _stop(proc, grace=0.5)
    assert proc.poll() is not None
    assert not _group_alive(proc.pid)
    _remove_tree(str(folder))
    assert not folder.exists()
    time.sleep(0.2)
    assert not folder.exists()  # no survivor recreated a file in it


def test_group_alive_sees_a_running_group_and_not_a_finished_one(tmp_path):
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert _group_alive(proc.pid)
    finally:
        _stop(proc, grace=2)
    assert not _group_alive(proc.pid)


def test_stop_of_nothing_or_of_a_finished_process_returns_at_once():
    _stop(None)
    proc = subprocess.Popen(["true"], start_new_session=True)
    proc.wait()
    started = time.monotonic()
    _stop(proc, grace=5)
    assert time.monotonic() - started < 2
