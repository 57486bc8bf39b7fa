"""Conversations that a benchmark file takes from LoCoMo by reference, never by copy.

A conversation record may name a LoCoMo sample instead of holding its turns::

    {"id": "p26", "locomo": {"sample": "conv-26", "sessions": 4},
     "questions": [{"key": "q7", "locomo_qa": 7}, ...], "memories": {...}}

``sessions`` is how many of the sample's first sessions the case runs over; a question's
``locomo_qa`` is its 1-based position in the sample's ``qa`` list, from which the question, the
answer and the evidence (as message numbers of the cut) are read unless the record gives its own.
:func:`resolve_locomo` turns such a record into the embedded form :mod:`.data` reads, so the
benchmark file holds no sentence of the dataset. The LoCoMo file is ``$MEMTRACE_SHARED_DIR``'s
``data/locomo/locomo10.json``, else ``../shared/data/locomo/locomo10.json`` beside the repository.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchmarks.attribution.data import BenchmarkError

__all__ = ["default_locomo_path", "resolve_locomo"]

_TIME_FORMAT = "%I:%M %p on %d %B, %Y"


def default_locomo_path() -> Path:
    """Where the shared LoCoMo file lives on this machine."""
    shared = os.environ.get("MEMTRACE_SHARED_DIR")
    root = Path(shared) if shared else Path(__file__).resolve().parents[3] / "shared"
    return root / "data" / "locomo" / "locomo10.json"


@lru_cache(maxsize=4)
def _samples(path: str) -> dict[str, dict[str, Any]]:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise BenchmarkError(f"LoCoMo file {path}: cannot read it ({exc.strerror or exc}); set "
                             "MEMTRACE_SHARED_DIR or pass --locomo") from exc
    except ValueError as exc:
        raise BenchmarkError(f"LoCoMo file {path}: not JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise BenchmarkError(f"LoCoMo file {path}: not a list of samples")
    return {str(s.get("sample_id")): s for s in raw if isinstance(s, dict)}


def _sessions(sample: dict[str, Any], count: int, where: str) -> list[dict[str, Any]]:
    conv, sessions = sample.get("conversation") or {}, []
    for number in range(1, count + 1):
        turns, when = conv.get(f"session_{number}"), conv.get(f"session_{number}_date_time")
        if not isinstance(turns, list) or not when:
            raise BenchmarkError(f"{where}: LoCoMo sample {sample.get('sample_id')} has no session {number}")
        try:
            time = datetime.strptime(str(when).strip(), _TIME_FORMAT).isoformat()
        except ValueError as exc:
            raise BenchmarkError(f"{where}: session {number} date {when!r} is not LoCoMo's format") from exc
        sessions.append({"time": time, "turns": [[t["speaker"], t["text"]] for t in turns],
                         "dia_ids": [str(t.get("dia_id", "")) for t in turns]})
    return sessions


def _question(record: dict[str, Any], sample: dict[str, Any], numbers: dict[str, int], where: str) -> dict[str, Any]:
    from membase.datasets.locomo import parse_evidence

    index = record.get("locomo_qa")
    qas = sample.get("qa") or []
    if not isinstance(index, int) or not 1 <= index <= len(qas):
        raise BenchmarkError(f"{where}: field 'locomo_qa' must be 1..{len(qas)}")
    raw = qas[index - 1]
    ids, _problems = parse_evidence(raw.get("evidence"))
    missing = [i for i in ids if i not in numbers]
    if "evidence" not in record and (missing or not ids):
        raise BenchmarkError(f"{where}: LoCoMo question {index}'s evidence {missing or ids} lies outside the "
                             "sessions taken; take more sessions or give 'evidence'")
    out = {"question": raw.get("question"), "answers": [str(raw.get("answer"))],
           "evidence": [numbers[i] for i in ids]}
    return out | {k: v for k, v in record.items() if k != "locomo_qa"}


def resolve_locomo(record: dict[str, Any], where: str, locomo: str | Path | None = None) -> dict[str, Any]:
    """The embedded form of a conversation record that names a LoCoMo sample (others unchanged).

    Raises:
        BenchmarkError: the LoCoMo file, the sample, a session or a question is missing.
    """
    ref = record.get("locomo")
    if ref is None:
        return record
    if not isinstance(ref, dict) or not isinstance(ref.get("sample"), str) or not isinstance(ref.get("sessions"), int):
        raise BenchmarkError(f"{where}: field 'locomo' must be {{'sample': 'conv-<n>', 'sessions': <count>}}")
    path = str(locomo or default_locomo_path())
    sample = _samples(path).get(ref["sample"])
    if sample is None:
        raise BenchmarkError(f"{where}: LoCoMo file {path} has no sample {ref['sample']!r}")
    sessions = _sessions(sample, ref["sessions"], where)
    numbers: dict[str, int] = {}
    for session in sessions:
        for dia_id in session.pop("dia_ids"):
            numbers[dia_id] = len(numbers) + 1
    questions = [_question(q, sample, numbers, f"{where} question {i}") if isinstance(q, dict) and "locomo_qa" in q
                 else q for i, q in enumerate(record.get("questions") or [])]
    return {k: v for k, v in record.items() if k != "locomo"} | {"sessions": sessions, "questions": questions}
