"""Tracing of mem0ai 2.x search (`Memory.search(..., explain=True)`) from the outside.

`search_patch_specs` wraps, for the duration of one search, `memory.vector_store.search` (the
semantic candidate pool, over-fetched by mem0), `memory.vector_store.keyword_search` (BM25, None
when fastembed is missing); only instance attributes are patched, so concurrent layers never see
each other's wrappers. `record_search` then writes, all with op category `retrieval`:

| op | edges |
| --- | --- |
| `memory_system.semantic_search` | query -> `semantic_candidates` (id, text, semantic score of each) |
| `memory_system.keyword_search` | query -> `keyword_candidates` (raw BM25 hits; only while BM25 is active) |
| `memory_system.score_fusion` | candidates -> `fused_retrieval_results` -> each returned unit (latest version) |

The fusion op's metadata holds the threshold, top_k, whether BM25 and entity boosts took part
(read from the score details' divisor; None when nothing was returned),
every returned unit's `score_details` (mem0's `explain=True`) and every dropped candidate with
its reason: `below_threshold` (semantic score under the threshold, which gates before fusion),
`below_top_k` (ranked out after fusion) or `no_data`. A unit that holds the answer and is dropped
here is therefore lost *at score fusion* (a `RetrievalError` there), one that is not even a
candidate at the semantic search.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from membase.layers.mem0v3_tracing import attr_patch_specs, list_variable, never_raise, unit_ref
from membase.layers.tracing import tracing_active
from membase.utils.patching import PatchSpec

__all__ = ["Mem0v3SearchTracer"]


@dataclass(kw_only=True)
class _SearchState:
    """Per `memory.search` call."""

    semantic: list[dict[str, Any]] = field(default_factory=list)
    keyword_active: bool = False
    keyword: list[dict[str, Any]] = field(default_factory=list)
    internal_limit: int | None = None


_SEARCH: contextvars.ContextVar[_SearchState | None] = contextvars.ContextVar("mem0v3_search_state", default=None)


class Mem0v3SearchTracer:
    """Builds the patch specs that trace `search` on one mem0ai 2.x `Memory`, and records it.

    Args:
        memory: the mem0 `Memory` instance.
        embedding_model: embedder name recorded in op metadata.
    """

    def __init__(self, memory: Any, *, embedding_model: str) -> None:
        self.memory = memory
        self.embedding_model = embedding_model

    def search_patch_specs(self) -> list[PatchSpec]:
        """The specs to install around `memory.search` calls (candidates, BM25, score fusion)."""
        m = self.memory
        return attr_patch_specs(
            [
                ("mem0v3.search.semantic", m.vector_store, "search", self._wrap_semantic_search),
                ("mem0v3.search.keyword", m.vector_store, "keyword_search", self._wrap_keyword_search),
            ]
        )

    def _search_state(self) -> _SearchState:
        state = _SEARCH.get()
        if state is None:
            state = _SearchState()
            _SEARCH.set(state)
        return state

    def _wrap_semantic_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def search(*args: Any, **kwargs: Any) -> Any:
            hits = original(*args, **kwargs)
            state = self._search_state()
            state.internal_limit = kwargs.get("top_k")
            state.semantic = [
                {"id": str(h.id), "score": getattr(h, "score", None), "payload": dict(getattr(h, "payload", None) or {})}
                for h in hits or []
            ]
            return hits

        return search

    def _wrap_keyword_search(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def keyword_search(*args: Any, **kwargs: Any) -> Any:
            hits = original(*args, **kwargs)
            state = self._search_state()
            state.keyword_active = hits is not None
            state.keyword = [{"id": str(h.id), "bm25_raw_score": getattr(h, "score", None)} for h in hits or []]
            return hits

        return keyword_search

    def record_search(self, query_rv: Any, results: list[dict[str, Any]], top_k: int, threshold: float) -> None:
        """Record the search ops of one query (call after `memory.search` under `search_patch_specs`)."""
        state = _SEARCH.get() or _SearchState()
        _SEARCH.set(None)
        if query_rv is None or not tracing_active():
            return
        with never_raise("search"):
            self._record_search(state, query_rv, results, top_k, threshold)

    def _record_search(
        self, state: _SearchState, query_rv: Any, results: list[dict[str, Any]], top_k: int, threshold: float
    ) -> None:
        from smartcomment import comment_link, comment_op_scope

        candidates = [
            {"id": c["id"], "memory": c["payload"].get("data", ""), "semantic_score": c["score"]} for c in state.semantic
        ]
        with comment_op_scope(
            op_name="memory_system.semantic_search",
            category="retrieval",
            comment="The query's embedding finds the nearest memories (the candidate pool of score fusion).",
            metadata={"embedding_model": self.embedding_model, "candidate_limit": state.internal_limit},
        ):
            semantic_rv = list_variable(candidates, "semantic_candidates", "retrieval_results", "The semantic candidates.")
            comment_link(source=query_rv, target=semantic_rv, comment=f"{len(candidates)} semantic candidates.")
        inputs = [semantic_rv]
        if state.keyword_active:
            with comment_op_scope(
                op_name="memory_system.keyword_search",
                category="retrieval",
                comment="BM25 over the memories' lemmatized text scores keyword matches.",
            ):
                keyword_rv = list_variable(state.keyword, "keyword_candidates", "retrieval_results", "The BM25 hits.")
                comment_link(source=query_rv, target=keyword_rv, comment=f"{len(state.keyword)} keyword matches.")
            inputs.append(keyword_rv)
        returned = {str(hit["id"]) for hit in results}
        dropped = [_drop_reason(c, threshold) for c in candidates if c["id"] not in returned]
        with comment_op_scope(
            op_name="memory_system.score_fusion",
            category="retrieval",
            comment=f"Candidates under the semantic threshold {threshold} are dropped; the rest are ranked by "
            f"semantic + BM25 + entity scores and the top-{top_k} returned.",
            metadata={
                "threshold": threshold,
                "top_k": top_k,
                **_signals(results),
                "scores": {str(h["id"]): h.get("score_details") for h in results},
                "dropped": dropped,
            },
        ):
            fused = [{"id": str(h["id"]), "memory": h.get("memory", ""), "score": h.get("score")} for h in results]
            fused_rv = list_variable(fused, "fused_retrieval_results", "retrieval_results", "The returned memories.")
            for source in inputs:
                comment_link(
                    source=source,
                    target=fused_rv,
                    comment=f"{len(fused)} of {len(candidates)} candidates pass the threshold and the top-{top_k} cut.",
                )
            for hit in results:
                comment_link(
                    source=fused_rv,
                    target=unit_ref(str(hit["id"]), hit.get("memory", ""), hit.get("metadata")),
                    comment=f"Memory '{hit['id']}' is retrieved (score {hit.get('score')}).",
                )


def _drop_reason(candidate: dict[str, Any], threshold: float) -> dict[str, Any]:
    score = candidate.get("semantic_score") or 0.0
    if not candidate.get("memory"):
        reason = "no_data"
    elif score < threshold:
        reason = "below_threshold"
    else:
        reason = "below_top_k"
    return {"id": candidate["id"], "memory": candidate.get("memory"), "semantic_score": score, "reason": reason}


def _signals(results: list[dict[str, Any]]) -> dict[str, bool | None]:
    """Which scores the fusion added, read from mem0's divisor (semantic 1.0, + BM25 1.0, + entity
    boost 0.5); None when nothing was returned to read it from."""
    details = next((h["score_details"] for h in results if h.get("score_details")), None)
    if details is None:
        return {"bm25_active": None, "entity_boost_active": None}
    divisor = float(details.get("max_possible_score") or 1.0)
    bm25 = divisor >= 2.0
    return {"bm25_active": bm25, "entity_boost_active": divisor - (2.0 if bm25 else 1.0) > 0.0}
