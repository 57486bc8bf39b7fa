"""run_optimization.py on bad input and damaged run folders: one ``error:`` line and exit 2, or a clean resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.resume._unreadable import make_unreadable
from toolkits.optimization import command as optimization_command
from toolkits.optimization.loop import IterationStore

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "configs" / "mem0_offline.json"


def _argv(out, dataset, *extra, config=CONFIG, sample_size="1", evaluate="none"):
    return ["--config-path", str(config), "--dataset-path", str(dataset), "--optimization-dir", str(out),
            "--sample-size", sample_size, "--attribution-strategy", "evidence_flow", "--optimizer-model", "fake:x",
            "--qa-model", "fake:I do not know", "--judge-model", 'fake:{"label": "WRONG"}', "--max-sessions", "1",
            "--max-questions", "2", "--eval-trajectories", evaluate, "--no-progress", *extra]


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error")]


def _fails(capsys, argv, fragment: str) -> str:
    code = optimization_command.main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = _error_lines(err)
    assert code == 2, err
    assert len(lines) == 1 and fragment in lines[0], err
    return lines[0]


def test_config_path_that_is_a_folder(tmp_path, capsys, locomo_file):
    _fails(capsys, _argv(tmp_path / "o", locomo_file, config=tmp_path),
           f"--config-path {str(tmp_path)!r} is a folder, not a JSON file")


def test_dataset_path_that_is_a_folder(tmp_path, capsys):
    _fails(capsys, _argv(tmp_path / "o", tmp_path), f"--dataset-path {str(tmp_path)!r} is a folder")


def _first_sample(locomo_file: Path) -> dict:
    return json.loads(locomo_file.read_text(encoding="utf-8"))[0]


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda s: [1, 2], "LoCoMo sample 1 in {path!r} is a JSON int, not an object"),
        (lambda s: [{**s, "qa": "what?"}], "LoCoMo sample 1 in {path!r} does not have the locomo10.json layout"),
        (lambda s: [{**s, "conversation": {**s["conversation"], "session_1": [7]}}],
         "LoCoMo sample 1 in {path!r} does not have the locomo10.json layout"),
    ],
    ids=["sample-int", "qa-string", "turn-int"],
)
def test_dataset_of_the_wrong_shape(tmp_path, capsys, locomo_file, make, fragment):
    dataset = tmp_path / "locomo.json"
    dataset.write_text(json.dumps(make(_first_sample(locomo_file))), encoding="utf-8")
    _fails(capsys, _argv(tmp_path / "o", dataset), fragment.format(path=str(dataset)))
    assert not (tmp_path / "o" / "iteration_1").exists()


def test_a_layer_without_credentials_is_exit_2_not_a_resumable_failure(tmp_path, capsys, locomo_file, monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    config = tmp_path / "mem0_openai.json"
    config.write_text("{}", encoding="utf-8")  # no layer_type: Mem0 with an OpenAI-compatible model
    line = _fails(capsys, _argv(tmp_path / "o", locomo_file, config=config),
                  f"error: the layer of --config-path {str(config)!r} cannot start: no model credentials")
    assert "rerun to resume" not in line


@pytest.mark.parametrize(
    ("name", "make", "fragment"),
    [
        ("iteration_1", lambda p: p.write_text("x"), "is a file, where the run keeps a folder"),
        ("final_evaluation", lambda p: p.write_text("x"), "is a file, where the run keeps a folder"),
        ("sampled_dataset.json", lambda p: p.mkdir(), "is a folder, where the run writes a file"),
        ("final_evaluation.json", lambda p: p.mkdir(), "is a folder, where the run writes a file"),
    ],
)
def test_a_run_folder_entry_of_the_wrong_kind(tmp_path, capsys, locomo_file, name, make, fragment):
    out = tmp_path / "o"
    out.mkdir()
    make(out / name)
    line = _fails(capsys, _argv(out, locomo_file), fragment)
    assert repr(str(out / name)) in line


@pytest.mark.parametrize("damage", ["{\"metrics\": {\"f1\"", "", "[]"], ids=["truncated", "empty", "a-list"])
def test_a_round_whose_summary_is_damaged_is_not_complete(tmp_path, damage):
    folder = tmp_path / "iteration_1"
    folder.mkdir()
    (folder / "memory_system_config.json").write_text("{}", encoding="utf-8")
    (folder / "iteration_summary.json").write_text("{}", encoding="utf-8")
    assert IterationStore.is_complete(folder)
    (folder / "iteration_summary.json").write_text(damage, encoding="utf-8")
    assert not IterationStore.is_complete(folder)
    assert IterationStore(tmp_path).last_complete() is None


@pytest.mark.slow
def test_a_truncated_summary_of_the_last_round_is_rerun_and_the_final_evaluation_rebuilt(tmp_path, capsys, locomo_file):
    out = tmp_path / "o"
    argv = _argv(out, locomo_file, sample_size="2", evaluate="5")
    assert optimization_command.main(argv) == 0
    capsys.readouterr()
    summary = out / "iteration_2" / "iteration_summary.json"
    whole = json.loads(summary.read_text(encoding="utf-8"))
    summary.write_text(summary.read_text(encoding="utf-8")[:30], encoding="utf-8")  # damaged by hand
    (out / "final_evaluation.json").write_text("{\"metrics\": ", encoding="utf-8")  # and the report too

    assert optimization_command.main(argv) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "resuming at round 2 of 2 (rounds 1-1 are complete" in err
    again = json.loads(summary.read_text(encoding="utf-8"))
    assert again.keys() == whole.keys()
    final = json.loads((out / "final_evaluation.json").read_text(encoding="utf-8"))
    assert final["num_questions"] >= 1 and set(final["metrics"]) == {"f1", "bleu", "llm_judge"}


# -- nothing is done, and nothing earlier is discarded, before every input is checked ---------------


def _complete_round(out: Path) -> Path:
    """A folder with one complete round, as a finished earlier run leaves it."""
    folder = out / "iteration_1"
    folder.mkdir(parents=True)
    (folder / "memory_system_config.json").write_text("{}", encoding="utf-8")
    (folder / "iteration_summary.json").write_text("{}", encoding="utf-8")
    return folder


@pytest.fixture()
def no_openai_env(monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(key, raising=False)


def _openai_mem0(tmp_path: Path, **llm_config) -> Path:
    config = tmp_path / "mem0 openai é.json"
    config.write_text(json.dumps({"layer_type": "Mem0", "llm_provider": "openai", "llm_config": llm_config,
                                  "embedder_provider": "fake", "embedding_model_dims": 64}), encoding="utf-8")
    return config


def test_the_layers_credentials_are_checked_before_any_round_and_before_rerun_wipes(tmp_path, capsys, locomo_file,
                                                                                    no_openai_env):
    out = tmp_path / "o"
    config = _openai_mem0(tmp_path)
    _fails(capsys, _argv(out, locomo_file, config=config), "cannot start: no model credentials")
    assert list(out.iterdir()) == []  # no sample drawn, no round folder, no memory built
    kept = _complete_round(out)
    _fails(capsys, _argv(out, locomo_file, "--rerun", config=config), "cannot start: no model credentials")
    assert IterationStore.is_complete(kept)


def test_a_missing_api_config_of_the_layer_is_reported_before_any_round(tmp_path, capsys, locomo_file, no_openai_env):
    out = tmp_path / "o"
    missing = tmp_path / "nowhere" / "api_config.json"
    line = _fails(capsys, _argv(out, locomo_file, config=_openai_mem0(tmp_path, api_config_path=str(missing))),
                  f"API config file {str(missing)!r} not found")
    assert "cannot start" in line
    assert not (out / "iteration_1").exists() and not (out / "sampled_dataset.json").exists()


def test_an_unreachable_endpoint_of_the_layer_from_the_environment_is_reported_before_any_round(
        tmp_path, capsys, locomo_file, monkeypatch):
    import socket

    from membase.clients.guard import allow_model_requests

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    out = tmp_path / "o"
    with allow_model_requests():
        line = _fails(capsys, _argv(out, locomo_file, config=_openai_mem0(tmp_path)), "is unreachable")
    assert "layer llm_model 'gpt-4.1-mini'" in line and f"127.0.0.1:{port}" in line and "sk-local" not in line
    assert not (out / "iteration_1").exists()


def test_a_sample_size_beyond_the_dataset_is_refused_before_rerun_wipes(tmp_path, capsys, locomo_file):
    out = tmp_path / "o"
    kept = _complete_round(out)
    _fails(capsys, _argv(out, locomo_file, "--rerun", sample_size="11"), "--sample-size 11 exceeds the 10 conversations")
    assert IterationStore.is_complete(kept)


def test_a_huge_sample_size_is_one_line_at_once(tmp_path, capsys, locomo_file):
    # it used to check 10**12 round folders for being files before comparing with the dataset
    _fails(capsys, _argv(tmp_path / "o", locomo_file, sample_size=str(10**12)), "exceeds the 10 conversations")


@pytest.mark.parametrize("which", ["dataset", "config", "prompt file"])
def test_an_unreadable_input_file(tmp_path, capsys, locomo_file, monkeypatch, which):
    out = tmp_path / "o"
    if which == "dataset":
        target = tmp_path / "locomo é.json"
        target.write_bytes(locomo_file.read_bytes())
        argv = _argv(out, target)
    elif which == "config":
        target = tmp_path / "config.json"
        target.write_bytes(CONFIG.read_bytes())
        argv = _argv(out, locomo_file, config=target)
    else:
        target = tmp_path / "prompts.json"
        target.write_text(json.dumps({"question_answering_prompt": "Answer $question from $context."}))
        argv = _argv(out, locomo_file, "--initial-prompts", str(target))
    make_unreadable(target, monkeypatch)
    line = _fails(capsys, argv, "cannot be read")
    assert "Permission denied" in line and repr(str(target)) in line
    assert not (out / "iteration_1").exists()


def test_a_run_settings_file_that_is_a_folder(tmp_path, capsys, locomo_file):
    out = tmp_path / "o"
    (out / "run_settings.json").mkdir(parents=True)
    _fails(capsys, _argv(out, locomo_file), "is a folder, where the run writes a file")


@pytest.mark.parametrize("damage", ["[]", "{\"qa_model\": ", ""], ids=["a-list", "truncated", "empty"])
def test_damaged_run_settings_beside_complete_rounds_are_one_line_and_never_guessed(tmp_path, capsys, locomo_file,
                                                                                    damage):
    out = tmp_path / "o"
    _complete_round(out)
    (out / "run_settings.json").write_text(damage, encoding="utf-8")
    _fails(capsys, _argv(out, locomo_file), "run_settings.json' is unreadable")


def test_a_final_evaluation_result_that_is_a_list_is_evaluated_again(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from membase.clients.fake import FunctionChatModel
    from toolkits.optimization import final_eval
    from toolkits.optimization.bundle import MemoryConfigBundle
    from toolkits.optimization.pipeline import PipelineSettings

    runs = []
    monkeypatch.setattr(final_eval, "run_pipeline", lambda *a, **k: runs.append(a) or SimpleNamespace(
        summary={}, outputs=[{"qa_pair": {"id": "q"}}]))
    bundle = MemoryConfigBundle.from_layer_config(json.loads(CONFIG.read_text(encoding="utf-8")))
    settings = PipelineSettings(top_k=2, qa_model=FunctionChatModel(lambda *_a, **_k: "x", model="fake:x"),
                                judge_model=None, metrics=("f1",))
    folder = tmp_path / "initial"
    folder.mkdir()
    (folder / "outcomes.json").write_text("[]", encoding="utf-8")  # hand-edited, or another tool's file
    dataset = SimpleNamespace(trajectories=[object()])
    assert final_eval._evaluate(bundle, dataset, [3], folder, settings) == [{"qa_pair": {"id": "q"}}]
    assert len(runs) == 1
    assert final_eval._evaluate(bundle, dataset, [3], folder, settings) == [{"qa_pair": {"id": "q"}}]
    assert len(runs) == 1  # the rewritten file is reused


def test_the_parameter_loop_does_not_continue_rounds_of_another_config_or_search(tmp_path, capsys, locomo_file):
    pytest.importorskip("optuna", reason="the parameter loop needs Optuna (pip install 'memtrace-llm[optim]')")
    from toolkits.optimization.bundle import MemoryConfigBundle

    config = tmp_path / "lc.json"
    config.write_text(json.dumps({"layer_type": "Long-Context", "context_window": 4000}), encoding="utf-8")
    out = tmp_path / "o"
    folder = out / "iteration_1"
    folder.mkdir(parents=True)
    MemoryConfigBundle.from_layer_config(json.loads(config.read_text(encoding="utf-8"))).save(folder)
    (folder / "iteration_summary.json").write_text("{}", encoding="utf-8")  # a complete round of this config

    def argv(*extra: str) -> list[str]:
        return ["--objective", "context_recall", "--config-path", str(config), "--dataset-path", str(locomo_file),
                "--train-trajectories", "0", "--eval-trajectories", "none", "--max-sessions", "1", "--rounds", "1",
                "--optimization-dir", str(out), "--no-progress", *extra]

    assert optimization_command.main(argv()) == 0  # nothing left to run; the settings are recorded
    assert "all 1 rounds are complete" in capsys.readouterr().err
    _fails(capsys, argv("--context-budget", "500"), "context_budget 1000 -> 500")
    config.write_text(json.dumps({"layer_type": "Long-Context", "context_window": 2000}), encoding="utf-8")
    _fails(capsys, argv(), "initial_configuration_sha256")
    assert IterationStore.is_complete(folder)
