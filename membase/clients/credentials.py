"""A pool of (API key, base URL) slots for OpenAI-compatible endpoints.

Slots are picked by index (`credential_for(i)` = slot `i % size`), a deterministic round robin;
the file format is the project's `api_config.json`: `{"api_keys": [...], "base_urls": [...]}`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from membase.exceptions import ConfigError

__all__ = ["Credential", "CredentialPool"]


@dataclass(frozen=True, kw_only=True)
class Credential:
    """One endpoint slot."""

    api_key: str
    base_url: str | None

    def __repr__(self) -> str:  # never print secrets
        return f"Credential(api_key='***', base_url={self.base_url!r})"


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
        self._slots = [Credential(api_key=k, base_url=u) for k, u in zip(api_keys, base_urls, strict=True)]

    @property
    def size(self) -> int:
        """Number of slots."""
        return len(self._slots)

    def credential_for(self, index: int) -> Credential:
        """Return slot `index % size`."""
        return self._slots[index % len(self._slots)]

    def __repr__(self) -> str:
        return f"CredentialPool(size={self.size}, base_urls={[s.base_url for s in self._slots]!r})"

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
