"""Finding the faulty operation of a finished run in its graph (the case's ``final_op_id``)."""

from __future__ import annotations

from typing import Any

from toolkits.evidence_flow._graph_view import GraphView, is_delete_marker, is_memory_unit
from toolkits.evidence_flow._text import memory_text

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
    if hasattr(fault, "find_op"):
        found = fault.find_op(view)
        if found is not None:
            return found
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
    corrupted = fault.corrupted_doc
    if corrupted is not None:  # NaiveRAG extraction: the op that cut the corrupted document
        for node in view.nodes.values():
            if node.class_name == "temporary_variable" and node.value == repr(corrupted):
                edges = view.in_edges.get(node.full_node_id, [])
                return edges[0].op_id if edges else None
        return None
    if fault.kind in ("update", "deletion"):
        op_id = _unit_loss_op(view, fault)
        if op_id is not None:
            return op_id
    message_id = fault.fault_message or fault.target.fact_message.id
    node = view.resolve(message_id)
    # The op that consumes the message first: Long-Context's memory update, Mem0's extract_facts.
    return _op_of_edge(view, node.full_node_id, target_unit=False) if node is not None else None


def _unit_loss_op(view: GraphView, fault: Any) -> str | None:
    """The op where a unit holding the fact got a version without it, or was deleted."""
    carries = fault.target.carries
    for edge in view.edges:
        source, target = view.nodes.get(edge.source), view.nodes.get(edge.target)
        if source is None or target is None or not is_memory_unit(source) or view.is_query_time_op(edge.op_id):
            continue
        if not carries(memory_text(source.value)):
            continue
        if fault.kind == "deletion" and is_delete_marker(target):
            return edge.op_id
        if (fault.kind == "update" and is_memory_unit(target) and target.full_name == source.full_name
                and not carries(memory_text(target.value))):
            return edge.op_id
    return None
