"""Mem0v3 requested without mem0ai 2.x: one `error:` line with the install command, exit 2.

This file runs in every venv: the main one (mem0ai 1.0.5) checks the refusal, the Mem0v3 venv
checks that the same call passes.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version

import pytest

from membase.cli import main
from membase.exceptions import ConfigError
from membase.layers import build_layer_config


def _mem0_major() -> str | None:
    try:
        return version("mem0ai").split(".", 1)[0]
    except PackageNotFoundError:
        return None


without_2x = pytest.mark.skipif(_mem0_major() == "2", reason="mem0ai 2.x is installed here (the Mem0v3 venv)")
with_2x = pytest.mark.skipif(_mem0_major() != "2", reason="needs mem0ai 2.x: pip install -e '.[dev,mem0v3]'")


@without_2x
def test_the_config_check_names_the_install_command():
    with pytest.raises(ConfigError) as info:
        build_layer_config("Mem0v3", user_id="u", llm_provider="fake")
    message = str(info.value)
    assert "\n" not in message
    assert "mem0ai 2.x" in message and "pip install -e '.[mem0v3]'" in message


@without_2x
def test_the_cli_refuses_with_one_error_line_before_any_trajectory(tmp_path, capsys, locomo_path):
    config = tmp_path / "mem0v3.json"
    config.write_text(json.dumps({"layer_type": "Mem0v3", "llm_provider": "fake", "embedder_provider": "fake"}))
    out = tmp_path / "run"
    code = main(["run", "--layer-config", str(config), "--dataset", str(locomo_path), "--output-dir", str(out),
                 "--quiet", "--end-idx", "1"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert code == 2
    assert len(err) == 1 and ".[mem0v3]" in err[0]
    assert not (out / "traced_data").exists()


@with_2x
def test_the_config_check_passes_with_mem0_2x():
    config = build_layer_config("Mem0v3", user_id="u", llm_provider="fake", custom_instructions="Keep dates.")
    assert config.custom_instructions == "Keep dates."
