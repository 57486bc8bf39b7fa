"""Iteration folders (resume points) and the fixed training sample."""

from __future__ import annotations

import json

import pytest

from toolkits.optimization.bundle import BUNDLE_FILENAME
from toolkits.optimization.loop import SUMMARY_FILENAME, IterationStore
from toolkits.optimization.sampling import SampleMismatchError, parse_indexes, training_sample


def _complete(folder):
    folder.mkdir(parents=True)
    (folder / BUNDLE_FILENAME).write_text("{}")
    (folder / SUMMARY_FILENAME).write_text("{}")


def test_only_complete_exact_iteration_folders_count(tmp_path):
    store = IterationStore(tmp_path)
    assert store.last_complete() is None and IterationStore(tmp_path / "absent").find_last_n_iterations() is None
    _complete(tmp_path / "iteration_1")
    _complete(tmp_path / "iteration_2_old")  # the reference's prefix regex matched this one
    _complete(tmp_path / "iteration_10")
    (tmp_path / "iteration_11").mkdir()  # interrupted: no bundle
    (tmp_path / "iteration_11" / SUMMARY_FILENAME).write_text("{}")
    assert store.last_complete() == (10, tmp_path / "iteration_10")
    assert store.find_last_n_iterations(5, return_iteration_numbers=True) == [
        (1, tmp_path / "iteration_1"), (10, tmp_path / "iteration_10")]
    with pytest.raises(ValueError):
        store.folder(0)
    fresh = store.create(11)
    assert fresh.is_dir() and not any(fresh.iterdir())
    store.wipe()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["iteration_2_old"]


def test_training_sample_is_saved_reused_and_guarded(tmp_path, locomo_file):
    from toolkits.optimization.sampling import load_full_dataset

    full = load_full_dataset(locomo_file, max_sessions=1, max_questions=2)
    kwargs = dict(dataset_path=locomo_file, sample_size=3, seed=42, max_sessions=1, max_questions=2)
    first = training_sample(tmp_path, full, resample=False, **kwargs)
    assert not first.reused and len(first.indexes) == 3 and len(set(first.indexes)) == 3
    import random

    assert first.indexes == random.Random(42).sample(range(10), 3)  # the reference's MemoryDataset.sample draw
    saved = json.loads((tmp_path / "sampled_dataset.json").read_text())
    assert saved["trajectory_indexes"] == first.indexes and saved["sampling"]["seed"] == 42
    assert [t["id"] for t in saved["trajectories"]] == [f"locomo-{i + 1}" for i in first.indexes]
    again = training_sample(tmp_path, full, resample=False, **kwargs)
    assert again.reused and again.indexes == first.indexes
    assert again.dataset.trajectories[0].id == first.dataset.trajectories[0].id
    with pytest.raises(SampleMismatchError, match="seed 42 -> 7"):
        training_sample(tmp_path, full, resample=False, **{**kwargs, "seed": 7})
    redrawn = training_sample(tmp_path, full, resample=True, **{**kwargs, "seed": 7})
    assert not redrawn.reused
    with pytest.raises(ValueError, match="exceeds"):
        training_sample(tmp_path / "other", full, resample=False, **{**kwargs, "sample_size": 11})


def test_parse_indexes():
    assert parse_indexes(None, 10, default=[4]) == [4]
    assert parse_indexes("3, 5", 10, default=[]) == [3, 5]
    for bad in ("3,x", "10", "2,2", "-1"):
        with pytest.raises(ValueError):
            parse_indexes(bad, 10, default=[])
