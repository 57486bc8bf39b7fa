"""Atomic writes: a writer killed before its rename leaves a temp file; the next writer of that path
removes it, and never a live writer's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

from smartcomment.runtime import atomic as io

# A writer that hangs inside the atomic write, after its temp file exists and before the rename.
_HANGING_WRITER = textwrap.dedent("""
    import os, sys, time
    from smartcomment.runtime import atomic as io
    real_fsync = os.fsync
    def hang(fd):
        real_fsync(fd)
        print("in temp", flush=True)
        time.sleep(600)
    os.fsync = hang
    io.atomic_write_json(sys.argv[1], {"partial": True})
""")


def _start_hanging_writer(target):
    proc = subprocess.Popen([sys.executable, "-c", _HANGING_WRITER, str(target)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "in temp"
    return proc


def _temps(folder, name):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}.") and p.name.endswith(".tmp"))


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "results.json"
    proc = _start_hanging_writer(target)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert len(_temps(tmp_path, "results.json")) == 1 and not target.exists()

    io._SWEPT.discard(target)  # a fresh process: nothing swept yet
    io.atomic_write_json(target, {"done": True})
    assert json.loads(target.read_text(encoding="utf-8")) == {"done": True}
    assert _temps(tmp_path, "results.json") == []


def test_a_live_writers_and_another_hosts_temp_files_are_left_alone(tmp_path):
    target = tmp_path / "annotations.json"
    other_host = tmp_path / ".annotations.json.otherhost-4194311.abcd.tmp"
    other_host.write_text("{}")
    proc = _start_hanging_writer(target)
    try:
        live = _temps(tmp_path, "annotations.json")
        io._SWEPT.discard(target)
        io.atomic_write_json(target, ["mine"])
        assert _temps(tmp_path, "annotations.json") == live  # the live writer's and the other host's remain
        assert other_host.name in live and len(live) == 2
    finally:
        proc.kill()
        proc.wait(timeout=30)


def test_temp_files_name_their_writer(tmp_path, monkeypatch):
    seen = []
    real = io.tempfile.mkstemp

    def spy(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        seen.append(os.path.basename(name))
        return fd, name

    monkeypatch.setattr(io.tempfile, "mkstemp", spy)
    io.atomic_write_text(tmp_path / "x.txt", "x")
    assert seen and seen[0].startswith(f".x.txt.{io._HOST}-{os.getpid()}.")
