"""The OpenTelemetry view of a traced run and its attributions, read back with the SDK's
in-memory exporter."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="the export needs opentelemetry-sdk (the 'otel' extra)")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from toolkits.report import cli as report_cli  # noqa: E402
from toolkits.report.otel import export_analysis  # noqa: E402
from toolkits.report.pipeline import analyse  # noqa: E402


@pytest.fixture(scope="module")
def rag_analysis(outputs_dir: Path):
    return analyse([outputs_dir / "rag.json"])


def _export(analysis, *, capture_content: bool = False):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    summary = export_analysis(analysis, capture_content=capture_content, tracer_provider=provider)
    return summary, exporter.get_finished_spans()


def test_one_trace_per_graph_with_a_span_per_operation_named_after_its_gen_ai_operation(rag_analysis):
    summary, spans = _export(rag_analysis)
    graphs = {f.graph_path for f in rag_analysis.facts}
    roots = [s for s in spans if s.parent is None]
    assert summary.traces == len(roots) == len(graphs) and summary.spans == len(spans)
    assert len({s.context.trace_id for s in spans}) == len(graphs)
    names = Counter(s.attributes["gen_ai.operation.name"] for s in spans if s.parent is not None)
    assert {"update_memory", "search_memory", "chat"} <= set(names)
    for span in spans:
        if span.parent is None:
            continue
        op_name = span.attributes["memtrace.op_name"]
        assert span.name == f"{span.attributes['gen_ai.operation.name']} {op_name}"
        if op_name == "memory_system.retrieve":
            assert span.attributes["gen_ai.operation.name"] == "search_memory"
    starts = [s.start_time for s in spans if s.parent is not None and s.context.trace_id == roots[0].context.trace_id]
    assert starts == sorted(starts)  # execution order


def test_lineage_is_in_the_attributes_and_as_links_to_the_producing_operations(rag_analysis):
    _, spans = _export(rag_analysis)
    by_span_id = {s.context.span_id: s for s in spans}
    linked = [s for s in spans if s.links]
    assert linked
    for span in linked:
        for link in span.links:
            producer = by_span_id[link.context.span_id]
            assert set(producer.attributes["memtrace.outputs"]) & set(span.attributes["memtrace.inputs"])
            assert producer.start_time <= span.start_time


def test_each_attribution_is_an_event_on_the_blamed_operations_span(rag_analysis):
    summary, spans = _export(rag_analysis)
    assert summary.cases == len(rag_analysis.facts)
    graph_of_trace = {s.context.trace_id: s.attributes["memtrace.graph_file"] for s in spans if s.parent is None}
    events = [(s, e) for s in spans for e in s.events if e.name == "memtrace.attribution"]
    assert len(events) == len(rag_analysis.facts)
    for span, event in events:
        [fact] = [f for f in rag_analysis.facts if f.query_id == event.attributes["memtrace.query_id"]
                  and Path(f.graph_path).stem == graph_of_trace[span.context.trace_id]]
        if fact.attributed and fact.op_name:
            assert span.attributes["memtrace.op_id"] == event.attributes["memtrace.op_id"] == fact.op_id
            assert event.attributes["memtrace.error_type"] == fact.error_type
            assert event.attributes["memtrace.viewer_link"].startswith("http://localhost:8501/?folder=")
        else:  # the failed attribution has no op: its verdict sits on the run's root span
            assert span.parent is None and event.attributes["memtrace.error_type"] == "FAILED"


def test_content_is_captured_only_when_asked(rag_analysis):
    question = next(f.query for f in rag_analysis.facts if f.attributed).strip("\"'")  # stored as a repr
    for capture in (False, True):
        _, spans = _export(rag_analysis, capture_content=capture)
        dumped = json.dumps([{**dict(s.attributes), "events": [dict(e.attributes) for e in s.events]} for s in spans])
        assert (question in dumped) is capture
        values = [s for s in spans if "memtrace.input_values" in s.attributes]
        assert bool(values) is capture


def test_cli_writes_the_spans_as_json_lines(outputs_dir: Path, tmp_path: Path, capsys):
    target = tmp_path / "spans.jsonl"
    code = report_cli.main(["--data-path", str(outputs_dir / "rag.json"), "--save-folder", str(tmp_path / "r"),
                                 "--no-llm", "--no-png", "--otel-jsonl", str(target)])
    assert code == 0
    lines = target.read_text(encoding="utf-8").splitlines()
    assert f"otel: {len(lines)} span(s)" in capsys.readouterr().out
    spans = [json.loads(line) for line in lines]
    assert sum(1 for s in spans if s["parent_id"] is None) >= 1
    assert any(e["name"] == "memtrace.attribution" for s in spans for e in s["events"])


def test_the_spans_reach_an_otlp_http_collector(outputs_dir: Path, tmp_path: Path):
    """A stand-in collector on 127.0.0.1 receives the protobuf export that Phoenix or Langfuse would."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs opentelemetry-exporter-otlp-proto-http")
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received: list[ExportTraceServiceRequest] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(ExportTraceServiceRequest.FromString(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        code = report_cli.main(["--data-path", str(outputs_dir / "rag.json"), "--save-folder", str(tmp_path / "r"),
                                     "--no-llm", "--no-png", "--otel-endpoint", url])
    finally:
        server.shutdown()
        thread.join(5)
    assert code == 0
    spans = [s for request in received for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    names = {s.name for s in spans}
    assert any(n.startswith("memory_run ") for n in names) and any(n.startswith("search_memory ") for n in names)
    assert any(e.name == "memtrace.attribution" for s in spans for e in s.events)
