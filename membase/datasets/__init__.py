"""Dataset loaders. `load_dataset(name, path) -> MemoryDataset`, `name` one of `DATASET_TYPES` or `auto`.

`auto` reads the file once and tells the format by its shape: an object with `dialogues` (or a
folder of `.json` files) is RealMem, a list whose first record has `question_id` or
`haystack_sessions` is LongMemEval, one whose first record has `conversation` or `qa` is LoCoMo (a
broken LoCoMo file gets the LoCoMo loader's message about what is wrong in it); any other shape is
an error that says what the file looks like and suggests `--dataset-type`.
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
    if "question_id" in first or "haystack_sessions" in first:
        return "LongMemEval"
    if "conversation" in first or "qa" in first:
        return "LoCoMo"
    return None


def _load_auto(path: str | Path) -> MemoryDataset:
    path = Path(path)
    if path.is_dir():
        # only RealMem comes as a folder (one file per persona); LoCoMo's loader explains any other folder
        return load_realmem(path) if any(path.glob("*.json")) else load_locomo(path)
    if not path.is_file():
        return load_locomo(path)  # "not found; pass the path to locomo10.json", as before auto existed
    raw = read_json_file(path, "dataset file", "pass the path to a LoCoMo, LongMemEval or RealMem file")
    kind = detect_dataset_type(raw)
    if kind == "LongMemEval":
        return build_longmemeval(raw, path)
    if kind == "RealMem":
        return build_realmem([(raw, path)])
    if kind is None:
        raise DatasetError(f"{str(path)!r} is not a LoCoMo, LongMemEval or RealMem file by its shape "
                           f"({_shape(raw)}); pass --dataset-type to read it as one of them and see what it lacks")
    return load_locomo(path)  # its loader reads the file again and names what does not fit LoCoMo


def _shape(raw: Any) -> str:
    """What the top of a parsed file looks like, in a few words."""
    if isinstance(raw, dict):
        keys = ", ".join(sorted(map(str, raw))[:5]) or "no keys"
        return f"an object with {keys} but no 'dialogues'"
    if isinstance(raw, list):
        if not raw:
            return "an empty list"
        if isinstance(raw[0], dict):
            keys = ", ".join(sorted(map(str, raw[0]))[:5]) or "no keys"
            return f"a list whose first record has {keys}"
        return f"a list of {type(raw[0]).__name__}"
    return f"a JSON {type(raw).__name__}"


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
