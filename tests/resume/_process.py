"""Start a CLI driver as a real subprocess, interrupt it, and read what it left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.resume import _kill

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    """How a driver process ended."""

    returncode: int
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL


def _env(tmp_path: Path, calls: Path, kill: str | None, hang: str | None, extra: dict[str, str] | None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MEMTRACE_TEST_"))}
    env.update(PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", MEM0_TELEMETRY="False", MEM0_DIR=str(tmp_path / ".mem0"))
    if env.get("MUTANT_UNDER_TEST") == "stats":  # mutmut: a child cannot report coverage back
        del env["MUTANT_UNDER_TEST"]
    env[_kill.CALLS] = str(calls)
    env[_kill.HANGING] = str(tmp_path / "hanging")
    if kill:
        env[_kill.KILL] = kill
    if hang:
        env["MEMTRACE_TEST_HANG"] = hang
    env.update(extra or {})
    return env


def start(driver: str, args: list[str], tmp_path: Path, *, calls: Path, kill: str | None = None,
          hang: str | None = None, env: dict[str, str] | None = None) -> subprocess.Popen:
    """``python -m tests.resume.<driver> ARGS`` in ``tmp_path`` (the hanging marker is reset)."""
    (tmp_path / "hanging").unlink(missing_ok=True)
    return subprocess.Popen([sys.executable, "-m", f"tests.resume.{driver}", *args], cwd=tmp_path,
                            env=_env(tmp_path, calls, kill, hang, env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 240) -> Outcome:
    """Wait for the process to end (it is killed if it overstays)."""
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        raise AssertionError(f"the driver did not end within {timeout} s: {stderr[-3000:]}") from None
    return Outcome(proc.returncode, stderr)


def run(driver: str, args: list[str], tmp_path: Path, **kwargs) -> Outcome:
    """Start and wait (for drivers told to kill themselves at a point)."""
    return finish(start(driver, args, tmp_path, **kwargs))


def interrupt_when_hanging(proc: subprocess.Popen, tmp_path: Path, sig: int = signal.SIGKILL,
                           timeout: float = 240) -> Outcome:
    """Wait until the driver's blocking model call has started, then send ``sig``."""
    marker = tmp_path / "hanging"
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the driver ended before it was interrupted: {proc.communicate()[1][-3000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("the driver never reached its blocking model call")
        time.sleep(0.05)
    proc.send_signal(sig)
    return finish(proc, 120)
