"""ChatClient and OpenAIEmbedder over real HTTP against a scripted loopback server (no model)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from membase.clients import ChatClient, CredentialPool, OpenAIEmbedder
from membase.clients.guard import allow_model_requests
from membase.exceptions import ModelRequestError, ModelUnreachableError


class ScriptedServer:
    """Answers each POST with the next `(status, body)` of a script; records the requests."""

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                status, payload = outer.script.pop(0)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion(text: str, prompt_tokens: int = 11, completion_tokens: int = 3) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "served-model",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


ERROR = {"error": {"message": "overloaded", "type": "server_error"}}


def test_retries_5xx_and_429_then_succeeds_round_robin():
    script = [(500, ERROR), (429, ERROR), (200, _completion("hello"))]
    with ScriptedServer(script) as a, ScriptedServer([]) as _unused, allow_model_requests():
        pool = CredentialPool(["key-a", "key-b"], [a.base_url, a.base_url])
        client = ChatClient("m", credentials=pool, max_retries=2, backoff_base=0.01)
        result = client.complete([{"role": "user", "content": "hi"}], max_tokens=5,
                                 response_format={"type": "json_object"})
    assert (result.text, result.input_tokens, result.output_tokens, result.model) == ("hello", 11, 3, "served-model")
    assert [r["auth"] for r in a.requests] == ["Bearer key-a", "Bearer key-b", "Bearer key-a"]
    body = a.requests[-1]["body"]
    assert body["max_tokens"] == 5 and "max_completion_tokens" not in body
    assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0.0
    assert client.usage.as_dict() == {"requests": 1, "cached_requests": 0, "failed_requests": 0,
                                      "input_tokens": 11, "output_tokens": 3, "total_tokens": 14}


def test_gives_up_after_max_retries_and_does_not_retry_client_errors():
    with ScriptedServer([(503, ERROR)] * 2 + [(400, {"error": {"message": "bad schema"}})]) as srv, \
            allow_model_requests():
        client = ChatClient("m", credentials=CredentialPool(["k"], [srv.base_url]), max_retries=1, backoff_base=0.01)
        with pytest.raises(ModelRequestError, match="failed after 2 attempts"):
            client.complete([{"role": "user", "content": "hi"}])
        with pytest.raises(ModelRequestError, match="HTTP 400") as info:
            client.complete([{"role": "user", "content": "hi"}])
    assert not isinstance(info.value, ModelUnreachableError)
    assert len(srv.requests) == 3 and client.usage.failed_requests == 2


def test_openai_embedder_over_http():
    payload = {"object": "list", "model": "emb", "usage": {"prompt_tokens": 4, "total_tokens": 4},
               "data": [{"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
                        {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]}]}
    with ScriptedServer([(200, payload)]) as srv, allow_model_requests():
        emb = OpenAIEmbedder("emb", base_url=srv.base_url, api_key="k", dimensions=2)
        assert emb.embed(["a", "b"]) == [[1.0, 0.0], [0.0, 1.0]]  # reordered by index
    assert srv.requests[0]["body"]["dimensions"] == 2 and srv.requests[0]["path"] == "/v1/embeddings"
    assert emb.dim == 2 and emb.usage.input_tokens == 4
