"""The replay manifest: what a run folder of ``python -m membase run`` must keep to be run again.

``<run>/replay_manifest.json`` names the layer config, the dataset file and slice, the search and
evaluation settings and the models (by the specs of :mod:`membase.clients.specs`); the call cache
sits beside it (``<run>/call_cache``) so a replay pays only for calls whose request changed.
Secrets never enter it: an api_config is kept as a path.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from membase.exceptions import ConfigError
from membase.utils.io import atomic_write_json

__all__ = ["MANIFEST_FILE", "FORMAT", "ReplayDataMissing", "RunManifest", "read_manifest", "write_manifest"]

MANIFEST_FILE = "replay_manifest.json"
FORMAT = "membase-run-v1"
CACHE_FOLDER = "call_cache"


class ReplayDataMissing(ConfigError):
    """A folder lacks what a replay needs (an older run, a MemTraceBench folder, a damaged manifest)."""


@dataclass(kw_only=True)
class RunManifest:
    """Everything a replay of a run needs, in JSON-ready fields."""

    layer_type: str
    memory_config: dict[str, Any]
    dataset: str
    """Absolute path of the dataset file."""
    dataset_type: str = "LoCoMo"
    start_idx: int | None = None
    end_idx: int | None = None
    sample_size: int | None = None
    seed: int = 42
    max_messages: int | None = None
    top_k: int = 10
    skip_question_types: list[str] = field(default_factory=list)
    qa_model: str = ""
    judge_model: str = ""
    metrics: list[str] = field(default_factory=list)
    api_config: str | None = None
    timeout: float = 120.0
    max_retries: int = 3
    cache_dir: str | None = CACHE_FOLDER
    """The call cache, relative to the run folder (None: the run kept none)."""
    results_file: str = ""
    """The evaluation results file, relative to the run folder."""
    format: str = FORMAT

    def cache_path(self, run_dir: str | Path) -> str | None:
        """The call cache's folder (None when the run kept none)."""
        if self.cache_dir is None:
            return None
        path = Path(self.cache_dir)
        return str(path if path.is_absolute() else Path(run_dir) / path)


def write_manifest(run_dir: str | Path, manifest: RunManifest) -> Path:
    """Write ``<run_dir>/replay_manifest.json`` atomically."""
    return atomic_write_json(Path(run_dir) / MANIFEST_FILE, asdict(manifest), indent=2)


def read_manifest(run_dir: str | Path) -> RunManifest:
    """Read a run folder's manifest.

    Raises:
        ReplayDataMissing: no manifest, or one that is not a membase run manifest.
    """
    path = Path(run_dir) / MANIFEST_FILE
    if not path.is_file():
        raise ReplayDataMissing(
            f"{str(run_dir)!r} holds no {MANIFEST_FILE}: it is not a replayable run (runs of `python -m membase run` "
            "write one; older runs and MemTraceBench folders cannot be replayed — run the system again)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReplayDataMissing(f"{str(path)!r} is not readable JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReplayDataMissing(f"{str(path)!r} is not a {FORMAT} manifest (format {data.get('format')!r})"
                                if isinstance(data, dict) else f"{str(path)!r} must hold a JSON object")
    known = {f.name for f in fields(RunManifest)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ReplayDataMissing(f"{str(path)!r}: unknown keys {unknown}")
    missing = [k for k in ("layer_type", "memory_config", "dataset") if k not in data]
    if missing:
        raise ReplayDataMissing(f"{str(path)!r}: missing keys {missing}")
    return RunManifest(**data)
