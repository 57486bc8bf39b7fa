"""Per-instance token accounting (never process-global)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

__all__ = ["Usage"]


@dataclass
class Usage:
    """Thread-safe counters of one model client."""

    requests: int = 0
    """Calls answered (from the endpoint or the cache)."""
    cached_requests: int = 0
    """Calls answered from the disk cache."""
    failed_requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, input_tokens: int, output_tokens: int, *, cached: bool = False) -> None:
        """Add one answered call."""
        with self._lock:
            self.requests += 1
            self.cached_requests += int(cached)
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens

    def record_failure(self) -> None:
        """Add one call that failed after all retries."""
        with self._lock:
            self.failed_requests += 1

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, int]:
        """Counters as a JSON-ready dict."""
        return {
            "requests": self.requests,
            "cached_requests": self.cached_requests,
            "failed_requests": self.failed_requests,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }
