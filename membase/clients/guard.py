"""A process switch that makes every real model request fail (tests turn it off).

Real clients call `check_allow_model_requests()` right before they send anything; the fake models
of `membase.clients.fake` never do.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from membase.exceptions import ModelRequestsBlockedError

__all__ = ["ALLOW_MODEL_REQUESTS", "allow_model_requests", "check_allow_model_requests"]

ALLOW_MODEL_REQUESTS: bool = True


def check_allow_model_requests(what: str = "model") -> None:
    """Raise `ModelRequestsBlockedError` when real model requests are switched off."""
    if not ALLOW_MODEL_REQUESTS:
        raise ModelRequestsBlockedError(
            f"real {what} requests are disabled (membase.clients.guard.ALLOW_MODEL_REQUESTS is False); "
            "use a fake model from membase.clients.fake or wrap the call in allow_model_requests()"
        )


@contextmanager
def allow_model_requests(allow: bool = True) -> Iterator[None]:
    """Temporarily set `ALLOW_MODEL_REQUESTS` (restores the previous value on exit)."""
    global ALLOW_MODEL_REQUESTS
    previous = ALLOW_MODEL_REQUESTS
    ALLOW_MODEL_REQUESTS = allow
    try:
        yield
    finally:
        ALLOW_MODEL_REQUESTS = previous
