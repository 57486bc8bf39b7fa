"""The console entry point of the CLIs: one line per warning, main's exit status."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from toolkits._console import run_console

REPO = Path(__file__).resolve().parents[1]


def test_a_warning_is_one_line_and_the_status_is_mains(capsys, monkeypatch):
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)  # restored after the test

    def main() -> int:
        warnings.warn("graph x.json skipped", UserWarning, stacklevel=1)
        return 3

    with pytest.raises(SystemExit) as exit_info:
        run_console(main)
    assert exit_info.value.code == 3
    assert capsys.readouterr().err == "warning: graph x.json skipped\n"


@pytest.mark.parametrize("script", ["run_error_attribution.py", "generate_report.py", "run_optimization.py"])
def test_every_cli_script_runs_through_it(script):
    """``python <script>`` with a bad argument: argparse's usage error, exit 2, and no traceback."""
    done = subprocess.run([sys.executable, script, "--no-such-flag"], cwd=REPO, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2
    assert "unrecognized arguments: --no-such-flag" in done.stderr or "required" in done.stderr
    assert "Traceback" not in done.stderr
