"""A unit that holds the information in a field the answering context never shows.

Query time is judged by unit identity (:mod:`._query_time`): a context built from a holding unit
had the information. That is only true of the fields the context shows. An EverMemOS unit keeps an
episode, an event log and foresights, and its context renders the subject and the episode only;
when the episode lost the fact and the event log kept it, the unit "holds" it while the answering
model never saw it. The op to blame is the one that wrote the shown fields without it
(``ExtractionError`` when they never said it, ``UpdateError`` when a later version lost it).

The shown fields are read off the context itself: a field is shown when the start of its text
appears in the context. Nothing is decided when every content field is shown (Mem0's ``memory``,
a RAG chunk) or none is (a context that rewrites what it renders), or when the context's own text
says the information.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._graph_view import GraphView, NodeRec
from ._text import _NON_CONTENT_KEYS, _flatten, decode_value
from .judges import PresenceJudge

__all__ = ["RenderedLoss", "rendered_loss"]

_PROBE_CHARS = 80
_MIN_CHARS = 12


@dataclass(frozen=True, kw_only=True)
class RenderedLoss:
    """The op that wrote what the context shows of a holding unit without the information."""

    error_type: str
    op_id: str
    unit: NodeRec
    shown: tuple[str, ...]
    detail: str


def _normal(text: str) -> str:
    return " ".join(text.split()).lower()


def _fields(raw: str) -> dict[str, list[str]]:
    """A unit value's content fields (bookkeeping left out), each as its strings; {} when it has none."""
    decoded = decode_value(raw)
    if not isinstance(decoded, dict):
        return {}
    out = {}
    for key, value in decoded.items():
        if str(key) in _NON_CONTENT_KEYS:
            continue
        texts = [t for t in _flatten(value, skip_keys=_NON_CONTENT_KEYS) if t.strip()]
        if texts:
            out[str(key)] = texts
    return out


def _shown(texts: list[str], context: str) -> bool:
    for text in texts:
        start = _normal(text)[:_PROBE_CHARS]
        if len(start) >= _MIN_CHARS and start in context:
            return True
    return False


def rendered_loss(view: GraphView, probe: PresenceJudge, context: NodeRec, context_text: str,
                  holders: list[NodeRec]) -> RenderedLoss | None:
    """The loss behind a context that is built from holding units but shows none of what holds it."""
    if probe.assess(context_text).present:
        return None
    rendered = _normal(context_text)
    for unit in holders:
        fields = _fields(unit.value)
        shown = {key for key, texts in fields.items() if _shown(texts, rendered)}
        if not shown or shown == set(fields):
            continue
        if probe.assess("\n".join(t for key in sorted(shown) for t in fields[key])).present:
            continue
        return _blame(view, probe, unit, tuple(sorted(shown)))
    return None


def _blame(view: GraphView, probe: PresenceJudge, unit: NodeRec, shown: tuple[str, ...]) -> RenderedLoss | None:
    """The version of ``unit`` whose shown fields first lacked the information for good, and its op."""
    versions = [v for v in view.versions.get(unit.full_name, []) if v.version <= unit.version]
    first_written: NodeRec | None = None
    last_carrying: NodeRec | None = None
    for version in versions:
        fields = _fields(version.value)
        if not all(key in fields for key in shown):  # an early version without the shown content yet
            continue
        texts = [t for key in shown for t in fields[key]]
        first_written = first_written or version
        if probe.assess("\n".join(texts)).present:
            last_carrying = version
    if first_written is None:
        return None
    if last_carrying is None:
        culprit, error_type = first_written, "ExtractionError"
        how = "were written without it"
    else:
        later = [v for v in versions if v.version > last_carrying.version]
        if not later:
            return None
        culprit, error_type = later[0], "UpdateError"
        how = f"held it up to version {last_carrying.version} and lost it"
    producers = view.unit_producers.get(culprit.full_node_id, [])
    if not producers:
        return None
    op_id = producers[-1].op_id
    fields = ", ".join(shown)
    return RenderedLoss(error_type=error_type, op_id=op_id, unit=unit, shown=shown,
                        detail=(f"the context shows only the {fields} of {unit.full_name}, which {how} "
                                f"({culprit.full_node_id}, op {op_id}); the unit holds the information only in "
                                "fields the answering model never sees"))
