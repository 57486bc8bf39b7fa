"""Check every model endpoint a run will use before its first round starts.

Each distinct base URL gets one ``GET <base_url>/models`` (what OpenAI, vLLM, llama.cpp's server
and Ollama answer): a connection error or a timeout means *unreachable*, HTTP 401/403 means the
key was refused; any other answer counts as reachable (some servers do not list models).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "Endpoint",
    "EndpointError",
    "check_endpoints",
    "endpoints_in_config",
    "layer_model_endpoints",
    "probe_endpoint",
]

OPENAI_DEFAULT = "https://api.openai.com/v1"


class EndpointError(MemTraceError, RuntimeError):
    """An endpoint is unreachable or refuses the key (one-line message)."""


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One endpoint to check."""

    what: str
    """Who uses it (``--qa-model``, ``layer llm_config`` …)."""
    base_url: str | None
    api_key: str | None = None


def probe_endpoint(endpoint: Endpoint, *, timeout: float = 10.0) -> str | None:
    """None when reachable, else a one-line reason (secrets never appear in it)."""
    import httpx

    from membase.clients import guard

    guard.check_allow_model_requests("endpoint probe")
    base = (endpoint.base_url or OPENAI_DEFAULT).rstrip("/")
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    try:
        response = httpx.get(f"{base}/models", headers=headers, timeout=timeout)
    except httpx.TimeoutException:
        return f"{endpoint.what}: endpoint {base} did not answer within {timeout:g} s"
    except httpx.HTTPError as exc:
        return f"{endpoint.what}: endpoint {base} is unreachable ({type(exc).__name__}); check the URL and that the server runs"
    if response.status_code in (401, 403):
        return f"{endpoint.what}: endpoint {base} refused the API key (HTTP {response.status_code})"
    return None


def check_endpoints(endpoints: Iterable[Endpoint], *, timeout: float = 10.0) -> None:
    """Probe each distinct (base URL, key) once.

    Raises:
        EndpointError: The first endpoint that fails.
    """
    seen: set[tuple[str | None, str | None]] = set()
    for endpoint in endpoints:
        key = (endpoint.base_url, endpoint.api_key)
        if key in seen:
            continue
        seen.add(key)
        problem = probe_endpoint(endpoint, timeout=timeout)
        if problem:
            raise EndpointError(problem)


def endpoints_in_config(config: Mapping[str, Any], what: str = "layer config") -> list[Endpoint]:
    """Endpoints named anywhere in a layer config: ``base_url`` (with its sibling ``api_key``)
    and ``api_config_path`` files, in any section whose ``provider`` is not ``fake``."""
    found: list[Endpoint] = []

    def walk(node: Any, path: str) -> None:
        if not isinstance(node, Mapping):
            return
        provider = node.get("provider") or node.get("llm_provider")
        if provider != "fake":
            if isinstance(node.get("base_url"), str):
                found.append(Endpoint(what=f"{what} {path or '.'}", base_url=node["base_url"],
                                      api_key=node.get("api_key") if isinstance(node.get("api_key"), str) else None))
            if isinstance(node.get("api_config_path"), str):
                found.extend(_endpoints_of_file(node["api_config_path"], f"{what} {path or '.'}"))
        for key, value in node.items():
            walk(value, f"{path}.{key}" if path else key)

    walk(config, "")
    return found


def layer_model_endpoints(backend: str, fields: Mapping[str, Any]) -> list[Endpoint]:
    """The endpoints of a layer's own chat model, with its credentials resolved now as the layer
    resolves them when it starts (its ``api_config_path`` file, else an explicit key/URL, else
    ``OPENAI_BASE_URL``/``OPENAI_API_KEY``); a ``fake`` provider has none.

    Raises:
        membase.exceptions.ConfigError: An invalid config, no credentials, or a missing or
            malformed ``api_config_path`` file (what round 1 would otherwise find).
    """
    from membase.layers import build_layer_config
    from membase.layers._common import build_chat_client

    config = build_layer_config(backend, user_id="preflight", **dict(fields))
    found: list[Endpoint] = []
    for what, model, options in _layer_chat_models(config):
        client = build_chat_client(model, api_config_path=options.get("api_config_path"),
                                   api_key=options.get("api_key"), base_url=options.get("base_url"))
        pool = client.credentials
        found += [Endpoint(what=what, base_url=pool.credential_for(i).base_url, api_key=pool.credential_for(i).api_key)
                  for i in range(pool.size)]
    return found


def _layer_chat_models(config: Any) -> list[tuple[str, str, Mapping[str, Any]]]:
    """``(who, model, credential options)`` of each chat model a layer config asks for."""
    if getattr(config, "llm_provider", "fake") != "fake":  # Mem0: provider beside an options dict
        return [(f"layer llm_model {config.llm_model!r}", config.llm_model, config.llm_config)]
    llm = getattr(config, "llm_config", None)
    if getattr(llm, "provider", "fake") != "fake":  # EverMemOS: an options object with its provider
        return [(f"layer llm_config.model {llm.model!r}", llm.model, llm.model_dump())]
    return []


def _endpoints_of_file(path: str, what: str) -> list[Endpoint]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        keys, urls = data["api_keys"], data.get("base_urls") or [None] * len(data["api_keys"])
        return [Endpoint(what=what, base_url=u, api_key=k) for k, u in zip(keys, urls, strict=False)]
    except (OSError, ValueError, KeyError, TypeError):
        return []  # the layer reports a bad file itself, with its own message
