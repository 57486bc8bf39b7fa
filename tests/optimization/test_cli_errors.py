"""run_optimization.py refuses bad input with one `error:` line and exit code 2, before any round."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from toolkits.optimization import command as optimization_command

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "configs" / "mem0_offline.json"


def _argv(out, dataset, *extra, config=CONFIG):
    return ["--config-path", str(config), "--dataset-path", str(dataset), "--optimization-dir", str(out),
            "--sample-size", "1", "--attribution-strategy", "evidence_flow", "--optimizer-model", "fake:x",
            "--qa-model", "fake:x", "--judge-model", "fake:x", "--max-sessions", "1", "--max-questions", "2",
            "--eval-trajectories", "none", "--no-progress", *extra]


def _fails(capsys, argv, needle):
    assert optimization_command.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], err
    return err[0]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_missing_dataset(tmp_path, capsys):
    _fails(capsys, _argv(tmp_path / "o", tmp_path / "nope.json"), "not found")
    assert not (tmp_path / "o" / "iteration_1").exists()


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"{broken", "not valid JSON"), (b"\xff\xfe{}", "not valid UTF-8"),
     (b'{"layer_type": "Mem0", "no_such_field": 1}', "no_such_field"), (b'{"layer_type": "Nope"}', "unknown backend")],
)
def test_bad_config(tmp_path, capsys, locomo_file, content, needle):
    config = tmp_path / "config.json"
    config.write_bytes(content)
    _fails(capsys, _argv(tmp_path / "o", locomo_file, config=config), needle)


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"\xff\xfe", "not valid UTF-8"), (b"[1, 2", "not valid JSON"), (b'["a"]', "JSON object"),
     (b'{"question_answering_prompt": "Answer $question."}', "$context"),
     (b'{"no-such-prompt": "x"}', "no target")],
)
def test_bad_prompt_file(tmp_path, capsys, locomo_file, content, needle):
    prompts = tmp_path / "prompts.json"
    prompts.write_bytes(content)
    _fails(capsys, _argv(tmp_path / "o", locomo_file, "--initial-prompts", str(prompts)), needle)


def test_initial_prompts_by_variable_name_are_applied(tmp_path, locomo_file):
    from toolkits.optimization.cli import _apply_initial_prompts
    from toolkits.optimization.targets import TARGETS

    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"question-answering-prompt": "Q: $question C: $context"}))
    args = optimization_command.build_parser().parse_args(_argv(tmp_path / "o", locomo_file, "--initial-prompts", str(prompts)))
    from toolkits.optimization.bundle import MemoryConfigBundle

    bundle = MemoryConfigBundle.from_layer_config(json.loads(CONFIG.read_text()))
    assert _apply_initial_prompts(args, bundle, TARGETS.for_layer("Mem0")).question_answering_prompt == "Q: $question C: $context"


def test_unknown_target_strategy_and_metric(tmp_path, capsys, locomo_file):
    _fails(capsys, _argv(tmp_path / "o", locomo_file, "--targets", "nope"), "--targets")
    _fails(capsys, _argv(tmp_path / "o", locomo_file, "--attribution-strategy", "magic"), "magic")
    _fails(capsys, _argv(tmp_path / "o", locomo_file, "--metrics", "f1,rouge"), "--metrics")


def test_unreachable_endpoint_is_reported_before_any_round(tmp_path, capsys, locomo_file):
    from membase.clients.guard import allow_model_requests

    api = tmp_path / "api.json"
    api.write_text(json.dumps({"api_keys": ["sk-local"], "base_urls": [f"http://127.0.0.1:{_closed_port()}/v1"]}))
    with allow_model_requests():
        line = _fails(capsys, _argv(tmp_path / "o", locomo_file, "--qa-model", "some-model", "--api-config-path", str(api)),
                      "unreachable")
    assert "--qa-model" in line
    assert not (tmp_path / "o" / "iteration_1").exists()


def test_missing_credentials_for_a_real_optimizer(tmp_path, capsys, locomo_file, monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    _fails(capsys, _argv(tmp_path / "o", locomo_file, "--optimizer-model", "gpt-4.1"), "no credentials")


def test_relaunch_with_other_sampling_settings_is_refused(tmp_path, capsys, locomo_file):
    from toolkits.optimization.sampling import load_full_dataset, training_sample

    out = tmp_path / "o"
    out.mkdir()
    full = load_full_dataset(locomo_file, max_sessions=1, max_questions=2)
    training_sample(out, full, dataset_path=locomo_file, sample_size=1, seed=7, max_sessions=1, max_questions=2,
                    resample=False)
    _fails(capsys, _argv(out, locomo_file), "other settings")
    assert not (out / "iteration_1").exists()


def test_corrupted_bundle_of_a_complete_round_is_one_line(tmp_path, capsys, locomo_file):
    out = tmp_path / "o"
    (out / "iteration_1").mkdir(parents=True)
    (out / "iteration_1" / "memory_system_config.json").write_bytes(b"\xff")
    (out / "iteration_1" / "iteration_summary.json").write_text("{}")
    _fails(capsys, _argv(out, locomo_file), "cannot resume")


def test_bad_conversation_indexes_are_refused_before_rerun_wipes_anything(tmp_path, capsys, locomo_file):
    out = tmp_path / "o"
    (out / "iteration_1").mkdir(parents=True)
    (out / "iteration_1" / "keep.txt").write_text("x")
    _fails(capsys, _argv(out, locomo_file, "--eval-trajectories", "3,99", "--rerun"), "out of range")
    assert (out / "iteration_1" / "keep.txt").is_file()
