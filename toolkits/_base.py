"""Credentials and the configuration shared by every LLM-backed runner (spec-attribution §9).

A runner resolves one :class:`ApiPool` from its config: explicit ``api_keys`` + ``base_urls``
lists, else an ``api_config.json`` file (``{"api_keys": [...], "base_urls": [...]}``), else the
``OPENAI_BASE_URL``/``OPENAI_API_BASE`` + ``OPENAI_API_KEY`` environment variables. Slot ``i``
of the pool serves case/call/batch ``i`` (deterministic round-robin); concurrency is bounded
elsewhere.

Secrets never leave this module in clear text by accident: keys are held as
:class:`pydantic.SecretStr`, :class:`Credential` masks its ``repr``, and :func:`redact` scrubs
any known key out of a string before it is written to an output file, a cache or a log.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

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


class CredentialError(ValueError):
    """Raised when no usable credentials can be resolved or the given ones are malformed."""


@dataclass(frozen=True, kw_only=True)
class Credential:
    """One API endpoint: a key and the OpenAI-compatible base URL it is valid for."""

    api_key: str = field(repr=False)
    """The secret key (``EMPTY`` for local servers that need none)."""
    base_url: str | None
    """Base URL of the endpoint, e.g. ``http://127.0.0.1:8008/v1``; None = the SDK default."""
    slot: int = 0
    """Index of this credential in its pool."""

    def __repr__(self) -> str:
        return f"Credential(slot={self.slot}, base_url={self.base_url!r}, api_key={_MASK!r})"


class ApiPool:
    """A fixed list of credentials served by index (``credential_for(i)`` = slot ``i % size``).

    Args:
        api_keys: One key per endpoint (at least one).
        base_urls: One base URL per key (same length as ``api_keys``); None entries mean the
            SDK default endpoint.

    Raises:
        CredentialError: If the lists are empty, of different lengths, or a key is blank.
    """

    def __init__(self, api_keys: Sequence[str], base_urls: Sequence[str | None]) -> None:
        keys = [str(k.get_secret_value() if isinstance(k, SecretStr) else k) for k in api_keys]
        urls = list(base_urls)
        if not keys:
            raise CredentialError("`api_keys` is empty: give at least one key (use 'EMPTY' for local servers)")
        if len(keys) != len(urls):
            raise CredentialError(
                f"`api_keys` has {len(keys)} entries but `base_urls` has {len(urls)}: give one base URL per key"
            )
        if any(not k.strip() for k in keys):
            raise CredentialError("`api_keys` contains a blank key: remove it or use 'EMPTY' for local servers")
        self._credentials = tuple(
            Credential(api_key=k, base_url=u, slot=i) for i, (k, u) in enumerate(zip(keys, urls, strict=True))
        )

    @property
    def size(self) -> int:
        """Number of credentials in the pool."""
        return len(self._credentials)

    def credential_for(self, index: int) -> Credential:
        """Return the credential serving work item ``index`` (round-robin by index)."""
        return self._credentials[index % self.size]

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every key of the pool (for :func:`redact`); never write this anywhere."""
        return tuple(c.api_key for c in self._credentials)

    def __repr__(self) -> str:
        urls = [c.base_url for c in self._credentials]
        return f"ApiPool(size={self.size}, base_urls={urls!r})"

    @classmethod
    def from_api_config(cls, path: str | os.PathLike[str]) -> ApiPool:
        """Read ``{"api_keys": [...], "base_urls": [...]}`` from a JSON file.

        Raises:
            CredentialError: If the file is missing, is not JSON, or lacks either list.
        """
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise CredentialError(f"API config file {str(p)!r} not found: check --api-config-path") from None
        except UnicodeDecodeError as exc:
            raise CredentialError(f"API config file {str(p)!r} is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
        except IsADirectoryError:
            raise CredentialError(f"API config file {str(p)!r} is a folder: check --api-config-path") from None
        except OSError as exc:
            raise CredentialError(f"API config file {str(p)!r} cannot be read ({exc.strerror or exc})") from None
        except json.JSONDecodeError as exc:
            raise CredentialError(f"API config file {str(p)!r} is not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict) or not isinstance(data.get("api_keys"), list) or not isinstance(
            data.get("base_urls"), list
        ):
            raise CredentialError(
                f"API config file {str(p)!r} must hold {{\"api_keys\": [...], \"base_urls\": [...]}}"
            )
        return cls(data["api_keys"], data["base_urls"])

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ApiPool:
        """Build a one-slot pool from ``OPENAI_BASE_URL``/``OPENAI_API_BASE`` and ``OPENAI_API_KEY``.

        Raises:
            CredentialError: If neither base-URL variable is set.
        """
        env = os.environ if environ is None else environ
        base_url = env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE")
        if not base_url:
            raise CredentialError(
                "no credentials: pass --api-config-path, or set OPENAI_BASE_URL (and OPENAI_API_KEY)"
            )
        return cls([env.get("OPENAI_API_KEY") or "EMPTY"], [base_url])


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
