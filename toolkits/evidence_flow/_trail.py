"""The trail: the checked steps of one attribution, in order (returned as the result's ``trail``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ._graph_view import GraphView, NodeRec

__all__ = ["Step", "Trail"]


@dataclass(kw_only=True)
class Step:
    """One checked step."""

    stage: str
    """``evidence``, ``construction``, ``lifecycle``, ``store``, ``retrieval``, ``context`` or ``answer``."""
    op_id: str | None = None
    op_name: str | None = None
    node_id: str | None = None
    present: bool | None = None
    score: float | None = None
    """The probe's score for the node (1.0 = threshold), when one was measured."""
    note: str = ""


@dataclass
class Trail:
    """Collects steps; ops are named from the graph."""

    view: GraphView
    steps: list[Step] = field(default_factory=list)

    def add(self, stage: str, *, op_id: str | None = None, node: NodeRec | None = None, node_id: str | None = None,
            present: bool | None = None, score: float | None = None, note: str = "") -> None:
        """Append a step."""
        self.steps.append(Step(stage=stage, op_id=op_id, op_name=self.view.op_name(op_id) if op_id else None,
                               node_id=node.full_node_id if node is not None else node_id, present=present,
                               score=score, note=note))

    def as_dicts(self) -> list[dict[str, Any]]:
        """JSON-ready steps."""
        return [asdict(s) for s in self.steps]
