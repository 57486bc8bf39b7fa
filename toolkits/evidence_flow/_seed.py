"""Seeding the LLM strategies with an ``evidence_flow`` result (a frontier and a hint)."""

from __future__ import annotations

from typing import Any

__all__ = ["evidence_flow_seed"]


def evidence_flow_seed(result: dict[str, Any], *, max_nodes: int = 8) -> dict[str, Any]:
    """Turn an ``attribute_case_evidence_flow`` result into a seed for an LLM attributor.

    Args:
        result: the attributor's result dict.
        max_nodes: cap on the frontier size.

    Returns:
        ``{"frontier": [full node ids], "hint": str}``: the frontier lists the nodes of the
        trail's last steps (where the information was last seen and first missed), newest
        last; the hint states the suspected op and type as something to *verify*, not a
        verdict. For ``evidence_absent`` the frontier is empty and the hint says so. When the
        starting message itself was uncertain (``evidence.seed_uncertain``), the hint says why, so
        that the agent checks it before building on it.
    """
    trail = result.get("trail") or []
    frontier: list[str] = []
    for step in reversed(trail):
        node_id = step.get("node_id")
        if node_id and node_id not in frontier:
            frontier.append(node_id)
        if len(frontier) >= max_nodes:
            break
    frontier.reverse()
    if result.get("status") == "evidence_absent":
        hint = ("A deterministic evidence-flow check found no message in the conversation that "
                "carries the golden answer; check whether the case is a memory error at all.")
        return {"frontier": [], "hint": hint}
    op_id, error_type = result.get("op_id"), result.get("error_type")
    guess = result.get("best_guess") or {}
    if error_type is None and guess:
        op_id, error_type = guess.get("op_id"), guess.get("error_type")
        lead = "A deterministic evidence-flow check, with low confidence, leans towards"
    else:
        lead = "A deterministic evidence-flow check suggests"
    hint = (f"{lead} {error_type} at op {op_id}. "
            f"Its evidence: {result.get('reason', '')} Verify this by inspecting the op and the "
            "ops before it; word matching can miss paraphrases, so do not accept it unchecked.")
    evidence = result.get("evidence") or {}
    if evidence.get("seed_uncertain"):
        hint += (f" The message it started from is itself uncertain ({evidence.get('seed_uncertain_because')}): "
                 "first check that it is the message that told the answer.")
    return {"frontier": frontier, "hint": hint}
