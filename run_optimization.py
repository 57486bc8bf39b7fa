"""Attribution-guided prompt optimization of a memory system on LoCoMo (spec-attribution §7.3).

Each round k (k = 1 … ``--sample-size``) runs the memory system on the k-th sampled LoCoMo
conversation with the current configuration (construction → search → evaluation, traced),
attributes every wrongly answered question to its faulty operation, groups the attributions by
the prompt the operation depends on, and lets the optimizer rewrite those prompts (feedback →
aggregation → update). The result is the next round's configuration. At the end the initial and
the final configuration are evaluated on held-out conversations with identical settings.

Example (offline, no key)::

    python run_optimization.py --config-path examples/configs/mem0_offline.json \\
        --dataset-path ../shared/data/locomo/locomo10.json --sample-size 2 \\
        --attribution-strategy evidence_flow --optimizer-model 'fake:{...}' \\
        --qa-model 'fake:I do not know' --judge-model 'fake:{"label": "WRONG"}' --optimization-dir runs/opt

Files: ``<dir>/sampled_dataset.json``, ``<dir>/iteration_<k>/`` (see the README), and
``<dir>/final_evaluation.json``. A rerun resumes after the last complete round.

Exit codes: 0 done; 2 bad arguments, config, dataset or an unreachable endpoint (one line on
stderr, before any round starts); 130 interrupted (complete rounds are kept; rerun to resume).
"""

from __future__ import annotations

from toolkits.optimization.command import build_parser, cli, main

__all__ = ["build_parser", "cli", "main"]
# The command lives in toolkits.optimization.command, where tests and benchmarks reach it: nothing
# imports this script.

if __name__ == "__main__":
    cli()
