"""Credentials and the configuration shared by every LLM-backed runner (spec-attribution §9).

A runner resolves one :class:`~membase.clients.ApiPool` from its config: explicit ``api_keys``
+ ``base_urls`` lists, else an ``api_config.json`` file (``{"api_keys": [...], "base_urls":
[...]}``), else the ``OPENAI_BASE_URL``/``OPENAI_API_BASE`` + ``OPENAI_API_KEY`` environment
variables. Slot ``i`` of the pool serves case/call/batch ``i`` (deterministic round-robin);
concurrency is bounded elsewhere.

Secrets never leave this module in clear text by accident: keys are held as
:class:`pydantic.SecretStr`, :class:`Credential` masks its ``repr``, and :func:`redact` scrubs
any known key out of a string before it is written to an output file, a cache or a log.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

# the pool and its error live in the model layer (membase.clients), so that obstrace can use
# them without importing toolkits; they are re-exported here for the runners
from membase.clients.credentials import ApiPool, Credential, CredentialError

__all__ = [
    "AgentBaseConfig",
    "ApiPool",
    "Credential",
    "CredentialError",
    "is_transient_error",
    "redact",
    "resolve_api_pool",
]

_MASK = "***"


class AgentBaseConfig(BaseModel):
    """Settings common to the attribution, optimization and report runners (spec §9).

    Keys are :class:`~pydantic.SecretStr`, so ``model_dump(mode="json")`` never reveals them.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    model: str = "gpt-4.1"
    """Chat model name sent to the endpoint."""
    temperature: float = Field(default=1.0, ge=0.0)
    """Sampling temperature of every agent call."""
    stream: bool = True
    """Stream model responses."""
    studio_url: str | None = None
    """AgentScope Studio URL (ignored when more than one case runs at a time)."""
    project: str = "optimization"
    """Studio project name."""
    api_config_path: str | None = None
    """Path of an ``api_config.json`` credential file."""
    api_keys: list[SecretStr] | None = None
    """Explicit keys (take precedence over the file; need ``base_urls`` of the same length)."""
    base_urls: list[str | None] | None = None
    """Explicit base URLs, one per key."""

    @field_validator("api_keys")
    @classmethod
    def _no_blank_keys(cls, value: list[SecretStr] | None) -> list[SecretStr] | None:
        if value is not None and any(not k.get_secret_value().strip() for k in value):
            raise ValueError("`api_keys` contains a blank key")
        return value


def resolve_api_pool(config: AgentBaseConfig, environ: dict[str, str] | None = None) -> ApiPool:
    """Resolve the credential pool of a runner config (explicit lists → file → environment).

    Raises:
        CredentialError: If exactly one of ``api_keys``/``base_urls`` is given, or nothing
            usable is found.
    """
    if config.api_keys is not None and config.base_urls is not None:
        return ApiPool([k.get_secret_value() for k in config.api_keys], config.base_urls)
    if (config.api_keys is None) != (config.base_urls is None):
        raise CredentialError("give both `api_keys` and `base_urls`, or neither")
    if config.api_config_path:
        return ApiPool.from_api_config(config.api_config_path)
    return ApiPool.from_env(environ)


MIN_SECRET_LENGTH = 12
"""Shorter keys are not redacted: they are placeholders of local servers, and masking them
would rewrite ordinary words."""
PLACEHOLDER_KEYS = frozenset({"empty", "sk-local", "ollama", "test", "dummy", "none", "sk-no-key-required"})
"""Keys that local servers accept as "no key" (compared case-insensitively); never redacted."""


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each real secret by ``***``.

    Keys shorter than :data:`MIN_SECRET_LENGTH` and :data:`PLACEHOLDER_KEYS` are skipped. Apply
    it to free text written by MemTrace (failures, reasons, model outputs), never to benchmark
    data.
    """
    real = {
        s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH and s.strip().lower() not in PLACEHOLDER_KEYS
    }
    for secret in sorted(real, key=len, reverse=True):
        text = text.replace(secret, _MASK)
    return text


_TRANSIENT_STATUS = frozenset({408, 409, 429})


def is_transient_error(exc: BaseException | None) -> bool:
    """True for errors worth retrying, classified by type (never by message text).

    Transient: OpenAI rate limits, connection errors and API timeouts, HTTP 408/409/429/5xx
    status errors, httpx transport errors, ``TimeoutError`` and ``ConnectionError``. The
    ``__cause__`` chain (``raise ... from``) is followed, so wrapped API errors count too.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, TimeoutError | ConnectionError):
            return True
        try:
            import openai
        except ImportError:  # pragma: no cover - openai is a core dependency
            openai = None  # type: ignore[assignment]
        if openai is not None:
            if isinstance(exc, openai.APIConnectionError | openai.RateLimitError | openai.InternalServerError):
                return True
            if isinstance(exc, openai.APIStatusError):
                return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
        try:
            import httpx
        except ImportError:  # pragma: no cover
            httpx = None  # type: ignore[assignment]
        if httpx is not None:
            if isinstance(exc, httpx.TransportError):
                return True
            if isinstance(exc, httpx.HTTPStatusError):
                code = exc.response.status_code
                return code in _TRANSIENT_STATUS or code >= 500
        exc = exc.__cause__
    return False
