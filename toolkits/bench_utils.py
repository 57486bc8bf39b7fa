"""MemTraceBench loading, and failed-query discovery on freshly traced graphs.

MemTraceBench (Hugging Face dataset ``zjunlp/MemTraceBench``) stores one smartcomment graph
export per JSON file under ``<data_dir>/<split>/``, with the curated failed cases of that graph
under ``data.annotations``. Importing a graph drops unknown keys, so annotations are read from
the raw JSON first.

Every annotation is checked before it becomes a case: a malformed one (not an object, a
``query_id`` that is not a string, ``source_evidence_ids`` that is not a list of ids, …) stops the
load with one line naming the file and the field. Annotations without a ``final_error_type`` are
skipped with one warning that counts them; those without a ``final_op_id`` are kept (their
attribution still runs) with a warning, and can never score on that label.

A run folder of ``python -m membase`` (``traced_data/<user>/graph_evaluation.json``, no
annotations) is read by :func:`load_membase_run`: its wrongly answered questions come from the
graphs' ``llm-judge`` operations (:func:`collect_failed_queries`), adversarial ones skipped.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from smartcomment.runtime.errors import MemTraceError
from toolkits.stored_values import unquote

__all__ = [
    "ERROR_TYPES",
    "HF_DATASET_ID",
    "MEMTRACEBENCH_SPLITS",
    "BenchmarkDataMissingError",
    "FailedQueryCase",
    "collect_failed_queries",
    "find_membase_graphs",
    "format_golden_answers",
    "is_adversarial",
    "is_membase_run",
    "load_membase_run",
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


class BenchmarkDataMissingError(MemTraceError, FileNotFoundError):
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
    # the hub logs its own warning when it cannot connect; our one-line error says it all
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    hub_log.setLevel(logging.ERROR)
    try:
        snapshot_download(
            repo_id=HF_DATASET_ID,
            repo_type="dataset",
            allow_patterns=[f"{split}/**"],
            local_dir=str(data_dir),
        )
    except Exception as exc:  # noqa: BLE001 - offline mode, DNS, HTTP: all mean "not available"
        return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    finally:
        hub_log.setLevel(level)
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
    root = Path(data_dir)
    available, reasons = _locate_splits(root, _normalise_splits(splits), download=download)
    if reasons and (splits is not None or not available):
        raise BenchmarkDataMissingError(_missing_message(root, list(reasons), reasons))
    for split, reason in reasons.items():
        warnings.warn(
            f"MemTraceBench split {split!r} skipped: not found under {root} ({reason})", stacklevel=2
        )

    graphs: list[Any] = []
    cases: list[FailedQueryCase] = []
    unlabelled: list[str] = []
    no_op: list[str] = []
    for split, files in available.items():
        for path in files:
            raw = _read_graph_json(path)
            checked = _checked_annotations(raw, path)
            graph = _import_graph(raw, path)
            source = graph.metadata.get("memtracebench_dataset_source") or "unknown"
            for i, annotation in enumerate(checked):
                label = annotation.get("final_error_type")
                if filter_non_memory_errors and label not in ERROR_TYPES:
                    if not isinstance(label, str) or not label.strip():
                        unlabelled.append(f"{path.name} data.annotations[{i}]")
                    continue  # non-memory labels (AnnotationError, ...) are dropped as the spec says
                if not isinstance(annotation.get("final_op_id"), str) or not annotation["final_op_id"].strip():
                    no_op.append(f"{path.name} data.annotations[{i}]")
                cases.append(_case_from_annotation(annotation, path, split, source))
                graphs.append(graph)
    if unlabelled:
        warnings.warn(
            f"{len(unlabelled)} annotation(s) without a final_error_type were skipped (first: {unlabelled[0]})",
            stacklevel=2,
        )
    if no_op:
        warnings.warn(
            f"{len(no_op)} annotation(s) have no final_op_id: they are attributed but can never count as "
            f"op-correct (first: {no_op[0]})",
            stacklevel=2,
        )
    return graphs, cases


def _locate_splits(root: Path, chosen: list[str], *, download: bool) -> tuple[dict[str, list[Path]], dict[str, str]]:
    """The JSON files of each split found (downloading missing ones if allowed), and why the others are missing."""
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
    return available, reasons


def _checked_annotations(raw: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    data = raw.get("data")
    annotations = data.get("annotations") if isinstance(data, dict) else None
    if annotations is None:
        annotations = []
    if not isinstance(annotations, list):
        raise ValueError(f"{path}: data.annotations: expected a list, got {type(annotations).__name__}")
    return [_check_annotation(a, path, i) for i, a in enumerate(annotations)]


def _read_graph_json(path: Path) -> dict[str, Any]:
    """The raw JSON object of a graph file (one-line ValueError naming the file otherwise)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a graph file ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), dict):
        raise ValueError(f"{path}: not a graph file (expected an object with a 'data' object)")
    return raw


def _check_node_identities(raw: dict[str, Any], path: Path) -> None:
    """Name the real problem when a node lacks ``class_name``: its id would be rebuilt without the
    class prefix, and the import would only report an edge pointing at a "missing node"."""
    nodes = raw["data"].get("nodes")
    if not isinstance(nodes, list):
        return
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or "class_name" in node:
            continue
        stored = node.get("full_node_id")
        rebuilt = f"{node.get('name')}@{node.get('version')}"
        if stored is not None and stored != rebuilt:
            raise ValueError(
                f"{path}: data.nodes[{i}] ({stored!r}): missing key 'class_name' (null when the variable has "
                f"no class); without it the node's id would be {rebuilt!r}"
            )


def _import_graph(raw: dict[str, Any], path: Path) -> Any:
    from smartcomment.runtime.network import ExecNetwork

    _check_node_identities(raw, path)
    try:
        return ExecNetwork.import_graph(raw)
    except Exception as exc:  # noqa: BLE001 - report which file is broken, in one line
        raise ValueError(
            f"{path}: the graph could not be imported ({type(exc).__name__}: {' '.join(str(exc).split())})"
        ) from None


def _check_annotation(annotation: Any, path: Path, index: int) -> dict[str, Any]:
    """Check the fields a case is built from; one-line ValueError naming file and field."""
    where = f"{path}: data.annotations[{index}]"
    if not isinstance(annotation, dict):
        raise ValueError(f"{where}: expected an object, got {type(annotation).__name__}")
    missing = [k for k in ("query_id", "query", "golden_answers", "prediction") if k not in annotation]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
    query_id = annotation["query_id"]
    if not isinstance(query_id, str) or "@" not in query_id:
        raise ValueError(f"{where}.query_id: expected a node id such as 'query:x@1', got {query_id!r}")
    for key in ("query", "prediction"):
        if not isinstance(annotation[key], str | int | float) or isinstance(annotation[key], bool):
            raise ValueError(f"{where}.{key}: expected text, got {type(annotation[key]).__name__}")
    golden = annotation["golden_answers"]
    scalar = (str, int, float)
    if not (isinstance(golden, scalar) or (isinstance(golden, list) and all(isinstance(g, scalar) for g in golden))):
        raise ValueError(f"{where}.golden_answers: expected a list of answers or a string, got {type(golden).__name__}")
    evidence = annotation.get("source_evidence_ids")
    if evidence is not None:
        if isinstance(evidence, str):
            raise ValueError(f"{where}.source_evidence_ids: expected a list of node ids, got a string ({evidence!r})")
        if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
            raise ValueError(f"{where}.source_evidence_ids: expected a list of node ids")
    return annotation


def _case_from_annotation(annotation: dict[str, Any], path: Path, split: str, source: str) -> FailedQueryCase:
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
    return [case for case, _ in _failed_judgements(graph)]


_JUDGE_CLASSES = ("judge_score", "query", "prediction", "golden_answers", "judge_response")


def _failed_judgements(graph: Any) -> list[tuple[FailedQueryCase, dict[str, Any]]]:
    """Each failed question of ``graph`` with the nodes of its judge op, by class name."""
    wanted = _JUDGE_CLASSES
    cases: list[tuple[FailedQueryCase, dict[str, Any]]] = []
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
        case = FailedQueryCase(
            query_full_node_id=query.full_node_id,
            query=str(unquote(query.value)),
            golden_answer=str(by_class["golden_answers"].value),
            prediction=str(unquote(by_class["prediction"].value)),
            source_evidence_full_node_ids=evidence_ids,
            judge_response=str(by_class["judge_response"].value),
            metadata=metadata,
        )
        cases.append((case, by_class))
    return cases


# ---------------------------------------------------------------------------------------------
# Run folders of `python -m membase`
# ---------------------------------------------------------------------------------------------

MEMBASE_GRAPH_FILE = "graph_evaluation.json"
LAYER_SPLITS = {"Long-Context": "long_context", "NaiveRAG": "rag", "Mem0": "mem0", "EverMemOS": "evermemos"}
"""The MemTraceBench split (and system prior) of each membase layer type."""
_DATASET_SOURCES = {"locomo": "LoCoMo", "longmemeval": "LongMemEval", "realmem": "RealMem"}


def find_membase_graphs(path: str | Path) -> list[Path]:
    """The ``graph_evaluation.json`` files of a membase run folder, sorted.

    ``path`` may be the run folder (``--output-dir`` of ``python -m membase``), its
    ``traced_data`` folder, one user folder, or one graph file. Returns [] for anything else.
    """
    root = Path(path)
    if root.is_file():
        return [root] if root.name == MEMBASE_GRAPH_FILE else []
    for folder in (root / "traced_data", root):
        if (folder / MEMBASE_GRAPH_FILE).is_file():
            return [folder / MEMBASE_GRAPH_FILE]
        found = sorted(folder.glob(f"*/{MEMBASE_GRAPH_FILE}")) if folder.is_dir() else []
        if found:
            return found
    return []


def is_membase_run(path: str | Path) -> bool:
    """True when ``path`` holds graphs written by ``python -m membase`` (see :func:`find_membase_graphs`)."""
    return bool(find_membase_graphs(path))


def is_adversarial(case: FailedQueryCase) -> bool:
    """Questions MemTrace never attributes: LoCoMo's adversarial category and LongMemEval's
    abstention questions (``_abs`` in the id)."""
    qmeta = case.metadata.get("query_metadata", case.metadata)
    return qmeta.get("question_type") == "adversarial" or "_abs" in case.query_full_node_id


def _layer_split(graph: Any) -> str | None:
    layer = (graph.metadata or {}).get("layer_type") or getattr(graph, "project_id", None)
    return LAYER_SPLITS.get(str(layer)) if layer else None


def _dataset_source(graph: Any) -> str:
    meta = graph.metadata or {}
    if meta.get("memtracebench_dataset_source"):
        return str(meta["memtracebench_dataset_source"])
    if meta.get("dataset_cls"):
        return str(meta["dataset_cls"])
    user = str(getattr(graph, "user_id", None) or "")
    return next((name for prefix, name in _DATASET_SOURCES.items() if user.startswith(prefix)), "unknown")


def load_membase_run(
    path: str | Path, *, skip_adversarial: bool = True
) -> tuple[list[Any], list[FailedQueryCase], dict[str, Any]]:
    """Load the wrongly answered questions of a ``python -m membase`` run folder.

    Each ``traced_data/<user>/graph_evaluation.json`` is imported and its failed questions are
    collected from the ``llm-judge`` operations (:func:`collect_failed_queries`); adversarial
    questions are skipped (:func:`is_adversarial`). Every case carries a record shaped like a
    MemTraceBench annotation without gold labels under ``metadata["annotation"]``:
    ``query_id``, ``query``, ``golden_answers`` (a one-item list: the graph stores the joined
    text), ``golden_answers_id``, ``prediction``, ``prediction_id`` (node ids of the judge op's
    variables) and ``source_evidence_ids`` (the query's ``metadata.evidence`` resolved to node
    ids: the dataset's evidence). The query node's own metadata is under
    ``metadata["query_metadata"]``.

    Args:
        path: The run folder (or see :func:`find_membase_graphs`).
        skip_adversarial: Drop adversarial/abstention questions.

    Returns:
        ``(graphs, cases, info)`` with ``info`` = ``{"graph_files", "split", "skipped_adversarial",
        "judged_failures"}``; ``split`` is derived from the layer type (None if unknown or mixed).

    Raises:
        ValueError: No graph file there, or a file that cannot be read or imported (one line).
    """
    files = find_membase_graphs(path)
    if not files:
        raise ValueError(
            f"{path}: no traced_data/<user>/{MEMBASE_GRAPH_FILE} found; run `python -m membase run ... "
            f"--output-dir {path}` (with tracing on) first"
        )
    graphs: list[Any] = []
    cases: list[FailedQueryCase] = []
    splits: set[str | None] = set()
    skipped = judged = 0
    for file in files:
        graph = _import_graph(_read_graph_json(file), file)
        splits.add(_layer_split(graph))
        source = _dataset_source(graph)
        for case, nodes in _failed_judgements(graph):
            judged += 1
            record = {
                "query_id": case.query_full_node_id,
                "query": case.query,
                "golden_answers": [case.golden_answer],
                "golden_answers_id": nodes["golden_answers"].full_node_id,
                "prediction": case.prediction,
                "prediction_id": nodes["prediction"].full_node_id,
                "source_evidence_ids": list(case.source_evidence_full_node_ids),
            }
            full = case.model_copy(
                update={
                    "metadata": {
                        "annotation": record,
                        "query_metadata": case.metadata,
                        "graph_path": str(file),
                        "graph_filename": file.name,
                        "user_id": file.parent.name,
                        "split": _layer_split(graph),
                        "dataset_source": source,
                    }
                }
            )
            if skip_adversarial and is_adversarial(full):
                skipped += 1
                continue
            cases.append(full)
            graphs.append(graph)
    split = next(iter(splits)) if len(splits) == 1 else None
    info = {"graph_files": [str(f) for f in files], "split": split, "skipped_adversarial": skipped,
            "judged_failures": judged}
    return graphs, cases, info
