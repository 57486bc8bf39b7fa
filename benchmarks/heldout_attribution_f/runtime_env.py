"""What every recording shares: the edit points, a reproducible clock and id source, and the
clean-up that gives an exported graph the source locations of the memory system it imitates.

The simulated layers call ``hooks(stage, key, value, **context)`` at each point where a real
system's component (an LLM call, a buffer update, a ranking) produces a value. Without an edit the
value passes through unchanged, so the recording code is the same with and without one; the op
that consumed the edit point is remembered with ``hooks.mark`` so that a label can name it.
"""

from __future__ import annotations

import contextlib
import json
import random
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

Edit = Callable[..., Any]


def jdump(value: Any) -> str:
    """The JSON encoding membase uses for messages and memory units."""
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


@dataclass
class Hooks:
    stage: str | None = None
    key: str | None = None
    edit: Edit | None = None
    fired: list[tuple[Any, Any]] = field(default_factory=list)
    ops: dict[tuple[str, str], str] = field(default_factory=dict)

    def __call__(self, stage: str, key: str, value: Any, **context: Any) -> Any:
        if self.edit is None or stage != self.stage or key != self.key:
            return value
        new = self.edit(value, **context)
        self.fired.append((value, new))
        return new

    def mark(self, stage: str, key: str, op_id: str) -> None:
        self.ops[(stage, key)] = op_id


class SimClock:
    """Millisecond clock: one tick per record, plus explicit waits for model calls."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.ms = 0

    def now(self) -> str:
        self.ms += 1
        t = self.start + timedelta(milliseconds=self.ms)
        return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"

    def wait(self, ms: int) -> None:
        self.ms += ms

    def ns(self) -> int:
        return int((self.start - datetime(1970, 1, 1)).total_seconds() * 1_000_000_000) + self.ms * 1_000_000


@contextlib.contextmanager
def reproducible(seed: int, start: datetime) -> Iterator[tuple[SimClock, random.Random]]:
    """Patch the tracer's clock and uuid4 so that one seed gives one byte-identical graph."""
    import smartcomment.runtime.network as network
    import smartcomment.schema.base as base

    clock = SimClock(start)
    rng = random.Random(seed)
    ids = random.Random(seed + 1)
    with mock.patch.object(base, "now_timestamp", clock.now), \
            mock.patch.object(network, "now_timestamp", clock.now), \
            mock.patch.object(uuid, "uuid4", lambda: uuid.UUID(int=ids.getrandbits(128), version=4)):
        yield clock, rng


# Where the recording code of each module would live in membase.
_SOURCES = {
    "trace_lc.py": "membase/layers/long_context.py",
    "trace_rag.py": "membase/layers/naive_rag.py",
    "trace_mem0.py": "membase/baselines/mem0/memory/main.py",
    "trace_evermemos.py": "membase/baselines/evermemos/online_memory/memory_manager.py",
    "trace_runner.py": "membase/runners/pipeline.py",
    "trace_utils.py": "membase/utils/tracing.py",
}


def relocate(export: dict[str, Any]) -> dict[str, Any]:
    """Give every record the source file of the membase module it imitates."""
    for kind in ("nodes", "edges", "operations", "sessions"):
        for rec in export["data"].get(kind, []):
            name = Path(rec.get("filename") or "").name
            if name in _SOURCES:
                rec["filename"] = _SOURCES[name]
                rec["trigger_point"] = f"{rec['filename']}:{rec['lineno']}"
            elif rec.get("filename") not in (None, "<sentinel>"):
                raise ValueError(f"record recorded outside the traced modules: {rec.get('filename')}")
    return export
