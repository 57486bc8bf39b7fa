"""Recall@k of pseudo-evidence retrieval against annotated source evidence (spec §10)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toolkits.metrics import recall_by_group
from toolkits.retrieval import GraphRetrieverPool, starting_evidence

__all__ = ["evaluate_retrieval", "format_recall_lines"]


def evaluate_retrieval(
    graphs: Sequence[Any],
    cases: Sequence[Any],
    pool: GraphRetrieverPool,
    *,
    k: int,
    query_type: str,
    group_of: Any = None,
) -> dict[str, Any]:
    """Retrieve ``k`` messages per case as the attribution runner does
    (:func:`toolkits.retrieval.starting_evidence`) and score them against ``source_evidence_full_node_ids``.

    Args:
        graphs: One graph per case (the pool builds one retriever per distinct graph).
        cases: ``FailedQueryCase``-like objects.
        pool: Retriever pool (its retrieval type is used).
        k: Documents retrieved per case.
        query_type: See :func:`toolkits.retrieval.build_retrieval_query`.
        group_of: ``fn(case) -> str`` group key; default ``case.metadata["dataset_source"]``.

    Returns:
        ``{"by_group": recall_by_group(...), "retrieved": [[ids], ...]}``.
    """
    if len(graphs) != len(cases):
        raise ValueError(f"{len(graphs)} graphs for {len(cases)} cases")
    groups: list[str] = []
    refs: list[list[str]] = []
    got: list[list[str]] = []
    for graph, case in zip(graphs, cases, strict=True):
        got.append(starting_evidence(pool, graph, case, k, query_type))
        refs.append(list(case.source_evidence_full_node_ids))
        if group_of is not None:
            groups.append(str(group_of(case)))
        else:
            groups.append(str((getattr(case, "metadata", None) or {}).get("dataset_source") or "unknown"))
    return {"by_group": recall_by_group(groups, refs, got), "retrieved": got}


def format_recall_lines(by_group: dict[str, dict[str, Any]], k: int) -> list[str]:
    """Reference-format lines: ``recall@<k> (<source>): micro=<.4f> macro=<.4f> (<n> cases)``."""
    lines = []
    for group, row in by_group.items():
        if row["micro"] is None:
            lines.append(f"recall@{k} ({group}): no cases with source evidence ({row['cases']} cases)")
        else:
            lines.append(f"recall@{k} ({group}): micro={row['micro']:.4f} macro={row['macro']:.4f} ({row['cases']} cases)")
    return lines
