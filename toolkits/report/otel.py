"""Export traced runs and their attributions as OpenTelemetry spans (a lossy view).

Tools such as Phoenix or Langfuse show OpenTelemetry traces; this module turns each execution
graph the report reads into one trace so that a run can be browsed there:

* one root span per graph (``memory_run <graph>``), one child span per operation in execution
  order, named ``<gen_ai.operation.name> <op_name>``. The GenAI semantic conventions have no
  stable names for memory operations yet; we follow their ``gen_ai.operation.name`` pattern with
  ``create_memory`` (extraction), ``update_memory``, ``delete_memory``, ``search_memory``
  (retrieval) and ``chat`` (answering and judging), and keep the graph's own op name and category
  in ``memtrace.*`` attributes;
* lineage as the variables each operation consumed and produced (``memtrace.inputs`` /
  ``memtrace.outputs``, full node ids) and as span links from an operation to the operations that
  produced its inputs;
* every attribution as a ``memtrace.attribution`` span event on the blamed operation's span
  (error type, case, loss stage, prompt target, viewer link); a verdict with no operation in the
  graph (a failed attribution, a non-memory verdict, an op id the graph lacks) goes on the root span.

Content capture is opt-in (``capture_content``), as the GenAI conventions ask: by default spans
carry ids, names, categories and sizes only; with it, variable values, questions, answers and
the attribution's reason (each cut to :data:`MAX_CONTENT_CHARS`).

The view is lossy: variable versions, sessions, edge metadata and the XML rendering stay in the
graph JSON, which remains the source of truth.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_text
from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "MAX_CONTENT_CHARS",
    "OtelSummary",
    "OtelUnavailable",
    "export_analysis",
    "export_graph_spans",
    "gen_ai_operation_name",
]

MAX_CONTENT_CHARS = 4000
"""Longest text put into one span attribute when content capture is on."""
INSTALL_HINT = "pip install -e '.[otel]'"

_OPERATION_NAMES = {
    "extraction": "create_memory",
    "construction": "create_memory",
    "boundary_detection": "create_memory",
    "update": "update_memory",
    "deletion": "delete_memory",
    "delete": "delete_memory",
    "retrieval": "search_memory",
    "evaluation": "chat",
    "answer": "chat",
}


class OtelUnavailable(MemTraceError, RuntimeError):
    """The OpenTelemetry SDK (or the OTLP exporter) is not installed."""


@dataclass(frozen=True, kw_only=True)
class OtelSummary:
    """What an export produced."""

    traces: int
    spans: int
    cases: int
    """Attribution events written."""


def gen_ai_operation_name(category: str | None, op_name: str | None) -> str:
    """The ``gen_ai.operation.name`` of an operation, from its category (and name)."""
    name = (op_name or "").lower()
    if "delete" in name:
        return "delete_memory"
    if "question" in name or "judge" in name:
        return "chat"
    return _OPERATION_NAMES.get((category or "").lower(), "memory_operation")


def _timestamp_ns(created_at: str | None) -> int | None:
    if not created_at:
        return None
    try:
        return int(datetime.fromisoformat(created_at).timestamp() * 1_000_000_000)
    except ValueError:
        return None


def _content(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_CONTENT_CHARS else text[: MAX_CONTENT_CHARS - 1] + "…"


@dataclass(frozen=True, kw_only=True)
class _Lineage:
    inputs: dict[str, list[str]]
    outputs: dict[str, list[str]]
    producers: dict[str, str]
    """full node id -> the op that produced it (its first producer in execution order)."""


def _lineage(graph: Any, op_order: dict[str, int]) -> _Lineage:
    inputs: dict[str, set[str]] = {}
    outputs: dict[str, set[str]] = {}
    for edge in graph.get_all_edges():
        inputs.setdefault(edge.op_id, set()).add(edge.source_full_node_id)
        outputs.setdefault(edge.op_id, set()).add(edge.target_full_node_id)
    producers: dict[str, str] = {}
    for op_id in sorted(outputs, key=lambda o: op_order.get(o, len(op_order))):
        for node in outputs[op_id]:
            producers.setdefault(node, op_id)
    return _Lineage(
        inputs={op: sorted(nodes - outputs.get(op, set())) for op, nodes in inputs.items()},
        outputs={op: sorted(nodes) for op, nodes in outputs.items()},
        producers=producers,
    )


def _attribution_attributes(fact: Any, capture_content: bool) -> dict[str, Any]:
    attributes = {
        "memtrace.query_id": fact.query_id,
        "memtrace.error_type": fact.error_type or "FAILED",
        "memtrace.op_id": fact.op_id or "",
        "memtrace.loss_stage": fact.loss_stage or "",
        "memtrace.trail_stage": fact.trail_stage or "",
        "memtrace.prompt_target": fact.prompt_target or "",
        "memtrace.viewer_link": fact.viewer_link or "",
    }
    if fact.non_memory:
        attributes["memtrace.non_memory"] = True
    if fact.failure:
        attributes["memtrace.failure"] = _content(fact.failure)
    if fact.replay is not None:
        attributes["memtrace.replay.rescued"] = fact.replay.rescued
    if capture_content:
        attributes.update({
            "memtrace.question": _content(fact.query),
            "memtrace.golden_answer": _content(fact.golden_answer),
            "memtrace.prediction": _content(fact.prediction),
            "memtrace.reason": _content(fact.reason),
            "memtrace.trail": _content(fact.trail_line),
        })
    return attributes


def _op_attributes(op: Any, lineage: _Lineage, graph: Any, capture_content: bool) -> dict[str, Any]:
    inputs, outputs = lineage.inputs.get(op.op_id, []), lineage.outputs.get(op.op_id, [])
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": gen_ai_operation_name(op.category, op.op_name),
        "memtrace.op_id": op.op_id,
        "memtrace.op_name": op.op_name or "",
        "memtrace.category": op.category or "",
        "memtrace.session_id": op.session_id or "",
        "memtrace.inputs": inputs,
        "memtrace.outputs": outputs,
    }
    model = (op.metadata or {}).get("llm_model")
    if isinstance(model, str) and model:
        attributes["gen_ai.request.model"] = model
    if capture_content:
        attributes["memtrace.input_values"] = [_content(graph.get_variable(n).value) for n in inputs]
        attributes["memtrace.output_values"] = [_content(graph.get_variable(n).value) for n in outputs]
    return attributes


def export_graph_spans(
    graph: Any, facts: Iterable[Any], tracer: Any, *, graph_name: str, capture_content: bool = False
) -> tuple[int, int]:
    """Write one trace for ``graph`` with ``tracer`` (see the module docstring).

    Args:
        graph: The ``ExecNetwork``.
        facts: The report's :class:`~toolkits.report.stats.CaseFacts` of this graph's records.
        tracer: An OpenTelemetry tracer.
        graph_name: Shown in the root span's name (the graph file's stem).
        capture_content: Put texts (variable values, question, answers, reason) into the spans.

    Returns:
        ``(spans, attribution events)`` written.
    """
    from opentelemetry import trace

    ops = graph.get_all_operations()
    order = {op.op_id: i for i, op in enumerate(ops)}
    ops = sorted(ops, key=lambda op: (_timestamp_ns(op.created_at) or 0, order[op.op_id]))
    order = {op.op_id: i for i, op in enumerate(ops)}
    lineage = _lineage(graph, order)
    by_op: dict[str, list[Any]] = {}
    loose: list[Any] = []
    for fact in facts:
        (by_op.setdefault(fact.op_id, []) if fact.attributed and fact.op_id in order else loose).append(fact)
    stamps = [_timestamp_ns(op.created_at) for op in ops]
    # recorded times when every op has one (+i ns keeps ops of one millisecond in order), else "now"
    starts: list[int | None] = [s + i for i, s in enumerate(stamps)] if all(stamps) else [None] * len(ops)  # type: ignore[operator]
    root = tracer.start_span(f"memory_run {graph_name}", start_time=starts[0] if starts else None, attributes={
        "gen_ai.operation.name": "memory_run",
        "memtrace.graph_id": str(graph.graph_id),
        "memtrace.layer_type": str(graph.metadata.get("layer_type") or ""),
        "memtrace.graph_file": graph_name,
    })
    context = trace.set_span_in_context(root)
    span_contexts: dict[str, Any] = {}
    events = 0
    last_end = starts[0] if starts else None
    for op, start_time in zip(ops, starts, strict=True):
        producers = dict.fromkeys(lineage.producers[n] for n in lineage.inputs.get(op.op_id, ())
                                  if n in lineage.producers and lineage.producers[n] != op.op_id)
        links = [trace.Link(span_contexts[p], {"memtrace.relation": "consumes_output_of"})
                 for p in producers if p in span_contexts]
        span = tracer.start_span(f"{gen_ai_operation_name(op.category, op.op_name)} {op.op_name or op.op_id}",
                                 context=context, links=links, start_time=start_time,
                                 attributes=_op_attributes(op, lineage, graph, capture_content))
        for fact in by_op.get(op.op_id, []):
            span.add_event("memtrace.attribution", _attribution_attributes(fact, capture_content), timestamp=start_time)
            events += 1
        end_time = None if start_time is None else start_time + 1_000_000
        span.end(end_time=end_time)
        span_contexts[op.op_id] = span.get_span_context()
        last_end = end_time if end_time is not None else last_end
    for fact in loose:
        root.add_event("memtrace.attribution", _attribution_attributes(fact, capture_content), timestamp=last_end)
        events += 1
    root.end(end_time=last_end)
    return len(ops) + 1, events


class _JsonLinesExporter:
    """Collects finished spans and writes them as JSON lines (atomically) on shutdown."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lines: list[str] = []
        self._closed = False
        # fail before any span is made (and before the report is written) when the file cannot be
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)

    def export(self, spans: Sequence[Any]) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        self._lines += [span.to_json(indent=None) for span in spans]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        atomic_write_text(self.path, "".join(line + "\n" for line in self._lines))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _provider(jsonl_path: str | Path | None, endpoint: str | None) -> tuple[Any, list[Any]]:
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        raise OtelUnavailable(f"the OpenTelemetry export needs opentelemetry-sdk ({INSTALL_HINT})") from None
    provider = TracerProvider(resource=Resource.create({"service.name": "memtrace"}), shutdown_on_exit=False)
    exporters: list[Any] = []
    if jsonl_path:
        exporter = _JsonLinesExporter(jsonl_path)
        provider.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[arg-type]
        exporters.append(exporter)
    if endpoint:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise OtelUnavailable(
                f"--otel-endpoint needs opentelemetry-exporter-otlp-proto-http ({INSTALL_HINT})"
            ) from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider, exporters


def export_analysis(
    analysis: Any,
    *,
    jsonl_path: str | Path | None = None,
    endpoint: str | None = None,
    capture_content: bool = False,
    tracer_provider: Any | None = None,
) -> OtelSummary:
    """Export every graph of a report analysis with its cases' attributions.

    Args:
        analysis: From :func:`toolkits.report.pipeline.analyse`.
        jsonl_path: Write the spans there, one JSON object per line.
        endpoint: Send the spans to this OTLP/HTTP traces endpoint.
        capture_content: Put texts into the spans (see the module docstring).
        tracer_provider: Use this provider instead (tests pass one with an in-memory exporter);
            ``jsonl_path`` and ``endpoint`` are then ignored.

    Raises:
        OtelUnavailable: The SDK or the OTLP exporter is missing.
    """
    own = tracer_provider is None
    provider = tracer_provider
    if provider is None:
        provider, _ = _provider(jsonl_path, endpoint)
    tracer = provider.get_tracer("memtrace.report")
    facts_by_index = {f.index: f for f in analysis.facts}
    graphs = analysis.graphs
    grouped: dict[str, list[Any]] = {}
    first: dict[str, Any] = {}
    for record in graphs.by_graph(analysis.inputs.records):
        key = graphs.resolve_path(record)
        if key is None:
            continue
        grouped.setdefault(str(key), []).append(facts_by_index[record.index])
        first.setdefault(str(key), record)
    traces = spans = events = 0
    try:
        for key, facts in grouped.items():
            graph = graphs.graph_for(first[key])
            if graph is None:
                continue
            made, attached = export_graph_spans(graph, facts, tracer, graph_name=Path(key).stem,
                                                capture_content=capture_content)
            traces, spans, events = traces + 1, spans + made, events + attached
    finally:
        if own:
            provider.shutdown()
    return OtelSummary(traces=traces, spans=spans, cases=events)
