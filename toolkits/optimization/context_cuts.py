"""A context cut at answering time becomes a task on the answering budget.

When a bundle sets ``answer_context_budget``, the evaluation runner traces the question-answering
op as memories → uncut context, then uncut context + ``parameter:answer_context_budget`` → the
context the model reads (the cut context node's metadata says whether text was dropped). An
attribution that blames that op (evidence_flow: the information is in the uncut context and not
in the cut one, a ``ResponseError`` at the answering op) is grouped onto the QA prompt, the op's
first consumed target. That op also consumes the budget, and when the cut dropped text the
budget is as direct a fix as the prompt, and a cheaper one to test: :func:`route_context_cuts`
also gives the attribution to the budget target, so the prompt loop searches the budget with
Optuna (:class:`~toolkits.optimization.param_tasks.PipelineParameterOptimizer`) in the same
round as the prompt update. The prompt keeps the attribution: from the record alone it cannot be
told whether the cut or the answer decided, and the search keeps the budget on a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkits.optimization.grouping import AttributionGroups
from toolkits.optimization.parameters import is_answer_parameter
from toolkits.optimization.records import Attribution
from toolkits.optimization.targets import Target

__all__ = ["op_cut_its_context", "route_context_cuts"]


def op_cut_its_context(graph: Any, op_id: str) -> bool:
    """Whether operation ``op_id`` produced a context whose budget cut dropped text."""
    if not op_id:
        return False
    sub = graph.filter_by_operation(op_id)
    produced = {e.target_full_node_id for e in sub.edges}
    return any(node.full_node_id in produced and node.class_name == "context" and (node.metadata or {}).get("cut")
               for node in sub.nodes)


def route_context_cuts(groups: AttributionGroups, attributions: Sequence[Any], graph: Any,
                       targets: Sequence[Target]) -> list[dict[str, Any]]:
    """Add the attributions at an op that cut its context to the answering-budget target (module docstring).

    Args:
        groups: :func:`~toolkits.optimization.grouping.group_attributions`'s result (updated in place).
        attributions: The attributions it grouped, in the same order.
        graph: The traced graph.
        targets: The loop's targets, in priority order.

    Returns:
        ``[{"index", "op_id", "field"}]``: one record per attribution added to a budget target.
    """
    budgets = {t.field for t in targets if is_answer_parameter(t)} & set(groups.field_node_ids)
    routed: list[dict[str, Any]] = []
    cut_ops: dict[str, bool] = {}
    for assignment in groups.assignments:
        if assignment.field is None or assignment.field in budgets:
            continue
        fields = [f for f in assignment.candidates if f in budgets]
        if not fields:
            continue
        attribution = Attribution.coerce(attributions[assignment.index])
        op_id = attribution.op_id.strip()
        if op_id not in cut_ops:
            cut_ops[op_id] = op_cut_its_context(graph, op_id)
        if cut_ops[op_id]:
            groups.by_field.setdefault(fields[0], []).append(attribution)
            routed.append({"index": assignment.index, "op_id": op_id, "field": fields[0]})
    if routed:
        order = {t.field: i for i, t in enumerate(targets)}
        groups.by_field = dict(sorted(groups.by_field.items(), key=lambda kv: order.get(kv[0], len(order))))
    return routed
