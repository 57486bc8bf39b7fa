"""The annotation queue: the wrong questions of a folder, filtered, with next / skip / done.

A case is *done* for an annotator once a record of theirs is saved for it (the saved file is
the queue's memory: a restarted app resumes at the first case that is neither done nor skipped).
*Skipped* cases live in the browser session only; when every other case is done the queue comes
back to them.

Deep links name a case with three URL query parameters, the ones the report writer emits:
``folder`` (the benchmark or run folder), ``graph`` (the graph file's stem) and ``case`` (the
question id, its query node id ``query:<id>@<v>`` or its query name ``query:<id>``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlencode

from .dataset import Dataset
from .labels import CaseRef, Label, case_qa_id

__all__ = [
    "QueueFilter",
    "QueueItem",
    "deep_link",
    "filter_items",
    "find_item",
    "next_item",
    "queue_items",
]


@dataclass(frozen=True, kw_only=True)
class QueueItem:
    """One wrong question of the folder."""

    graph_name: str
    qa_id: str
    query_full_name: str
    question: str
    split: str
    """The graph's first folder below the data path (``mem0`` in ``mem0/x.json``), else ``""``."""

    @property
    def ref(self) -> CaseRef:
        """``(graph_name, qa_id)``."""
        return self.graph_name, self.qa_id

    @property
    def graph_stem(self) -> str:
        """The graph file's name without ``.json`` (the ``graph`` deep-link parameter)."""
        return PurePosixPath(self.graph_name).stem


@dataclass(frozen=True, kw_only=True)
class QueueFilter:
    """Which cases the queue holds (``None``/``False`` = no restriction)."""

    split: str | None = None
    predicted_type: str | None = None
    """Keep cases that some automatic source attributes to this error type."""
    blamed_op: str | None = None
    """Keep cases that some automatic source blames on an op with this id or name."""
    disagreement: bool = False
    """Keep cases whose labels (automatic and human) name more than one error type or op."""


def queue_items(dataset: Dataset) -> list[QueueItem]:
    """Every wrong question of the dataset, in file order."""
    items = []
    for g in dataset.graphs:
        parts = PurePosixPath(g.graph_name).parts
        split = parts[0] if len(parts) > 1 else ""
        for q in g.wrong_qas:
            items.append(QueueItem(graph_name=g.graph_name, qa_id=q["qa_id"], query_full_name=q["query_full_name"],
                                   question=str(q.get("question") or ""), split=split))
    return items


def _disagree(labels: Iterable[Label]) -> bool:
    verdicts = {(lab.error_type, lab.op_id) for lab in labels if lab.error_type}
    return len(verdicts) > 1


def filter_items(items: Sequence[QueueItem], flt: QueueFilter, labels_of: Callable[[CaseRef], list[Label]],
                 op_name: Callable[[str, str], str | None] | None = None) -> list[QueueItem]:
    """The items that pass ``flt``.

    Args:
        items: The queue.
        flt: The filter.
        labels_of: Every known label of a case (automatic and human).
        op_name: ``(graph_name, op_id) -> op name`` so that ``blamed_op`` may be a name.
    """
    kept = []
    for item in items:
        if flt.split and item.split != flt.split:
            continue
        labels = labels_of(item.ref) if (flt.predicted_type or flt.blamed_op or flt.disagreement) else []
        auto = [lab for lab in labels if not lab.source.startswith("human:")]
        if flt.predicted_type and not any(lab.error_type == flt.predicted_type for lab in auto):
            continue
        if flt.blamed_op and not any(
                lab.op_id and (lab.op_id == flt.blamed_op
                               or (op_name is not None and op_name(item.graph_name, lab.op_id) == flt.blamed_op))
                for lab in auto):
            continue
        if flt.disagreement and not _disagree(labels):
            continue
        kept.append(item)
    return kept


def next_item(items: Sequence[QueueItem], *, current: CaseRef | None, done: Collection[CaseRef],
              skipped: Collection[CaseRef]) -> QueueItem | None:
    """The next case to annotate after ``current``: the first open (not done, not skipped) case
    after it, wrapping around; when only skipped cases are left, the first skipped one after it;
    None when every case is done."""
    if not items:
        return None
    refs = [i.ref for i in items]
    start = refs.index(current) + 1 if current in refs else 0
    order = [*items[start:], *items[:start]]
    for item in order:
        if item.ref not in done and item.ref not in skipped and item.ref != current:
            return item
    for item in order:
        if item.ref not in done and item.ref != current:
            return item
    return None


def find_item(items: Sequence[QueueItem], *, graph: str | None, case: str | None) -> QueueItem | None:
    """The item a deep link names (``graph``: file stem or display name; ``case``: question id,
    query node id or query name)."""
    if not case:
        return None
    qa_id = case_qa_id(case)
    for item in items:
        if item.qa_id != qa_id and item.query_full_name != case:
            continue
        if not graph or graph in (item.graph_stem, item.graph_name, PurePosixPath(item.graph_name).name):
            return item
    return None


def deep_link(base_url: str, *, folder: str, item: QueueItem, extra: Mapping[str, str] | None = None) -> str:
    """The URL that opens ``item`` in the viewer started at ``base_url``."""
    query = {"folder": folder, "graph": item.graph_stem, "case": item.qa_id, **(extra or {})}
    return f"{base_url.rstrip('/')}/?{urlencode(query)}"
