"""The app in a real browser: Streamlit on 127.0.0.1, headless Chromium driven over DevTools.

Checks what a user sees, not the script: the plotly timeline and the question list are in the
DOM (Streamlit renders over a websocket after load, so a blank page would fail), a click on a
view and on a button reach the server, and screenshots are saved for inspection.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from annotation_interface.attribution import run_evidence_flow
from annotation_interface.browser import Chromium, Page, StreamlitServer, find_chromium
from annotation_interface.loader import load_graph

from .conftest import split_file

pytest.importorskip("websockets", reason="the websockets package (a streamlit dependency) is missing")
CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.slow,  # starts Streamlit and a real Chromium
    pytest.mark.integration,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (bash scripts/install_chromium.sh)"),
]

PLOT_POINTS = """(() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  return plots.map(p => (p.data || []).reduce((n, t) => n + ((t.customdata || []).length), 0));
})()"""


async def _drive(chromium: Chromium, url: str, shots, message) -> dict:
    seen: dict = {}
    async with Page(chromium.page_ws_url()) as page:
        await page.navigate(url)
        await page.wait_for("document.querySelectorAll('.js-plotly-plot .scatterlayer .trace').length > 0", timeout=90)
        await page.wait_idle()
        seen["title"] = await page.evaluate("document.body.innerText.includes('MemTrace')")
        seen["sidebar"] = await page.evaluate(
            "document.querySelector('[data-testid=\"stSidebar\"]').innerText")
        seen["points"] = await page.evaluate(PLOT_POINTS)
        seen["markers"] = await page.evaluate("document.querySelectorAll('.js-plotly-plot .scatterlayer .point').length")
        await page.screenshot(shots / "timeline.png")

        # a real mouse click on the processing edge of a message opens its operations
        point = await page.plot_point(["edge", message.full_node_id])
        assert point is not None
        await page.click_at(*point)
        snippet = json.dumps(" ".join(message.text.split()[:4]))
        await page.wait_for(f"document.body.innerText.includes({snippet})", timeout=60)
        await page.wait_idle()
        seen["after_click"] = await page.evaluate("document.body.innerText")
        seen["plots_after_click"] = await page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
        await page.screenshot(shots / "message.png")

        assert await page.click_text("[data-testid='stSidebar'] button", "Attribute")
        await page.wait_for("document.body.innerText.includes('Candidate subgraphs')", timeout=60)
        await page.wait_idle()
        assert await page.click_text("button", "Run evidence_flow")
        await page.wait_for("document.body.innerText.includes('status attributed')", timeout=60)
        await page.wait_idle()
        seen["attribution"] = await page.evaluate("document.body.innerText")
        await page.screenshot(shots / "attribution.png")
    return seen


def test_timeline_and_question_list_render_in_chromium(faultbench, tmp_path):
    shots = tmp_path / "screenshots"
    graph = split_file(faultbench, "mem0")
    pg = load_graph(graph)
    ix = pg.index
    # the sidebar's first "Attribute" opens the first question; evidence_flow's verdict on it is
    # read here, not hard-coded (examples/faultbench is rebuilt from time to time)
    expected = run_evidence_flow(pg, ix.qas[0], "annotated")  # as the page runs it (--evidence-mode annotated)
    assert expected["status"] == "attributed"
    message = ix.messages[min(4, len(ix.messages) - 1)]
    args = ["--data", str(graph), "--index-dir", str(tmp_path / "index"),
            "--output-path", str(tmp_path / "annotations.json"), "--evidence-mode", "annotated"]
    with StreamlitServer(args, log_path=str(tmp_path / "streamlit.log")) as server, \
            Chromium(CHROMIUM, width=1400, height=1000) as chromium:
        seen = asyncio.run(_drive(chromium, server.url, shots, message))
    assert seen["title"]
    # the question list of the graph
    assert all(q.qa_id in seen["sidebar"] for q in ix.qas[:8])
    wrong = sum(q.status == "wrong" for q in ix.qas)
    assert f"{len(ix.qas)} questions: {len(ix.qas) - wrong} correct, {wrong} wrong" in seen["sidebar"]
    # the timeline chart holds one clickable point per message plus one handle per message
    n = min(240, len(ix.messages))
    assert 2 * n in seen["points"], json.dumps(seen["points"])
    assert seen["markers"] >= 2 * n
    assert message.message_id in seen["after_click"] and "memory_system.extract_facts" in seen["after_click"]
    assert seen["plots_after_click"] == 2  # the timeline and the message's op subgraph
    assert f"{expected['error_type']} at" in seen["attribution"]
    assert "Save label" in seen["attribution"]
    for name in ("timeline.png", "message.png", "attribution.png"):
        png = (shots / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # a blank page compresses far smaller
