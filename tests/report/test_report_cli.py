"""``generate_report.py`` end to end: files written, exit codes, one-line errors, resume, pictures."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from membase.clients import STRUCTURED_OUTPUT_TOOL, ScriptedChatModel, ToolCall
from toolkits.report import cli as report_cli
from toolkits.report.charts import plotly_js
from toolkits.report.pipeline import analyse


def version(report: str) -> ToolCall:
    return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "r", "report": report})


class Factory:
    """Scripted model per batch: ``fail_on`` batches raise, the others answer ``v<batch>``."""

    def __init__(self, fail_on: set[int] = frozenset()) -> None:
        self.fail_on = fail_on
        self.calls: list[int] = []

    def __call__(self, batch_index: int) -> ScriptedChatModel:
        self.calls.append(batch_index)
        if batch_index in self.fail_on:
            return ScriptedChatModel([RuntimeError(f"endpoint down for batch {batch_index + 1}")])
        return ScriptedChatModel([version(f"v{batch_index + 1}")])


def _stderr_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_no_llm_writes_json_markdown_and_an_offline_html_page(all_outputs, tmp_path: Path, capsys):
    folder = tmp_path / "report"
    code = report_cli.main(["--data-path", *map(str, all_outputs), "--save-folder", str(folder),
                                 "--no-llm", "--no-png"])
    assert code == 0
    out = capsys.readouterr().out
    assert f"json: {folder / 'error_analysis_report.json'}" in out
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert data["report"] is None and data["llm"] is None and data["complete"] is True
    assert data["statistics"] == json.loads(json.dumps(analyse(all_outputs).statistics))
    assert data["inputs"]["splits"] == ["rag", "mem0", "evermemos", "long_context"]
    page = (folder / "error_analysis_report.html").read_text(encoding="utf-8")
    bundle = plotly_js()
    assert page.count(bundle) == 1  # plotly.js inlined once, so the page works offline
    rest = re.sub(r'href="http://localhost:8501/\?[^"]*"', "", page.replace(bundle, ""))  # viewer deep links
    assert 'href="http://localhost:8501/?folder=' in page
    assert "<script src=" not in rest and "cdn" not in rest and "http" not in rest
    for slug in ("error_types_by_memory_system", "loss_funnel", "blamed_operations", "confusion_matrix"):
        assert f'id="{slug}"' in page
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    assert "(error_analysis_report.html#loss_funnel)" in markdown
    assert "| `memory_system.update_memory_decision` |" in markdown
    assert "## Failed attributions (not sent to the model)" in markdown
    assert "RateLimitError" in markdown
    assert not (folder / "report_versions").exists()


def test_png_copies_are_skipped_with_one_line_when_kaleido_is_missing(outputs_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "kaleido", None)  # import kaleido -> ImportError
    folder = tmp_path / "report"
    assert report_cli.main(["--data-path", str(outputs_dir / "rag.json"), "--save-folder", str(folder),
                                 "--no-llm"]) == 0
    notes = [line for line in _stderr_lines(capsys) if "PNG" in line]
    assert len(notes) == 1 and notes[0].startswith("note: PNG copies skipped: kaleido is not installed")
    assert not list(folder.glob("charts/*.png"))
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert data["files"]["png"] == {} and any("kaleido" in n for n in data["notices"])


def _browser_available() -> bool:
    return any(shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome", "chrome"))


@pytest.mark.slow
def test_png_copies_are_written_and_shown_in_the_markdown(outputs_dir, tmp_path: Path):
    pytest.importorskip("kaleido", reason="kaleido is not installed (pip install -e '.[report]')")
    if not _browser_available():
        pytest.skip("kaleido needs Chrome or Chromium (apt-get install chromium)")
    folder = tmp_path / "report"
    assert report_cli.main(["--data-path", str(outputs_dir / "mem0.json"), "--save-folder", str(folder),
                                 "--no-llm"]) == 0
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert "loss_funnel" in data["files"]["png"]
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    for slug, rel in data["files"]["png"].items():
        assert (folder / rel).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", slug
        assert f"]({rel})" in markdown


def test_fake_model_writes_the_llm_report_with_no_key(outputs_dir, tmp_path: Path, capsys):
    folder = tmp_path / "report"
    code = report_cli.main(["--data-path", str(outputs_dir / "long_context.json"), "--save-folder", str(folder),
                                 "--model", "fake:Most failures are trimmed evidence.", "--no-png", "--no-progress"])
    assert code == 0
    assert "Most failures are trimmed evidence." in capsys.readouterr().out
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert data["report"] == "Most failures are trimmed evidence." and data["complete"] is True
    assert data["llm"]["overview"] == "builtin:long_context"
    assert data["llm"]["batches_done"] == data["llm"]["batches_total"] >= 1
    assert len(list((folder / "report_versions").glob("version_*.json"))) == data["llm"]["batches_total"]
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    assert "Most failures are trimmed evidence." in markdown


@pytest.mark.slow
def test_failing_batch_stops_with_one_line_and_a_rerun_resumes(all_outputs, tmp_path: Path, capsys):
    folder = tmp_path / "report"
    args = ["--data-path", *map(str, all_outputs), "--save-folder", str(folder), "--batch-size", "4",
            "--retry-backoff", "0", "--max-retries", "1", "--no-png", "--no-progress"]
    failing = Factory(fail_on={1})
    assert report_cli.main(args, model_factory=failing) == 1
    assert failing.calls == [0, 1, 1]
    last = _stderr_lines(capsys)[-1]
    assert last.startswith("error: batch 2/") and "failed after 2 attempt(s)" in last
    assert "rerun the same command to resume" in last
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert data["report"] == "v1" and data["complete"] is False
    assert data["llm"]["failure"].startswith("batch 2/") and data["statistics"]["records"] > 0

    healthy = Factory()
    assert report_cli.main(args, model_factory=healthy) == 0
    total = data["llm"]["batches_total"]
    assert healthy.calls == list(range(1, total))
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert data["report"] == f"v{total}" and data["complete"] is True and data["llm"]["resumed_batches"] == 1


def test_unwritable_save_folder_fails_before_any_model_call(outputs_dir, tmp_path: Path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x", encoding="utf-8")
    factory = Factory()
    code = report_cli.main(["--data-path", str(outputs_dir / "rag.json"), "--save-folder", str(blocker / "sub")],
                                model_factory=factory)
    assert code == 2 and factory.calls == []
    lines = _stderr_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("error: cannot write --save-folder")


def test_non_attribution_input_is_one_line_and_exit_2(tmp_path: Path, capsys):
    bench_file = sorted((Path(__file__).resolve().parents[2] / "examples" / "faultbench" / "rag").glob("*.json"))[0]
    code = report_cli.main(["--data-path", str(bench_file), "--save-folder", str(tmp_path / "r"), "--no-llm"])
    assert code == 2
    lines = _stderr_lines(capsys)
    assert len(lines) == 1 and "is not an attribution output" in lines[0]


def test_missing_graph_is_listed_as_unrenderable_and_the_rest_goes_on(outputs_dir, tmp_path: Path, capsys):
    data = json.loads((outputs_dir / "mem0.json").read_text(encoding="utf-8"))
    data["results"][1]["graph_path"] = str(tmp_path / "deleted.json")
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    factory = Factory()
    folder = tmp_path / "report"
    code = report_cli.main(["--data-path", str(path), "--save-folder", str(folder), "--no-png", "--no-progress",
                                 "--batch-size", "10"], model_factory=factory)
    assert code == 0
    assert any("is unrenderable" in line and "no longer exists" in line for line in _stderr_lines(capsys))
    out = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert [u["index"] for u in out["unrenderable_cases"]] == [1]
    assert out["llm"]["cases_sent"] == len(data["results"]) - 1
    batches = -(-out["llm"]["cases_sent"] // 10)
    assert out["report"] == f"v{batches}"


def test_missing_credentials_and_bad_overview_are_exit_2(outputs_dir, tmp_path: Path, capsys, monkeypatch):
    for key in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    base = ["--data-path", str(outputs_dir / "rag.json"), "--save-folder", str(tmp_path / "r")]
    assert report_cli.main(base) == 2
    assert "no credentials" in _stderr_lines(capsys)[-1]
    assert report_cli.main([*base, "--target-system-overview", "overviews/missing.md"]) == 2
    assert "looks like a path" in _stderr_lines(capsys)[-1]
    assert report_cli.main([*base, "--api-config-path", str(tmp_path / "none.json")]) == 2
    assert "not found" in _stderr_lines(capsys)[-1]


def test_help_explains_the_flags(capsys):
    with pytest.raises(SystemExit) as info:
        report_cli.main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for flag in ("--data-path", "--save-folder", "--target-system-overview", "--no-llm", "--model", "--batch-size",
                 "--max-op-xml-tokens", "--api-config-path", "--studio-url", "--project", "--restart", "--png"):
        assert flag in text


def test_without_plotly_the_report_keeps_its_tables(outputs_dir, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly -> ImportError
    folder = tmp_path / "report"
    assert report_cli.main(["--data-path", str(outputs_dir / "evermemos.json"), "--save-folder", str(folder),
                                 "--no-llm"]) == 0
    notes = [line for line in _stderr_lines(capsys) if line.startswith("note:")]
    assert notes == ["note: charts skipped: plotly is not installed (pip install -e '.[report]')"]
    page = (folder / "error_analysis_report.html").read_text(encoding="utf-8")
    assert "<table>" in page and "Plotly" not in page
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    assert "| memory system |" in markdown and "(interactive)" not in markdown


def test_recorded_op_names_stand_in_when_the_graph_is_gone(outputs_dir, tmp_path: Path):
    data = json.loads((outputs_dir / "rag.json").read_text(encoding="utf-8"))
    for record in data["results"]:
        record["graph_path"] = str(tmp_path / "gone.json")
        record["attributed_operation"] = {"op_name": "memory_system.retrieve", "category": "retrieval"}
    path = tmp_path / "rag.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    blamed = analyse([path]).statistics["blamed_operations"]
    attributed = sum(1 for r in data["results"] if not r["attribution_failure"])
    [row] = blamed["by_name"]
    assert {k: row[k] for k in ("op_name", "count", "share", "memory_systems")} == {
        "op_name": "memory_system.retrieve", "count": attributed, "share": 1.0, "memory_systems": {"rag": attributed}}
    assert blamed["unresolved"] == 0
    assert row["prompt_targets"] == {"(no prompt target)": attributed}  # no graph: no target can be found


def test_the_llm_report_and_a_stop_are_shown_in_markdown_and_html(outputs_dir, tmp_path: Path):
    folder = tmp_path / "report"
    args = ["--data-path", str(outputs_dir / "mem0.json"), "--save-folder", str(folder), "--batch-size", "1",
            "--retry-backoff", "0", "--max-retries", "0", "--no-png", "--no-progress"]
    assert report_cli.main(args, model_factory=Factory(fail_on={1})) == 1
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    assert "The written analysis stopped: batch 2/" in markdown and "\nv1\n" in markdown
    page = (folder / "error_analysis_report.html").read_text(encoding="utf-8")
    assert '<div class="report"><p>v1</p></div>' in page


def test_failed_attributions_are_listed_but_never_sent_to_the_model(outputs_dir, tmp_path: Path):
    sent: list[str] = []

    class Recording(Factory):
        def __call__(self, batch_index: int) -> ScriptedChatModel:
            model = super().__call__(batch_index)
            original = model._next_turn

            async def record(call):
                sent.append(json.dumps(call.messages))
                return await original(call)

            model._next_turn = record
            return model

    folder = tmp_path / "report"
    assert report_cli.main(["--data-path", str(outputs_dir / "rag.json"), "--save-folder", str(folder),
                                 "--no-png", "--no-progress"], model_factory=Recording()) == 0
    out = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    failed = out["statistics"]["failed_attributions"]
    assert len(failed) == 1 and out["llm"]["cases_sent"] == out["statistics"]["attributed"]
    assert sent and not any("RateLimitError" in prompt for prompt in sent)
    assert not any(failed[0]["query_id"] in prompt for prompt in sent)


def test_ctrl_c_keeps_the_finished_batches_and_a_rerun_resumes(outputs_dir, tmp_path: Path, capsys):
    class Interrupting(Factory):
        def __call__(self, batch_index: int) -> ScriptedChatModel:
            self.calls.append(batch_index)
            if batch_index == 1:
                raise KeyboardInterrupt
            return ScriptedChatModel([version(f"v{batch_index + 1}")])

    folder = tmp_path / "report"
    args = ["--data-path", str(outputs_dir / "mem0.json"), "--save-folder", str(folder), "--batch-size", "2",
            "--no-png", "--no-progress"]
    assert report_cli.main(args, model_factory=Interrupting()) == 130
    last = _stderr_lines(capsys)[-1]
    assert last.startswith("interrupted: 1 of ") and last.endswith("rerun the same command to resume")
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert data["report"] == "v1" and data["complete"] is False and data["llm"]["failure"] == "interrupted"
    healthy = Factory()
    assert report_cli.main(args, model_factory=healthy) == 0
    assert healthy.calls[0] == 1  # batch 1 is not asked again
