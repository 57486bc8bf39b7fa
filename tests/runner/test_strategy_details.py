"""What a strategy says beside its prediction reaches the output record (evidence_flow's trail),
survives the cache and the journal, and is what the report's loss funnel reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolkits._case_cache import InvalidEntryError, validate_entry
from toolkits.attribution import cli as attribution_cli
from toolkits.report import cli as report_cli
from toolkits.runner import CaseResult

FAULTBENCH = Path(__file__).resolve().parents[2] / "examples" / "faultbench"


def _attribute(out: Path, *extra: str, split: str = "long_context") -> list[dict]:
    code = attribution_cli.main([str(FAULTBENCH), split, "--exploration-strategy", "evidence_flow",
                                       "--output-path", str(out), "--no-progress", *extra])
    assert code == 0
    return json.loads(out.read_text(encoding="utf-8"))["results"]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("details")
    return root, _attribute(root / "first.json", "--cache-dir", str(root / "cache"))


def test_every_evidence_flow_record_carries_status_confidence_and_trail(first_run):
    _, records = first_run
    assert records
    for record in records:
        flow = record["evidence_flow"]
        assert flow["status"] == "attributed"
        assert 0.0 < flow["confidence"] <= 1.0
        stages = [step["stage"] for step in flow["trail"]]
        assert stages[0] == "evidence"
        # the trail ends where the attributed op is named
        assert record["error_attribution_result"]["op_id"] in {step["op_id"] for step in flow["trail"]}
        assert flow["evidence"]


def test_cached_and_resumed_results_keep_their_trail(first_run, tmp_path):
    root, records = first_run
    again = _attribute(tmp_path / "again.json", "--cache-dir", str(root / "cache"))
    assert all(r["attribution_cached"] for r in again)
    assert [r["evidence_flow"] for r in again] == [r["evidence_flow"] for r in records]


@pytest.mark.slow
def test_a_journalled_case_is_resumed_with_its_trail(tmp_path):
    from toolkits._journal import JOURNAL_FORMAT, journal_path

    cache = tmp_path / "cache"
    _attribute(tmp_path / "seen.json", "--cache-dir", str(cache), split="rag")
    # what an interrupted run leaves: a journal of finished cases (their trails marked) and no output
    out = tmp_path / "run.json"
    lines = [{"format": JOURNAL_FORMAT, "version": 1}]
    for index, path in enumerate(sorted(cache.rglob("*.json"))):
        entry = json.loads(path.read_text(encoding="utf-8"))
        entry["details"]["evidence_flow"]["trail"].append({"stage": "marker", "present": False})
        lines.append({"key": path.stem, "index": index, "entry": entry, "record": {}})
    journal_path(out).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    records = _attribute(out, split="rag")
    assert len(records) == len(lines) - 1
    assert all(r["attribution_cached"] for r in records)
    assert all(r["evidence_flow"]["trail"][-1] == {"stage": "marker", "present": False} for r in records)
    assert CaseResult(index=0, prediction=None, details={"evidence_flow": {}}).cache_entry() is None


def test_stored_details_are_validated():
    entry = {"error_attribution_result": {"error_type": "RetrievalError", "op_id": "op-1", "reason": "r"}, "time": 1.0}
    assert "details" not in validate_entry(entry)
    assert validate_entry({**entry, "details": None}).get("details") is None
    kept = validate_entry({**entry, "details": {"evidence_flow": {"trail": []}}})
    assert kept["details"] == {"evidence_flow": {"trail": []}}
    for bad in ([1], "trail", {"evidence_flow": [1, 2]}):
        with pytest.raises(InvalidEntryError, match="^details: expected an object of objects or null$"):
            validate_entry({**entry, "details": bad})


def test_the_report_funnel_places_every_case_by_its_trail(first_run, tmp_path):
    root, records = first_run
    save = tmp_path / "report"
    code = report_cli.main(["--data-path", str(root / "first.json"), "--save-folder", str(save), "--no-llm",
                                 "--no-png", "--no-progress"])
    assert code == 0
    funnel = json.loads((save / "error_analysis_report.json").read_text())["statistics"]["loss_funnel"]["overall"]
    # every case is placed by its verdict and checked against its trail; none contradicts it
    assert funnel["trail"] == {"checked": len(records), "agrees": len(records), "contradicts": 0}
    assert funnel["unknown"] == 0
