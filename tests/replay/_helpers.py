"""Shared pieces of the replay tests: small runs of `python -m membase run` and graph comparisons."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from membase.cli import main as membase_main

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

__all__ = [
    "READER",
    "TOKEN_JUDGE",
    "differing_ops",
    "make_run",
    "op_outputs",
]

READER = "py:toolkits.faultbench:reader_model"
TOKEN_JUDGE = "py:toolkits.faultbench:token_judge_model"


def make_run(locomo: Path, out: Path, layer_config: dict[str, Any], *, max_messages: int = 40, top_k: int = 3,
             qa_model: str = READER, judge_model: str = TOKEN_JUDGE, extra: tuple[str, ...] = ()) -> Path:
    """Run `python -m membase run` in-process on LoCoMo conversation 1 cut to ``max_messages``."""
    config = out.parent / f"{out.name}-layer.json"
    config.write_text(json.dumps(layer_config), encoding="utf-8")
    code = membase_main(["run", "--dataset", str(locomo), "--layer-config", str(config), "--start-idx", "0",
                         "--end-idx", "1", "--max-messages", str(max_messages), "--output-dir", str(out),
                         "--qa-model", qa_model, "--judge-model", judge_model, "--metrics", "llm_judge",
                         "--quiet", "--top-k", str(top_k), *extra])
    assert code == 0, f"membase run failed with exit {code}"
    return out


def op_outputs(export: dict[str, Any]) -> list[tuple[str | None, list[str]]]:
    """Each op of an exported graph, in order: (name, the values of the nodes it wrote).

    Unit ids are uuids drawn anew by every run: they are masked so that two runs compare equal.
    """
    data = export["data"]
    values = {f"{n.get('full_name') or n['name']}@{n['version']}": _UUID.sub("<id>", str(n.get("value")))
              for n in data["nodes"]}
    written: dict[str, list[str]] = {}
    for edge in data["edges"]:
        target = edge["target_full_node_id"]
        written.setdefault(edge["op_id"], [])
        if values.get(target) not in written[edge["op_id"]]:
            written[edge["op_id"]].append(values.get(target, f"<missing {target}>"))
    return [(op.get("op_name"), sorted(written.get(op["op_id"], []))) for op in data["operations"]]


def differing_ops(before: dict[str, Any], after: dict[str, Any]) -> list[int]:
    """Positions whose op name or written values differ between two exports of the same trajectory."""
    a, b = op_outputs(before), op_outputs(after)
    out = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y]
    if len(a) != len(b):
        out.append(min(len(a), len(b)))
    return out
