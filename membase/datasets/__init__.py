"""Dataset loaders. `DATASET_LOADERS[name](path) -> MemoryDataset`."""

from __future__ import annotations

from membase.datasets.locomo import load_locomo

__all__ = ["DATASET_LOADERS", "load_dataset", "load_locomo"]

DATASET_LOADERS = {"LoCoMo": load_locomo}


def load_dataset(dataset_type: str, path: str):
    """Load a dataset by registry name.

    Raises:
        DatasetError: unknown dataset type, missing or malformed file.
    """
    from membase.exceptions import DatasetError

    if dataset_type not in DATASET_LOADERS:
        raise DatasetError(f"unknown dataset_type {dataset_type!r}; choose one of {sorted(DATASET_LOADERS)}")
    return DATASET_LOADERS[dataset_type](path)
