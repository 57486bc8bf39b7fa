"""Drive the running app in headless Chromium through the DevTools protocol (no playwright).

``chromium --headless --screenshot`` captures Streamlit before it renders (the page is built
over a websocket after load), so the page is driven instead: launch Chromium with a remote
debugging port on 127.0.0.1, talk to its page target over a websocket (the ``websockets``
package), wait for DOM conditions, click, and capture screenshots. Used by the real-browser
test and by :mod:`annotation_interface.screenshots`.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

__all__ = ["BrowserError", "Chromium", "Page", "StreamlitServer", "find_chromium", "free_port"]

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--hide-scrollbars",
)
# Viewport coordinates of the plotly point whose customdata equals `want` (after scrolling it in).
_POINT_JS = """(want) => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const fl = gd._fullLayout; if (!fl) continue;
    for (const tr of gd._fullData || []) {
      const cd = tr.customdata || [];
      for (let i = 0; i < cd.length; i++) {
        if (JSON.stringify(cd[i]) !== JSON.stringify(want)) continue;
        // scroll the point itself into view (a chart taller than the window would leave it outside)
        if (getComputedStyle(gd).position === 'static') gd.style.position = 'relative';
        const m = document.createElement('div');
        m.style.cssText = 'position:absolute;width:1px;height:1px;pointer-events:none;left:'
          + (fl._size.l + fl.xaxis.l2p(tr.x[i])) + 'px;top:' + (fl._size.t + fl.yaxis.l2p(tr.y[i])) + 'px';
        gd.appendChild(m);
        m.scrollIntoView({block: 'center'});
        const r = m.getBoundingClientRect();
        m.remove();
        return [r.left, r.top];
      }
    }
  }
  return null;
}"""
_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserError(MemTraceError, RuntimeError):
    """Chromium or the app did not start, or the page did not reach the expected state."""


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome executable (``$CHROMIUM`` first), or None."""
    env = os.environ.get("CHROMIUM")
    if env and Path(env).is_file():
        return env
    return next((p for p in map(shutil.which, _CANDIDATES) if p), None)


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - loopback only
        return json.loads(resp.read().decode("utf-8"))


class StreamlitServer:
    """``streamlit run app.py -- ARGS`` on 127.0.0.1 and a free port, headless, no usage stats."""

    def __init__(self, app_args: Sequence[str], *, app_path: str | os.PathLike[str] | None = None,
                 port: int | None = None, env: dict[str, str] | None = None, log_path: str | None = None) -> None:
        from .cli import APP_PATH

        self.app_path = Path(app_path or APP_PATH)
        self.app_args = list(app_args)
        self.port = port or free_port()
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        """The app's URL."""
        return f"http://127.0.0.1:{self.port}/"

    def __enter__(self) -> StreamlitServer:
        cmd = [sys.executable, "-m", "streamlit", "run", str(self.app_path), "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(self.port),
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", "--", *self.app_args]
        self._log = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=self.env,
                                     start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrowserError(f"streamlit exited with status {self.proc.returncode} before serving")
            try:
                with urllib.request.urlopen(f"{self.url}_stcore/health", timeout=1) as resp:  # noqa: S310
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.__exit__(None, None, None)
        raise BrowserError(f"streamlit did not answer on {self.url} within 60 s")

    def __exit__(self, *exc: object) -> None:
        _stop(self.proc)
        if self._log not in (None, subprocess.DEVNULL):
            self._log.close()


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs (zombies, which write nothing, do not count)."""
    proc_root = Path("/proc")
    if proc_root.is_dir():
        for stat in proc_root.glob("[0-9]*/stat"):
            try:
                # "pid (comm) state ppid pgrp ...": comm may hold spaces, so split after its ")"
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
                return True
        return False
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stop(proc: subprocess.Popen[bytes] | None, *, grace: float = 10.0) -> None:
    """Stop a child started with ``start_new_session=True`` and every process it spawned.

    Chromium forks helpers (zygote, renderers, crashpad) that outlive its main process for a
    moment and keep writing into the profile; the whole process group gets SIGTERM, then SIGKILL
    after ``grace`` seconds, and this returns only once none of them is left.
    """
    if proc is None:
        return
    pgid = proc.pid  # a new session makes the child the leader of its own group
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _group_alive(pgid):
            break
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if proc.poll() is None:
                try:
                    proc.wait(timeout=0.1)
                except subprocess.TimeoutExpired:
                    continue
            if not _group_alive(pgid):
                break
            time.sleep(0.05)
    if proc.poll() is None:
        proc.wait(timeout=grace)


def _remove_tree(path: str, attempts: int = 5) -> None:
    """Remove a scratch folder; a file appearing during removal is retried, never an error."""
    for _ in range(attempts):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.exists(path):
            return
        time.sleep(0.2)


class Chromium:
    """A headless Chromium with a DevTools endpoint on 127.0.0.1 (fresh profile, no network extras)."""

    def __init__(self, executable: str | None = None, *, width: int = 1400, height: int = 1000) -> None:
        exe = executable or find_chromium()
        if exe is None:
            raise BrowserError("no Chromium found: install it (`bash scripts/install_chromium.sh`) or set $CHROMIUM")
        self.executable = exe
        self.width, self.height = width, height
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._profile: str | None = None

    def __enter__(self) -> Chromium:
        self._profile = tempfile.mkdtemp(prefix="memtrace-chromium-")
        cmd = [self.executable, *CHROMIUM_FLAGS, f"--user-data-dir={self._profile}",
               f"--window-size={self.width},{self.height}", f"--remote-debugging-port={self.port}",
               "--remote-debugging-address=127.0.0.1", "about:blank"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrowserError(f"chromium exited with status {self.proc.returncode} at start")
            try:
                _get_json(f"http://127.0.0.1:{self.port}/json/version")
                return self
            except OSError:
                time.sleep(0.2)
        self.__exit__(None, None, None)
        raise BrowserError("chromium did not open its DevTools port within 30 s")

    def __exit__(self, *exc: object) -> None:
        _stop(self.proc)
        if self._profile is not None:
            _remove_tree(self._profile)
            self._profile = None

    def page_ws_url(self) -> str:
        """The websocket URL of the first page target."""
        targets = _get_json(f"http://127.0.0.1:{self.port}/json")
        for t in targets:
            if t.get("type") == "page":
                return str(t["webSocketDebuggerUrl"])
        raise BrowserError("chromium has no page target")


class Page:
    """One DevTools session on a page target (use inside ``async with``)."""

    def __init__(self, ws_url: str) -> None:
        self.ws_url = ws_url
        self._ws: Any = None
        self._ids = itertools.count(1)

    async def __aenter__(self) -> Page:
        import websockets

        self._ws = await websockets.connect(self.ws_url, max_size=64_000_000)
        await self.call("Page.enable")
        await self.call("Runtime.enable")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._ws.close()

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events in between are dropped)."""
        mid = next(self._ids)
        await self._ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(await self._ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error'].get('message')}")
                return msg.get("result") or {}

    async def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression (promises are awaited)."""
        res = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            details = res["exceptionDetails"]
            what = (details.get("exception") or {}).get("description") or details.get("text")
            raise BrowserError(f"javascript error: {' '.join(str(what).split())[:300]} in: {expression[:120]}")
        return res.get("result", {}).get("value")

    async def navigate(self, url: str) -> None:
        """Open a URL."""
        await self.call("Page.navigate", url=url)

    async def wait_for(self, expression: str, *, timeout: float = 30.0, interval: float = 0.25) -> Any:
        """Poll a JavaScript expression until it is truthy; return its value.

        Raises:
            BrowserError: still falsy after ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        value: Any = None
        while time.monotonic() < deadline:
            value = await self.evaluate(expression)
            if value:
                return value
            await asyncio.sleep(interval)
        raise BrowserError(f"timed out after {timeout:.0f} s waiting for: {expression[:160]}")

    async def wait_idle(self, *, timeout: float = 30.0, settle: float = 0.6) -> None:
        """Wait until Streamlit finished its rerun (no running indicator for ``settle`` seconds)."""
        running = "!!document.querySelector('[data-testid=\"stStatusWidget\"]')"
        deadline = time.monotonic() + timeout
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            if await self.evaluate(running):
                quiet_since = None
            elif quiet_since is None:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= settle:
                return
            await asyncio.sleep(0.15)
        raise BrowserError("the app kept running for longer than the timeout")

    async def click_text(self, selector: str, text: str) -> bool:
        """Click the first element matching ``selector`` whose text contains ``text``."""
        js = (f"(() => {{ const el = [...document.querySelectorAll({json.dumps(selector)})]"
              f".find(e => e.innerText && e.innerText.includes({json.dumps(text)}));"
              " if (!el) return false; el.scrollIntoView({block: 'center'}); el.click(); return true; })()")
        return bool(await self.evaluate(js))

    async def click_at(self, x: float, y: float) -> None:
        """A real left click at viewport coordinates (what plotly needs to emit a click event)."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
            await asyncio.sleep(0.05)

    async def plot_point(self, customdata: Sequence[str]) -> tuple[float, float] | None:
        """Viewport coordinates of the plotly point whose ``customdata`` equals ``customdata``
        (scrolled into view first), or None."""
        js = f"({_POINT_JS})({json.dumps(list(customdata))})"
        point = await self.evaluate(js)
        if point is None:
            return None
        await asyncio.sleep(0.3)  # let the scroll settle, then measure again
        point = await self.evaluate(js)
        return (float(point[0]), float(point[1])) if point else None

    async def rect_of(self, selector: str, text: str | None = None) -> tuple[float, float] | None:
        """Centre (viewport coordinates) of the first element matching ``selector`` (and containing
        ``text``), scrolled into view; None when there is none."""
        find = (f"[...document.querySelectorAll({json.dumps(selector)})]"
                + (f".find(e => e.innerText && e.innerText.includes({json.dumps(text)}))" if text else "[0]"))
        js = (f"(() => {{ const el = {find}; if (!el) return null; el.scrollIntoView({{block: 'center'}});"
              " const r = el.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        if await self.evaluate(js) is None:
            return None
        await asyncio.sleep(0.2)
        centre = await self.evaluate(js)
        return (float(centre[0]), float(centre[1])) if centre else None

    async def select_option(self, label: str, option_text: str, *, timeout: float = 10.0) -> bool:
        """Choose the option containing ``option_text`` in the Streamlit selectbox labelled ``label``
        (real mouse clicks: the combobox ignores synthetic ``click()`` calls). A selectbox that
        already holds a value lists only the options matching it, so when the option is not
        listed the option's text is typed into the box to list it."""
        field = f"input[aria-label={json.dumps(label)}]"
        opener = await self.rect_of(f"{field} + button")
        if opener is None:
            return False
        await self.click_at(*opener)
        typed = False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            option = await self.rect_of("[role='option']", option_text)
            if option is not None:
                await self.click_at(*option)
                return True
            if not typed and time.monotonic() > deadline - timeout + 1.5:
                typed = await self.type_into(field, option_text)
            await asyncio.sleep(0.2)
        return False

    async def type_into(self, selector: str, text: str, *, enter: bool = False, clear: bool = True) -> bool:
        """Focus the first element matching ``selector``, replace its text by typing ``text`` (real
        key input, which React-controlled Streamlit fields need), and press Enter when asked."""
        js = (f"(() => {{ const el = document.querySelector({json.dumps(selector)}); if (!el) return false;"
              " el.scrollIntoView({block: 'center'}); el.focus();"
              f" if ({'true' if clear else 'false'}) el.select(); return true; }})()")
        if not await self.evaluate(js):
            return False
        if clear:
            await self.call("Input.dispatchKeyEvent", type="keyDown", key="Backspace", code="Backspace",
                            windowsVirtualKeyCode=8)
            await self.call("Input.dispatchKeyEvent", type="keyUp", key="Backspace", code="Backspace",
                            windowsVirtualKeyCode=8)
        await self.call("Input.insertText", text=text)
        if enter:
            for kind in ("keyDown", "keyUp"):
                await self.call("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
                                windowsVirtualKeyCode=13, text="\r" if kind == "keyDown" else "")
        return True

    async def scroll_to_text(self, selector: str, text: str) -> bool:
        """Scroll the first element matching ``selector`` that contains ``text`` to the top of the view."""
        js = (f"(() => {{ const el = [...document.querySelectorAll({json.dumps(selector)})]"
              f".find(e => e.innerText && e.innerText.includes({json.dumps(text)}));"
              " if (!el) return false; el.scrollIntoView({block: 'start'}); return true; })()")
        return bool(await self.evaluate(js))

    async def screenshot(self, path: str | os.PathLike[str]) -> Path:
        """Capture the viewport as a PNG file."""
        res = await self.call("Page.captureScreenshot", format="png")
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(res["data"]))
        return out
