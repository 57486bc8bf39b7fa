"""The paper's flat-log ablation by default, ids/lineage as an opt-in, and the one-call OBS API."""

from __future__ import annotations

import json

import pytest

from graphtrace import answer
from membase.clients import FunctionChatModel, ScriptedChatModel, ToolCall
from obstrace import ObsTraceAgent, build_obstrace_agent, flatten_execution_graph

REASON = (
    "The decision op turned the extracted fact 'moved from Sweden' into an ADD that says Norway; "
    "with a faithful ADD the store would hold Sweden, and no earlier op lost it."
)


def _case(annotation):
    return {"question": annotation["query"], "golden_answer": ", ".join(annotation["golden_answers"]),
            "prediction": annotation["prediction"]}


def _texts_of(message):
    c = message.get("content")
    return c if isinstance(c, str) else "".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


def _texts(model):
    out = []
    for call in model.calls:
        for m in call.messages:
            c = m.get("content")
            out.append(c if isinstance(c, str) else "".join(p.get("text", "") for p in c or [] if isinstance(p, dict)))
    return "\n".join(out)


def test_solve_case_returns_the_documented_fields(bench_case):
    graph, _, annotation = bench_case
    target = annotation["final_op_id"]
    model = ScriptedChatModel([ToolCall(name="inspect_trace"), ToolCall(name="grep_log", args={"pattern": "Norway"}),
                               answer("UpdateError", target, REASON)])
    agent = build_obstrace_agent(
        flatten_execution_graph(graph), chat_model=model,
        initial_ranked_ops=[{"created_at": "2025-01-01 10:00:00.000", "value": "I moved from Sweden four years ago."}],
    )
    assert isinstance(agent, ObsTraceAgent)
    out = agent.solve_case(_case(annotation))
    assert set(out) == {"question", "golden_answer", "prediction", "error_type", "op_id", "reason", "warning",
                        "trace_stats", "usage", "elapsed_seconds"}
    assert (out["error_type"], out["op_id"], out["reason"], out["warning"]) == ("UpdateError", target, REASON, "")
    assert out["trace_stats"] == {"operation_count": len(graph.get_all_operations())}
    usage = out["usage"]
    assert usage["num_calls"] == 3 and usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert out["elapsed_seconds"] > 0 and out["question"] == annotation["query"]
    seen = _texts(model)
    assert "I moved from Sweden four years ago." in seen  # the starting evidence is in the hint
    assert "<full_node_id>" not in seen  # the paper's log: no variable ids


def test_an_invalid_answer_becomes_a_warning_and_each_case_starts_fresh(bench_case):
    graph, _, annotation = bench_case
    seen_first_user = []

    def turn(messages, tools, choice):
        task = next(_texts_of(m) for m in messages if m.get("role") == "user")
        seen_first_user.append(task)
        if "A second, different question?" in task:
            return answer("ExtractionError", annotation["final_op_id"], REASON)
        return answer("UpdateError", "op-not-in-the-log", REASON)

    model = FunctionChatModel(turn)
    agent = build_obstrace_agent(flatten_execution_graph(graph), chat_model=model, max_iters=2)
    bad = agent.solve_case(_case(annotation))
    assert (bad["error_type"], bad["op_id"], bad["reason"]) == ("", "", "") and bad["warning"].startswith("no answer")
    calls_before = len(model.calls)
    good = agent.solve_case({**_case(annotation), "question": "A second, different question?"})
    assert good["warning"] == "" and good["op_id"] == annotation["final_op_id"]
    second = model.calls[calls_before]
    assert annotation["query"] not in json.dumps(second.messages)  # no memory carried over between cases
    assert "call inspect_trace" in second.last_text  # the hint starts over


def test_solve_case_async_and_bad_arguments(bench_case, tmp_path, monkeypatch):
    import asyncio

    graph, _, annotation = bench_case
    model = ScriptedChatModel([answer("ExtractionError", annotation["final_op_id"], REASON)])
    agent = build_obstrace_agent(flatten_execution_graph(graph), chat_model=model)
    assert asyncio.run(agent.solve_case_async(_case(annotation)))["error_type"] == "ExtractionError"
    with pytest.raises(ValueError, match="golden_answer"):
        asyncio.run(agent.solve_case_async({"question": "q", "prediction": "p"}))
    with pytest.raises(ValueError, match="empty"):
        build_obstrace_agent("   ", chat_model=model)
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ValueError, match="no credentials"):
        build_obstrace_agent(flatten_execution_graph(graph))
    api = tmp_path / "api.json"
    api.write_text(json.dumps({"api_keys": ["k1", "k2"], "base_urls": ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]}))
    with pytest.raises(ValueError, match="endpoint_index 2 is out of range"):
        build_obstrace_agent(flatten_execution_graph(graph), api_config_path=str(api), endpoint_index=2)
    built = build_obstrace_agent(flatten_execution_graph(graph), api_config_path=str(api), endpoint_index=1)
    assert built.model is None and "127.0.0.1:2" in str(built.model_factory().credential.base_url)


def test_solve_case_twice_against_a_real_http_endpoint(bench_case):
    """A model built from credentials gets a fresh HTTP client per case (each solve_case runs its own
    event loop); a client reused across loops would fail on the second case."""
    import http.server
    import threading

    from membase.clients import STRUCTURED_OUTPUT_TOOL

    graph, _, annotation = bench_case
    arguments = json.dumps({"error_type": "UpdateError", "op_id": annotation["final_op_id"], "reason": REASON})
    requests = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 - http.server API
            requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = json.dumps({
                "id": f"c{len(requests)}", "object": "chat.completion", "created": 0, "model": "stub",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": None,
                    "tool_calls": [{"id": f"t{len(requests)}", "type": "function",
                                    "function": {"name": STRUCTURED_OUTPUT_TOOL, "arguments": arguments}}]}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        agent = build_obstrace_agent(flatten_execution_graph(graph), api_key="sk-local",
                                     base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", model="stub")
        first = agent.solve_case(_case(annotation))
        second = agent.solve_case({**_case(annotation), "question": "Another question?"})
    finally:
        server.shutdown()
        server.server_close()
    for out in (first, second):
        assert out["warning"] == "" and out["op_id"] == annotation["final_op_id"]
        assert out["usage"]["input_tokens"] >= 100 and out["usage"]["num_calls"] >= 1
    assert requests[0]["model"] == "stub" and any(t["function"]["name"] == "inspect_trace" for t in requests[0]["tools"])
