"""run_optimization.py stopped for real at several points of one run, then rerun to the end.

One optimization folder is interrupted three times — SIGKILL in round 1 while its completion
marker is being written, Ctrl-C (SIGINT) while round 2's optimizer call runs, SIGKILL while the
final evaluation writes its first result — and a last rerun of the same command finishes it
(``tests/optimization/test_cli_loop.py`` kills one during round 2's optimizer call). Every file must then equal an uninterrupted run's
(timings and costs aside), a complete round must never run again, and a relaunch whose starting
configuration or settings changed is refused instead of continuing the old rounds.
"""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason="the Mem0 layer needs mem0ai 1.0.5 (pip install 'memtrace-llm[mem0]')")

from tests.resume import _kill, _process  # noqa: E402
from tests.resume._optimization_driver import make_factory  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "examples" / "configs" / "mem0_offline.json"
NEW_PROMPT = ('Keep every date and name. Extract facts as json {"facts": [...]}; decide ADD, UPDATE, DELETE or NONE '
              "per fact. Answer $question from $context.")
REPLY = {"rationale": "The trace shows the date was lost.", "feedback": "Keep dates explicit.",
         "aggregated_feedback": "Keep dates explicit.", "improved_value": NEW_PROMPT}
VOLATILE = re.compile(r"seconds|minutes|elapsed")
TODAY = re.compile(r"Today's date is \d{4}-\d{2}-\d{2}")  # mem0 renders it into its default prompt: a run may cross midnight
RANDOM_IDS = re.compile(r"\b[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\b")  # uuid4s: per run
RESULT_FILES = ("memory_system_config.json", "memory_config.json", "iteration_summary.json", "failed_cases.json",
                "error_attribution.json", "grouped_attributions.json", "feedbacks.json", "aggregated_feedbacks.json",
                "update_results.json", "gradient_history.json")


def _argv(locomo_file: Path, out: Path, *extra: str, config: Path = CONFIG, qa: str = "fake:I do not know") -> list[str]:
    return ["--config-path", str(config), "--dataset-path", str(locomo_file), "--optimization-dir", str(out),
            "--sample-size", "2", "--attribution-strategy", "evidence_flow", "--optimizer-model",
            "fake:" + json.dumps(REPLY), "--qa-model", qa, "--judge-model", 'fake:{"label": "WRONG"}',
            "--max-sessions", "1", "--max-questions", "2", "--eval-trajectories", "2", "--bootstrap-samples", "100",
            "--no-progress", *extra]


def _without_volatile(value):  # noqa: ANN001, ANN202
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if not VOLATILE.search(k)}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def _results(out: Path) -> dict:
    """Every result file of the run, timings aside, with the folder's own path written as <dir>."""
    found = {}
    for name in ("sampled_dataset.json", "run_settings.json", "final_evaluation.json"):
        found[name] = json.loads((out / name).read_text(encoding="utf-8"))
    for k in (1, 2):
        for name in RESULT_FILES:
            found[f"iteration_{k}/{name}"] = json.loads((out / f"iteration_{k}" / name).read_text(encoding="utf-8"))
    text = json.dumps(_without_volatile(found), ensure_ascii=False).replace(str(out), "<dir>")
    text = TODAY.sub("Today's date is <date>", RANDOM_IDS.sub("<uuid>", text))
    return json.loads(text)


def _complete(out: Path) -> list[int]:
    from toolkits.optimization.loop import IterationStore

    return [k for k in (1, 2) if IterationStore.is_complete(out / f"iteration_{k}")]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, locomo_path) -> Path:
    out = tmp_path_factory.mktemp("reference") / "run"
    argv = _argv(locomo_path, out)
    assert optimization_command.main(argv, optimizer_model_factory=make_factory(argv)) == 0
    return out


@pytest.mark.slow
def test_interrupted_three_times_then_rerun_equals_the_uninterrupted_run(tmp_path, locomo_path, reference, capsys,
                                                                         monkeypatch):
    out = tmp_path / "opt run é"
    argv = _argv(locomo_path, out)
    calls = tmp_path / "calls.log"

    # 1. SIGKILL in round 1, while its completion marker (its next bundle) is being written
    ended = _process.run("_optimization_driver", argv, tmp_path, calls=calls,
                         kill="before:memory_system_config.json:1")
    assert ended.killed, ended.stderr
    assert _complete(out) == [] and (out / "iteration_1" / "iteration_summary.json").is_file()
    assert set(_kill.calls(calls)) == {"round 1"}

    # 2. Ctrl-C while round 2's optimizer call runs: one line, exit 130, round 1 kept
    ended = _process.interrupt_when_hanging(_process.start("_optimization_driver", argv, tmp_path, calls=calls,
                                                           hang="2"), tmp_path, signal.SIGINT)
    assert ended.returncode == 130, ended.stderr
    lines = [ln for ln in ended.stderr.splitlines() if ln.startswith(("error", "interrupted", "Traceback"))]
    assert lines == [f"interrupted: complete rounds are kept in {out}; rerun the same command to resume"], ended.stderr
    assert "resuming at round 1 of 2" not in ended.stderr and _complete(out) == [1]
    round_one = _files(out / "iteration_1")

    # 3. SIGKILL while the final evaluation writes its first result
    ended = _process.run("_optimization_driver", argv, tmp_path, calls=calls, kill="before:outcomes.json:1")
    assert ended.killed, ended.stderr
    assert "resuming at round 2 of 2 (rounds 1-1 are complete" in ended.stderr
    assert _complete(out) == [1, 2] and not (out / "final_evaluation.json").exists()
    assert _files(out / "iteration_1") == round_one  # a complete round is never run again
    rounds = _files(out / "iteration_2")

    # the same command, once more, to the end
    before = _kill.calls(calls)
    monkeypatch.setenv(_kill.CALLS, str(calls))
    assert optimization_command.main(argv, optimizer_model_factory=make_factory(argv)) == 0
    assert "all 2 rounds are complete" in capsys.readouterr().err
    assert _kill.calls(calls) == before  # no optimizer call: nothing finished is redone
    assert _files(out / "iteration_1") == round_one and _files(out / "iteration_2") == rounds
    assert not list(out.rglob("*.tmp"))  # the killed writers' temp files were swept by the rewrites
    mine, uninterrupted = _results(out), _results(reference)
    assert mine.keys() == uninterrupted.keys()
    for name, content in mine.items():
        assert content == uninterrupted[name], name


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ("config", "initial_configuration_sha256"),
        ("qa-model", 'qa_model "fake:I do not know" -> "fake:Paris"'),
        ("targets", "targets"),
    ],
)
def test_a_relaunch_with_another_config_or_settings_does_not_continue_the_old_rounds(tmp_path, locomo_path,
                                                                                       reference, capsys, change,
                                                                                       fragment):
    config = CONFIG
    extra: list[str] = []
    qa = "fake:I do not know"
    if change == "config":
        config = tmp_path / "edited.json"
        config.write_text(json.dumps({**json.loads(CONFIG.read_text(encoding="utf-8")), "embedding_model_dims": 32}),
                          encoding="utf-8")
    elif change == "qa-model":
        qa = "fake:Paris"
    else:
        extra = ["--targets", "question_answering_prompt"]
    before = _files(reference)
    argv = _argv(locomo_path, reference, *extra, config=config, qa=qa)
    assert optimization_command.main(argv, optimizer_model_factory=make_factory(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: the complete rounds in") and fragment in err[0], err
    assert "--rerun to start over" in err[0]
    assert _files(reference) == before  # nothing was touched
