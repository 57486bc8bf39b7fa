"""The tracer's exceptions."""

from __future__ import annotations

from typing import Any

__all__ = ["ExecNetworkKeyError", "GraphFormatError", "MemTraceError", "TraceConsistencyError"]


class MemTraceError(Exception):
    """Root of every user-facing error of MemTrace's packages.

    It lives here, in the bottom package, so that every package may derive from it;
    ``membase.exceptions`` re-exports it. Each subclass also keeps its built-in base
    (``ValueError``, ``KeyError``, ``FileNotFoundError``, ``RuntimeError`` ...), so a caller's
    ``except ValueError`` keeps working while ``except MemTraceError`` catches them all.
    """


class ExecNetworkKeyError(MemTraceError, KeyError):
    """An id (node, edge, op or session) that the graph does not contain."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class GraphFormatError(MemTraceError, ValueError):
    """A graph file or dict that does not follow the smartcomment 0.1.2 export format."""


_WINDOW = 60


def _diff_window(old: str, new: str) -> tuple[int, str, str]:
    limit = min(len(old), len(new))
    pos = next((i for i in range(limit) if old[i] != new[i]), limit)
    lo = max(0, pos - _WINDOW)
    return pos, old[lo : pos + _WINDOW], new[lo : pos + _WINDOW]


class TraceConsistencyError(MemTraceError, RuntimeError):
    """A strict graph saw a new value under an identity that already has a different value.

    Attributes:
        user_value: The value passed to the tracer.
        user_value_encoded: Its encoded string.
        existing_variable: The latest stored version under the same identity.
        identity_name: The identity (full name) that collided.
    """

    def __init__(self, *, user_value: Any, user_value_encoded: str, existing_variable: Any, identity_name: str):
        self.user_value = user_value
        self.user_value_encoded = user_value_encoded
        self.existing_variable = existing_variable
        self.identity_name = identity_name
        pos, old, new = _diff_window(existing_variable.value, user_value_encoded)
        super().__init__(
            f"Strict graph: identity {identity_name!r} already holds a different value "
            f"(existing node {existing_variable.full_node_id!r}, version {existing_variable.version}).\n"
            f"First difference at character {pos}:\n"
            f"  stored: {old!r}\n"
            f"  new:    {new!r}\n"
            "Record the change explicitly with `with comment_mutation(target=...)`, use a different "
            "identity (id_strategy), pass identity_only=True to reuse the stored node, or open the "
            "graph with strict=False to create a new version."
        )
