"""A case's label, by construction: the op recorded while its fault acted.

The pipeline records, for every call it makes on the layer (a message, the flush, a question's
retrieval), the ops that call created, in order. A fault remembers the call in which it acted
and the name of the op that does the faulty work there (e.g. ``memory_system.extract_facts`` of
the fact message's call); the label is that op. A response fault acts in the answering op of its
question. Nothing here reads node values.
"""

from __future__ import annotations

from typing import Any

__all__ = ["answering_op", "label_op"]


def answering_op(export: dict[str, Any], qa_id: str) -> str | None:
    """The ``question-answering`` op that answered question ``qa_id`` in an exported graph."""
    data = export["data"]
    queries = {n["full_node_id"] for n in data["nodes"] if n.get("class_name") == "query" and n.get("name") == qa_id}
    names = {o["op_id"]: o.get("op_name") for o in data["operations"]}
    for edge in data["edges"]:
        if edge["source_full_node_id"] in queries and names.get(edge["op_id"]) == "question-answering":
            return edge["op_id"]
    return None


def label_op(fault: Any, run: Any) -> str | None:
    """The op id where ``fault`` acted in ``run`` (None when it cannot be found)."""
    if fault.spec.error == "response":
        return answering_op(run.export, fault.target.qa.id)
    ops = run.calls.get(fault.fired_call, [])
    for name in fault.op_names:
        for op_id, op_name in ops:
            if op_name == name:
                return op_id
    return None
