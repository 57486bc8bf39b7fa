"""Screenshots of the running app for the README (headless Chromium over DevTools).

    python -m annotation_interface.screenshots --data examples/faultbench --out docs/images

Starts the app on a free 127.0.0.1 port, opens one graph, clicks a message's processing edge
in the timeline, opens one of its operations, attributes a wrong question with evidence_flow,
and writes ``viewer_timeline.png``, ``viewer_operation.png``, ``viewer_attribution.png``,
``viewer_trail.png`` and ``viewer_queue.png`` (palette PNGs when Pillow is installed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .browser import BrowserError, Chromium, Page, StreamlitServer, find_chromium

__all__ = ["capture", "main"]

_HANDLES_JS = """(() => { for (const gd of document.querySelectorAll('.js-plotly-plot'))
  for (const tr of gd._fullData || []) if (tr.name === 'processing (click)') return tr.customdata; return null; })()"""


async def capture(page: Page, url: str, out: Path, *, graph: str | None, message_index: int) -> list[Path]:
    """Drive the app at ``url`` and write the screenshots into ``out``."""
    written = []
    await page.navigate(url)
    await page.wait_for("document.querySelectorAll('.js-plotly-plot .scatterlayer .trace').length > 0", timeout=120)
    await page.wait_idle()
    if graph:
        if not await page.select_option("Graph", graph):
            raise BrowserError(f"no graph option containing {graph!r}")
        await page.wait_for("[...document.querySelectorAll('[data-testid=\"stCaptionContainer\"]')].some(c => "
                            f"c.innerText.includes(' · graph ') && c.innerText.split(' · ')[0].includes({json.dumps(graph)}))",
                            timeout=60)
        await page.wait_idle()
    handles = await page.wait_for(_HANDLES_JS, timeout=30)
    target = handles[min(message_index, len(handles) - 1)]
    point = await page.plot_point(target)
    if point is None:
        raise BrowserError("the timeline has no clickable processing edge")
    await page.click_at(*point)
    await page.wait_for("document.querySelectorAll('.js-plotly-plot').length >= 2", timeout=60)
    await page.wait_idle()
    await page.scroll_to_text("[data-testid='stCaptionContainer']", "· graph ")
    await asyncio.sleep(0.5)
    written.append(await page.screenshot(out / "viewer_timeline.png"))

    if not await page.click_text("button", "Open in the operation view"):
        raise BrowserError("no 'Open in the operation view' button")
    await page.wait_for("document.body.innerText.includes('Inputs and outputs as text')", timeout=60)
    await page.wait_idle()
    await page.scroll_to_text("[data-testid='stMarkdownContainer']", "· category")
    await asyncio.sleep(0.5)
    written.append(await page.screenshot(out / "viewer_operation.png"))

    if not await page.click_text("[data-testid='stSidebar'] button", "Attribute"):
        raise BrowserError("no question to attribute in the sidebar")
    await page.wait_for("document.body.innerText.includes('Candidate subgraphs')", timeout=60)
    await page.wait_idle()
    if not await page.click_text("button", "Run evidence_flow"):
        raise BrowserError("no 'Run evidence_flow' button")
    await page.wait_for("document.body.innerText.includes('status attributed')", timeout=240)
    await page.wait_idle()
    await page.scroll_to_text("h5", "—")
    await asyncio.sleep(0.5)
    written.append(await page.screenshot(out / "viewer_attribution.png"))
    await page.scroll_to_text("[data-testid='stMarkdownContainer']", "evidence_flow · status")
    await asyncio.sleep(0.5)
    written.append(await page.screenshot(out / "viewer_trail.png"))
    if not await page.click_text("[data-testid='stRadio'] label", "Queue"):
        raise BrowserError("no 'Queue' view")
    await page.wait_for("document.body.innerText.includes('Annotation queue')", timeout=60)
    await page.wait_idle()
    written.append(await page.screenshot(out / "viewer_queue.png"))
    return written


def _shrink(paths: Sequence[Path]) -> None:
    try:
        from PIL import Image
    except ImportError:
        return
    for p in paths:
        with Image.open(p) as im:
            small = im.convert("RGB").quantize(colors=128)
        small.save(p, optimize=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Take the README screenshots; return 0, or 2 with a one-line error."""
    ap = argparse.ArgumentParser(prog="python -m annotation_interface.screenshots", description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="examples/faultbench", help="graph file or folder (default: %(default)s)")
    ap.add_argument("--out", default="docs/images", help="output folder (default: %(default)s)")
    ap.add_argument("--graph", default="mem0/", help="open the first graph whose name contains this (default: %(default)s)")
    ap.add_argument("--message", type=int, default=4, help="timeline message whose processing edge is clicked")
    ap.add_argument("--width", type=int, default=1360)
    ap.add_argument("--height", type=int, default=900)
    args = ap.parse_args(argv)
    if find_chromium() is None:
        print("error: Chromium not found: run `bash scripts/install_chromium.sh` or set $CHROMIUM", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memtrace-shots-") as tmp:
        app_args = ["--data", args.data, "--index-dir", f"{tmp}/index", "--output-path", f"{tmp}/annotations.json"]
        try:
            with StreamlitServer(app_args, log_path=f"{tmp}/streamlit.log") as server, \
                    Chromium(width=args.width, height=args.height) as chromium:

                async def run() -> list[Path]:
                    async with Page(chromium.page_ws_url()) as page:
                        return await capture(page, server.url, out, graph=args.graph, message_index=args.message)

                paths = asyncio.run(run())
        except BrowserError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    _shrink(paths)
    for p in paths:
        print(f"wrote {p} ({p.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
