"""What the report says about one blamed case beyond its error type: where to open it, which
prompt it depends on, which memory decision broke it, and whether a replay rescued it.

* :func:`viewer_link` — the annotation viewer's deep link (URL query parameters ``folder``,
  ``graph``, ``case``: the benchmark or run folder, the graph file's stem, the question id);
* :func:`prompt_target_of` — the optimization target (bundle field and graph variable) the
  blamed operation consumes, found with the optimizer's own registry and grouping rule
  (:mod:`toolkits.optimization.targets`, :mod:`toolkits.optimization.grouping`), so the report
  and ``run_optimization.py`` send a case to the same prompt;
* :func:`decision_event_of` — for Mem0's ``update_memory_decision``: whether the fault is an
  ``ADD``, ``UPDATE``, ``DELETE`` or ``NONE`` decision, so one operation blamed for extraction,
  update and deletion errors reads without contradiction;
* :func:`replay_of` — the record's counterfactual replay (``replay`` dict or
  ``counterfactual_label``), when a replay ran.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

__all__ = [
    "DECISION_EVENTS",
    "DEFAULT_VIEWER_URL",
    "PromptTarget",
    "Replay",
    "case_id_of",
    "decision_event_of",
    "is_decision_op",
    "prompt_target_of",
    "replay_of",
    "viewer_folder_of",
    "viewer_link",
]

DEFAULT_VIEWER_URL = "http://localhost:8501"
"""Where ``python -m annotation_interface`` serves the viewer by default."""
DECISION_EVENTS: tuple[str, ...] = ("ADD", "UPDATE", "DELETE", "NONE")
_DECISION_OP_SUFFIX = "update_memory_decision"
# folders that hold a run's graphs below the folder the viewer is started on
_GRAPH_SUBFOLDERS = frozenset({*MEMTRACEBENCH_SPLITS, "traced_data"})


# ------------------------------------------------------------------------------ viewer links


def case_id_of(query_id: str) -> str:
    """``query:locomo-qa-3-140@1`` → ``locomo-qa-3-140`` (the viewer's ``case`` parameter)."""
    text = query_id.rsplit("@", 1)[0] if "@" in query_id else query_id
    return text.split(":", 1)[1] if text.startswith("query:") else text


def viewer_folder_of(graph_path: str, split: str | None = None) -> str:
    """The folder the viewer is started on for this graph: the benchmark folder above a split
    folder (``bench/mem0/x.json`` → ``bench``) or the run folder above ``traced_data``, else the
    graph's own folder."""
    parent = Path(graph_path).parent
    if parent.name and (parent.name in _GRAPH_SUBFOLDERS or parent.name == split):
        return str(parent.parent)
    return str(parent)


def viewer_link(base_url: str, *, graph_path: str | None, query_id: str, split: str | None = None) -> str | None:
    """The deep link that opens the case in the viewer, or None when the record names no graph."""
    if not graph_path or not query_id:
        return None
    query = {"folder": viewer_folder_of(graph_path, split), "graph": Path(graph_path).stem, "case": case_id_of(query_id)}
    return f"{base_url.rstrip('/')}/?{urlencode(query)}"


# ------------------------------------------------------------------------------ prompt targets


@dataclass(frozen=True, kw_only=True)
class PromptTarget:
    """The optimization target a blamed operation depends on."""

    field: str
    """Bundle field, e.g. ``custom_fact_extraction_prompt``."""
    variable: str
    """Graph variable, e.g. ``fact-extraction-system-prompt``."""


def _layer_targets(graph: Any) -> list[Any]:
    from toolkits.optimization.targets import TARGETS

    layer = str(graph.metadata.get("layer_type") or "")
    return TARGETS.for_layer(layer) if layer else list(TARGETS)


def prompt_target_of(graph: Any, op_id: str | None) -> PromptTarget | None:
    """The target variable the operation consumes (the optimizer's ranking), or None when the
    operation has no optimizable prompt (or is not in the graph)."""
    if not op_id:
        return None
    from toolkits.optimization.grouping import group_attributions

    targets = _layer_targets(graph)
    with warnings.catch_warnings():  # "several versions of a prompt": the report only needs the name
        warnings.simplefilter("ignore")
        try:
            groups = group_attributions([{"error_type": "", "op_id": op_id}], graph, targets)
        except (KeyError, ValueError):
            return None
    field = groups.assignments[0].field
    if field is None:
        return None
    variable = next((t.variable for t in targets if t.field == field), field)
    return PromptTarget(field=field, variable=variable)


# ------------------------------------------------------------------------------ decision events


def is_decision_op(op_name: str | None) -> bool:
    """True for Mem0's memory update decision (``memory_system.update_memory_decision``)."""
    return bool(op_name) and str(op_name).endswith(_DECISION_OP_SUFFIX)


def _decision_events(graph: Any, op_id: str) -> list[str]:
    """The events the decision operation emitted (from its parsed ``update_action`` output)."""
    events: list[str] = []
    for node in graph.filter_by_operation(op_id).nodes:
        if not node.full_name.startswith("update_action"):
            continue
        value = node.value
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        items = value.get("memory") if isinstance(value, Mapping) else None
        for item in items if isinstance(items, list) else []:
            event = str(item.get("event") or "").upper() if isinstance(item, Mapping) else ""
            if event in DECISION_EVENTS:
                events.append(event)
    return events


def _event_from_trail(trail: Sequence[Mapping[str, Any]], op_id: str) -> str | None:
    """The event the trail shows at the op: the memory unit it lost the information in."""
    for step in reversed(trail):
        node = str(step.get("node_id") or "")
        if step.get("op_id") != op_id or step.get("present") is not False or not node.startswith("memory-unit-"):
            continue
        note = str(step.get("note") or "").lower()
        if "delete" in note:
            return "DELETE"
        version = node.rsplit("@", 1)[-1]
        return "UPDATE" if version.isdigit() and int(version) > 1 else "ADD"
    return None


def decision_event_of(
    graph: Any, op_id: str, *, error_type: str | None, trail: Sequence[Mapping[str, Any]] | None
) -> tuple[str | None, str]:
    """The decision (``ADD``/``UPDATE``/``DELETE``/``NONE``) that lost a case's information.

    Read from the trail when it names the memory unit that lost it (a deleted unit is
    ``DELETE``, a later version ``UPDATE``, a first version ``ADD``); otherwise from the verdict:
    ``DeletionError`` → ``DELETE``, ``UpdateError`` → ``UPDATE``, and an ``ExtractionError`` at
    the decision is a new fact stored wrongly (``ADD``, when the decision added anything) or not
    stored at all (``NONE``).

    Returns:
        ``(event, basis)`` with basis ``trail`` or ``verdict`` (event None: not decidable).
    """
    event = _event_from_trail(trail or (), op_id)
    if event is not None:
        return event, "trail"
    by_type = {"DeletionError": "DELETE", "UpdateError": "UPDATE"}.get(error_type or "")
    if by_type is not None:
        return by_type, "verdict"
    if error_type == "ExtractionError":
        return ("ADD" if "ADD" in _decision_events(graph, op_id) else "NONE"), "verdict"
    return None, "verdict"


# ------------------------------------------------------------------------------ replay


@dataclass(frozen=True, kw_only=True)
class Replay:
    """A counterfactual replay of the case with its blamed operation repaired."""

    rescued: bool
    """True when the repaired run answered correctly."""
    judge_label: str | None = None
    prediction: str | None = None
    new_calls: int | None = None
    tokens: int | None = None
    seconds: float | None = None
    counterfactual_label: str | None = None
    """The earliest rescuing op's label, when the run labelled the case by replay."""


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def replay_of(raw: Mapping[str, Any]) -> Replay | None:
    """The record's replay (a ``replay`` dict with a boolean ``rescued``), or None when none ran."""
    replay = raw.get("replay")
    label = raw.get("counterfactual_label")
    label_text = None
    if isinstance(label, str) and label:
        label_text = label
    elif isinstance(label, Mapping):
        label_text = " ".join(str(label.get(k)) for k in ("error_type", "op_id") if label.get(k)) or None
    if not isinstance(replay, Mapping) or not isinstance(replay.get("rescued"), bool):
        return None
    seconds = replay.get("seconds")
    return Replay(
        rescued=replay["rescued"],
        judge_label=str(replay["judge_label"]) if replay.get("judge_label") is not None else None,
        prediction=str(replay["prediction"]) if replay.get("prediction") is not None else None,
        new_calls=_int(replay.get("new_calls")),
        tokens=_int(replay.get("tokens")),
        seconds=float(seconds) if isinstance(seconds, int | float) and not isinstance(seconds, bool) else None,
        counterfactual_label=label_text,
    )
