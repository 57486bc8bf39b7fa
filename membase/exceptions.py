"""Exceptions raised by membase. Messages name the offending thing and say how to fix it.

``MemTraceError`` (defined in the bottom package, smartcomment) is the root of every
user-facing error of the project; it is re-exported here for callers above membase.
"""

from __future__ import annotations

from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "ConfigError",
    "DatasetError",
    "FATAL_ERRORS",
    "MemoryNotFoundError",
    "MemBaseError",
    "MemTraceError",
    "ModelRequestError",
    "ModelRequestsBlockedError",
    "ModelUnreachableError",
]


class MemBaseError(MemTraceError):
    """Base class of every membase error."""


class ConfigError(MemBaseError, ValueError):
    """A layer/runner configuration is invalid (unknown key, wrong type, missing file)."""


class DatasetError(MemBaseError, ValueError):
    """A dataset file is missing or malformed."""


class MemoryNotFoundError(MemBaseError, FileNotFoundError):
    """A user's saved memory is missing (search before construction); fails that user only."""


class ModelRequestError(MemBaseError, RuntimeError):
    """A model request failed after all retries."""


class ModelUnreachableError(ModelRequestError):
    """The model endpoint could not be reached at all (connection refused, DNS, timeout)."""


class ModelRequestsBlockedError(MemBaseError, RuntimeError):
    """A real model request was attempted while `membase.clients.guard.ALLOW_MODEL_REQUESTS` is False."""


FATAL_ERRORS: tuple[type[Exception], ...] = (ModelUnreachableError, ModelRequestsBlockedError, ConfigError)
"""Errors no retry or next message can fix (dead endpoint, blocked requests, bad configuration or
credentials): layers and runners re-raise them instead of recording a per-item failure."""
