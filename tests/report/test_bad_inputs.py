"""``generate_report.py`` on bad input: one ``error:`` line naming the file or field, exit 2, no traceback.

Also a rerun after damage to the saved report versions: it resumes from the last readable batch.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membase.clients import STRUCTURED_OUTPUT_TOOL, ScriptedChatModel, ToolCall
from tests.report.conftest import attribution_output
from tests.resume._unreadable import make_unreadable
from toolkits.report import cli as report_cli


def _run(capsys, argv, **kwargs) -> tuple[int, list[str]]:
    code = report_cli.main(argv, **kwargs)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, [line for line in err.splitlines() if line.strip() and not line.startswith("note: ")]


def _one_error(capsys, argv, fragment: str, **kwargs) -> str:
    code, lines = _run(capsys, argv, **kwargs)
    assert code == 2, lines
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], lines
    return lines[0]


def _write(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture()
def rag_output(tmp_path: Path) -> Path:
    return _write(tmp_path / "rag.json", attribution_output("rag"))


def _damaged(tmp_path: Path, edit) -> Path:
    data = attribution_output("rag")
    edit(data["results"][0])
    return _write(tmp_path / "damaged.json", data)


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda r: r.update(error_attribution_result="RetrievalError"),
         "record 0: 'error_attribution_result' is a JSON string, expected an object"),
        (lambda r: r.update(error_attribution_result=3),
         "record 0: 'error_attribution_result' is a JSON number, expected an object"),
        (lambda r: r["error_attribution_result"].update(error_type=5),
         "record 0: 'error_attribution_result.error_type' is a JSON number, expected a string or null"),
        (lambda r: r["error_attribution_result"].update(op_id=["op-1"]),
         "record 0: 'error_attribution_result.op_id' is a list of 1 item(s), expected a string or null"),
        (lambda r: r.update(graph_path=7), "record 0: 'graph_path' is a JSON number, expected a string or null"),
        (lambda r: r.update(attribution_failure=True),
         "record 0: 'attribution_failure' is a JSON boolean, expected a string or null"),
    ],
    ids=["result-string", "result-number", "error-type-number", "op-id-list", "graph-path-number", "failure-bool"],
)
def test_a_field_of_the_wrong_type_is_refused_not_counted_as_a_failed_attribution(tmp_path, capsys, edit, fragment):
    data = _damaged(tmp_path, edit)
    line = _one_error(capsys, ["--data-path", str(data), "--save-folder", str(tmp_path / "r"), "--no-llm"], fragment)
    assert repr(str(data)) in line
    assert not (tmp_path / "r" / "error_analysis_report.json").exists()


def test_null_results_are_named_as_json_null(tmp_path, capsys):
    data = tmp_path / "null.json"
    data.write_text("null", encoding="utf-8")
    _one_error(capsys, ["--data-path", str(data), "--save-folder", str(tmp_path / "r"), "--no-llm"],
               "got a JSON null")


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda d: d.mkdir(), "is a folder; give a text file"),
        (lambda d: d.write_bytes("caf\xe9 overview".encode("latin-1")), "is not UTF-8 text (byte 3"),
    ],
    ids=["folder", "latin-1"],
)
def test_bad_overview_path(tmp_path, capsys, rag_output, make, fragment):
    overview = tmp_path / "overviews" / "system.md"
    overview.parent.mkdir()
    make(overview)
    line = _one_error(capsys, ["--data-path", str(rag_output), "--save-folder", str(tmp_path / "r"),
                               "--model", "fake:x", "--target-system-overview", str(overview), "--no-progress"],
                      fragment)
    assert str(overview) in line


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda p: p.write_bytes(b"\xff\xfe{}"), "is not UTF-8 text (byte 0"),
        (lambda p: p.mkdir(), "is a folder: check --api-config-path"),
    ],
    ids=["not-utf8", "folder"],
)
def test_bad_api_config_is_one_line_before_any_model_call(tmp_path, capsys, rag_output, make, fragment):
    api = tmp_path / "api_config.json"
    make(api)
    line = _one_error(capsys, ["--data-path", str(rag_output), "--save-folder", str(tmp_path / "r"),
                               "--model", "gpt-x", "--api-config-path", str(api), "--no-progress"], fragment)
    assert f"API config file {str(api)!r}" in line


@pytest.mark.parametrize(
    ("name", "kind", "fragment"),
    [
        ("error_analysis_report.json", "dir", "is a folder, where the report writes a file"),
        ("report_versions", "file", "is a file, where the report keeps a folder"),
        ("charts", "file", "is a file, where the report keeps a folder"),
    ],
)
def test_a_report_name_taken_by_the_wrong_kind_is_refused_before_any_work(tmp_path, capsys, rag_output, name, kind,
                                                                          fragment):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / name).mkdir() if kind == "dir" else (folder / name).write_text("x", encoding="utf-8")
    calls: list[int] = []

    def factory(i: int):
        calls.append(i)
        return ScriptedChatModel([])

    line = _one_error(capsys, ["--data-path", str(rag_output), "--save-folder", str(folder), "--model", "scripted",
                               "--no-progress"], fragment, model_factory=factory)
    assert line.startswith(f"error: cannot write --save-folder {str(folder)!r}") and str(folder / name) in line
    assert calls == []


def test_a_write_failure_at_the_end_is_one_line_and_exit_2(tmp_path, capsys, rag_output, monkeypatch):
    import toolkits.report.pipeline as pipeline

    def full_disk(folder, *args, **kwargs):
        raise OSError(28, "No space left on device", str(Path(folder) / "error_analysis_report.json"))

    monkeypatch.setattr(pipeline, "write_documents", full_disk)
    line = _one_error(capsys, ["--data-path", str(rag_output), "--save-folder", str(tmp_path / "r"), "--no-llm",
                               "--no-png"], "No space left on device")
    assert line.startswith(f"error: cannot write the report in --save-folder {str(tmp_path / 'r')!r}")
    assert "error_analysis_report.json" in line


def _version(report: str) -> ToolCall:
    return ToolCall(name=STRUCTURED_OUTPUT_TOOL, args={"rationale": "r", "report": report})


def test_a_damaged_saved_version_is_redone_and_the_batches_before_it_are_kept(tmp_path, capsys, rag_output):
    folder = tmp_path / "r"
    argv = ["--data-path", str(rag_output), "--save-folder", str(folder), "--batch-size", "3", "--model", "scripted",
            "--no-png", "--no-progress"]
    calls: list[int] = []

    def factory(i: int) -> ScriptedChatModel:
        calls.append(i)
        return ScriptedChatModel([_version(f"v{i + 1}")])

    code, _ = _run(capsys, argv, model_factory=factory)
    assert code == 0
    total = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))["llm"]["batches_total"]
    assert total >= 3
    second = folder / "report_versions" / "version_002.json"
    second.write_text(second.read_text(encoding="utf-8")[:40], encoding="utf-8")  # truncated by hand
    calls.clear()
    code, _ = _run(capsys, argv, model_factory=factory)
    assert code == 0 and calls == list(range(1, total))
    data = json.loads((folder / "error_analysis_report.json").read_text(encoding="utf-8"))
    assert data["llm"]["resumed_batches"] == 1 and data["report"] == f"v{total}" and data["complete"] is True
    assert json.loads(second.read_text(encoding="utf-8"))["report"] == "v2"


@pytest.mark.parametrize("spelling", ["same", "dotted"])
def test_the_same_input_file_twice_is_refused_not_counted_twice(tmp_path, capsys, rag_output, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    again = str(rag_output) if spelling == "same" else f"./{rag_output.name}"
    line = _one_error(capsys, ["--data-path", str(rag_output), again, "--save-folder", str(tmp_path / "r"), "--no-llm"],
                      "is given twice")
    assert repr(again) in line and repr(str(rag_output)) in line
    assert not (tmp_path / "r" / "error_analysis_report.json").exists()


def test_an_unreadable_input_file(tmp_path, capsys, rag_output, monkeypatch):
    make_unreadable(rag_output, monkeypatch)
    _one_error(capsys, ["--data-path", str(rag_output), "--save-folder", str(tmp_path / "r"), "--no-llm"],
               f"input file {str(rag_output)!r} cannot be read: Permission denied")


def test_an_unreadable_overview_file(tmp_path, capsys, rag_output, monkeypatch):
    overview = tmp_path / "overview.md"
    overview.write_text("A memory system.", encoding="utf-8")
    make_unreadable(overview, monkeypatch)
    _one_error(capsys, ["--data-path", str(rag_output), "--save-folder", str(tmp_path / "r"), "--model", "fake:x",
                        "--target-system-overview", str(overview), "--no-progress"], "cannot be read: Permission denied")


@pytest.mark.parametrize("damage", ["[]", "", '{"format": "memtrace-report-version/1", "report": "v1'],
                         ids=["a-list", "empty", "truncated"])
def test_a_damaged_first_version_is_named_as_such_and_restart_recovers(tmp_path, capsys, rag_output, damage):
    folder = tmp_path / "r"
    argv = ["--data-path", str(rag_output), "--save-folder", str(folder), "--batch-size", "3", "--model", "scripted",
            "--no-png", "--no-progress"]
    calls: list[int] = []

    def factory(i: int) -> ScriptedChatModel:
        calls.append(i)
        return ScriptedChatModel([_version(f"v{i + 1}")])

    assert _run(capsys, argv, model_factory=factory)[0] == 0
    (folder / "report_versions" / "version_001.json").write_text(damage, encoding="utf-8")
    calls.clear()
    line = _one_error(capsys, argv, "(or damaged ones); pass --restart", model_factory=factory)
    assert calls == []  # nothing sent, nothing overwritten
    assert _run(capsys, [*argv, "--restart"], model_factory=factory)[0] == 0 and calls[0] == 0
    assert "report_versions" in line


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("", "is not JSON (Expecting value, line 1)"),
        (None, "is not JSON"),  # an output cut short (what a plain, non-atomic write leaves after a kill)
        ('{"split": "rag", "results": {"0": {}}}', "got an object with keys results, split"),
        ('{"results": []}', "holds no attribution records"),
    ],
    ids=["empty", "truncated", "results-an-object", "no-records"],
)
def test_an_input_file_damaged_or_of_the_wrong_shape(tmp_path, capsys, rag_output, content, fragment):
    data = tmp_path / "input.json"
    data.write_text(rag_output.read_text(encoding="utf-8")[:500] if content is None else content, encoding="utf-8")
    line = _one_error(capsys, ["--data-path", str(data), "--save-folder", str(tmp_path / "r"), "--no-llm"], fragment)
    assert repr(str(data)) in line


def test_a_graph_with_an_edge_to_a_missing_node_makes_its_cases_unrenderable_and_the_rest_goes_on(tmp_path, capsys, rag_output):
    data = json.loads(rag_output.read_text(encoding="utf-8"))
    broken = tmp_path / "graph with a dangling edge.json"
    graph = json.loads(Path(data["results"][0]["graph_path"]).read_text(encoding="utf-8"))
    graph["data"]["edges"][0]["source_full_node_id"] = "message:str:never-recorded@1"
    broken.write_text(json.dumps(graph), encoding="utf-8")
    first = data["results"][0]["graph_path"]
    for record in data["results"]:
        if record["graph_path"] == first:
            record["graph_path"] = str(broken)
    source = _write(tmp_path / "dangling.json", data)
    code, lines = _run(capsys, ["--data-path", str(source), "--save-folder", str(tmp_path / "r"), "--model", "fake:ok",
                                "--no-png", "--no-progress"])
    assert code == 0, lines
    report = json.loads((tmp_path / "r" / "error_analysis_report.json").read_text(encoding="utf-8"))
    unrenderable = report["unrenderable_cases"]
    assert unrenderable and all(u["graph_path"] == str(broken) for u in unrenderable)
    assert all("refers to missing node 'message:str:never-recorded@1'" in u["reason"] for u in unrenderable)
    assert report["llm"]["cases_sent"] == report["statistics"]["attributed"] - len(unrenderable)


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--examples-per-op", "-1"], "--examples-per-op must be >= 0, got -1"),
        (["--viewer-url", "localhost:8501"], "--viewer-url must start with http:// or https://"),
    ],
    ids=["negative-examples", "viewer-url-without-scheme"],
)
def test_bad_report_flags_are_usage_errors(tmp_path, capsys, rag_output, flags, fragment):
    with pytest.raises(SystemExit) as stop:
        report_cli.main(["--data-path", str(rag_output), "--save-folder", str(tmp_path / "r"), "--no-llm", *flags])
    assert stop.value.code == 2
    assert fragment in capsys.readouterr().err


def test_an_unwritable_otel_file_is_one_line_and_exit_2(tmp_path, capsys, rag_output):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    _one_error(capsys, ["--data-path", str(rag_output), "--save-folder", str(tmp_path / "r"), "--no-llm", "--no-png",
                        "--otel-jsonl", str(blocker / "spans.jsonl")], "cannot write --otel-jsonl")
    assert not (tmp_path / "r" / "error_analysis_report.json").exists()


def test_zero_examples_per_op_leaves_the_examples_out(tmp_path, rag_output):
    folder = tmp_path / "r"
    assert report_cli.main(["--data-path", str(rag_output), "--save-folder", str(folder), "--no-llm", "--no-png",
                                 "--examples-per-op", "0"]) == 0
    markdown = (folder / "error_analysis_report.md").read_text(encoding="utf-8")
    assert "## Most-blamed operations" in markdown and "Example cases per blamed operation" not in markdown
