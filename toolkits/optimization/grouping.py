"""Assign each attribution to the optimization target its faulty operation depends on.

For one attribution, the candidates are the target variables (any version) among the nodes of
its operation's subgraph (``graph.filter_by_operation(op_id)``). They are ranked, and the first
one wins:

1. variables the operation *consumes* — sources of the op's edges that no edge of the op
   produces — before variables it merely touches (produces, or passes along);
2. then the targets' order in the list given (registration order of the registry);
3. then the variable name and, last, the newer version.

With ``upstream_hops`` > 0 each assignment also lists the target variables *upstream* of the
operation (``Assignment.upstream``): walking back from the variables the operation consumes
along the edges that produced them, at most ``upstream_hops`` operations deep, nearest first. An
evidence unit lost at retrieval was shaped by the chunking that built it; attribution names the
operation where the loss shows, the walk finds the settings before it that could avoid it.

An attribution with no operation, an operation missing from the graph, or no target variable
in the subgraph is *unoptimizable*; it is kept with the reason (the reference only counted
these). The result does not depend on the order of nodes in the graph, so reruns group
identically.
"""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolkits.optimization.records import Attribution
from toolkits.optimization.targets import Target

__all__ = ["AttributionGroups", "Assignment", "group_attributions", "latest_target_nodes", "upstream_targets"]


@dataclass(frozen=True, kw_only=True)
class Assignment:
    """Where one attribution went."""

    index: int
    """Position of the attribution in the input."""
    field: str | None
    """The target's bundle field, None when unoptimizable."""
    variable_id: str | None
    """The full node id of the target variable found in the op subgraph."""
    consumed: bool = False
    """True when the operation consumes that variable (rank 1)."""
    reason: str = ""
    """Why it is unoptimizable (empty when assigned)."""
    candidates: tuple[str, ...] = ()
    """Fields of every target variable in the op subgraph, best first (``field`` is the first)."""
    upstream: tuple[str, ...] = ()
    """Fields of target variables upstream of the op (not among ``candidates``), nearest first."""


@dataclass(kw_only=True)
class AttributionGroups:
    """The result of :func:`group_attributions`."""

    by_field: dict[str, list[Attribution]] = field(default_factory=dict)
    """Target field → its attributions, in input order (only targets with at least one)."""
    unoptimizable: list[tuple[Attribution, str]] = field(default_factory=list)
    """Attributions no target could take, with the reason."""
    node_ids: dict[str, str] = field(default_factory=dict)
    """Full node id of each target's latest version in the graph → target field."""
    assignments: list[Assignment] = field(default_factory=list)
    """One record per input attribution, in input order."""
    missing_targets: list[str] = field(default_factory=list)
    """Target fields whose variable is not in the graph."""

    @property
    def field_node_ids(self) -> dict[str, str]:
        """Target field → full node id of its latest version."""
        return {f: nid for nid, f in self.node_ids.items()}

    @property
    def num_optimizable(self) -> int:
        """Attributions assigned to some target."""
        return sum(len(v) for v in self.by_field.values())

    def as_json(self) -> dict[str, Any]:
        """The JSON form written to ``grouped_attributions.json``."""
        ids = self.field_node_ids
        return {
            "targets": {
                f: {"variable_id": ids.get(f), "attributions": [a.model_dump(mode="json") for a in attrs]}
                for f, attrs in self.by_field.items()
            },
            "unoptimizable": [{**a.model_dump(mode="json"), "unoptimizable_reason": r} for a, r in self.unoptimizable],
            "missing_targets": list(self.missing_targets),
            "assignments": [
                {"index": a.index, "field": a.field, "variable_id": a.variable_id, "consumed": a.consumed,
                 "reason": a.reason, "candidates": list(a.candidates), "upstream": list(a.upstream)}
                for a in self.assignments
            ],
        }


def latest_target_nodes(graph: Any, targets: Sequence[Target]) -> tuple[dict[str, str], list[str]]:
    """Full node id of each target variable's latest version (``{field: id}``) and the fields
    whose variable the graph lacks. Several versions give a warning (the latest is used)."""
    found: dict[str, str] = {}
    missing: list[str] = []
    for target in targets:
        versions = graph.get_versions(target.variable)
        if not versions:
            missing.append(target.field)
            continue
        if len(versions) > 1:
            warnings.warn(
                f"graph variable {target.variable!r} has {len(versions)} versions; optimizing the latest",
                stacklevel=3,
            )
        found[target.field] = max(versions, key=lambda v: v.version).full_node_id
    return found, missing


def group_attributions(
    attributions: Iterable[Any], graph: Any, targets: Sequence[Target], *, upstream_hops: int = 0
) -> AttributionGroups:
    """Group attributions by the target variable their operation depends on (see module docstring).

    Args:
        attributions: :class:`Attribution` objects (or dicts / predictions with ``error_type``,
            ``op_id``, ``reason``).
        graph: The traced ``ExecNetwork`` the attributions refer to.
        targets: Candidate targets, in priority order (e.g. ``TARGETS.for_layer("Mem0")``).
        upstream_hops: How many producing operations deep to look for targets upstream of each
            attributed operation (0: none; see the module docstring).

    Returns:
        The groups; targets absent from the graph are listed in ``missing_targets``.

    Raises:
        ValueError: Two targets share a graph variable.
    """
    targets = list(targets)
    by_variable: dict[str, tuple[int, Target]] = {}
    for rank, target in enumerate(targets):
        if target.variable in by_variable:
            raise ValueError(f"targets {by_variable[target.variable][1].field!r} and {target.field!r} share "
                             f"graph variable {target.variable!r}")
        by_variable[target.variable] = (rank, target)
    latest, missing = latest_target_nodes(graph, targets)
    groups = AttributionGroups(node_ids={nid: f for f, nid in latest.items()}, missing_targets=missing)
    present = {t.variable for t in targets if t.field in latest}
    upstream_of: dict[str, tuple[str, ...]] = {}
    for index, raw in enumerate(attributions):
        attribution = Attribution.coerce(raw)
        assignment = _assign(index, attribution, graph, by_variable, present)
        op_id = (attribution.op_id or "").strip()
        if upstream_hops > 0 and op_id and not assignment.reason.startswith("operation"):
            if op_id not in upstream_of:
                upstream_of[op_id] = upstream_targets(graph, op_id, by_variable, present, upstream_hops)
            found = tuple(f for f in upstream_of[op_id] if f not in assignment.candidates)
            assignment = replace(assignment, upstream=found)
        groups.assignments.append(assignment)
        if assignment.field is None:
            groups.unoptimizable.append((attribution, assignment.reason))
        else:
            groups.by_field.setdefault(assignment.field, []).append(attribution)
    order = {t.field: i for i, t in enumerate(targets)}
    groups.by_field = dict(sorted(groups.by_field.items(), key=lambda kv: order[kv[0]]))
    return groups


def _assign(
    index: int,
    attribution: Attribution,
    graph: Any,
    by_variable: dict[str, tuple[int, Target]],
    present: set[str],
) -> Assignment:
    op_id = (attribution.op_id or "").strip()
    if not op_id:
        return Assignment(index=index, field=None, variable_id=None, reason="the attribution names no operation")
    sub = graph.filter_by_operation(op_id)
    if not sub.edges:
        return Assignment(index=index, field=None, variable_id=None,
                          reason=f"operation {op_id!r} is not in the graph (or has no edges)")
    produced = {e.target_full_node_id for e in sub.edges}
    consumed = {e.source_full_node_id for e in sub.edges} - produced
    candidates = []
    for node in sub.nodes:
        # full_name: a class-named variable (parameter:top_k) is matched with its class prefix
        if node.full_name not in by_variable or node.full_name not in present:
            continue
        rank, target = by_variable[node.full_name]
        is_consumed = node.full_node_id in consumed
        candidates.append((0 if is_consumed else 1, rank, node.full_name, -int(node.version), node.full_node_id,
                           target, is_consumed))
    if not candidates:
        return Assignment(index=index, field=None, variable_id=None,
                          reason=f"no optimization target variable in the subgraph of operation {op_id!r}")
    candidates.sort(key=lambda c: c[:5])
    best = candidates[0]
    ranked = tuple(dict.fromkeys(c[5].field for c in candidates))
    return Assignment(index=index, field=best[5].field, variable_id=best[4], consumed=best[6], candidates=ranked)


def upstream_targets(
    graph: Any, op_id: str, by_variable: dict[str, tuple[int, Target]], present: set[str], hops: int
) -> tuple[str, ...]:
    """Target fields upstream of ``op_id``, nearest first (then target order).

    Level 0 is every variable of the operation's subgraph. A variable at level d was made by
    other operations (the ops of its incoming edges, the attributed one aside); every input of
    those operations is at level d + 1 — a retrieved unit leads to the op that stored it, its
    text to the buffer update that cut it, and that update's inputs include the chunking
    settings. Target variables found on levels 1 … ``hops`` are returned.
    """
    driver = graph.driver
    sub = graph.filter_by_operation(op_id)
    start = {e.source_full_node_id for e in sub.edges} | {e.target_full_node_id for e in sub.edges}
    seen = set(start)
    frontier = deque((node_id, 0) for node_id in sorted(start))
    inputs_of: dict[str, set[str]] = {}
    found: dict[str, tuple[int, int]] = {}
    while frontier:
        node_id, depth = frontier.popleft()
        if depth >= hops:
            continue
        for edge in driver.get_edges_by_node(node_id, "incoming"):
            if edge.op_id == op_id:
                continue
            if edge.op_id not in inputs_of:
                inputs_of[edge.op_id] = {e.source_full_node_id for e in driver.get_edges_by_operation(edge.op_id)}
            for source in sorted(inputs_of[edge.op_id] - seen):
                seen.add(source)
                frontier.append((source, depth + 1))
                name = graph.get_variable(source).full_name
                if name in by_variable and name in present:
                    rank, target = by_variable[name]
                    found.setdefault(target.field, (depth + 1, rank))
    return tuple(sorted(found, key=lambda f: found[f]))
