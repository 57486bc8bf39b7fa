"""Attribute failed questions to their earliest decisive faulty operation, and score the attributions.

Two kinds of input (spec §6, extended):

* a MemTraceBench folder and a split (``<dataset_dir>/<split>/*.json``, annotated cases with gold
  labels): the output has the reference layout (``split``, ``sampled_graph_paths``, ``results``,
  ``metrics`` with ETA, OIA, ``cases_by_graph`` and ``error_attribution_cost``) extended with
  joint accuracy, per-error-type and per-source breakdowns, the confusion matrix, failure counts,
  bootstrap 95 % intervals, and per-case failure records;
* a run folder written by ``python -m membase run … --output-dir DIR`` (its
  ``traced_data/<user>/graph_evaluation.json`` files, no annotations; the split is optional and
  defaults to the layer's): the wrongly answered questions are collected from the graphs' judge
  operations (adversarial ones skipped) and attributed; the output has the same layout without
  gold-label metrics, with a prediction distribution instead (counts per error type, per blamed
  operation name and category, failures).

Example::

    python run_error_attribution.py data/MemTraceBench evermemos --output-path out/evermemos.json \\
        --model-name gpt-4.1-mini --api-config-path api_config.json --batch-size 4 --cache-dir runs/cache
    python run_error_attribution.py runs/lc --exploration-strategy evidence_flow --output-path runs/lc_attr.json

A case whose attribution fails is recorded (``attribution_failure``, and an
``error_attribution_result`` of empty strings with the failure as reason) and counted wrong; the
run goes on. Every finished case is appended at once to a journal beside the output
(``<output>.journal.jsonl``); the output file is written atomically when the run ends or is
interrupted, and the journal is then removed (kept after an interruption or a crash). A rerun of
the same command reuses the journal's finished cases (``--no-resume`` starts afresh); with
``--cache-dir`` finished cases are also reused across outputs.

Exit codes: 0 output written; 1 the output could not be written at the end (the finished cases
are in the journal); 2 bad arguments, data, or an unwritable output/cache folder; 130
interrupted (the finished cases are in the output file and the journal).
"""

from __future__ import annotations

from toolkits.attribution.cli import build_parser, cli, main

__all__ = ["build_parser", "cli", "main"]
# The command lives in toolkits.attribution (flags in .cli, the run in .session, the output JSON in
# .output), where tests and benchmarks reach it: nothing imports this script.

if __name__ == "__main__":
    cli()
