"""Normalise an exported graph so that runs differing only in random ids, times and source
locations compare equal."""

from __future__ import annotations

import json
import re

_RANDOM_ID = re.compile(r"\b(graph|session|op|edge)-[0-9a-f]{32}\b")
_VOLATILE = {"created_at", "filename", "lineno", "trigger_point"}


def normalize(export: dict) -> dict:
    """Replace random ids by their order of first appearance and drop times and locations."""
    text = json.dumps(export, sort_keys=False)
    names: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        return names.setdefault(match.group(0), f"{match.group(1)}-#{len(names)}")

    data = json.loads(_RANDOM_ID.sub(rename, text))
    data.pop("created_at", None)
    for key in ("nodes", "edges", "operations", "sessions"):
        data["data"][key] = [{k: v for k, v in rec.items() if k not in _VOLATILE} for rec in data["data"].get(key, [])]
    return data
