"""The attribution command as a library: inputs, the run, and the output JSON it writes.

``run_error_attribution.py`` is :func:`toolkits.attribution.cli.main`. The output is built here
so that benchmarks and tests build and check it without the command:

* :class:`OutputSettings` — the run's identity and scoring settings;
* :func:`build_record` — one case's record; :func:`assemble_output` — the output from records;
  :func:`build_output` — both, from a runner's report; :func:`run_costs` — costs of results;
* :func:`write_output` — the atomic write;
* :class:`AttributionInputError` — bad input, one ``error:`` line and exit 2.
"""

from toolkits.attribution.inputs import AttributionInputError
from toolkits.attribution.output import (
    FinishedRun,
    OutputSettings,
    assemble_output,
    build_output,
    build_record,
    operation_info,
    record_graph_path,
    run_costs,
    write_output,
)

__all__ = [
    "AttributionInputError",
    "FinishedRun",
    "OutputSettings",
    "assemble_output",
    "build_output",
    "build_record",
    "operation_info",
    "record_graph_path",
    "run_costs",
    "write_output",
]
