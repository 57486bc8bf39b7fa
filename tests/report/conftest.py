"""Attribution outputs for the report tests, built from the committed ``examples/faultbench`` graphs.

Each split's annotated cases become records shaped like ``run_error_attribution.py``'s output.
The predictions follow the gold labels except for a few deliberate deviations, so that accuracy,
the confusion matrix and the failure list have something to show:

* the first case of each split is predicted with the *next* error type (a wrong type, right op);
* the second case of the ``rag`` split failed to attribute (``attribution_failure`` set);
* the last case of the ``mem0`` split is attributed to an op id that is not in its graph.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from toolkits.bench_utils import ERROR_TYPES, MEMTRACEBENCH_SPLITS

REPO = Path(__file__).resolve().parents[2]
FAULTBENCH = REPO / "examples" / "faultbench"
MISSING_OP = "op-does-not-exist"


def _records(split: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for path in sorted((FAULTBENCH / split).glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        for annotation in raw["data"]["annotations"]:
            if annotation.get("final_error_type") not in ERROR_TYPES:
                continue
            record = copy.deepcopy(annotation)
            record["graph_path"] = str(path)
            records.append(record)
    assert len(records) >= 2, f"examples/faultbench/{split} needs at least two cases for these tests"
    for i, record in enumerate(records):
        gold_type, gold_op = record["final_error_type"], record["final_op_id"]
        error_type, op_id, failure = gold_type, gold_op, None
        if i == 0:
            error_type = ERROR_TYPES[(ERROR_TYPES.index(gold_type) + 1) % len(ERROR_TYPES)]
        if split == "rag" and i == 1:
            failure = "agent error: RateLimitError: too many requests"
        if split == "mem0" and i == len(records) - 1:
            op_id = MISSING_OP
        if failure:
            result = {"error_type": "", "op_id": "", "reason": failure}
        else:
            result = {"error_type": error_type, "op_id": op_id, "reason": f"reason {split} {i}"}
        record.update(
            error_attribution_result=result,
            is_error_type_correct=failure is None and error_type == gold_type,
            is_op_id_correct=failure is None and op_id == gold_op,
            attribution_failure=failure,
            attribution_attempts=1,
            attribution_seconds=1.5 * (i + 1),
            attribution_cached=False,
            attribution_usage={"input_tokens": 1000 * (i + 1), "output_tokens": 10 * (i + 1), "num_calls": i + 1},
            starting_evidence_ids=list(record.get("source_evidence_ids") or []),
        )
    return records


def attribution_output(split: str) -> dict[str, Any]:
    """A whole ``run_error_attribution.py`` output for one split (metrics abridged)."""
    records = _records(split)
    return {
        "complete": True,
        "split": split,
        "exploration_strategy": "graph_search",
        "model": "scripted",
        "sampled_graph_paths": sorted({r["graph_path"] for r in records}),
        "results": records,
        "metrics": {"total_cases": len(records)},
    }


@pytest.fixture(scope="session")
def outputs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``<split>.json`` for each of the four splits."""
    folder = tmp_path_factory.mktemp("attribution_outputs")
    for split in MEMTRACEBENCH_SPLITS:
        (folder / f"{split}.json").write_text(json.dumps(attribution_output(split), indent=2), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def all_outputs(outputs_dir: Path) -> list[Path]:
    """The four per-split output files."""
    return [outputs_dir / f"{split}.json" for split in MEMTRACEBENCH_SPLITS]
