"""The app's flags and the `python -m annotation_interface` launcher."""

from __future__ import annotations

import subprocess
import sys

import pytest

from annotation_interface import cli


def test_app_flags_and_defaults():
    args = cli.parse_app_args(["--data", "d"])
    assert (args.data, args.output_path, args.api_config, args.judge_model, args.index_dir, args.llm_strategy) == (
        "d", "error_annotation.json", None, "gpt-4.1-mini", None, "graph_search")
    assert cli.parse_app_args(["--data", "d", "--help"]).help is True


@pytest.mark.parametrize("argv", [[], ["--data"], ["--data", "d", "--bogus"], ["--data", "d", "--llm-strategy", "x"]])
def test_bad_flags_raise_app_args_error(argv):
    with pytest.raises(cli.AppArgsError):
        cli.parse_app_args(argv)


def test_help_documents_every_flag(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--data", "--output-path", "--api-config", "--judge-model", "--index-dir", "--port"):
        assert flag in out


def test_launcher_errors_are_one_line_with_exit_2(tmp_path, capsys):
    assert cli.main([]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--data" in err
    assert cli.main(["--data", str(tmp_path / "missing")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_launcher_starts_streamlit_headless_on_loopback(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(subprocess, "call", lambda cmd: seen.setdefault("cmd", cmd) and 0)
    (tmp_path / "graph.json").write_text("{}", encoding="utf-8")  # a folder with no JSON file is refused
    assert cli.main(["--data", str(tmp_path), "--port", "8600", "--output-path", "o.json"]) == 0
    cmd = seen["cmd"]
    assert cmd[:4] == [sys.executable, "-m", "streamlit", "run"] and cmd[4].endswith("app.py")
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--server.port") + 1] == "8600"
    assert cmd[cmd.index("--browser.gatherUsageStats") + 1] == "false"
    assert cmd[cmd.index("--") + 1:] == ["--data", str(tmp_path), "--output-path", "o.json"]


def test_module_help_runs_as_a_process():
    done = subprocess.run([sys.executable, "-m", "annotation_interface", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "MemTrace annotation interface" in done.stdout
