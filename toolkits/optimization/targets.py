"""The registry of optimization targets: what the loop may change, and who changes it.

A :class:`Target` ties four things together:

* ``field`` — where the value lives in a :class:`~toolkits.optimization.bundle.MemoryConfigBundle`
  (a dotted path: ``question_answering_prompt``, ``custom_fact_extraction_prompt``,
  ``prompt_overrides.boundary-detection-prompt-template``, ``retrieval_config.bm25_top_n`` …);
* ``variable`` — the name of the graph variable the traced run records that value as;
* ``kind`` — ``"prompt"`` (text) or ``"parameter"`` (a bounded number or a choice);
* ``optimizer`` — the name of the optimizer that proposes new values (``textual_gradient`` for
  prompts; parameter optimizers register their own names).

Attributions reach a target through its graph variable
(:func:`toolkits.optimization.grouping.group_attributions`); the optimizer named by the target
proposes a value; the target's ``contract`` decides whether the program can still use it; the
bundle stores it under ``field``.

Built-in prompt targets (all registered in :data:`TARGETS`):

=====================  =============================================  ================================
layer                  bundle field                                   graph variable
=====================  =============================================  ================================
every layer            ``question_answering_prompt``                  ``question-answering-prompt``
Mem0                   ``custom_fact_extraction_prompt``              ``fact-extraction-system-prompt``
Mem0                   ``custom_update_memory_prompt``                ``memory-update-decision-prompt``
Mem0v3                 ``custom_instructions``                        ``extraction-custom-instructions``
EverMemOS              ``prompt_overrides.<variable>``                the seven ``*-prompt-template`` s
=====================  =============================================  ================================

Other code adds targets with :func:`register_target` (or its own :class:`TargetRegistry`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from toolkits.optimization.contracts import (
    Contract,
    mem0_fact_extraction_contract,
    mem0_update_decision_contract,
    qa_template_contract,
    template_contract,
)

__all__ = [
    "PROMPT_TARGETS",
    "TARGETS",
    "TEXTUAL_GRADIENT",
    "Target",
    "TargetKind",
    "TargetRegistry",
    "register_target",
]

TargetKind = Literal["prompt", "parameter"]
TEXTUAL_GRADIENT = "textual_gradient"
"""Name of the prompt optimizer (:class:`toolkits.optimization.optimizer.OptimizerRunner`)."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """One optimizable value of a memory system."""

    field: str
    """Dotted path of the value in the bundle (``get``/``update`` key)."""
    variable: str
    """Name of the graph variable that records the value in a traced run."""
    kind: TargetKind = "prompt"
    """``prompt`` (text) or ``parameter`` (number or choice)."""
    optimizer: str = TEXTUAL_GRADIENT
    """Registry name of the optimizer that proposes new values."""
    layers: tuple[str, ...] | None = None
    """Layer types the target exists in; None = every layer."""
    description: str = ""
    """The value's role, shown to the optimizer."""
    contract: Contract | None = None
    """``fn(value) -> problems``; a proposal with problems is rejected (None = anything goes)."""
    metadata: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    """Free-form details (bounds and choices of parameters, …)."""

    def applies_to(self, layer_type: str) -> bool:
        """Whether the target exists in ``layer_type``."""
        return self.layers is None or layer_type in self.layers

    def problems(self, value: Any) -> list[str]:
        """The contract's problems with ``value`` (empty: accepted)."""
        return [] if self.contract is None else list(self.contract(value))


class TargetRegistry:
    """An ordered set of targets, unique by ``field``.

    Registration order is meaningful: when one operation touches several target variables
    equally, :func:`~toolkits.optimization.grouping.group_attributions` picks the earliest
    registered one.
    """

    def __init__(self, targets: Iterable[Target] = ()) -> None:
        self._targets: dict[str, Target] = {}
        for target in targets:
            self.register(target)

    def register(self, target: Target, *, replace: bool = False) -> Target:
        """Add ``target``.

        Raises:
            ValueError: The field is taken (and ``replace`` is False), or the variable name is
                already used by another target of an overlapping set of layers.
        """
        if target.field in self._targets and not replace:
            raise ValueError(f"target field {target.field!r} is already registered: pass replace=True to override it")
        for other in self._targets.values():
            if other.field != target.field and other.variable == target.variable and _overlap(other, target):
                raise ValueError(
                    f"graph variable {target.variable!r} already belongs to target {other.field!r}"
                )
        self._targets[target.field] = target
        return target

    def unregister(self, field_name: str) -> None:
        """Remove the target of ``field_name`` (no error when absent)."""
        self._targets.pop(field_name, None)

    def get(self, field_name: str) -> Target:
        """The target of ``field_name``.

        Raises:
            KeyError: No such target.
        """
        try:
            return self._targets[field_name]
        except KeyError:
            raise KeyError(f"no optimization target {field_name!r}; known: {', '.join(self._targets)}") from None

    def by_variable(self, variable: str, layer_type: str | None = None) -> Target | None:
        """The target recorded as graph variable ``variable`` (in ``layer_type``), or None."""
        for target in self._targets.values():
            if target.variable == variable and (layer_type is None or target.applies_to(layer_type)):
                return target
        return None

    def for_layer(self, layer_type: str, kinds: Iterable[str] | None = None) -> list[Target]:
        """The targets of ``layer_type`` (optionally only some kinds), in registration order."""
        wanted = None if kinds is None else set(kinds)
        return [t for t in self._targets.values() if t.applies_to(layer_type) and (wanted is None or t.kind in wanted)]

    def select(self, layer_type: str, names: Iterable[str]) -> list[Target]:
        """The targets of ``layer_type`` named by field or by graph variable, in registration order.

        Raises:
            KeyError: A name matches no target of the layer.
        """
        names = list(names)
        available = self.for_layer(layer_type)
        unknown = [n for n in names if not any(n in (t.field, t.variable) for t in available)]
        if unknown:
            known = ", ".join(t.field for t in available)
            raise KeyError(f"no {layer_type} target named {', '.join(map(repr, unknown))}; known: {known}")
        return [t for t in available if t.field in names or t.variable in names]

    def __iter__(self) -> Iterator[Target]:
        return iter(list(self._targets.values()))

    def __len__(self) -> int:
        return len(self._targets)

    def __contains__(self, field_name: object) -> bool:
        return field_name in self._targets


def _overlap(a: Target, b: Target) -> bool:
    if a.layers is None or b.layers is None:
        return True
    return bool(set(a.layers) & set(b.layers))


def _evermemos_targets() -> list[Target]:
    from membase.layers.evermemos.prompts import PROMPT_TEMPLATES

    roles = {
        "boundary-detection-prompt-template": "decides whether newly arrived messages close the current episode",
        "episode-extraction-prompt-template": "turns a closed episode (memcell) into a titled narrative memory",
        "event-log-prompt-template": "turns a closed episode into dated atomic facts",
        "foresight-generation-prompt-template": "predicts future plans and changes implied by an episode",
        "sufficiency-check-prompt-template": "judges whether retrieved memories suffice to answer a question",
        "multi-query-generation-prompt-template": "writes extra search queries for the missing information",
        "refined-query-prompt-template": "rewrites the question into one sharper search query",
    }
    return [
        Target(
            field=f"prompt_overrides.{name}",
            variable=template.traced_name,
            layers=("EverMemOS",),
            description=f"EverMemOS prompt template (string.Template) that {roles.get(name, 'drives one stage')}.",
            contract=template_contract(template.default),
        )
        for name, template in PROMPT_TEMPLATES.items()
    ]


def _mem0v3_instructions_contract(value: object) -> list[str]:
    """mem0ai 2.x pastes ``custom_instructions`` as the last ``## `` section of its extraction prompt."""
    if not isinstance(value, str):
        return [f"the value must be text, got {type(value).__name__}"]
    if not value.strip():
        return ["the value is empty"]
    if any(line.lstrip().startswith("#") for line in value.splitlines()):
        return ["no line may start with '#': mem0 reads '## ' and '# ' lines as sections of its own prompt"]
    return []


def builtin_targets() -> list[Target]:
    """The built-in prompt targets (see the module docstring), in priority order."""
    return [
        Target(
            field="custom_fact_extraction_prompt",
            variable="fact-extraction-system-prompt",
            layers=("Mem0",),
            description=(
                "System prompt of Mem0's fact extraction: tells the LLM which facts to extract from each new "
                'message and to reply in JSON as {"facts": [...]}.'
            ),
            contract=mem0_fact_extraction_contract,
        ),
        Target(
            field="custom_update_memory_prompt",
            variable="memory-update-decision-prompt",
            layers=("Mem0",),
            description=(
                "Instructions of Mem0's memory update decision: for each new fact, compare with similar stored "
                "memories and choose ADD, UPDATE, DELETE or NONE (mem0 appends the memories, facts and JSON shape)."
            ),
            contract=mem0_update_decision_contract,
        ),
        Target(
            field="custom_instructions",
            variable="extraction-custom-instructions",
            layers=("Mem0v3",),
            description=(
                "Custom instructions that mem0ai 2.x appends to its additive extraction prompt (under a "
                "'## Custom Instructions' heading): what to extract from each new message and what to skip as "
                "already known; mem0 fixes the system prompt and the JSON reply shape itself."
            ),
            contract=_mem0v3_instructions_contract,
        ),
        *_evermemos_targets(),
        Target(
            field="question_answering_prompt",
            variable="question-answering-prompt",
            description=(
                "string.Template of the question-answering step: $question is the question, $context the "
                "retrieved memories; the LLM's reply is the answer that gets judged."
            ),
            contract=qa_template_contract,
        ),
    ]


TARGETS = TargetRegistry(builtin_targets())
"""The default registry used by the loop."""

PROMPT_TARGETS: dict[str, str] = {
    t.field: t.variable for t in TARGETS.for_layer("Mem0", kinds=("prompt",))
}
"""Mem0's prompt targets, bundle field → graph variable (the reference's ``PROMPT_TARGETS``)."""


def register_target(target: Target, *, replace: bool = False) -> Target:
    """Register ``target`` in the default registry :data:`TARGETS`."""
    return TARGETS.register(target, replace=replace)


def problems_of(targets: Mapping[str, Target], updates: Mapping[str, Any]) -> dict[str, list[str]]:
    """Contract problems of each update (``field -> value``), only for fields that have some."""
    out: dict[str, list[str]] = {}
    for name, value in updates.items():
        problems = targets[name].problems(value) if name in targets else []
        if problems:
            out[name] = problems
    return out

