"""Which LoCoMo conversations train, validate and evaluate — fixed once per optimization folder.

The training sample is drawn once (``MemoryDataset.sample(size, seed)``) and saved as
``<dir>/sampled_dataset.json`` together with the settings that produced it; later launches read
it back instead of re-sampling (the reference re-sampled on every launch), and refuse to go on
when the settings differ. Conversation indexes are 0-based positions in the LoCoMo file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "SAMPLED_DATASET_FILENAME",
    "SampleMismatchError",
    "TrainingSample",
    "load_full_dataset",
    "parse_indexes",
    "select",
    "training_sample",
]

SAMPLED_DATASET_FILENAME = "sampled_dataset.json"


class SampleMismatchError(MemTraceError, ValueError):
    """The saved sample was drawn with other settings (one-line message)."""


@dataclass(frozen=True, kw_only=True)
class TrainingSample:
    """The training conversations, in round order."""

    dataset: Any
    """``MemoryDataset`` of the sampled conversations (round k uses trajectory k-1)."""
    indexes: list[int]
    """Their 0-based positions in the LoCoMo file."""
    reused: bool
    """True when read back from ``sampled_dataset.json``."""


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_full_dataset(path: str | Path, *, max_sessions: int | None = None, max_questions: int | None = None) -> Any:
    """Load LoCoMo and apply the optional trimming (see :func:`pipeline.trim_dataset`).

    Raises:
        membase.exceptions.DatasetError: Missing or malformed file.
    """
    from membase.datasets import load_dataset
    from toolkits.optimization.pipeline import trim_dataset

    return trim_dataset(load_dataset("LoCoMo", str(path)), max_sessions=max_sessions, max_questions=max_questions)


def select(full: Any, indexes: Sequence[int]) -> Any:
    """The sub-dataset of the given conversation indexes, in that order."""
    from membase.types import MemoryDataset

    return MemoryDataset(
        name=full.name,
        trajectories=[full.trajectories[i] for i in indexes],
        qa_pair_lists=[full.qa_pair_lists[i] for i in indexes],
    )


def training_sample(
    folder: str | Path,
    full: Any,
    *,
    dataset_path: str | Path,
    sample_size: int,
    seed: int,
    max_sessions: int | None,
    max_questions: int | None,
    resample: bool,
) -> TrainingSample:
    """Read ``<folder>/sampled_dataset.json`` or draw and save the sample.

    Raises:
        SampleMismatchError: The saved sample was drawn with other settings (and not ``resample``).
        ValueError: ``sample_size`` exceeds the number of conversations; an unreadable saved file.
    """
    from membase.types import MemoryDataset
    from membase.utils.io import atomic_write_json

    settings = {
        "dataset_sha256": file_sha256(dataset_path),
        "sample_size": sample_size,
        "seed": seed,
        "max_sessions": max_sessions,
        "max_questions": max_questions,
    }
    path = Path(folder) / SAMPLED_DATASET_FILENAME
    if path.is_file() and not resample:
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
            saved = data["sampling"]
            indexes = [int(i) for i in data["trajectory_indexes"]]
            dataset = MemoryDataset.model_validate(data)
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{str(path)!r} is unreadable ({type(exc).__name__}); rerun with --rerun to re-sample") from None
        differing = [k for k, v in settings.items() if saved.get(k) != v]
        if differing:
            diff = ", ".join(f"{k} {saved.get(k)!r} -> {settings[k]!r}" for k in differing)
            raise SampleMismatchError(
                f"{str(path)!r} was sampled with other settings ({diff}); use another --optimization-dir, "
                "the same settings, or --rerun to start over"
            )
        return TrainingSample(dataset=dataset, indexes=indexes, reused=True)
    n = len(full.trajectories)
    if sample_size > n:
        raise ValueError(f"--sample-size {sample_size} exceeds the {n} conversations of the dataset")
    import random

    indexes = random.Random(seed).sample(range(n), sample_size)
    dataset = select(full, indexes)
    atomic_write_json(
        path, {**dataset.model_dump(mode="json"), "sampling": settings, "trajectory_indexes": indexes}
    )
    return TrainingSample(dataset=dataset, indexes=indexes, reused=False)


def parse_indexes(text: str | None, n: int, *, default: Sequence[int]) -> list[int]:
    """Parse ``"3,4,5"`` into 0-based conversation indexes (``None`` → ``default``).

    Raises:
        ValueError: Not integers, out of range, or repeated.
    """
    if text is None:
        return list(default)
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"expected comma-separated conversation indexes, got {text!r}") from None
    bad = [v for v in values if not 0 <= v < n]
    if bad:
        raise ValueError(f"conversation index(es) {bad} out of range 0..{n - 1}")
    if len(set(values)) != len(values):
        raise ValueError(f"repeated conversation index in {text!r}")
    return values
