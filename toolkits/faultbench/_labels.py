"""Finding the faulty operation of a finished run in its graph (the case's ``final_op_id``)."""

from __future__ import annotations

from typing import Any

from toolkits.evidence_flow._graph_view import GraphView, is_memory_unit

__all__ = ["find_label_op"]


def _op_of_edge(view: GraphView, source: str, *, target_unit: bool = True) -> str | None:
    for edge in view.out_edges.get(source, []):
        target = view.nodes.get(edge.target)
        if target is not None and (not target_unit or is_memory_unit(target)):
            return edge.op_id
    return None


def find_label_op(fault: Any, export: dict[str, Any], record: Any) -> str | None:
    """Return the op id where ``fault`` acted in the exported graph (None if not found).

    Args:
        fault: the fired :class:`~toolkits.faultbench._faults.Fault`.
        export: the run's exported graph.
        record: the target question's ``QARecord``.
    """
    if fault.op_id:
        return fault.op_id
    view = GraphView.build(export)
    if fault.kind == "response":
        return record.qa_op_id
    if fault.kind == "retrieval":
        query = view.nodes.get(record.query_id)
        for edge in view.out_edges.get(record.query_id, []):
            if view.op_category(edge.op_id) == "retrieval":
                return edge.op_id
        later = sorted((op for op in view.ops.values()
                        if op.category == "retrieval" and query is not None and op.created_at >= query.created_at),
                       key=lambda op: op.created_at)
        return later[0].op_id if later else None
    corrupted = getattr(fault, "corrupted_doc", None)
    if corrupted is not None:  # NaiveRAG extraction: the op that cut the corrupted document
        for node in view.nodes.values():
            if node.class_name == "temporary_variable" and node.value == repr(corrupted):
                edges = view.in_edges.get(node.full_node_id, [])
                return edges[0].op_id if edges else None
        return None
    message_id = getattr(fault, "fault_message", None) or fault.target.fact_message.id
    node = view.resolve(message_id)
    return _op_of_edge(view, node.full_node_id) if node is not None else None
