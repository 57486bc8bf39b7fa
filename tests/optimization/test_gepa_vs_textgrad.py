"""benchmarks/optimization_backends.py: GEPA and the three-stage optimizer on one scripted scenario.

Both backends get the same evaluation budget (GEPA's ``--gepa-max-metric-calls`` is the number of
conversations the three-stage run evaluated, rounds and gate together), both complete, and what
each accepted and why is in its files: the gate's per-target verdicts in ``iteration_summary.json``,
GEPA's acceptance lines in ``gepa.log`` and its component choices in ``selections.jsonl``. The
Long-Context layer keeps it fast; the benchmark's default is the offline Mem0 layer.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("gepa", reason="the GEPA backend needs gepa (pip install 'memtrace-llm[optim]')")

from benchmarks.optimization_backends import BETTER_QA, main  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_both_backends_complete_on_the_same_budget_and_record_what_they_accepted(tmp_path, locomo_path, capsys):
    from toolkits.optimization import gepa_backend, pipeline

    real = pipeline.chat_model_from_spec, gepa_backend.reflection_model
    config = tmp_path / "long_context.json"
    config.write_text(json.dumps({"layer_type": "Long-Context"}), encoding="utf-8")
    work = tmp_path / "backends"
    assert main(["--work-dir", str(work), "--dataset-path", str(locomo_path), "--config-path", str(config),
                 "--targets", "question_answering_prompt"]) == 0
    assert (pipeline.chat_model_from_spec, gepa_backend.reflection_model) == real  # the benchmark undid its patches
    table = capsys.readouterr().out
    assert "textgrad" in table and "gepa" in table
    rows = json.loads((work / "results.json").read_text())

    textgrad, gepa = rows["textgrad"], rows["gepa"]
    assert textgrad["conversation_evaluations"] >= 4  # two rounds and the gate's runs on two conversations
    summary = json.loads((work / "gepa" / "gepa_summary.json").read_text())
    assert summary["max_metric_calls"] == textgrad["conversation_evaluations"]
    assert summary["total_metric_calls"] == gepa["conversation_evaluations"]
    for row in rows.values():
        assert row["before"] == 0.0 and row["after"] == 1.0 and row["qa_prompt_changed"]

    # the three-stage optimizer: the gate judged the QA update alone and kept it for its gain
    first = json.loads((work / "textgrad" / "iteration_1" / "iteration_summary.json").read_text())["validation_gate"]
    verdict = first["per_target"]["question_answering_prompt"]
    assert verdict["accepted"] and verdict["gain"] > 0 and first["accepted_fields"] == ["question_answering_prompt"]
    assert textgrad["decisions"][0]["gains"] == {"question_answering_prompt": verdict["gain"]}
    # GEPA: its own minibatch acceptance, and the component its selector picked with the reason
    assert gepa["decisions"] and all("Accepted candidate" in line for line in gepa["decisions"])
    selections = [json.loads(line) for line in (work / "gepa" / "gepa" / "selections.jsonl").read_text().splitlines()]
    assert selections[0]["chosen"] == "question_answering_prompt" and selections[0]["why"]
    assert summary["best_candidate"]["question_answering_prompt"] == BETTER_QA
