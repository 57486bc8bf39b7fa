"""MemTraceBench loading, and failed-query discovery on freshly traced graphs.

MemTraceBench (Hugging Face dataset ``zjunlp/MemTraceBench``) stores one smartcomment graph
export per JSON file under ``<data_dir>/<split>/``, with the curated failed cases of that graph
under ``data.annotations``. Importing a graph drops unknown keys, so annotations are read from
the raw JSON first.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "ERROR_TYPES",
    "HF_DATASET_ID",
    "MEMTRACEBENCH_SPLITS",
    "BenchmarkDataMissingError",
    "FailedQueryCase",
    "collect_failed_queries",
    "format_golden_answers",
    "load_memtracebench",
]

HF_DATASET_ID = "zjunlp/MemTraceBench"
MEMTRACEBENCH_SPLITS: tuple[str, ...] = ("rag", "mem0", "evermemos", "long_context")
ERROR_TYPES: tuple[str, ...] = (
    "ExtractionError",
    "UpdateError",
    "DeletionError",
    "RetrievalError",
    "ResponseError",
)


class BenchmarkDataMissingError(FileNotFoundError):
    """A requested MemTraceBench split is not on disk and could not be downloaded."""


class FailedQueryCase(BaseModel):
    """One failed question to attribute."""

    query_full_node_id: str
    """Id of the query variable in the execution graph."""
    query: str
    golden_answer: str
    prediction: str
    source_evidence_full_node_ids: list[str] = Field(default_factory=list)
    """Ids of the message variables that hold the evidence (annotated or from the query metadata)."""
    judge_response: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Benchmark cases: ``annotation`` (the whole annotation), ``graph_path``, ``graph_filename``,
    ``split`` and ``dataset_source``."""


def format_golden_answers(golden_answers: Any) -> str:
    """Render golden answers as the benchmark does: a list becomes ``"[a, b, c]"``, a string stays."""
    if isinstance(golden_answers, (list, tuple)):
        return "[" + ", ".join(str(a) for a in golden_answers) + "]"
    return "" if golden_answers is None else str(golden_answers)


def _normalise_splits(splits: str | Iterable[str] | None) -> list[str]:
    if splits is None:
        return list(MEMTRACEBENCH_SPLITS)
    chosen = [splits] if isinstance(splits, str) else list(splits)
    unknown = [s for s in chosen if s not in MEMTRACEBENCH_SPLITS]
    if unknown:
        raise ValueError(
            f"unknown MemTraceBench split(s) {unknown}; choose from {', '.join(MEMTRACEBENCH_SPLITS)}"
        )
    return chosen


def _split_files(data_dir: Path, split: str) -> list[Path]:
    folder = data_dir / split
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _download_split(data_dir: Path, split: str) -> str | None:
    """Try to fetch one split from the hub; return None on success or the reason it failed."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return "huggingface_hub is not installed"
    try:
        snapshot_download(
            repo_id=HF_DATASET_ID,
            repo_type="dataset",
            allow_patterns=[f"{split}/**"],
            local_dir=str(data_dir),
        )
    except Exception as exc:  # noqa: BLE001 - offline mode, DNS, HTTP: all mean "not available"
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return None


def _missing_message(data_dir: Path, splits: list[str], reasons: dict[str, str]) -> str:
    why = "; ".join(f"{s}: {r}" for s, r in reasons.items())
    return (
        f"MemTraceBench split(s) {', '.join(splits)} not found under {data_dir} and could not be downloaded "
        f"from the Hugging Face dataset {HF_DATASET_ID} ({why}). Download the dataset on a machine with "
        f"network access and place its JSON files as {data_dir}/<split>/*.json "
        f"(splits: {', '.join(MEMTRACEBENCH_SPLITS)})."
    )


def load_memtracebench(
    data_dir: str | Path,
    splits: str | Iterable[str] | None = None,
    filter_non_memory_errors: bool = True,
    *,
    download: bool = True,
) -> tuple[list[Any], list[FailedQueryCase]]:
    """Load MemTraceBench graphs and their annotated failed cases.

    Missing split folders are downloaded from the hub when ``download`` is on and
    ``huggingface_hub`` plus a network are available. Files are read in sorted path order;
    each annotation yields one case, paired with its graph (one graph object shared by all the
    cases of its file).

    Args:
        data_dir: Directory holding ``<split>/*.json``.
        splits: One split, several, or None for all four.
        filter_non_memory_errors: Drop annotations whose ``final_error_type`` is not one of the
            five memory error types (e.g. annotation or judge errors).
        download: Try the hub for missing splits.

    Returns:
        ``(graphs, cases)``: two parallel lists.

    Raises:
        BenchmarkDataMissingError: explicitly requested splits (or, with ``splits=None``, all
            splits) are missing and could not be downloaded; the message says where to put them.
        ValueError: an unknown split, or a file that is not a graph export with annotations.
    """
    from smartcomment.runtime.network import ExecNetwork

    root = Path(data_dir)
    chosen = _normalise_splits(splits)
    reasons: dict[str, str] = {}
    available: dict[str, list[Path]] = {}
    for split in chosen:
        files = _split_files(root, split)
        if not files:
            reason = _download_split(root, split) if download else "download disabled"
            files = _split_files(root, split)
            if not files:
                reasons[split] = reason or "the download contained no JSON files"
                continue
        available[split] = files
    if reasons and (splits is not None or not available):
        raise BenchmarkDataMissingError(_missing_message(root, list(reasons), reasons))
    for split, reason in reasons.items():
        warnings.warn(
            f"MemTraceBench split {split!r} skipped: not found under {root} ({reason})", stacklevel=2
        )

    graphs: list[Any] = []
    cases: list[FailedQueryCase] = []
    for split, files in available.items():
        for path in files:
            try:
                raw = json.loads(path.read_text(encoding="utf-8"))
                annotations = list(raw["data"].get("annotations") or [])
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(
                    f"{path}: not a MemTraceBench graph file ({type(exc).__name__}: {exc})"
                ) from None
            try:
                graph = ExecNetwork.import_graph(raw)
            except Exception as exc:  # noqa: BLE001 - report which file is broken, in one line
                raise ValueError(
                    f"{path}: the graph could not be imported ({type(exc).__name__}: {exc})"
                ) from None
            source = graph.metadata.get("memtracebench_dataset_source") or "unknown"
            for annotation in annotations:
                if filter_non_memory_errors and annotation.get("final_error_type") not in ERROR_TYPES:
                    continue
                cases.append(_case_from_annotation(annotation, path, split, source))
                graphs.append(graph)
    return graphs, cases


def _case_from_annotation(annotation: dict[str, Any], path: Path, split: str, source: str) -> FailedQueryCase:
    missing = [k for k in ("query_id", "query", "golden_answers", "prediction") if k not in annotation]
    if missing:
        raise ValueError(f"{path}: an annotation lacks the key(s) {', '.join(missing)}")
    return FailedQueryCase(
        query_full_node_id=annotation["query_id"],
        query=str(annotation["query"]),
        golden_answer=format_golden_answers(annotation["golden_answers"]),
        prediction=str(annotation["prediction"]),
        source_evidence_full_node_ids=list(annotation.get("source_evidence_ids") or []),
        judge_response=None,
        metadata={
            "annotation": annotation,
            "graph_path": str(path),
            "graph_filename": path.name,
            "split": split,
            "dataset_source": source,
        },
    )


def collect_failed_queries(graph: Any) -> list[FailedQueryCase]:
    """Find the failed questions of a traced run from its ``llm-judge`` operations.

    For every ``llm-judge`` operation (category ``evaluation``) the operation subgraph must hold
    variables of class ``judge_score``, ``query``, ``prediction``, ``golden_answers`` and
    ``judge_response``; incomplete ones are skipped with a warning. A score of 0.0 means failed.
    Evidence comes from the query's ``metadata["evidence"]`` (variable names, each resolved to its
    latest version).

    Args:
        graph: A traced ``ExecNetwork``.

    Returns:
        One case per failed question, in judge-operation order.

    Raises:
        ValueError: a judge score is not a number.
    """
    wanted = ("judge_score", "query", "prediction", "golden_answers", "judge_response")
    cases: list[FailedQueryCase] = []
    for op in graph.search_operations(name_pattern="^llm-judge$", category="evaluation"):
        by_class = {}
        for node in graph.filter_by_operation(op.op_id).nodes:
            if node.class_name in wanted:
                by_class.setdefault(node.class_name, node)
        absent = [c for c in wanted if c not in by_class]
        if absent:
            warnings.warn(
                f"llm-judge operation {op.op_id} skipped: no variable of class {', '.join(absent)}",
                stacklevel=2,
            )
            continue
        raw_score = by_class["judge_score"].value
        try:
            score = float(raw_score)
        except (TypeError, ValueError):
            raise ValueError(
                f"judge score {by_class['judge_score'].full_node_id} of operation {op.op_id} is not a number: "
                f"{raw_score!r}"
            ) from None
        if score != 0.0:
            continue
        query = by_class["query"]
        metadata = dict(query.metadata or {})
        if "evidence" not in metadata:
            warnings.warn(
                f"query {query.full_node_id} has no 'evidence' metadata; no source evidence", stacklevel=2
            )
        evidence_ids: list[str] = []
        for name in metadata.get("evidence") or []:
            try:
                evidence_ids.append(graph.get_latest_variable(name).full_node_id)
            except KeyError:
                warnings.warn(
                    f"evidence variable {name!r} of query {query.full_node_id} not in the graph", stacklevel=2
                )
        cases.append(
            FailedQueryCase(
                query_full_node_id=query.full_node_id,
                query=str(query.value),
                golden_answer=str(by_class["golden_answers"].value),
                prediction=str(by_class["prediction"].value),
                source_evidence_full_node_ids=evidence_ids,
                judge_response=str(by_class["judge_response"].value),
                metadata=metadata,
            )
        )
    return cases
