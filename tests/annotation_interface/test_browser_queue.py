"""The annotation workflow in a real browser: name once, walk the queue, edit, reload and resume,
follow a deep link, export, and score a strategy against the export.

Streamlit on 127.0.0.1 and headless Chromium driven over DevTools (see ``browser.py``).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from urllib.parse import urlencode

import pytest

from annotation_interface.browser import Chromium, Page, StreamlitServer, find_chromium
from annotation_interface.dataset import open_dataset
from annotation_interface.workqueue import queue_items

pytest.importorskip("websockets", reason="the websockets package (a streamlit dependency) is missing")
CHROMIUM = find_chromium()
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (bash scripts/install_chromium.sh)"),
]
TYPES = ("RetrievalError", "UpdateError", "ExtractionError")


def _has(text: str) -> str:
    return f"!!document.body && document.body.innerText.includes({json.dumps(text)})"


async def _label_current(page: Page, qa_id: str, kind: str, reason: str) -> None:
    """Fill the form with the first candidate op and edge, the error type and a reason; save."""
    assert await page.click_text("button", "Put in the form")
    await page.wait_idle()
    assert await page.select_option("Error type", kind)
    await page.wait_idle()
    assert await page.type_into("textarea[aria-label='Reason']", reason)
    assert await page.click_text("button", "Save label")
    await page.wait_for(_has(f"Saved {qa_id} as {kind}"), timeout=60)
    await page.wait_idle()


async def _walk(chromium: Chromium, url: str, shots: Path, items: list, export_dir: Path, folder: str) -> dict:
    seen: dict = {}
    async with Page(chromium.page_ws_url()) as page:
        await page.navigate(url)
        await page.wait_for("!!document.querySelector(\"input[aria-label='Your name (annotator)']\")", timeout=90)
        await page.wait_idle()
        # the name is asked once; afterwards the sidebar says who annotates
        assert await page.type_into("input[aria-label='Your name (annotator)']", "ana", enter=True)
        await page.wait_for(_has("Annotating as ana"), timeout=30)
        await page.wait_idle()
        assert await page.click_text("[data-testid='stRadio'] label", "Queue")
        await page.wait_for(_has(f"0 of {len(items)} annotated"), timeout=30)
        await page.wait_idle()
        await page.screenshot(shots / "queue_empty.png")
        assert await page.click_text("button", "Start / resume")
        for n, kind in enumerate(TYPES, 1):
            await page.wait_for(_has(f"case {n} of {len(items)}"), timeout=60)
            await page.wait_for(_has(items[n - 1].question[:40]), timeout=30)
            await page.wait_idle()
            await _label_current(page, items[n - 1].qa_id, kind, f"A synthetic reason for case {n}.")
            assert await page.click_text("button", "Next →")
        await page.wait_for(_has(f"case 4 of {len(items)}"), timeout=60)
        await page.wait_idle()
        seen["after_three"] = await page.evaluate("document.body.innerText")
        await page.screenshot(shots / "attribution_case4.png")

        # edit the second label: open it from the queue, the form holds the saved label
        assert await page.click_text("[data-testid='stRadio'] label", "Queue")
        await page.wait_for(_has(f"3 of {len(items)} annotated"), timeout=30)
        await page.wait_idle()
        await page.screenshot(shots / "queue_three_done.png")
        seen["queue"] = await page.evaluate("document.body.innerText")
        open_buttons = "[...document.querySelectorAll('button')].filter(b => b.innerText.trim() === 'Open')"
        assert await page.evaluate(f"(() => {{ const b = {open_buttons}[1]; b.click(); return !!b; }})()")
        await page.wait_for(_has(f"case 2 of {len(items)}"), timeout=60)
        await page.wait_idle()
        seen["form_reason"] = await page.evaluate("document.querySelector(\"textarea[aria-label='Reason']\").value")
        assert await page.select_option("Error type", "DeletionError")
        await page.wait_idle()
        assert await page.click_text("button", "Save label")
        await page.wait_for(_has("replaced your earlier label"), timeout=60)
        await page.wait_idle()

        # reload (a new session): the name comes from the URL, the queue resumes at the fourth case
        await page.navigate(url + "?" + urlencode({"annotator": "ana"}))
        await page.wait_for(_has(f"case 4 of {len(items)}"), timeout=90)
        await page.wait_idle()
        seen["resumed"] = await page.evaluate("document.body.innerText")

        # a deep link (the report writer's parameters) opens the second case with the edited label
        link = {"folder": folder, "graph": items[1].graph_stem, "case": items[1].qa_id, "annotator": "ana"}
        await page.navigate(url + "?" + urlencode(link))
        await page.wait_for(_has(f"case 2 of {len(items)}"), timeout=90)
        await page.wait_idle()
        seen["deep_link"] = await page.evaluate("document.body.innerText")
        await page.screenshot(shots / "deep_link.png")

        # export the labels from the agreement view
        await page.wait_for("[...document.querySelectorAll(\"[data-testid='stRadio'] label\")]"
                            ".some(l => l.innerText.includes('Agreement'))", timeout=60)
        assert await page.click_text("[data-testid='stRadio'] label", "Agreement")
        await page.wait_for("!!document.querySelector(\"input[aria-label='Folder to write']\")", timeout=30)
        await page.wait_idle()
        assert await page.type_into("input[aria-label='Folder to write']", str(export_dir), enter=True)
        await page.wait_idle()
        assert await page.click_text("button", "Export")
        await page.wait_for(_has("Exported 3 case(s)"), timeout=60)
        await page.wait_idle()
        seen["agreement"] = await page.evaluate("document.body.innerText")
        await page.screenshot(shots / "agreement.png")
    return seen


def test_walk_the_queue_edit_reload_resume_export_and_score(faultbench, tmp_path):
    from toolkits.attribution import cli as attribution_cli

    shots = Path(os.environ.get("MEMTRACE_SHOTS") or tmp_path / "screenshots")
    out = tmp_path / "annotations.json"
    export_dir = tmp_path / "human_bench"
    items = queue_items(open_dataset(faultbench, tmp_path / "idx"))
    args = ["--data", str(faultbench), "--index-dir", str(tmp_path / "idx"), "--output-path", str(out),
            "--evidence-mode", "annotated"]
    with StreamlitServer(args, log_path=str(tmp_path / "streamlit.log")) as server, \
            Chromium(CHROMIUM, width=1440, height=1000) as chromium:
        seen = asyncio.run(_walk(chromium, server.url, shots, items, export_dir, str(faultbench.resolve())))

    records = json.loads(out.read_text())
    assert [(r["qa_id"], r["annotator"]) for r in records] == [(i.qa_id, "ana") for i in (items[0], items[2], items[1])]
    labels = {r["qa_id"]: r["manual_error_attribution"]["error_type"] for r in records}
    assert labels == {items[0].qa_id: TYPES[0], items[1].qa_id: "DeletionError", items[2].qa_id: TYPES[2]}
    assert seen["form_reason"] == "A synthetic reason for case 2."  # the edit started from the saved label
    assert items[3].question[:40] in seen["resumed"] and "Annotating as ana" in seen["resumed"]
    assert items[1].question[:40] in seen["deep_link"]
    assert "✓" in seen["queue"]

    # score a strategy against the export: the human labels are the gold of the output
    split = items[0].split
    assert all(i.split == split for i in items[:3])
    scores = tmp_path / "scores.json"
    assert attribution_cli.main([str(export_dir), split, "--exploration-strategy", "evidence_flow",
                                       "--retrieval-type", "sparse", "--output-path", str(scores),
                                       "--no-progress"]) == 0
    result = json.loads(scores.read_text())
    assert result["metrics"]["total_cases"] == 3
    for rec in result["results"]:
        qa_id = rec["query_id"].split(":", 1)[1].rsplit("@", 1)[0]
        assert rec["final_error_type"] == labels[qa_id]
        assert rec["is_error_type_correct"] == (rec["error_attribution_result"]["error_type"] == labels[qa_id])
