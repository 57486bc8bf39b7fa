"""run_optimization.py on bad input and damaged run folders: one ``error:`` line and exit 2, or a clean resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import run_optimization
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
    code = run_optimization.main(argv)
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


def test_a_truncated_summary_of_the_last_round_is_rerun_and_the_final_evaluation_rebuilt(tmp_path, capsys, locomo_file):
    out = tmp_path / "o"
    argv = _argv(out, locomo_file, sample_size="2", evaluate="5")
    assert run_optimization.main(argv) == 0
    capsys.readouterr()
    summary = out / "iteration_2" / "iteration_summary.json"
    whole = json.loads(summary.read_text(encoding="utf-8"))
    summary.write_text(summary.read_text(encoding="utf-8")[:30], encoding="utf-8")  # damaged by hand
    (out / "final_evaluation.json").write_text("{\"metrics\": ", encoding="utf-8")  # and the report too

    assert run_optimization.main(argv) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "resuming at round 2 of 2 (rounds 1-1 are complete" in err
    again = json.loads(summary.read_text(encoding="utf-8"))
    assert again.keys() == whole.keys()
    final = json.loads((out / "final_evaluation.json").read_text(encoding="utf-8"))
    assert final["num_questions"] >= 1 and set(final["metrics"]) == {"f1", "bleu", "llm_judge"}
