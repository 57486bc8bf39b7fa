"""Export human labels as a MemTraceBench folder, so the tools score against them.

Each graph with at least one human label is written to ``<out>/<split>/<file>.json`` with its
``data.annotations`` replaced by one entry per labelled case: the keys the benchmark loader
reads (``query_id``, ``query``, ``golden_answers``, ``prediction``, ``source_evidence_ids``,
``final_error_type``, ``final_op_id`` …) plus ``annotated_by``, ``annotation_reason`` and
``annotation_comment``. ``run_error_attribution.py <out> <split>`` then scores any strategy
against the human labels, and ``generate_report.py`` reads them as gold from its output.

The label of a case is :func:`~annotation_interface.labels.consensus` of its records; ``unsure``
labels are left out unless ``include_unsure``. Labels that are not memory errors
(``AnnotationError``, ``LLMAsAJudgeError``) are exported too: the loader drops them, as it does
for the real benchmark.

    python -m annotation_interface.export --data FOLDER --annotations annotations.json --out OUT
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from membase.utils.argtypes import output_folder

from .annotations import OutputFileError, read_records
from .dataset import DataPathError, Dataset, GraphEntry, open_dataset
from .labels import CaseRef, Label, consensus, human_labels
from .loader import GraphFileError, read_graph_json
from .parser import QARecord, build_graph_index

__all__ = ["SPLITS", "ExportSummary", "export_annotations", "main"]

SPLITS = ("rag", "mem0", "evermemos", "long_context")
_PROJECT_SPLIT = {"mem0": "mem0", "naiverag": "rag", "rag": "rag", "naive_rag": "rag", "long-context": "long_context",
                  "long_context": "long_context", "evermemos": "evermemos"}


@dataclass(kw_only=True)
class ExportSummary:
    """What an export wrote."""

    out_dir: Path
    files: list[Path] = field(default_factory=list)
    cases: int = 0
    by_split: dict[str, int] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)
    """Labelled cases not exported, each with the reason."""


def _split_of(entry: GraphEntry, default: str | None) -> str | None:
    first = PurePosixPath(entry.graph_name).parts[0]
    if first in SPLITS:
        return first
    for key in (entry.project_id, default):
        if isinstance(key, str) and key.lower() in _PROJECT_SPLIT:
            return _PROJECT_SPLIT[key.lower()]
    return default


def _annotation(qa: QARecord, label: Label, annotators: list[str]) -> dict[str, Any]:
    base = copy.deepcopy(qa.annotation) if qa.annotation else {}
    base.update({
        "query_id": qa.query_full_node_id,
        "query": qa.question,
        "golden_answers": base.get("golden_answers") or ([qa.golden_answer] if qa.golden_answer else []),
        "golden_answers_id": base.get("golden_answers_id") or qa.golden_answers_id,
        "prediction": base.get("prediction") or qa.prediction or "",
        "prediction_id": base.get("prediction_id") or qa.prediction_id,
        "source_evidence_ids": base.get("source_evidence_ids") or list(qa.case_evidence_ids),
        "final_error_type": label.error_type,
        "final_op_id": label.op_id,
        "annotated_by": annotators,
        "annotation_reason": label.reason,
    })
    return base


def _file_name(entry: GraphEntry) -> str:
    parts = PurePosixPath(entry.graph_name).parts
    # traced_data/<user>/graph_evaluation.json: the folder names make the file name unique
    return entry.file_name if len(parts) <= 2 or parts[0] in SPLITS else "-".join(parts[-3:])


def _chosen(by: dict[str, Label], include_unsure: bool) -> Label | None:
    label = consensus(by)
    if label is None and include_unsure:
        label = max(by.values(), key=lambda lab: lab.saved_at)
    return label if label is not None and label.error_type else None


def _export_graph(entry: GraphEntry, labelled: dict[str, dict[str, Label]], out_dir: Path, split: str,
                  summary: ExportSummary, include_unsure: bool) -> None:
    from membase.utils.io import atomic_write_json

    raw = read_graph_json(entry.graph_path)
    index = build_graph_index(raw)
    annotations = []
    for qa_id, by in labelled.items():
        qa = index.qa(qa_id)
        label = _chosen(by, include_unsure)
        if qa is None or label is None:
            why = "the question is not in the graph" if qa is None else "only unsure labels"
            summary.left_out.append(f"{entry.graph_name} {qa_id}: {why}")
            continue
        annotations.append(_annotation(qa, label, sorted(by)))
    if not annotations:
        return
    name = _file_name(entry)
    raw["data"]["annotations"] = annotations
    meta = raw.setdefault("metadata", {})
    meta["memtracebench_graph_filename"] = name
    meta.setdefault("memtracebench_dataset_source", "memtrace-annotation")
    target = out_dir / split / name
    atomic_write_json(target, raw, indent=None)
    summary.files.append(target)
    summary.cases += len(annotations)
    summary.by_split[split] = summary.by_split.get(split, 0) + len(annotations)


def export_annotations(dataset: Dataset, records: Sequence[Any], out_dir: str | Path, *,
                       split: str | None = None, include_unsure: bool = False) -> ExportSummary:
    """Write the labelled graphs of ``dataset`` under ``out_dir`` in MemTraceBench layout.

    Args:
        dataset: The annotated folder.
        records: Saved annotation records (:func:`~annotation_interface.annotations.read_records`).
        out_dir: The benchmark folder to write (``<split>/*.json`` below it).
        split: Split of graphs whose split cannot be told from their path or ``project_id``.
        include_unsure: Export a case labelled only ``unsure`` with its latest label.

    Raises:
        GraphFileError: a labelled graph cannot be read any more.
        OSError: ``out_dir`` cannot be written.
    """
    out = Path(out_dir)
    summary = ExportSummary(out_dir=out)
    by_graph: dict[str, dict[str, dict[str, Label]]] = {}
    for (graph, qa_id), by in human_labels(records).items():
        by_graph.setdefault(graph, {})[qa_id] = by
    for graph, labelled in by_graph.items():
        entry = dataset.graph(graph)
        graph_split = _split_of(entry, split) if entry is not None else None
        if entry is None or graph_split is None:
            why = "not a graph of this folder" if entry is None else "unknown split (give --split)"
            summary.left_out.extend(f"{graph} {qa}: {why}" for qa in labelled)
            continue
        _export_graph(entry, labelled, out, graph_split, summary, include_unsure)
    return summary


def labelled_refs(records: Sequence[Any]) -> set[CaseRef]:
    """The cases that have at least one record."""
    return set(human_labels(records))


def build_parser() -> argparse.ArgumentParser:
    """The export command line."""
    p = argparse.ArgumentParser(
        prog="python -m annotation_interface.export",
        description="Write the human labels of an annotated folder as a MemTraceBench folder "
                    "(<out>/<split>/*.json with final_error_type/final_op_id), so that "
                    "run_error_attribution.py scores any strategy against them.")
    p.add_argument("--data", required=True, help="the annotated graph file or folder (the app's --data)")
    p.add_argument("--annotations", required=True, help="the app's --output-path (JSON array of records)")
    p.add_argument("--out", required=True, type=output_folder,
                   help="folder to write (created; files of the same name are replaced)")
    p.add_argument("--split", choices=SPLITS, help="split of graphs whose split the path does not tell")
    p.add_argument("--include-unsure", action="store_true", help="also export cases labelled only 'unsure'")
    p.add_argument("--index-dir", help="folder of the viewer's dataset index (default: the viewer's)")
    return p


def _records_problem(path: str, records: Sequence[Any]) -> str | None:
    """Why ``records`` cannot give a label to export (None: some record can)."""
    if not records:
        return f"--annotations {path}: no records to export"
    if not human_labels(records):
        return (f"--annotations {path}: none of its {len(records)} record(s) is a manual attribution of the annotation "
                "interface (an object with graph_name, qa_id and manual_error_attribution)")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the export; 0 on success, 2 on bad input (one ``error:`` line)."""
    args = build_parser().parse_args(argv)
    try:
        records = read_records(args.annotations)
        problem = _records_problem(args.annotations, records)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        dataset = open_dataset(args.data, args.index_dir)
        summary = export_annotations(dataset, records, args.out, split=args.split,
                                     include_unsure=args.include_unsure)
    except (OutputFileError, DataPathError, GraphFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write --out {args.out!r}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for line in summary.left_out:
        print(f"left out: {line}")
    if not summary.cases:
        print(f"error: no case exported: each of the {len(summary.left_out)} labelled case(s) was left out (listed "
              f"above); check --data {args.data} and --split", file=sys.stderr)
        return 2
    splits = ", ".join(f"{k} {v}" for k, v in sorted(summary.by_split.items())) or "none"
    print(f"exported {summary.cases} case(s) in {len(summary.files)} graph file(s) to {summary.out_dir} ({splits})")
    for split in sorted(summary.by_split):
        print(f"score a strategy: python run_error_attribution.py {summary.out_dir} {split} "
              "--exploration-strategy evidence_flow --output-path <file>.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
