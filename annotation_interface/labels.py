"""Labels of one case from every source: human records, attribution outputs, replay verdicts.

A case is named by a :data:`CaseRef` ``(graph_name, qa_id)`` — the viewer's display name of the
graph file and the question id. Attribution outputs of ``run_error_attribution.py`` name a case
by ``graph_path`` and ``query_id`` instead; :func:`load_attribution_output` maps them onto the
dataset's cases by file name and query name (``query:<qa id>@<version>`` → ``<qa id>``).

The human label of a case, when several annotators labelled it, is the most frequent sure
label; a tie goes to the most recently saved of the tied ones. ``unsure`` records count for
agreement between annotators but never become the human label.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

from .annotations import record_key

__all__ = [
    "AttributionOutputError",
    "AutoLabels",
    "CaseRef",
    "Label",
    "case_qa_id",
    "consensus",
    "human_labels",
    "load_attribution_output",
]

CaseRef = tuple[str, str]
"""``(graph_name, qa_id)``."""


class AttributionOutputError(MemTraceError, ValueError):
    """An attribution output file that cannot be read; the message names the file and record."""


@dataclass(frozen=True, kw_only=True)
class Label:
    """One verdict on one case."""

    source: str
    """``human:<annotator>``, a strategy name (the output file's stem), ``replay`` or ``evidence_flow``."""
    error_type: str | None
    op_id: str | None
    reason: str = ""
    unsure: bool = False
    saved_at: str = ""


@dataclass(frozen=True, kw_only=True)
class AutoLabels:
    """The verdicts one attribution output gives, by case."""

    name: str
    path: str
    labels: dict[CaseRef, Label]
    replay: dict[CaseRef, Label]
    """Counterfactual-replay verdicts carried by the records (``replay`` / ``counterfactual_label``)."""
    unmatched: int
    """Records whose case is not a wrong question of the dataset."""


def case_qa_id(query_id: str) -> str:
    """``query:locomo-qa-3-140@1`` → ``locomo-qa-3-140`` (an id without prefix/version is kept)."""
    text = query_id.rsplit("@", 1)[0] if "@" in query_id else query_id
    return text.split(":", 1)[1] if text.startswith("query:") else text


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def human_labels(records: Iterable[Any]) -> dict[CaseRef, dict[str, Label]]:
    """``{case: {annotator: label}}`` of saved annotation records (the last one per key wins)."""
    out: dict[CaseRef, dict[str, Label]] = {}
    for record in records:
        key = record_key(record)
        manual = record.get("manual_error_attribution") if key else None
        if key is None or not isinstance(manual, dict):
            continue
        graph, qa_id, annotator = key
        out.setdefault((graph, qa_id), {})[annotator] = Label(
            source=f"human:{annotator or '?'}", error_type=_text(manual.get("error_type")),
            op_id=_text(manual.get("op_id")), reason=str(manual.get("reason") or ""),
            unsure=bool(record.get("unsure")), saved_at=str(record.get("saved_at") or ""))
    return out


def consensus(by_annotator: Mapping[str, Label]) -> Label | None:
    """The human label of a case: the most frequent sure (error type, op) pair; ties → latest."""
    sure = [lab for lab in by_annotator.values() if not lab.unsure and lab.error_type]
    if not sure:
        return None
    votes = Counter((lab.error_type, lab.op_id) for lab in sure)
    top = max(votes.values())
    tied = [lab for lab in sure if votes[(lab.error_type, lab.op_id)] == top]
    return max(tied, key=lambda lab: lab.saved_at)


def _replay_label(record: dict[str, Any]) -> Label | None:
    label = record.get("counterfactual_label")
    if isinstance(label, dict):
        return Label(source="replay", error_type=_text(label.get("error_type")), op_id=_text(label.get("op_id")),
                     reason=str(label.get("reason") or ""))
    if isinstance(label, str) and label:
        return Label(source="replay", error_type=label, op_id=None)
    replay = record.get("replay")
    if isinstance(replay, dict):
        # the blamed op was repaired and the case replayed: a rescue confirms the attribution's
        # label, no rescue leaves the case without a replay label
        result = record.get("error_attribution_result") or {}
        rescued = replay.get("rescued") is True
        facts = " · ".join(f"{k}: {v}" for k, v in replay.items() if isinstance(v, str | int | float | bool))
        return Label(source="replay", error_type=_text(result.get("error_type")) if rescued else None,
                     op_id=_text(result.get("op_id")) if rescued else None, reason=facts)
    return None


def _records_of(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AttributionOutputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AttributionOutputError(f"{path}: not a JSON file ({exc})") from None
    records = data.get("results") if isinstance(data, dict) else data
    if not isinstance(records, list):
        raise AttributionOutputError(f"{path}: neither an output of run_error_attribution.py nor its 'results' list")
    return records


def load_attribution_output(path: str | os.PathLike[str], wrong_cases: Iterable[tuple[str, str]],
                            *, name: str | None = None) -> AutoLabels:
    """Read an output of ``run_error_attribution.py`` (or its ``results`` list).

    Args:
        path: The JSON file.
        wrong_cases: ``(graph_name, qa_id)`` of the dataset's wrong questions.
        name: The strategy's name in tables (default: the file's stem).

    Raises:
        AttributionOutputError: unreadable, not JSON, or a record without ``query_id``.
    """
    p = Path(path)
    by_file: dict[tuple[str, str], CaseRef] = {(Path(g).name, q): (g, q) for g, q in wrong_cases}
    labels: dict[CaseRef, Label] = {}
    replay: dict[CaseRef, Label] = {}
    unmatched = 0
    source = name or p.stem
    for i, record in enumerate(_records_of(p)):
        if not isinstance(record, dict) or not isinstance(record.get("query_id"), str):
            raise AttributionOutputError(f"{p}: record {i} has no query_id")
        graph_file = Path(str(record.get("graph_path") or "")).name
        ref = by_file.get((graph_file, case_qa_id(record["query_id"])))
        if ref is None:
            unmatched += 1
            continue
        result = record.get("error_attribution_result")
        if isinstance(result, dict):
            labels[ref] = Label(source=source, error_type=_text(result.get("error_type")),
                                op_id=_text(result.get("op_id")), reason=str(result.get("reason") or ""))
        verdict = _replay_label(record)
        if verdict is not None:
            replay[ref] = verdict
    return AutoLabels(name=source, path=str(p), labels=labels, replay=replay, unmatched=unmatched)
