"""The steps of ``generate_report.py``, callable without the CLI.

1. :func:`probe_save_folder` — the save folder must be writable before anything runs;
2. :func:`analyse` — read the attribution outputs, load their graphs once, compute the statistics;
3. (optionally) render the cases and run :class:`~toolkits.report.runner.ReportRunner`;
4. :func:`write_report` — charts, PNG copies, and the JSON / Markdown / HTML files.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .case_details import DEFAULT_VIEWER_URL
from .charts import build_charts, export_pngs
from .documents import ReportContent, write_documents
from .graphs import GraphStore
from .inputs import AttributionInput, load_attribution_inputs
from .rendering import Unrenderable
from .stats import DEFAULT_EXAMPLES_PER_OP, CaseFacts, build_statistics, collect_case_facts

__all__ = ["Analysis", "WrittenReport", "analyse", "probe_save_folder", "unavailable_cases", "write_report"]

CHARTS_FOLDER = "charts"


def probe_save_folder(folder: str | Path) -> None:
    """Create ``folder`` and write/remove a probe file in it.

    Raises:
        OSError: If the folder cannot be created or written (checked before any model call).
    """
    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise NotADirectoryError(f"{str(target)!r} exists and is not a folder")
    target.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".write-probe.", dir=str(target))
    os.close(fd)
    os.unlink(probe)
    # the names the report writes: a folder where a file goes (or the reverse) would fail only at the end
    from .documents import HTML_NAME, JSON_NAME, MARKDOWN_NAME
    from .runner import VERSIONS_FOLDER

    for name in (JSON_NAME, MARKDOWN_NAME, HTML_NAME):
        if (target / name).is_dir():
            raise IsADirectoryError(f"{str(target / name)!r} is a folder, where the report writes a file")
    for name in (VERSIONS_FOLDER, CHARTS_FOLDER):
        if (target / name).exists() and not (target / name).is_dir():
            raise NotADirectoryError(f"{str(target / name)!r} is a file, where the report keeps a folder")


@dataclass(kw_only=True)
class Analysis:
    """The input and everything computed from it without a model."""

    inputs: AttributionInput
    graphs: GraphStore
    facts: list[CaseFacts]
    statistics: dict[str, Any]


def analyse(
    data_paths: Sequence[str | Path],
    *,
    top_operations: int = 15,
    examples_per_op: int = DEFAULT_EXAMPLES_PER_OP,
    viewer_url: str = DEFAULT_VIEWER_URL,
) -> Analysis:
    """Read the attribution outputs and compute the statistical report.

    Args:
        data_paths: The attribution outputs.
        top_operations: Operation names and categories listed in the rankings.
        examples_per_op: Example cases shown per blamed operation name.
        viewer_url: Base URL of the annotation viewer (each example's deep link starts with it).

    Raises:
        ReportInputError: An input file is missing or not an attribution output.
    """
    inputs = load_attribution_inputs(data_paths)
    graphs = GraphStore()
    facts = collect_case_facts(inputs.records, graphs, viewer_url=viewer_url)
    return Analysis(inputs=inputs, graphs=graphs, facts=facts,
                    statistics=build_statistics(facts, top_operations=top_operations,
                                                examples_per_op=examples_per_op))


def unavailable_cases(analysis: Analysis) -> list[Unrenderable]:
    """The cases whose graph is missing or unreadable, as :class:`Unrenderable` entries (what
    ``--no-llm`` lists, where no case is rendered for a model)."""
    return [
        Unrenderable(index=f.index, query_id=f.query_id, graph_path=f.graph_path, reason=f.graph_error)
        for f in analysis.facts
        if f.graph_error
    ]


def report_title(statistics: dict[str, Any]) -> str:
    """The documents' title, naming the memory systems."""
    systems = [s for s in statistics["memory_systems"] if s != "unknown"] or ["memory system"]
    return f"Diagnostic report: {', '.join(systems)}"


@dataclass(kw_only=True)
class WrittenReport:
    """Paths of the written files and the notices printed for the user."""

    paths: dict[str, str]
    pngs: dict[str, str]
    notices: list[str] = field(default_factory=list)


def write_report(
    folder: str | Path,
    analysis: Analysis,
    *,
    llm: dict[str, Any] | None,
    report: str | None,
    unrenderable: Sequence[Unrenderable] = (),
    png: bool = True,
    complete: bool = True,
) -> WrittenReport:
    """Build the charts, export PNG copies (when possible) and write the three documents.

    Args:
        folder: The save folder.
        analysis: From :func:`analyse`.
        llm: Summary of the LLM run (None with ``--no-llm``).
        report: The LLM report text (None when there is none).
        unrenderable: Cases that could not be sent to the model.
        png: Try to write PNG copies of the charts.
        complete: False when the LLM report stopped before its last batch.
    """
    notices: list[str] = []
    if analysis.inputs.incomplete_files:
        notices.append(
            "input not complete (the attribution run had not finished): " + ", ".join(analysis.inputs.incomplete_files)
        )
    charts, chart_notice = build_charts(analysis.statistics, analysis.facts)
    if chart_notice:
        notices.append(chart_notice)
    pngs: dict[str, str] = {}
    if charts and png:
        pngs, png_notice = export_pngs(charts, Path(folder) / CHARTS_FOLDER)
        if png_notice:
            notices.append(png_notice)
    elif charts:
        notices.append("PNG copies skipped: --no-png")
    inputs = analysis.inputs
    content = ReportContent(
        title=report_title(analysis.statistics),
        statistics=analysis.statistics,
        inputs={
            "files": list(inputs.files),
            "records": len(inputs.records),
            "splits": list(inputs.splits),
            "exploration_strategies": list(inputs.strategies),
            "incomplete_files": list(inputs.incomplete_files),
        },
        llm=llm,
        report=report,
        unrenderable=[asdict(u) for u in unrenderable],
        notices=notices,
    )
    paths = write_documents(folder, content, charts, pngs, complete=complete)
    return WrittenReport(paths=paths, pngs=pngs, notices=notices)
