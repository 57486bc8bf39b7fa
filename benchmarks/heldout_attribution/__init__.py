"""A held-out, independently built fault benchmark for attribution (MemTraceBench format).

Graphs of four simulated memory layers (Long-Context, NaiveRAG, Mem0, EverMemOS) recorded with
smartcomment over two hand-written conversations, one injected fault per case, labels from
construction. ``python -m benchmarks.heldout_attribution.run`` builds it and scores
``evidence_flow`` on it; see ``benchmarks/README.md``.
"""
