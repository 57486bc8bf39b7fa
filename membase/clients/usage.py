"""Per-instance token accounting (never process-global)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

__all__ = ["CallMeter", "Usage", "record_endpoint_call"]


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


_ACTIVE_METERS: list[CallMeter] = []
_METERS_LOCK = threading.Lock()


@dataclass(eq=False)  # identity, not counts: exiting a nested meter must unregister that meter, not an equal outer one
class CallMeter:
    """Counts the calls that reached a model endpoint (cache hits and fake models excluded) while active.

    A process-wide registry rather than a ContextVar: the runners call models from worker threads,
    which do not inherit the caller's context. Use as ``with CallMeter() as meter: ...``.
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __enter__(self) -> CallMeter:
        with _METERS_LOCK:
            _ACTIVE_METERS.append(self)
        return self

    def __exit__(self, *_exc: object) -> None:
        with _METERS_LOCK:
            _ACTIVE_METERS.remove(self)

    @property
    def tokens(self) -> int:
        """Input plus output tokens of the metered calls."""
        return self.input_tokens + self.output_tokens


def record_endpoint_call(input_tokens: int, output_tokens: int) -> None:
    """Tell every active :class:`CallMeter` that one request reached a model endpoint."""
    with _METERS_LOCK:
        for meter in _ACTIVE_METERS:
            meter.calls += 1
            meter.input_tokens += input_tokens
            meter.output_tokens += output_tokens
