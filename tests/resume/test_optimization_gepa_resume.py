"""run_optimization.py --optimizer gepa killed in the middle of a GEPA iteration, then rerun to the end.

GEPA's own state (``gepa/run/gepa_state.bin``) holds the pool and the budget spent; our journal
(``gepa/evaluation_cache.jsonl``) holds every memory-system run, so the rerun builds no
conversation again for a candidate it was built for, takes the seed candidate from
``seed_candidate.json`` instead of a second seed run, and ends with the result of the
uninterrupted (serial) run although the rerun builds two conversations at once in worker
processes (``--workers 2``). Long-Context layer, scripted ``py:`` QA/judge models and a scripted reflection
model that proposes a QA template under which the scripted QA model answers better.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("gepa", reason="the GEPA backend needs gepa (pip install 'memtrace-llm[optim]')")

from tests.resume import _process  # noqa: E402
from tests.resume._optimization_scripted import BETTER_QA, reflect  # noqa: E402
from toolkits.optimization import command as optimization_command  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCRIPTED = "py:tests.resume._optimization_scripted:"
SUMMARY_KEYS = ("components", "seed_candidate", "unset_fields", "candidates", "parents", "val_aggregate_scores",
                "best_idx", "best_candidate", "best_problems", "total_metric_calls", "best_bundle")


def _argv(locomo_file: Path, out: Path, config: Path) -> list[str]:
    return ["--config-path", str(config), "--dataset-path", str(locomo_file), "--optimization-dir", str(out),
            "--sample-size", "2", "--attribution-strategy", "evidence_flow", "--targets", "qa",
            "--optimizer", "gepa", "--gepa-max-metric-calls", "8", "--optimizer-model", "reflector",
            "--qa-model", SCRIPTED + "qa_model", "--judge-model", SCRIPTED + "judge_model",
            "--max-sessions", "1", "--max-questions", "3", "--eval-trajectories", "none", "--no-progress"]


def _journal_keys(out: Path) -> list[tuple]:
    lines = (out / "gepa" / "evaluation_cache.jsonl").read_text(encoding="utf-8").splitlines()
    return [(r["digest"], r["conversation"], r["traced"]) for r in map(json.loads, lines)]


def _summary(out: Path) -> dict:
    return json.loads((out / "gepa_summary.json").read_text(encoding="utf-8"))


def test_a_gepa_run_killed_mid_iteration_resumes_without_rebuilding_and_ends_as_uninterrupted(
        tmp_path, locomo_path, monkeypatch, capsys):
    from toolkits.optimization import gepa_backend

    monkeypatch.setattr(gepa_backend, "reflection_model", lambda _spec, **_kw: reflect)
    config = tmp_path / "long_context.json"
    config.write_text(json.dumps({"layer_type": "Long-Context"}), encoding="utf-8")
    reference = tmp_path / "uninterrupted"
    assert optimization_command.main(_argv(locomo_path, reference, config)) == 0
    assert _summary(reference)["best_candidate"]["question_answering_prompt"] == BETTER_QA
    capsys.readouterr()

    out = tmp_path / "killed"
    argv = _argv(locomo_path, out, config)
    # construction reports: the seed run, the seed's two valset runs, then iteration 1's minibatch:
    # the 5th is written while GEPA's first iteration runs (its state was saved when it began)
    ended = _process.run("_optimization_gepa_driver", argv, tmp_path, calls=tmp_path / "calls.log",
                         kill="after:construction_report.json:5")
    assert ended.killed, ended.stderr
    assert (out / "gepa" / "run" / "gepa_state.bin").is_file() and not (out / "gepa_summary.json").exists()
    journaled = _journal_keys(out)
    assert len(journaled) == 3
    seed_run = (out / "gepa" / "seed_run" / "construction_report.json").read_bytes()

    # the rerun with two workers: 0004 is the killed run, 0005 its redo; the proposal's minibatch (both
    # conversations) is then built in one fanned-out run
    assert optimization_command.main([*argv, "--workers", "2"]) == 0
    assert "resuming GEPA in" in capsys.readouterr().err
    assert [p.name for p in (out / "gepa" / "runs").glob("*-conversations-*")] == ["0006-conversations-1-0"]
    keys = _journal_keys(out)
    assert keys[:3] == journaled and len(keys) == len(set(keys))  # nothing journaled was run again
    assert sorted(keys) == sorted(_journal_keys(reference))
    assert (out / "gepa" / "seed_run" / "construction_report.json").read_bytes() == seed_run  # no second seed run
    mine, uninterrupted = _summary(out), _summary(reference)
    assert mine["reused_memory_system_runs"] == 3
    for key in SUMMARY_KEYS:
        assert mine[key] == uninterrupted[key], key
