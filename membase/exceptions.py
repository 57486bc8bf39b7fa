"""Exceptions raised by membase. Messages name the offending thing and say how to fix it."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DatasetError",
    "FATAL_ERRORS",
    "MemoryNotFoundError",
    "MemBaseError",
    "ModelRequestError",
    "ModelRequestsBlockedError",
    "ModelUnreachableError",
]


class MemBaseError(Exception):
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
