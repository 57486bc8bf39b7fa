"""Write the cases as a MemTraceBench folder: ``<out>/<split>/<case>.json`` plus ``manifest.json``
(case → fault kind; kept outside the split folders so that no graph names its fault)."""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

from .plans import Case, build_cases

SOURCE = "HandWritten-C"


def _write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False, indent=1)
    os.replace(tmp, path)


def annotation(case: Case) -> dict:
    q, rec = case.question, case.recording
    ids = rec.node_ids[q.qid]
    return {
        "query_id": ids["query_id"],
        "query": q.question,
        "golden_answers": list(q.answers),
        "golden_answers_id": ids["golden_answers_id"],
        "prediction": rec.predictions[q.qid],
        "prediction_id": ids["prediction_id"],
        "source_evidence_ids": ids["source_evidence_ids"],
        "final_error_type": case.error_type,
        "final_op_id": case.fault.label_op,
    }


def build(out: Path, seed: int = 0) -> list[dict]:
    """Build every case into ``out`` and return the manifest rows."""
    cases = build_cases(seed)
    names = [f"hc-{i:03d}" for i in range(len(cases))]
    random.Random(seed + 1).shuffle(names)
    rows = []
    for name, case in zip(names, cases, strict=False):
        data = case.recording.graph.export_graph()
        filename = f"{name}.json"
        data["metadata"].update({"memtracebench_graph_filename": filename, "memtracebench_dataset_source": SOURCE})
        data["data"]["annotations"] = [annotation(case)]
        _write_json(out / case.recording.split / filename, data)
        rows.append({"case": name, "split": case.recording.split, "kind": case.kind, "conversation": case.conv.index,
                     "question": case.question.qid, "final_error_type": case.error_type,
                     "final_op_id": case.fault.label_op})
    rows.sort(key=lambda r: r["case"])
    _write_json(out / "manifest.json", rows)
    return rows
