"""Recall@k of pseudo source-evidence retrieval on LoCoMo: ours vs the reference algorithm.

The ten LoCoMo conversations are traced with the Long-Context memory layer (membase's
construction runner, smartcomment graphs), so the documents are exactly the ``message`` nodes an
attribution run sees: value = JSON ``{content, name, role, timestamp}`` with content
``"Speaker <name> (role: user) says: <text>\\nTimestamp: <iso>"`` (spec-tracer §4.6).

Queries are the LoCoMo questions (adversarial category 5 excluded, as in MemTrace), written as
``repr(question)`` like MemTraceBench's ``query`` field; references are each question's
evidence message ids resolved to node ids (questions without resolvable evidence are skipped).
The three query types of the attribution runner:

* ``query_only`` — the question;
* ``query_with_golden_answer`` — question + ``"\\n"`` + golden answer;
* ``query_with_prediction`` — question + ``"\\n"`` + a *stand-in* wrong prediction: LoCoMo has
  no model predictions, so we use the golden answer of another question of the same
  conversation, drawn with ``random.Random(seed)`` — fluent, on-topic, and wrong, like a real
  failed answer.

Algorithms: ``reference`` = ASCII ``[a-z0-9_]+`` BM25 on the raw JSON value + MiniLM on the
raw value + RRF k=60 (zero-score BM25 docs still ranked); ``ours`` = :data:`OURS_SETTINGS`
(Unicode tokens, stop words out, light stemming over the decoded message fields; MiniLM on the
message content without the JSON wrapper; zero-score BM25 hits dropped; same RRF). ``--ablations`` adds single-change variants
to show where the gain comes from.

Run (2 CPU cores: about 5 minutes with a warm embedding cache, 10-20 minutes cold; MiniLM
embeddings are cached under ``--work-dir``)::

    python benchmarks/retrieval_locomo.py --output-path benchmarks/results/retrieval_locomo.json
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from toolkits._embeddings import CachedEmbedder, make_embedder  # noqa: E402
from toolkits.retrieval import (  # noqa: E402
    OURS_SETTINGS,
    QUERY_TYPES,
    REFERENCE_SETTINGS,
    RETRIEVAL_TYPES,
    DocumentRetriever,
    RetrievalSettings,
    build_retrieval_query,
    message_documents,
)

DEFAULT_LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"

ABLATIONS: dict[str, RetrievalSettings] = {
    # one change to the reference at a time
    "ref+unicode_tokens": replace(REFERENCE_SETTINGS, tokenizer="unicode_stem"),
    "ref+drop_zero": replace(REFERENCE_SETTINGS, drop_zero_sparse=True),
    "ref+content_dense": replace(REFERENCE_SETTINGS, dense_text_mode="speaker_content"),
    # one change to ours at a time
    "ours-no_stem_no_stop": replace(OURS_SETTINGS, tokenizer="unicode"),
    "ours-no_stem": replace(OURS_SETTINGS, tokenizer="unicode_stop"),
    "ours+porter": replace(OURS_SETTINGS, tokenizer="unicode_porter"),
    "ours+raw_sparse": replace(OURS_SETTINGS, text_mode="raw"),
    "ours+content_sparse": replace(OURS_SETTINGS, text_mode="speaker_content"),
    "ours+raw_dense": replace(OURS_SETTINGS, dense_text_mode="raw"),
    "ours+keep_zero": replace(OURS_SETTINGS, drop_zero_sparse=False),
}


def trace_locomo(locomo_path: Path, work_dir: Path, limit: int | None) -> list[tuple[Any, list[Any]]]:
    """Trace the conversations with the Long-Context layer; return ``(graph, qa_pairs)`` per conversation."""
    from membase.datasets.locomo import load_locomo
    from membase.runners.construction import ConstructionRunner, ConstructionRunnerConfig
    from smartcomment.runtime.network import ExecNetwork

    dataset = load_locomo(str(locomo_path))
    if limit is not None:
        dataset = dataset.select(0, limit)
    runner = ConstructionRunner(
        ConstructionRunnerConfig(
            layer_type="Long-Context",
            save_dir=str(work_dir / "memory"),
            traced_data_save_dir=str(work_dir / "traced_data"),
            rerun=True,
            show_progress=False,
        )
    )
    report = runner.run(dataset)
    if report.users_failed:
        raise RuntimeError(f"tracing failed for {sorted(report.users_failed)}")
    out = []
    for traj, qa_pairs in zip(dataset.trajectories, dataset.qa_pair_lists, strict=True):
        path = work_dir / "traced_data" / traj.id / "graph_construction.json"
        graph = ExecNetwork.import_graph(json.loads(path.read_text(encoding="utf-8")))
        out.append((graph, list(qa_pairs)))
    return out


def build_queries(conversations: list[tuple[Any, list[Any]]], seed: int) -> list[dict[str, Any]]:
    """One query record per answerable question with resolvable evidence."""
    rng = random.Random(seed)
    records = []
    for conv_index, (graph, qa_pairs) in enumerate(conversations):
        answers = [qa.golden_answers[0] for qa in qa_pairs if qa.metadata.get("question_type") != "adversarial"]
        for qa in qa_pairs:
            if qa.metadata.get("question_type") == "adversarial":
                continue
            refs = []
            for name in qa.metadata.get("evidence") or []:
                try:
                    refs.append(graph.get_latest_variable(name).full_node_id)
                except Exception:  # noqa: BLE001 - malformed LoCoMo evidence ids do not resolve
                    continue
            if not refs:
                continue
            golden = qa.golden_answers[0]
            others = [a for a in answers if a != golden] or [golden]
            records.append(
                {
                    "conversation": conv_index,
                    "query": repr(qa.question),
                    "golden_answer": golden,
                    "prediction": rng.choice(others),
                    "references": refs,
                    "question_type": qa.metadata.get("question_type"),
                }
            )
    return records


def evaluate(
    name: str,
    settings: RetrievalSettings,
    conversations: list[tuple[Any, list[Any]]],
    queries: list[dict[str, Any]],
    embedder: CachedEmbedder,
    ks: Sequence[int],
    retrieval_types: Sequence[str],
) -> dict[str, Any]:
    """Recall@k (micro and macro) per query type and retrieval type for one settings variant."""
    needs_dense = any(t != "sparse" for t in retrieval_types)
    if needs_dense:  # embed every query text once, in large batches (searches then hit the cache)
        embedder.embed(
            sorted({build_retrieval_query(q["query"], q["golden_answer"], q["prediction"], t) for q in queries for t in QUERY_TYPES})
        )
    retrievers = [
        DocumentRetriever(
            message_documents(graph, text_mode=settings.text_mode, dense_text_mode=settings.dense_text_mode),
            retrieval_type="hybrid" if needs_dense else "sparse",
            embedder=embedder if needs_dense else None,
            settings=settings,
        )
        for graph, _ in conversations
    ]
    table: dict[str, Any] = {}
    for qtype in QUERY_TYPES:
        for rtype in retrieval_types:
            hits = {k: 0 for k in ks}
            ratios: dict[int, list[float]] = {k: [] for k in ks}
            total = 0
            for q in queries:
                text = build_retrieval_query(q["query"], q["golden_answer"], q["prediction"], qtype)
                retriever = retrievers[q["conversation"]]
                refs = set(q["references"])
                total += len(refs)
                ranked = None if rtype == "hybrid" else [h.doc_id for h in retriever.search(text, max(ks), retrieval_type=rtype)]
                for k in ks:
                    # hybrid candidate lists depend on k (limit × multiplier), so rank per k
                    top = ranked[:k] if ranked is not None else [h.doc_id for h in retriever.search(text, k, retrieval_type=rtype)]
                    found = len(refs & set(top))
                    hits[k] += found
                    ratios[k].append(found / len(refs))
            table[f"{qtype}/{rtype}"] = {
                f"recall@{k}": {"micro": hits[k] / total, "macro": sum(ratios[k]) / len(ratios[k])} for k in ks
            }
    for r in retrievers:
        r.close()
    return {"name": name, "settings": settings.__dict__, "recall": table}


def markdown_table(results: list[dict[str, Any]], k: int, retrieval_types: Sequence[str]) -> str:
    """README table: rows = query type × retrieval type, columns = variants (micro recall@k)."""
    names = [r["name"] for r in results]
    lines = [
        "| query type | retrieval | " + " | ".join(f"{n} recall@{k}" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for qtype in QUERY_TYPES:
        for rtype in retrieval_types:
            cells = [f"{r['recall'][f'{qtype}/{rtype}'][f'recall@{k}']['micro']:.4f}" for r in results]
            lines.append(f"| {qtype} | {rtype} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; prints Markdown tables and optionally writes JSON."""
    p = argparse.ArgumentParser(description="LoCoMo recall@k: ours vs the reference retrieval algorithm")
    p.add_argument("--locomo-path", type=Path, default=DEFAULT_LOCOMO)
    p.add_argument("--work-dir", type=Path, default=None, help="traced graphs and embedding cache (default: a temp dir)")
    p.add_argument("--k", type=int, nargs="+", default=[4, 8, 16])
    p.add_argument("--retrieval-types", nargs="+", default=list(RETRIEVAL_TYPES), choices=RETRIEVAL_TYPES)
    p.add_argument("--ablations", action="store_true", help="also run single-change variants")
    p.add_argument("--limit-conversations", type=int, default=None)
    p.add_argument("--max-questions", type=int, default=None, help="use only the first N questions (smoke runs)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--embedding-provider", choices=("local", "hashing"), default="local")
    p.add_argument("--output-path", type=Path, default=None)
    args = p.parse_args(argv)
    if not args.locomo_path.is_file():
        print(f"error: LoCoMo file not found at {args.locomo_path}; pass --locomo-path", file=sys.stderr)
        return 2

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="retrieval-locomo-") as tmp:
        work = args.work_dir or Path(tmp)
        conversations = trace_locomo(args.locomo_path, work, args.limit_conversations)
        queries = build_queries(conversations, args.seed)[: args.max_questions]
        n_docs = sum(len(message_documents(g, text_mode="raw")) for g, _ in conversations)
        print(f"{len(conversations)} conversations, {n_docs} message nodes, {len(queries)} questions", file=sys.stderr)
        embedder = CachedEmbedder(make_embedder(args.embedding_provider), work / "embeddings", batch_size=64)
        variants = {"reference": REFERENCE_SETTINGS, "ours": OURS_SETTINGS}
        if args.ablations:
            variants.update(ABLATIONS)
        results = []
        for name, settings in variants.items():
            t0 = time.perf_counter()
            results.append(evaluate(name, settings, conversations, queries, embedder, args.k, args.retrieval_types))
            print(f"  {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        embedder.close()
    elapsed = time.perf_counter() - started
    for k in args.k:
        print(f"\n### recall@{k} (micro)\n")
        print(markdown_table(results, k, args.retrieval_types))
    if args.output_path:
        args.output_path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "conversations": len(conversations),
            "message_nodes": n_docs,
            "questions": len(queries),
            "seed": args.seed,
            "embedding": args.embedding_provider,
            "machine": f"{platform.machine()}, {platform.python_version()}",
            "elapsed_seconds": round(elapsed, 1),
            "results": results,
        }
        args.output_path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"\n({elapsed:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
