"""Diagnostic reports from attribution outputs (``generate_report.py``).

Two reports, side by side:

* the **statistical report** (no model): error types per memory system and dataset source, the
  most-blamed operations with example cases and viewer deep links, the prompt each depends on,
  Mem0's decision split and the replay recovery gain (:mod:`.case_details`), the loss funnel
  along the memory pipeline, accuracy and confusion matrix against gold labels, cost per case —
  as tables, plotly charts in one offline HTML page, PNG copies and Markdown (:mod:`.stats`,
  :mod:`.charts`, :mod:`.documents`);
* the **LLM report** (spec §8): the attributed cases, rendered with their operation subgraphs
  (:mod:`.rendering`), go in batches to a model that refines one prose report
  (:mod:`.runner`, :mod:`.prompts`), with every version saved and resumable
  (:mod:`.versions`), for a target system described by an overview (:mod:`.overviews`).

:mod:`.otel` exports the traced runs and their attributions as OpenTelemetry spans (a lossy view).
"""

from .case_details import DEFAULT_VIEWER_URL, case_id_of, viewer_link
from .charts import ERROR_TYPE_COLORS, Chart, build_charts, export_pngs
from .documents import HTML_NAME, JSON_NAME, MARKDOWN_NAME, ReportContent, write_documents
from .funnel import FUNNEL_STAGES, find_trail, loss_stage_of
from .graphs import GraphStore
from .inputs import (
    NON_MEMORY_ERROR_TYPES,
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
    "DEFAULT_VIEWER_URL",
    "ERROR_TYPE_COLORS",
    "FUNNEL_STAGES",
    "HTML_NAME",
    "JSON_NAME",
    "MARKDOWN_NAME",
    "NON_MEMORY_ERROR_TYPES",
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
    "case_id_of",
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
    "viewer_link",
    "write_documents",
]
