"""How attribution guides the parameter search: rank the parameters it reached, search them in stages.

Why the guided search used to equal the unguided one: the upstream walk
(:func:`~toolkits.optimization.grouping.upstream_targets`) reaches, from a retrieval miss, the
chunking settings that cut the retrieved units. On NaiveRAG that is every parameter of the
layer, and the round searched them all in one flat study, so guidance only split the unguided
search over two rounds. The walk says *where else* a fix may sit; it says nothing about *where
to look first*. This module turns the attribution into an order:

* :func:`rank_parameters`: the attributed operation's **own** parameters (those in its subgraph,
  :attr:`Assignment.candidates`) come before the parameters found **upstream**
  (:attr:`Assignment.upstream`), which come nearest first. Within each group more attributions
  rank higher. The operation named by the attribution is where the evidence was lost; its own
  settings are the most direct fix, the upstream ones a guess about the cause.
* :func:`plan_stages`: one search stage per group. The own stage (a TPE study) ends early when
  it is **flat** (``patience`` trials in a row that do not beat the stage's best by more than a
  tie) or **exhausted** (every value of a small discrete space was tried); the rest of the
  round's trials go upstream. A stage is never cut short when no stage follows it, so guided
  and unguided searches spend the same number of evaluations.
* The upstream stage is a **pattern search from the best point so far** (:func:`neighbours`):
  one parameter moved at a time, in rank order (:func:`pattern_moves`; a null's bounds come after
  the other parameters' moves), a move kept when it gains more than a tie, the steps halved
  after a pass without a gain, down to the parameter's granularity (:func:`has_finer_moves`)
  before the stage counts as exhausted. Each upstream trial is a rebuild; with a handful of
  them a blind sample of the whole box rarely lands near the incumbent's good region, while a
  move from the incumbent keeps what the own stage already found.

Cost is part of the reason for that order: a parameter of scope ``search`` (``top_k``) is read
off a memory that is already built (:class:`~toolkits.optimization.objective.ContextRecallObjective`
keeps one hit table per construction config), a ``layer_config`` parameter needs a new build.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "OWN_STAGE",
    "UPSTREAM_STAGE",
    "RankedParameter",
    "SearchStage",
    "has_finer_moves",
    "is_flat",
    "neighbours",
    "pattern_moves",
    "plan_stages",
    "rank_parameters",
    "space_size",
]

OWN_STAGE = "own"
UPSTREAM_STAGE = "upstream"


@dataclass(frozen=True, kw_only=True)
class RankedParameter:
    """A parameter reached by the attributions, with the evidence for it."""

    name: str
    own: int
    """Attributions whose operation's own subgraph holds the parameter."""
    upstream: int
    """Attributions that reach it only upstream of their operation."""
    distance: int
    """0 when some attributed operation holds it, else its best position in the upstream lists (1 = nearest)."""

    @property
    def stage(self) -> str:
        """:data:`OWN_STAGE` or :data:`UPSTREAM_STAGE`."""
        return OWN_STAGE if self.own else UPSTREAM_STAGE


@dataclass(frozen=True, kw_only=True)
class SearchStage:
    """A group of parameters searched together, the others held at the best point so far."""

    name: str
    parameters: tuple[str, ...]
    stop_when_flat: bool
    """End the stage early when flat or exhausted (only when a later stage can use the trials)."""
    method: str = "tpe"
    """``tpe`` (an Optuna study) or ``pattern`` (moves from the best point, :func:`neighbours`)."""


def rank_parameters(groups: Iterable[Any], parameters: Sequence[str]) -> list[RankedParameter]:
    """Rank the ``parameters`` (a layer's parameter fields, in registration order) reached by the attributions.

    Args:
        groups: :class:`~toolkits.optimization.grouping.AttributionGroups` (their ``assignments``).
        parameters: the fields that count as parameters; the order breaks ties.

    Returns:
        Own parameters first (more attributions first), then upstream ones (nearest first, then
        more attributions); parameters no attribution reached are left out.
    """
    order = {name: i for i, name in enumerate(parameters)}
    own: dict[str, int] = {}
    upstream: dict[str, int] = {}
    distance: dict[str, int] = {}
    for group in groups:
        for assignment in group.assignments:
            for name in assignment.candidates:
                if name in order:
                    own[name] = own.get(name, 0) + 1
            for position, name in enumerate(assignment.upstream, start=1):
                if name in order:
                    upstream[name] = upstream.get(name, 0) + 1
                    distance[name] = min(distance.get(name, position), position)
    ranked = [RankedParameter(name=name, own=own.get(name, 0), upstream=upstream.get(name, 0),
                              distance=0 if name in own else distance[name])
              for name in {*own, *upstream}]
    return sorted(ranked, key=lambda p: (p.distance > 0, p.distance, -(p.own or p.upstream), order[p.name]))


def plan_stages(ranked: Sequence[RankedParameter], *, skip: Iterable[str] = ()) -> list[SearchStage]:
    """The stages of a guided round: own parameters, then upstream ones.

    Args:
        ranked: :func:`rank_parameters`'s output.
        skip: own parameters already found flat (e.g. by the previous round at the same
            construction): left out of the own stage, so their trials go upstream at once.
    """
    skipped = set(skip)
    own = tuple(p.name for p in ranked if p.stage == OWN_STAGE and p.name not in skipped)
    upstream = tuple(p.name for p in ranked if p.stage == UPSTREAM_STAGE)
    stages = []
    if own:
        stages.append(SearchStage(name=OWN_STAGE, parameters=own, stop_when_flat=bool(upstream)))
    if upstream:
        stages.append(SearchStage(name=UPSTREAM_STAGE, parameters=upstream, stop_when_flat=False, method="pattern"))
    return stages


def space_size(specs: Mapping[str, Any]) -> int | None:
    """Distinct points of a discrete search space (None when a parameter is a float)."""
    size = 1
    for spec in specs.values():
        if spec.kind == "categorical":
            size *= len(spec.choices)
        elif spec.kind == "int":
            size *= int(spec.high) - int(spec.low) + 1
        else:
            return None
    return size


def is_flat(values: Sequence[float | None], start: float, *, patience: int) -> bool:
    """Whether the last ``patience`` trial values (None: a failed trial) all failed to beat the best before them.

    ``start`` is the score the stage started from (the incumbent). A gain must be more than a tie
    (:func:`toolkits.optimization.statistics.improves`).
    """
    from toolkits.optimization.statistics import improves

    if patience < 1 or len(values) < patience:
        return False
    best = start
    since = 0
    for value in values:
        if value is not None and improves(best, value):
            best, since = value, 0
        else:
            since += 1
    return since >= patience


def neighbours(spec: Any, current: Any, level: int = 0) -> list[Any]:
    """The values one pattern-search move of ``spec`` tries from ``current``, in order.

    * categorical: every other choice;
    * a number outside the space (``max_tokens`` null): at ``level`` 0 the middle of the range
      (geometric on a log scale), then the nearest finite values, the two bounds (a null is
      "no limit" or "unset": the search must be able to start at either end, not only in the
      middle, whose steps never land on e.g. 128 of 64 … 2048); at ``level`` > 0 the moves from
      the middle at ``level`` − 1;
    * a number: one step up and one down, clipped to the bounds; the step is a quarter of the
      range (a factor of 4 on a log scale) at ``level`` 0 and halves (square root) per level.

    Ints are rounded; values equal to ``current`` are dropped. :func:`has_finer_moves` says
    when refining further can no longer reach a new value.
    """
    if spec.kind == "categorical":
        return [c for c in spec.choices if c != current]
    low, high = float(spec.low), float(spec.high)
    if not spec.contains(current):
        middle = _number(spec, (low * high) ** 0.5 if spec.log else (low + high) / 2)
        if level > 0:
            return neighbours(spec, middle, level - 1)
        return list(dict.fromkeys([middle, _number(spec, high), _number(spec, low)]))
    if spec.log:
        factor = 4.0 ** (0.5 ** level)
        moves = [float(current) * factor, float(current) / factor]
    else:
        step = (high - low) / 4 * 0.5 ** level
        moves = [float(current) + step, float(current) - step]
    out = []
    for move in moves:
        value = _number(spec, min(max(move, low), high))
        if value != current and value not in out:
            out.append(value)
    return out


def pattern_moves(specs: Mapping[str, Any], point: Mapping[str, Any], level: int = 0) -> list[dict[str, Any]]:
    """The points one pass of the pattern search tries from ``point``, in order.

    ``specs`` maps each parameter to its spec, in rank order; each point moves one parameter and
    keeps the others at ``point``. Every parameter's :func:`neighbours` moves come in rank order,
    except a null number's extra first moves (its two bounds, after the middle): those come
    after every other parameter's moves, so they do not spend a small budget before the
    next-ranked parameter moved once.
    """
    first: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    for name, spec in specs.items():
        moves = neighbours(spec, point[name], level)
        null_start = level == 0 and spec.kind != "categorical" and not spec.contains(point[name])
        head = 1 if null_start else len(moves)
        first.extend({**point, name: value} for value in moves[:head])
        later.extend({**point, name: value} for value in moves[head:])
    return first + later


def has_finer_moves(spec: Any, current: Any, level: int, *, float_levels: int = 3) -> bool:
    """Whether a pattern-search level finer than ``level`` can still move ``spec`` from ``current``.

    The search refines down to the parameter's declared granularity before it stops: an int
    moves while a finer step still rounds to another integer (so every integer of the range is
    reachable, not only the points of the first steps); a float, which declares no granularity,
    refines ``float_levels`` times; a choice has no finer move.
    """
    if spec.kind == "categorical":
        return False
    if spec.kind != "int":
        return level < float_levels
    return bool(neighbours(spec, current, level + 1))


def _number(spec: Any, value: float) -> Any:
    return int(round(value)) if spec.kind == "int" else float(value)
