"""Retrieval over the hybrid index: plain hybrid (BM25 + dense, RRF) and the agentic two-round path.

The functions return records of every intermediate list and LLM exchange; the layer's tracer turns
a record into graph operations, so retrieval logic and tracing stay separate.

Agentic path (sizes follow the caller's k):
1. round 1: R1 = hybrid(query, k); empty -> [].
2. check set C = R1[:min(sufficiency_check_docs, k)] (R1 reranked first when the reranker is on).
3. the LLM judges whether C answers the query; a reply that does not parse counts as sufficient.
4. sufficient -> R1[:k].
5. otherwise round 2: 2-3 new queries (multi-query) or one refined query from the LLM; each is
   run through hybrid(q, k) and the lists are fused with RRF.
6. merge: R1 plus the round-2 documents not already in R1, at most 2k; dedup by event id.
7. final: rerank the merged pool and keep k (reranker on), else its first k.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from membase.exceptions import FATAL_ERRORS
from membase.layers.evermemos.config import OnlineRetrieverConfig
from membase.layers.evermemos.index import HybridIndex, bm25_tokenize, rrf_fuse
from membase.layers.evermemos.llm import ChatModel, ask
from membase.layers.evermemos.prompts import (
    MULTI_QUERY_PROMPT,
    REFINED_QUERY_PROMPT,
    SUFFICIENCY_CHECK_PROMPT,
)

__all__ = [
    "AgenticRun",
    "HybridRun",
    "agentic_search",
    "format_documents",
    "hybrid_search",
    "overlap_rerank",
    "parse_multi_query_reply",
    "parse_refined_query_reply",
    "parse_sufficiency_reply",
]

logger = logging.getLogger(__name__)

Ranked = list[tuple[dict[str, Any], float]]


@dataclass(kw_only=True)
class HybridRun:
    """One hybrid search: the two candidate lists and their fusion."""

    query: str
    sparse: Ranked
    dense: Ranked
    fused: Ranked


def hybrid_search(index: HybridIndex, query: str, k: int, config: OnlineRetrieverConfig) -> HybridRun:
    """BM25 and dense search (n = max(top_n, k)) fused with RRF, top k. One empty side -> the other's top k."""
    sparse = index.bm25_search(query, max(config.bm25_top_n, k))
    dense = index.embedding_search(query, max(config.emb_top_n, k))
    if sparse and dense:
        fused = rrf_fuse([sparse, dense], config.rrf_k)[:k]
    else:
        fused = (sparse or dense)[:k]
    return HybridRun(query=query, sparse=sparse, dense=dense, fused=fused)


def _rerank_text(doc: dict[str, Any]) -> str:
    log = doc.get("event_log") or {}
    if log.get("atomic_fact"):
        return "\n".join([str(log.get("time", "")), *log["atomic_fact"]])
    return doc.get("episode") or ""


def overlap_rerank(query: str, ranked: Ranked, top_n: int) -> Ranked:
    """Offline reranker: share of the query's terms found in the document (ties keep order)."""
    terms = set(bm25_tokenize(query))
    scored = []
    for doc, _old in ranked:
        text = _rerank_text(doc)
        if not text:
            continue
        doc_terms = set(bm25_tokenize(text))
        scored.append((doc, len(terms & doc_terms) / len(terms) if terms else 0.0))
    scored.sort(key=lambda item: -item[1])
    return scored[:top_n]


def format_documents(ranked: Ranked) -> str:
    """Render documents as `Document i:` blocks with title and content (cut at 500 characters)."""
    blocks = []
    for i, (doc, _score) in enumerate(ranked, start=1):
        content = doc.get("episode") or ""
        if len(content) > 500:
            content = content[:500] + "..."
        blocks.append(f"Document {i}:\n  Title: {doc.get('subject') or ''}\n  Content: {content}")
    return "\n\n".join(blocks)


def parse_sufficiency_reply(text: str) -> dict[str, Any]:
    """Parse the check's JSON (first `{` to last `}`); raises ValueError when `is_sufficient` is missing."""
    start, end = text.find("{"), text.rfind("}")
    if not 0 <= start < end:
        raise ValueError(f"no JSON object in sufficiency reply: {text[:200]!r}")
    data = json.loads(text[start : end + 1])
    if not isinstance(data, dict) or "is_sufficient" not in data:
        raise ValueError("sufficiency reply lacks `is_sufficient`")
    return {
        "is_sufficient": bool(data["is_sufficient"]),
        "reasoning": str(data.get("reasoning", "")),
        "missing_information": [str(x) for x in data.get("missing_information") or []],
        "key_information_found": [str(x) for x in data.get("key_information_found") or []],
    }


def parse_multi_query_reply(text: str, query: str) -> list[str]:
    """Keep up to 3 queries of 5-300 characters that differ from `query`; none usable -> [query]."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if 0 <= start < end else {}
    except json.JSONDecodeError:
        data = {}
    seen = {query.strip().lower()}
    kept: list[str] = []
    for item in data.get("queries") or [] if isinstance(data, dict) else []:
        if not isinstance(item, str):
            continue
        q = item.strip()
        if 5 <= len(q) <= 300 and q.lower() not in seen:
            kept.append(q)
            seen.add(q.lower())
        if len(kept) == 3:
            break
    return kept or [query]


def parse_refined_query_reply(text: str, query: str) -> str:
    """Strip a leading label; a reply outside 5-300 characters or equal to the query -> the query."""
    refined = text.strip()
    for prefix in ("Refined Query:", "Output:", "Answer:", "Query:"):
        if refined.startswith(prefix):
            refined = refined[len(prefix) :].strip()
    if not 5 <= len(refined) <= 300 or refined == query:
        return query
    return refined


@dataclass(kw_only=True)
class AgenticRun:
    """Record of one agentic retrieval."""

    query: str
    k: int
    round1: HybridRun
    r1: Ranked = field(default_factory=list)
    """Round-1 pool (reranked when the reranker is on)."""
    reranked_round1: Ranked | None = None
    check_set: Ranked = field(default_factory=list)
    check_docs_text: str = ""
    check_prompt: str = ""
    check_response: str | None = None
    check_error: str | None = None
    check_result: dict[str, Any] = field(default_factory=dict)
    sufficient: bool = True
    round2_prompt: str | None = None
    round2_response: str | None = None
    round2_error: str | None = None
    refined_queries: list[str] = field(default_factory=list)
    round2_runs: list[HybridRun] = field(default_factory=list)
    r2: Ranked = field(default_factory=list)
    combined: Ranked = field(default_factory=list)
    final_reranked: Ranked | None = None
    final: Ranked = field(default_factory=list)


def _sufficiency(llm: ChatModel, run: AgenticRun) -> None:
    run.check_docs_text = format_documents(run.check_set)
    run.check_prompt = SUFFICIENCY_CHECK_PROMPT.substitute(query=run.query, documents=run.check_docs_text)
    try:
        run.check_response = ask(llm, run.check_prompt, temperature=0.0, max_tokens=500)
        run.check_result = parse_sufficiency_reply(run.check_response)
    except FATAL_ERRORS:
        raise
    except Exception as exc:  # any failure counts as sufficient (the conservative choice)
        run.check_error = f"({type(exc).__name__}) {exc}"
        run.check_result = {
            "is_sufficient": True,
            "reasoning": f"sufficiency check failed: {run.check_error}",
            "missing_information": [],
            "key_information_found": [],
        }
    run.sufficient = bool(run.check_result["is_sufficient"])


def _round2_queries(llm: ChatModel, run: AgenticRun, config: OnlineRetrieverConfig) -> None:
    key_info = ", ".join(run.check_result.get("key_information_found") or []) or "N/A"
    missing = ", ".join(run.check_result.get("missing_information") or []) or "N/A"
    if config.use_multi_query:
        run.round2_prompt = MULTI_QUERY_PROMPT.substitute(
            query=run.query, key_info=key_info, missing_info=missing, documents=run.check_docs_text
        )
        try:
            run.round2_response = ask(llm, run.round2_prompt, temperature=0.4, max_tokens=300)
            run.refined_queries = parse_multi_query_reply(run.round2_response, run.query)
        except FATAL_ERRORS:
            raise
        except Exception as exc:  # fall back to the original query
            run.round2_error = f"({type(exc).__name__}) {exc}"
            run.refined_queries = [run.query]
    else:
        run.round2_prompt = REFINED_QUERY_PROMPT.substitute(
            query=run.query, missing_info=missing, documents=run.check_docs_text
        )
        try:
            run.round2_response = ask(llm, run.round2_prompt, temperature=0.3, max_tokens=150)
            run.refined_queries = [parse_refined_query_reply(run.round2_response, run.query)]
        except FATAL_ERRORS:
            raise
        except Exception as exc:
            run.round2_error = f"({type(exc).__name__}) {exc}"
            run.refined_queries = [run.query]


def agentic_search(
    index: HybridIndex, llm: ChatModel, query: str, k: int, config: OnlineRetrieverConfig
) -> AgenticRun:
    """Run the agentic two-round retrieval and return its full record (`run.final` is the answer)."""
    run = AgenticRun(query=query, k=k, round1=hybrid_search(index, query, k, config))
    run.r1 = list(run.round1.fused)
    if not run.r1:
        return run
    if config.use_reranker:
        run.reranked_round1 = overlap_rerank(query, run.r1, len(run.r1))
        run.r1 = list(run.reranked_round1)
    run.check_set = run.r1[: min(config.sufficiency_check_docs, k)]
    _sufficiency(llm, run)
    if run.sufficient:
        run.final = run.r1[:k]
        return run
    _round2_queries(llm, run, config)
    run.round2_runs = [hybrid_search(index, q, k, config) for q in run.refined_queries]
    lists = [r.fused for r in run.round2_runs]
    run.r2 = rrf_fuse(lists, config.rrf_k) if len(lists) > 1 else list(lists[0])
    seen = {doc["event_id"] for doc, _ in run.r1}
    combined = list(run.r1)
    for doc, score in run.r2:
        if doc["event_id"] not in seen:
            combined.append((doc, score))
            seen.add(doc["event_id"])
    run.combined = combined[: 2 * k]
    if config.use_reranker and run.combined:
        run.final_reranked = overlap_rerank(query, run.combined, k)
        run.final = list(run.final_reranked)
    else:
        run.final = run.combined[:k]
    return run
