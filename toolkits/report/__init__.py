"""Diagnostic reports from attribution outputs (``generate_report.py``).

Two reports, side by side:

* the **statistical report** (no model): error types per memory system and dataset source, the
  most-blamed operations, the loss funnel along the memory pipeline, accuracy and confusion
  matrix against gold labels, cost per case — as tables, plotly charts in one offline HTML page,
  PNG copies and Markdown (:mod:`.stats`, :mod:`.charts`, :mod:`.documents`);
* the **LLM report** (spec §8): the attributed cases, rendered with their operation subgraphs
  (:mod:`.rendering`), go in batches to a model that refines one prose report
  (:mod:`.runner`, :mod:`.prompts`), with every version saved and resumable
  (:mod:`.versions`), for a target system described by an overview (:mod:`.overviews`).
"""

from .charts import Chart, build_charts, export_pngs
from .documents import HTML_NAME, JSON_NAME, MARKDOWN_NAME, ReportContent, write_documents
from .funnel import FUNNEL_STAGES, find_trail, loss_stage_of
from .graphs import GraphStore
from .inputs import (
    AttributionInput,
    ReportInputError,
    ReportRecord,
    load_attribution_inputs,
    records_from_json,
)
from .models import fake_model_factory, is_fake_model
from .overviews import BUILTIN_OVERVIEWS, OverviewError, resolve_overview
from .rendering import RenderedCase, Unrenderable, render_cases
from .runner import ReportConfig, ReportOutcome, ReportRunner
from .stats import CaseFacts, build_statistics, collect_case_facts, summary_for_prompt

__all__ = [
    "BUILTIN_OVERVIEWS",
    "FUNNEL_STAGES",
    "HTML_NAME",
    "JSON_NAME",
    "MARKDOWN_NAME",
    "AttributionInput",
    "CaseFacts",
    "Chart",
    "GraphStore",
    "OverviewError",
    "RenderedCase",
    "ReportConfig",
    "ReportContent",
    "ReportInputError",
    "ReportOutcome",
    "ReportRecord",
    "ReportRunner",
    "Unrenderable",
    "build_charts",
    "build_statistics",
    "collect_case_facts",
    "export_pngs",
    "fake_model_factory",
    "find_trail",
    "is_fake_model",
    "load_attribution_inputs",
    "loss_stage_of",
    "records_from_json",
    "render_cases",
    "resolve_overview",
    "summary_for_prompt",
    "write_documents",
]
