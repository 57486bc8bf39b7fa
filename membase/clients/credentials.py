"""Pools of (API key, base URL) slots for OpenAI-compatible endpoints.

Slots are picked by index (`credential_for(i)` = slot `i % size`), a deterministic round robin;
the file format is the project's `api_config.json`: `{"api_keys": [...], "base_urls": [...]}`.

Two pools share one :class:`Credential`: :class:`CredentialPool`, membase's lenient one (a key
without a base URL is accepted, a file may omit `base_urls`), and :class:`ApiPool`, the strict
one of the attribution, optimization and report runners (spec-attribution §9: one base URL per
key, no blank key, a base URL from the environment), whose errors are :class:`CredentialError`.
Secrets never show in a `repr`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from membase.exceptions import ConfigError
from smartcomment.runtime.errors import MemTraceError

__all__ = ["ApiPool", "Credential", "CredentialError", "CredentialPool"]


class CredentialError(MemTraceError, ValueError):
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

    def __repr__(self) -> str:  # never print secrets
        return f"Credential(slot={self.slot}, base_url={self.base_url!r}, api_key='***')"


class CredentialPool:
    """Equal-length lists of API keys and base URLs, used round robin."""

    def __init__(self, api_keys: list[str], base_urls: list[str | None]) -> None:
        """Build a pool.

        Raises:
            ConfigError: when the lists are empty or of different lengths.
        """
        if not api_keys:
            raise ConfigError("credential pool needs at least one API key (`api_keys` is empty)")
        if len(api_keys) != len(base_urls):
            raise ConfigError(
                f"`api_keys` ({len(api_keys)}) and `base_urls` ({len(base_urls)}) must have the same length"
            )
        self._slots = [
            Credential(api_key=k, base_url=u, slot=i) for i, (k, u) in enumerate(zip(api_keys, base_urls, strict=True))
        ]

    @property
    def size(self) -> int:
        """Number of slots."""
        return len(self._slots)

    def credential_for(self, index: int) -> Credential:
        """Return slot `index % size`."""
        return self._slots[index % len(self._slots)]

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every key of the pool (for redaction); never write this anywhere."""
        return tuple(c.api_key for c in self._slots)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, base_urls={[s.base_url for s in self._slots]!r})"

    @classmethod
    def from_api_config(cls, path: str | Path) -> CredentialPool:
        """Read an `api_config.json` file (`{"api_keys": [...], "base_urls": [...]}`).

        Raises:
            ConfigError: when the file is missing, not JSON, or lacks the two lists.
        """
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"API config file {str(path)!r} not found; pass an existing api_config.json")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"API config file {str(path)!r} is not valid JSON ({exc})") from exc
        if not isinstance(data, dict) or not isinstance(data.get("api_keys"), list):
            raise ConfigError(f"API config file {str(path)!r} must hold {{\"api_keys\": [...], \"base_urls\": [...]}}")
        base_urls = data.get("base_urls")
        if base_urls is None:
            base_urls = [None] * len(data["api_keys"])
        if not isinstance(base_urls, list):
            raise ConfigError(f"`base_urls` in {str(path)!r} must be a list")
        return cls(list(data["api_keys"]), list(base_urls))

    @classmethod
    def from_env(cls) -> CredentialPool:
        """Build a one-slot pool from `OPENAI_BASE_URL`/`OPENAI_API_BASE` and `OPENAI_API_KEY`.

        Raises:
            ConfigError: when no base URL and no key are set.
        """
        base_url = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")
        api_key = os.environ.get("OPENAI_API_KEY")
        if not base_url and not api_key:
            raise ConfigError(
                "no model credentials: pass an api_config.json (--api-config) or set OPENAI_BASE_URL "
                "and OPENAI_API_KEY"
            )
        return cls([api_key or "EMPTY"], [base_url])

    @classmethod
    def resolve(
        cls,
        *,
        api_keys: list[str] | None = None,
        base_urls: list[str | None] | None = None,
        api_config_path: str | Path | None = None,
    ) -> CredentialPool:
        """Explicit lists win over the file, which wins over the environment."""
        if api_keys is not None or base_urls is not None:
            if api_keys is None or base_urls is None:
                raise ConfigError("pass both `api_keys` and `base_urls`, or neither")
            return cls(list(api_keys), list(base_urls))
        if api_config_path is not None:
            return cls.from_api_config(api_config_path)
        return cls.from_env()


class ApiPool(CredentialPool):
    """The strict pool of the attribution, optimization and report runners.

    Args:
        api_keys: One key per endpoint (at least one; ``SecretStr`` values are unwrapped).
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
        super().__init__(keys, urls)

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
    def from_env(cls, environ: dict[str, str] | None = None) -> ApiPool:  # type: ignore[override]
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
