"""Steps 2 and 3 — construction by lineage, then the life of every memory unit that holds it.

**Construction.** Starting at the seed messages, the information moves along the edges of the
ops that build memory (not retrieval or evaluation; parameter nodes are ignored), in execution
order: an edge passes it on when its source carries it and its target still says it (the
probe's verdict, reading raw copies of the source messages inside a unit too, because the ops
that read a unit see them). So only what *descends* from the evidence can carry it: the same
words in another message's memory do not count. An edge whose source carries it and whose
target does not is a *drop*.

**Lifecycle.** Every version and every explicit deletion of every memory unit, in order, keeps
the set of units that hold the information: a version holds it when it descends from the
evidence and its retrievable content (bookkeeping fields and raw message copies left out) still
says it. A new version that no longer says it is an update loss, a delete marker a deletion;
another unit that takes the information over keeps it alive.

* Never held by any unit: an ``ExtractionError`` at the op where capture failed — the first
  drop into a memory unit (a unit built from the evidence that does not hold it), else the
  deepest drop on the way to memory (the drop whose carrying source was created last among
  drops whose target leads to a memory unit): the last op that had the information and did not
  pass it on. When nothing was dropped (every output still says it, none of them is a unit), the
  op that wrote the last of them: the information reached it and went no further.
* Held, and no unit holds it when the question is asked: the op that last emptied the set — an
  ``UpdateError`` (a new version without it) or a ``DeletionError`` (a delete marker, an edge of a
  deleting op from the unit, or a new version that is empty or says "deleted").

Lineage decides whenever the graph records some path from the evidence to a memory unit; in a
graph that records none, units are judged by their content alone.
* Held at question time: the holders go on to the query-time step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._assessment import Assessment
from ._graph_view import EdgeRec, GraphView, NodeRec, is_memory_unit, is_message
from ._text import memory_text, message_text
from ._trail import Trail
from .judges import PresenceJudge

__all__ = ["Drop", "Loss", "StoreState", "follow_construction", "node_text"]

_MAX_CARRY_STEPS = 12


def node_text(node: NodeRec, *, flow: bool = False) -> str:
    """What a node says. Memory units count by their retrievable content, except when following
    the flow (``flow=True``): raw copies of source messages inside a unit still reach the ops
    that read the unit (e.g. EverMemOS's episode extraction)."""
    if is_message(node):
        return message_text(node.value)
    return memory_text(node.value, unit=is_memory_unit(node) and not flow)


@dataclass(frozen=True, kw_only=True)
class Drop:
    """An edge whose source carried the information and whose target does not."""

    edge: EdgeRec
    verdict: Assessment


@dataclass(frozen=True, kw_only=True)
class Loss:
    """The op after which no unit held the information any more."""

    error_type: str
    op_id: str | None
    node: NodeRec
    verdict: Assessment | None


@dataclass(kw_only=True)
class StoreState:
    """What construction and the units' lifecycle left at question time."""

    carriers: set[str] = field(default_factory=set)
    ever_captured: bool = False
    holders: dict[str, NodeRec] = field(default_factory=dict)
    """Unit full name → its version that holds the information at question time."""
    holder_verdicts: dict[str, Assessment] = field(default_factory=dict)
    last_loss: Loss | None = None
    extraction_drop: Drop | None = None
    first_consumer: EdgeRec | None = None
    """The first construction edge that reads a seed."""
    last_carry: EdgeRec | None = None
    """The last construction edge that passed the information on (its op had it last: blamed when
    nothing was dropped and no unit took it, e.g. a Mem0 decision of NONE for a new fact)."""
    next_op: str | None = None
    """When no op reads a seed: the first construction op recorded after it (the one that should have)."""
    best_unit_score: float = 0.0
    """Best score of a unit version that descends from the evidence but does not hold it."""


def follow_construction(view: GraphView, probe: PresenceJudge, seeds: list[NodeRec], query: NodeRec,
                        trail: Trail) -> StoreState:
    """Run construction and the lifecycle up to the question (see the module docstring)."""
    state = StoreState()
    edges = [e for e in view.construction_edges if e.created_at <= query.created_at]
    seed_ids = {n.full_node_id for n in seeds}
    state.carriers = set(seed_ids)
    drops: list[Drop] = []
    shown = 0
    _prefetch_lineage(view, probe, edges, seed_ids)
    for edge in edges:
        if edge.source in seed_ids and state.first_consumer is None:
            state.first_consumer = edge
        if edge.source not in state.carriers or edge.target in state.carriers:
            continue
        target = view.nodes[edge.target]
        verdict = probe.assess(node_text(target, flow=True))
        if verdict.present:
            state.carriers.add(edge.target)
            state.last_carry = edge
            if shown < _MAX_CARRY_STEPS:
                trail.add("construction", op_id=edge.op_id, node=target, present=True, score=verdict.score,
                          note=f"{edge.source} -> {edge.target} keeps it")
                shown += 1
        else:
            drops.append(Drop(edge=edge, verdict=verdict))
    if state.first_consumer is None and seeds:
        first_seed = min(seeds, key=lambda n: (n.created_at, n.order))
        later = sorted((op for op in view.ops.values()
                        if not view.is_query_time_op(op.op_id) and op.created_at >= first_seed.created_at
                        and op.created_at <= query.created_at and view.op_edges.get(op.op_id)),
                       key=lambda op: op.created_at)
        state.next_op = later[0].op_id if later else None
    _lifecycle(view, probe, query, state, trail, seed_ids)
    if not state.ever_captured:
        # A memory unit that descends from the evidence and should have taken it in, but did not,
        # is where capture failed (the first such unit: later ones only met leftovers, e.g. a
        # message that also opens the next segment); without one, the last op that had it.
        into_units = [d for d in drops if is_memory_unit(view.nodes[d.edge.target])]
        state.extraction_drop = into_units[0] if into_units else _deepest_drop(view, drops)
    return state


def _prefetch_lineage(view: GraphView, probe: PresenceJudge, edges: list[EdgeRec], seeds: set[str]) -> None:
    """Hand a model judge every text the lineage can reach from the seeds, so it asks in batches
    (a superset of what the walk visits; the judge skips texts that clearly lack the fact)."""
    prefetch = getattr(probe, "prefetch", None)
    if prefetch is None:
        return
    reached = set(seeds)
    targets: list[str] = []
    for edge in edges:
        if edge.source in reached and edge.target not in reached:
            reached.add(edge.target)
            targets.append(edge.target)
    prefetch([node_text(view.nodes[t], flow=True) for t in targets])


_Event = tuple[tuple[str, int, int], str, NodeRec, "str | None"]


def _lifecycle_events(view: GraphView, query: NodeRec, lineage_known: bool) -> list[_Event]:
    """Every unit version and deletion recorded up to the question, in order."""
    asked = query.created_at
    produced_by: dict[str, EdgeRec] = {}
    for target, producers in view.unit_producers.items():
        first = next((e for e in producers if e.created_at <= asked), None)
        if first is not None:
            produced_by[target] = first
    events: list[_Event] = []
    for node in view.memory_units:
        edge = produced_by.get(node.full_node_id)
        if edge is not None:
            events.append(((edge.created_at, 0, edge.order), "version", node, edge.op_id))
        elif not lineage_known and node.created_at <= asked:
            events.append(((node.created_at, -1, node.order), "version", node, None))
    for edge in view.unit_deletions:
        if edge.created_at <= asked:
            events.append(((edge.created_at, 0, edge.order), "delete", view.nodes[edge.source], edge.op_id))
    events.sort(key=lambda ev: ev[0])
    return events


@dataclass(kw_only=True)
class _Store:
    """The units holding the information while the lifecycle is replayed."""

    state: StoreState
    trail: Trail
    live: dict[str, NodeRec] = field(default_factory=dict)
    verdicts: dict[str, Assessment] = field(default_factory=dict)

    def remove(self, node: NodeRec, op_id: str | None, note: str, loss: Loss) -> None:
        """``node``'s unit no longer holds it; the last holder gone is the recorded loss."""
        del self.live[node.full_name]
        self.trail.add("lifecycle", op_id=op_id, node=node, present=False, score=loss.verdict.score if loss.verdict else None,
                       note=note + ("" if self.live else "; no unit holds it any more"))
        if not self.live:
            self.state.last_loss = loss

    def version(self, node: NodeRec, op_id: str | None, verdict: Assessment | None) -> None:
        """A new version of ``node``'s unit, judged (None: not derived from the evidence)."""
        name = node.full_name
        if verdict is not None and verdict.present:
            if name not in self.live:
                self.trail.add("lifecycle", op_id=op_id, node=node, present=True, score=verdict.score,
                               note="memory unit holds it" + (" again" if self.state.ever_captured else ""))
            self.live[name] = node
            self.verdicts[name] = verdict
            self.state.ever_captured = True
            return
        if verdict is not None:
            self.state.best_unit_score = max(self.state.best_unit_score, verdict.score)
        if name in self.live:
            why = verdict.why if verdict is not None else "not derived from the evidence"
            self.remove(node, op_id, f"new version of {name} lost it ({why})",
                        Loss(error_type="UpdateError", op_id=op_id, node=node, verdict=verdict))


def _lifecycle(view: GraphView, probe: PresenceJudge, query: NodeRec, state: StoreState, trail: Trail,
               seeds: set[str]) -> None:
    # Lineage decides whenever the graph records a path (of any content) from the evidence to
    # some memory unit; a graph without such paths gets units judged by their content alone.
    lineage_known = any(seed in view.memory_bound for seed in seeds)
    events = _lifecycle_events(view, query, lineage_known)
    prefetch = getattr(probe, "prefetch", None)
    if prefetch is not None:  # a model judge asks about the lifecycle's unit versions in batches
        prefetch([node_text(node) for _, kind, node, _ in events
                  if kind == "version" and (node.full_node_id in state.carriers or not lineage_known)])
    store = _Store(state=state, trail=trail)
    for _, kind, node, op_id in events:
        name = node.full_name
        if kind == "delete":
            if name in store.live:
                store.remove(node, op_id, f"{name} deleted",
                             Loss(error_type="DeletionError", op_id=op_id, node=node, verdict=None))
        elif name in store.live and _is_tombstone(node):
            store.remove(node, op_id, f"{name} emptied by a deletion",
                         Loss(error_type="DeletionError", op_id=op_id, node=node, verdict=None))
        else:
            descends = node.full_node_id in state.carriers or not lineage_known
            store.version(node, op_id, probe.assess(node_text(node)) if descends else None)
    state.holders = store.live
    state.holder_verdicts = {name: store.verdicts[name] for name in store.live}


_TOMBSTONES = frozenset({"", "deleted", "[deleted]", "<deleted>", "none", "null"})


def _is_tombstone(node: NodeRec) -> bool:
    """A unit version that marks its unit deleted (empty content or a deletion marker)."""
    return " ".join(node_text(node).split()).lower().strip("\"'") in _TOMBSTONES


def _deepest_drop(view: GraphView, drops: list[Drop]) -> Drop | None:
    """The drop on the way to memory whose carrying source was created last (ties: earliest edge)."""
    bound = [d for d in drops if d.edge.target in view.memory_bound] or drops
    best: Drop | None = None
    best_key: tuple[str, int] | None = None
    for drop in bound:
        source = view.nodes[drop.edge.source]
        key = (source.created_at, source.order)
        if best_key is None or key > best_key:
            best, best_key = drop, key
    return best
