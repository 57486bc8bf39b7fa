"""Validation of exported graph JSON: every problem becomes one :class:`GraphFormatError`.

The error message names the offending location (``data.nodes[3].version``) and what was
expected, so a truncated or hand-edited MemTraceBench file fails with a sentence, never with a
bare ``KeyError``.
"""

from __future__ import annotations

from typing import Any

from smartcomment.runtime.errors import GraphFormatError
from smartcomment.schema.base import is_valid_timestamp

_MISSING = object()

# (key, kind, default); default _MISSING means required.
_COMMON = [("created_at", "ts", None), ("filename", "str", _MISSING), ("lineno", "lineno", _MISSING)]
_FIELDS: dict[str, list[tuple[str, str, Any]]] = {
    "Variable": _COMMON
    + [
        ("name", "name", _MISSING),
        ("version", "version", 1),
        ("value", "str", _MISSING),
        ("comment", "opt_str", None),
        ("category", "str", "variable"),
        ("graph_id", "str", _MISSING),
        ("user_id", "opt_str", None),
        ("class_name", "opt_str", None),
        ("project_id", "opt_str", None),
        ("session_id", "str", _MISSING),
        ("metadata", "dict", None),
    ],
    "OpRecord": _COMMON
    + [
        ("op_id", "str", None),
        ("op_name", "opt_str", None),
        ("comment", "opt_str", None),
        ("category", "str", "operation"),
        ("graph_id", "str", _MISSING),
        ("user_id", "opt_str", None),
        ("project_id", "opt_str", None),
        ("session_id", "str", _MISSING),
        ("metadata", "dict", None),
    ],
    "OpEdge": _COMMON
    + [
        ("edge_id", "str", None),
        ("graph_id", "str", _MISSING),
        ("user_id", "opt_str", None),
        ("project_id", "opt_str", None),
        ("session_id", "str", _MISSING),
        ("op_id", "str", _MISSING),
        ("category", "str", "operation"),
        ("source_full_node_id", "str", _MISSING),
        ("target_full_node_id", "str", _MISSING),
        ("comment", "opt_str", None),
        ("metadata", "dict", None),
    ],
    "Session": _COMMON
    + [
        ("session_id", "str", None),
        ("session_name", "opt_str", None),
        ("graph_id", "str", _MISSING),
        ("user_id", "opt_str", None),
        ("project_id", "opt_str", None),
        ("comment", "opt_str", None),
        ("category", "str", "session"),
        ("metadata", "dict", None),
    ],
}

_EXPECTED = {
    "ts": "a timestamp 'YYYY-MM-DD HH:MM:SS.mmm'",
    "str": "a string",
    "opt_str": "a string or null",
    "lineno": "an integer >= 0",
    "version": "an integer >= 1",
    "name": "a string containing an alphanumeric character",
    "dict": "an object",
}


def _check(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "opt_str":
        return value is None or isinstance(value, str)
    if kind == "ts":
        return value is None or is_valid_timestamp(value)
    if kind == "lineno":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == "version":
        return isinstance(value, int) and not isinstance(value, bool) and value >= 1
    if kind == "name":
        return isinstance(value, str) and any(ch.isalnum() for ch in value)
    if kind == "dict":
        return value is None or isinstance(value, dict)
    raise AssertionError(kind)


def validate_record(cls: type, data: Any, *, where: str):
    """Check ``data`` against the field table of ``cls`` and build the record."""
    if not isinstance(data, dict):
        raise GraphFormatError(f"{where}: expected an object, got {type(data).__name__}")
    kwargs: dict[str, Any] = {}
    for key, kind, default in _FIELDS[cls.__name__]:
        value = data.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise GraphFormatError(f"{where}: missing required key {key!r}")
            continue
        if not _check(kind, value):
            shown = repr(value)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            raise GraphFormatError(f"{where}.{key}: expected {_EXPECTED[kind]}, got {shown}")
        kwargs[key] = value
    return cls(**kwargs)
