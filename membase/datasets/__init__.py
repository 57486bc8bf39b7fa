"""Dataset loaders. `load_dataset(name, path) -> MemoryDataset`, `name` one of `DATASET_TYPES` or `auto`.

`auto` reads the file once and tells the format by its shape: a list of objects with
`conversation` and `qa` is LoCoMo, a list of objects with `question_id` and `haystack_sessions` is
LongMemEval, an object with `dialogues` (or a folder of such files) is RealMem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from membase.datasets._io import read_json_file
from membase.datasets.locomo import load_locomo
from membase.datasets.longmemeval import build_longmemeval, load_longmemeval
from membase.datasets.realmem import build_realmem, load_realmem
from membase.exceptions import DatasetError
from membase.types import MemoryDataset

__all__ = [
    "DATASET_LOADERS",
    "DATASET_TYPES",
    "ONLINE_DATASETS",
    "dataset_type_of_user",
    "detect_dataset_type",
    "load_dataset",
    "load_locomo",
    "load_longmemeval",
    "load_realmem",
]

DATASET_LOADERS = {"LoCoMo": load_locomo, "LongMemEval": load_longmemeval, "RealMem": load_realmem}
DATASET_TYPES = tuple(DATASET_LOADERS)
ONLINE_DATASETS = frozenset({"RealMem"})
"""Datasets whose questions are asked during construction, at their point of the conversation."""
_USER_PREFIXES = {"locomo-": "LoCoMo", "longmemeval-": "LongMemEval", "realmem-": "RealMem"}


def dataset_type_of_user(user_id: str) -> str | None:
    """The dataset a trajectory id comes from (`longmemeval-…` -> LongMemEval), None if unknown."""
    return next((name for prefix, name in _USER_PREFIXES.items() if user_id.startswith(prefix)), None)


def detect_dataset_type(raw: Any) -> str | None:
    """The dataset type of parsed file content by its shape, or None when it is none of them."""
    if isinstance(raw, dict):
        return "RealMem" if "dialogues" in raw else None
    if not isinstance(raw, list) or not raw or not isinstance(raw[0], dict):
        return None
    first = raw[0]
    if "conversation" in first and "qa" in first:
        return "LoCoMo"
    if "question_id" in first and "haystack_sessions" in first:
        return "LongMemEval"
    return None


def _load_auto(path: str | Path) -> MemoryDataset:
    path = Path(path)
    hint = "pass --dataset-type LoCoMo, LongMemEval or RealMem"
    if path.is_dir():
        return load_realmem(path)  # only RealMem comes as a folder (one file per persona)
    raw = read_json_file(path, "dataset file", "pass the path to a LoCoMo, LongMemEval or RealMem file")
    kind = detect_dataset_type(raw)
    if kind == "LongMemEval":
        return build_longmemeval(raw, path)
    if kind == "RealMem":
        return build_realmem([(raw, path)])
    if kind == "LoCoMo":
        return load_locomo(path)  # its loader reads the file itself (it keeps its own messages)
    raise DatasetError(f"dataset file {str(path)!r}: cannot tell LoCoMo, LongMemEval or RealMem from its shape "
                       f"(expected a list of {{conversation, qa}} or {{question_id, haystack_sessions}} records, "
                       f"or an object with dialogues); {hint}")


def load_dataset(dataset_type: str, path: str | Path) -> MemoryDataset:
    """Load a dataset by registry name, or `auto` to tell it by its shape.

    Raises:
        DatasetError: unknown dataset type, missing or malformed file (file, record and field named).
    """
    if dataset_type == "auto":
        return _load_auto(path)
    if dataset_type not in DATASET_LOADERS:
        raise DatasetError(f"unknown --dataset-type {dataset_type!r}; choose auto or one of {list(DATASET_TYPES)}")
    return DATASET_LOADERS[dataset_type](path)
