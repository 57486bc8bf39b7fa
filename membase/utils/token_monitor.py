"""Token and latency accounting of wrapped model calls (spec §4.7), per ledger instance.

Use with `PatchSpec`: `wrapper=token_monitor(ledger, extract_model_name=..., ...)` counts every
call of the patched callable under `(model, op_type)`, e.g. `generation` / `update` for Mem0.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from membase.utils.tokens import count_tokens

__all__ = ["TokenLedger", "token_monitor"]


class TokenLedger:
    """Thread-safe counters keyed by model name and operation type."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stats: dict[str, dict[str, dict[str, float]]] = {}

    def record(self, model: str, op_type: str, input_tokens: int, output_tokens: int, seconds: float) -> None:
        """Add one call."""
        with self._lock:
            slot = self._stats.setdefault(model, {}).setdefault(
                op_type, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "seconds": 0.0})
            slot["calls"] += 1
            slot["input_tokens"] += input_tokens
            slot["output_tokens"] += output_tokens
            slot["seconds"] += seconds

    def as_dict(self) -> dict[str, dict[str, dict[str, float]]]:
        """A deep copy of the counters."""
        with self._lock:
            return {m: {o: dict(v) for o, v in ops.items()} for m, ops in self._stats.items()}

    def save(self, path: str | Path) -> Path:
        """Write the counters as JSON (atomically)."""
        return atomic_write_json(path, self.as_dict())


def token_monitor(
    ledger: TokenLedger,
    *,
    extract_model_name: Callable[..., str],
    extract_input_text: Callable[..., str],
    extract_output_text: Callable[[Any], str],
    classify_op_type: Callable[..., str] = lambda *_a, **_k: "generation",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Build a wrapper that counts tokens and time of each call into `ledger`.

    The extractors receive the wrapped call's `(*args, **kwargs)` (output extractor: the result).
    Failed calls are timed but not counted; the exception propagates unchanged.
    """

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            result = fn(*args, **kwargs)
            seconds = time.perf_counter() - start
            try:
                ledger.record(
                    extract_model_name(*args, **kwargs),
                    classify_op_type(*args, **kwargs),
                    count_tokens(extract_input_text(*args, **kwargs)),
                    count_tokens(extract_output_text(result)),
                    seconds,
                )
            except Exception:  # accounting must never break the monitored call
                pass
            return result

        return wrapped

    return decorate
