"""evidence_flow stays small: no function above complexity 15 (ruff's mccabe, configured in pyproject)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_no_function_of_evidence_flow_is_above_complexity_15():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (the dev extra)")
    done = subprocess.run([ruff, "check", "--select", "C901", "--output-format", "concise", "toolkits/evidence_flow"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
