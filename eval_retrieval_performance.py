"""Recall@k of pseudo source-evidence retrieval on a MemTraceBench split (spec §10).

Example::

    python eval_retrieval_performance.py data/MemTraceBench mem0 --k 8 --retrieval-type hybrid

For every memory-error case the case graph's ``message`` variables are ranked for the query
(question, plus the golden answer or the wrong prediction by ``--starting-point-query-type``);
the top ``k`` ids are compared with the annotated ``source_evidence_ids``. One line per dataset
source and one overall: ``recall@<k> (<source>): micro=<.4f> macro=<.4f> (<n> cases)``.
Unlike the reference, each graph is indexed and embedded once (not once per case), embeddings
can be cached on disk, and ``--output-path`` writes the numbers as JSON.

Exit codes: 0 done; 2 bad arguments or data, or an unreachable embedding endpoint.
"""

from __future__ import annotations

from toolkits.retrieval_cli import build_parser, cli, main

__all__ = ["build_parser", "cli", "main"]
# The command lives in toolkits.retrieval_cli, where tests reach it: nothing imports this script.

if __name__ == "__main__":
    cli()
