"""Session-wide guards: no test reaches the network, the home directory or a real LLM API.

Loopback connections stay allowed so that integration tests can talk to servers they start
themselves (the llama.cpp server fixture binds 127.0.0.1).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import tempfile
from pathlib import Path

import pytest

_SANDBOX = Path(tempfile.mkdtemp(prefix="memtrace-tests-"))
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ["MEM0_DIR"] = str(_SANDBOX / "mem0")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["POSTHOG_DISABLED"] = "1"
for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
    os.environ.pop(key, None)

def _shared_dir() -> Path:
    """``../shared`` beside the repository (``$MEMTRACE_SHARED_DIR`` overrides it). One level further
    up is also tried, so tests run from a copy inside the repository (mutmut's ``mutants/``) find it."""
    if os.environ.get("MEMTRACE_SHARED_DIR"):
        return Path(os.environ["MEMTRACE_SHARED_DIR"])
    root = Path(__file__).resolve().parents[1]
    candidates = [root.parent / "shared", root.parent.parent / "shared"]
    return next((c for c in candidates if c.is_dir()), candidates[0])


SHARED = _shared_dir()
FIXTURES_DIR = SHARED / "fixtures" / "smartcomment-0.1.2"
LOCOMO_PATH = SHARED / "data" / "locomo" / "locomo10.json"


class NetworkAccessError(RuntimeError):
    """Raised when a test tries to open a connection that leaves this machine."""


def _is_local(address) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX paths
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name would need DNS: refuse it


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if not _is_local(address):
        raise NetworkAccessError(f"tests may not open network connections (tried {address!r})")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_local(address):
        raise NetworkAccessError(f"tests may not open network connections (tried {address!r})")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex


def in_ci() -> bool:
    """True on CI (env ``CI`` set to true/1/yes), where missing shared data is an error."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def require_shared(path: Path, what: str) -> Path:
    """Return ``path`` if it exists; otherwise fail under CI and skip elsewhere.

    A developer without ``../shared`` still runs the rest of the suite; CI must never turn a
    missing data folder into a green run.
    """
    if path.exists():
        return path
    message = f"{what} not found at {path}"
    if in_ci():
        pytest.fail(f"{message}: CI must provide the ../shared folder (CI=true)", pytrace=False)
    pytest.skip(message)


_SHARED_SKIP = re.compile(r"\bshared\b.*\b(fixtures|data)\b|\.\./shared|" + re.escape(str(SHARED)), re.IGNORECASE)


def is_shared_data_skip(reason: str) -> bool:
    """True for a skip reason that says shared data is missing (see :func:`pytest_runtest_makereport`)."""
    return bool(_SHARED_SKIP.search(reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # noqa: ANN001 - pytest hook
    """Under CI, a test skipped because shared data is missing fails instead, whatever skipped it
    (``require_shared``, or a module's own ``skipif`` on a path under ``../shared``)."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if is_shared_data_skip(reason):
            report.outcome = "failed"
            report.longrepr = f"{reason} (CI=true: missing shared data is a failure, not a skip)"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return require_shared(FIXTURES_DIR, "shared smartcomment fixtures")


@pytest.fixture(scope="session")
def locomo_path() -> Path:
    return require_shared(LOCOMO_PATH, "LoCoMo data")


@pytest.fixture(autouse=True)
def _no_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Real chat/embedding clients refuse to send unless a test opts in with allow_model_requests()."""
    from membase.clients import guard

    monkeypatch.setattr(guard, "ALLOW_MODEL_REQUESTS", False)


@pytest.fixture()
def a_file(tmp_path: Path) -> Path:
    """A plain file, where a command expects a folder (or a file it must not overwrite)."""
    path = tmp_path / "a_file"
    path.write_text("x", encoding="utf-8")
    return path
