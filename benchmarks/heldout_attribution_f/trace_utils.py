"""Small wrappers over the public smartcomment API shared by the simulated layers."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from benchmarks.heldout_attribution_f.runtime_env import jdump
from smartcomment import comment_op, comment_variable, current_graph


@dataclass
class Entry:
    """One retrieved memory as the layer hands it to the answering step."""

    trace_id: str
    content: str
    formatted: str | None = None

    @property
    def shown(self) -> str:
        return self.formatted or self.content


def var(value: Any, *, name: str | None = None, class_name: str | None = None, category: str = "variable",
        as_json: bool = False, comment: str | None = None, metadata: dict[str, Any] | None = None,
        variable_name: str | None = None) -> Any:
    """A variable node; ``name`` fixes the identity (otherwise the content hash names it)."""
    return comment_variable(
        value, to_runtime=True, class_name=class_name, category=category, comment=comment, metadata=metadata,
        id_strategy=(lambda _v, _n=name: _n) if name is not None else None,
        encoding_fn=jdump if as_json else None, variable_name=variable_name,
    )


def link(inputs: Iterable[Any], outputs: Iterable[Any], category: str = "operation",
         metadata: dict[str, Any] | None = None) -> Any:
    """Edges from every input to every output inside the active op."""
    return comment_op(inputs=list(inputs), outputs=list(outputs), reuse_op=True, category=category, metadata=metadata)


def op_of(node: Any) -> str:
    """The op that produced ``node`` (its only incoming op)."""
    ops = current_graph().get_operations_by_variable(node.full_node_id)
    return ops[-1].op_id
