"""Which faults each split has: error kind × corruption × the layer's sites that can do it.

Sites follow the ops each layer records (spec-tracer-and-membase §4.6); a split has no fault
for a stage its layer does not have (Long-Context, NaiveRAG and EverMemOS never delete a unit;
NaiveRAG and EverMemOS never update one).
"""

from __future__ import annotations

from toolkits.faultbench._corrupt import CORRUPTIONS
from toolkits.faultbench._faults import Fault, FaultSpec

__all__ = ["SPLITS", "fault_class", "split_specs"]

#: MemTraceBench split → membase layer type.
SPLITS = {"long_context": "Long-Context", "rag": "NaiveRAG", "mem0": "Mem0", "evermemos": "EverMemOS"}


def _specs(error: str, corruptions: tuple[str, ...] | list[str], sites: tuple[str, ...]) -> list[FaultSpec]:
    return [FaultSpec(error=error, corruption=c, sites=sites) for c in corruptions]


_REWRITES = ("drop", "partial", "negate", "swap_person")
_CATALOG: dict[str, list[FaultSpec]] = {
    "long_context": [
        *_specs("extraction", CORRUPTIONS, ("memory_update",)),
        *_specs("update", ("trim", *_REWRITES), ("memory_update",)),
        *_specs("retrieval", ("skip", "stale"), ("retrieve",)),
        *_specs("response", ("ignore",), ("question_answering",)),
    ],
    "rag": [
        *_specs("extraction", CORRUPTIONS, ("buffer", "doc", "add")),
        *_specs("retrieval", ("skip", "near_duplicate"), ("retrieve",)),
        *_specs("response", ("ignore",), ("question_answering",)),
    ],
    "mem0": [
        *_specs("extraction", CORRUPTIONS, ("facts", "decision")),
        *_specs("extraction", ("omit",), ("decision",)),
        *_specs("update", (*CORRUPTIONS, "merge"), ("decision",)),
        *_specs("deletion", ("delete",), ("decision",)),
        *_specs("retrieval", ("skip", "near_duplicate"), ("search",)),
        *_specs("response", ("ignore",), ("question_answering",)),
    ],
    "evermemos": [
        *_specs("extraction", CORRUPTIONS, ("episode",)),
        *_specs("extraction", ("lose",), ("boundary", "memcell")),
        *_specs("retrieval", ("skip", "near_duplicate"), ("round1",)),
        *_specs("retrieval", ("final_drop",), ("final",)),
        *_specs("response", ("ignore",), ("question_answering",)),
    ],
}


def split_specs(split: str) -> list[FaultSpec]:
    """The fault specs of a split (ValueError for an unknown split)."""
    if split not in _CATALOG:
        raise ValueError(f"unknown split {split!r}; choose from {sorted(_CATALOG)}")
    return list(_CATALOG[split])


def fault_class(split: str) -> type[Fault]:
    """The fault class of a split's layer."""
    if split == "long_context":
        from toolkits.faultbench._layer_faults import LongContextFault

        return LongContextFault
    if split == "rag":
        from toolkits.faultbench._layer_faults import NaiveRAGFault

        return NaiveRAGFault
    if split == "mem0":
        from toolkits.faultbench._mem0_faults import Mem0Fault

        return Mem0Fault
    if split == "evermemos":
        from toolkits.faultbench._evermemos_faults import EverMemOSFault

        return EverMemOSFault
    raise ValueError(f"unknown split {split!r}; choose from {sorted(SPLITS)}")
