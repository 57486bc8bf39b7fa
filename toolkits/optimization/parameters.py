"""Parameter targets: the layers' tunable parameters in the optimization target registry.

Every :class:`membase.layers.parameters.TunableParameter` becomes a
:class:`~toolkits.optimization.targets.Target` of kind ``parameter``:

* ``field`` = the parameter's path, which is also its :class:`MemoryConfigBundle` key
  (``max_tokens``, ``retrieval_config.rrf_k``; ``top_k`` is the bundle's own ``top_k``);
* ``variable`` = the full name of its traced node (``parameter:max_tokens``), so
  :func:`~toolkits.optimization.grouping.group_attributions` finds it in an op subgraph;
* ``optimizer`` = the search for its kind (:mod:`toolkits.optimization.search`): Bayesian
  optimization for bounded numbers, categorical search for choices;
* ``metadata`` = kind, bounds or choices (the node metadata).

The answering step's ``answer_context_budget`` (:data:`membase.layers.parameters.ANSWER_PARAMETERS`,
traced by the evaluation runner when a bundle sets it) is a target too, for the prompt loop's
parameter tasks; the parameter loop (:func:`layer_parameter_targets`) leaves it out.

:func:`parameter_registry` returns a registry holding the built-in prompt targets followed by
these, so an operation that holds both a prompt and parameters still groups onto the prompt
first, while :func:`attributed_parameters` reads every parameter candidate of every attributed
operation: only parameters in the subgraph of an attributed operation are searched.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from membase.layers.parameters import ANSWER_PARAMETERS, TUNABLE_PARAMETERS, TunableParameter
from toolkits.optimization.grouping import AttributionGroups
from toolkits.optimization.targets import TARGETS, Target, TargetRegistry

__all__ = [
    "attributed_parameters",
    "is_answer_parameter",
    "unset_answer_parameters",
    "parameter_registry",
    "parameter_spec",
    "parameter_targets",
    "register_parameter_targets",
]


def parameter_targets(layer_type: str | None = None) -> list[Target]:
    """One target per tunable parameter (all layers, or only ``layer_type``'s), in declaration order."""
    from toolkits.optimization.search import optimizer_name_for_kind

    layers_of: dict[str, list[str]] = {}
    specs: dict[str, TunableParameter] = {}
    for layer, params in _declared():
        for spec in params:
            specs.setdefault(spec.name, spec)
            layers_of.setdefault(spec.name, []).append(layer)
    out = []
    for name, spec in specs.items():
        if layer_type is not None and layer_type not in layers_of[name]:
            continue
        out.append(Target(
            field=name,
            variable=spec.full_name,
            kind="parameter",
            optimizer=optimizer_name_for_kind(spec.kind),
            layers=tuple(layers_of[name]),
            description=spec.comment,
            contract=_bounds_contract(spec),
            metadata={**spec.metadata(",".join(layers_of[name]))},
        ))
    return out


def _declared() -> list[tuple[str, tuple[TunableParameter, ...]]]:
    """The layers' parameters, then the answering step's (:data:`ANSWER_PARAMETERS`)."""
    return [*TUNABLE_PARAMETERS.items(), *ANSWER_PARAMETERS.items()]


def is_answer_parameter(target: Target) -> bool:
    """Whether ``target`` is a setting of the answering step (``answer_context_budget``)."""
    return target.kind == "parameter" and any(target.variable == p.full_name
                                              for params in ANSWER_PARAMETERS.values() for p in params)


def unset_answer_parameters(targets: Iterable[Target], bundle: Any) -> list[str]:
    """The answering-step targets among ``targets`` that ``bundle`` leaves unset, in order.

    Unset, ``answer_context_budget`` means "no cut": nothing is cut or traced, so no attribution
    can reach it, and a value an optimizer proposed would start cutting every context. Neither
    optimizer takes such a target (``--targets all`` leaves it out; naming it is an error)."""
    return [t.field for t in targets if is_answer_parameter(t) and bundle.get(t.field) is None]


def _bounds_contract(spec: TunableParameter) -> Any:
    def contract(value: Any) -> list[str]:
        if spec.contains(value):
            return []
        allowed = f"one of {list(spec.choices)}" if spec.kind == "categorical" else f"{spec.kind} in [{spec.low}, {spec.high}]"
        return [f"{spec.name} = {value!r} is outside the search space ({allowed})"]

    return contract


def register_parameter_targets(registry: TargetRegistry) -> list[Target]:
    """Add the parameter targets to ``registry`` (those already there are kept); returns them."""
    added = []
    for target in parameter_targets():
        if target.field not in registry:
            registry.register(target)
        added.append(registry.get(target.field))
    return added


def parameter_registry(base: Iterable[Target] | None = None) -> TargetRegistry:
    """A new registry: ``base`` (default: the built-in :data:`TARGETS`) then every parameter target."""
    registry = TargetRegistry(list(TARGETS if base is None else base))
    register_parameter_targets(registry)
    return registry


def parameter_spec(target: Target) -> TunableParameter:
    """The :class:`TunableParameter` behind a parameter target.

    Raises:
        ValueError: ``target`` is not a parameter target.
    """
    if target.kind == "parameter":
        for _layer, params in _declared():
            for spec in params:
                if spec.full_name == target.variable:
                    return spec
    raise ValueError(f"target {target.field!r} is not a parameter target of a memory layer")


def attributed_parameters(
    groups: Iterable[AttributionGroups], registry: TargetRegistry, layer_type: str
) -> dict[str, int]:
    """Parameter fields found in the subgraphs of attributed operations -> number of attributions.

    Every parameter candidate of an assignment counts (an operation shaped by top_k and rrf_k
    implicates both), whichever target the attribution was grouped onto, and so does every
    parameter found upstream of the operation (``Assignment.upstream``, when grouping looked). Ordered by count, then
    registration order.
    """
    parameters = {t.field for t in registry.for_layer(layer_type, kinds=("parameter",))}
    counts: dict[str, int] = {}
    for group in groups:
        for assignment in group.assignments:
            for name in (*assignment.candidates, *assignment.upstream):
                if name in parameters:
                    counts[name] = counts.get(name, 0) + 1
    order = {t.field: i for i, t in enumerate(registry)}
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], order.get(kv[0], 0))))


def layer_parameter_targets(registry: TargetRegistry, layer_type: str, fields: Sequence[str] | None = None) -> list[Target]:
    """The parameter targets of ``layer_type`` (only ``fields`` when given), in registration order.

    The answering step's settings are left out: the parameter loop scores the context at its own
    fixed budget, so a budget there would be a dimension that changes nothing."""
    targets = [t for t in registry.for_layer(layer_type, kinds=("parameter",)) if not is_answer_parameter(t)]
    return targets if fields is None else [t for t in targets if t.field in set(fields)]
