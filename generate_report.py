"""Turn attribution outputs into a diagnostic report: statistics, charts and an LLM-written analysis (spec §8).

Example::

    python generate_report.py --data-path runs/mem0.json --save-folder runs/report_mem0 \\
        --model gpt-5.4 --api-config-path api_config.json
    python generate_report.py --data-path runs/evidence_flow_mem0.json --save-folder runs/report_mem0 --no-llm

``--data-path`` takes the output of ``run_error_attribution.py`` (or only its ``results`` list),
and several of them at once. The save folder receives ``error_analysis_report.json``
(``{"report": …}`` plus the statistics), ``error_analysis_report.md``, a self-contained
``error_analysis_report.html`` with the charts, PNG copies in ``charts/`` where a static exporter
is available, and every intermediate report version in ``report_versions/``; a rerun of the same
command resumes after the last finished batch. Each blamed operation comes with example cases and
their viewer deep links (``--examples-per-op``, ``--viewer-url``); ``--otel-jsonl`` /
``--otel-endpoint`` also export the runs and attributions as OpenTelemetry spans (docs/reports.md).

Exit codes: 0 written; 1 the LLM report stopped at a failing batch (the last good version and the
statistics are written) or no case could be sent to the model; 2 bad arguments, input or
credentials, or an unwritable save folder; 130 interrupted.
"""

from __future__ import annotations

from toolkits.report.cli import build_parser, cli, main

__all__ = ["build_parser", "cli", "main"]
# The command lives in toolkits.report.cli, where tests reach it: nothing imports this script.

if __name__ == "__main__":
    cli()
