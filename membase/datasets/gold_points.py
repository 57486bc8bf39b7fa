"""Extraction check for RealMem runs: which gold memory points no memory unit holds.

RealMem lists, per session, the memory points a good memory system should keep
(`extracted_memory`); the loader puts them in the session's metadata (`gold_memory_points`), so a
traced run's graph carries them. This check reads a `graph_construction.json` (or a run folder)
and, for every gold point, finds the memory units whose text holds it: at the end of construction
(the latest version of each unit, deleted units left out) and at any time (any version). A point
held by nothing at the end was never extracted, or was lost later when some earlier version held it.

"Holds" is a word test, not a judgement: the share of the point's content words (topic prefix,
stop words and one-letter words left out, stemmed: the project's `membase.utils.text`) that occur
in the unit's text must reach `threshold`. RealMem's points paraphrase what was said, so a verbatim layer (Long-Context,
NaiveRAG) scores below 1 even when it holds the point; the score is reported with each point.

    python -m membase.datasets.gold_points RUN_DIR [--threshold 0.6] [--output check.json]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from membase.datasets.realmem import strip_topic
from membase.utils.text import content_words

__all__ = ["GoldPointCheck", "check_gold_points", "check_run", "main", "point_recall"]

# RealMem's points all speak of "the user": the word names no content of a point
_POINT_SUBJECT = "user"


def _words(text: str) -> set[str]:
    return {w for w in content_words(text) if len(w) > 1 and w != _POINT_SUBJECT}


def point_recall(point: str, text: str) -> float:
    """Share of the point's content words (topic prefix dropped) that occur in `text`; 1.0 if it has none."""
    wanted = _words(strip_topic(point))
    return 1.0 if not wanted else len(wanted & _words(text)) / len(wanted)


@dataclass(frozen=True, kw_only=True)
class GoldPointCheck:
    """One gold memory point and the memory units that hold it."""

    index: str | None
    """The point's id in the dataset (`extracted_memory[].index`)."""
    content: str
    session_id: str
    source_message_id: str | None
    held_at_end_by: list[str] = field(default_factory=list)
    """Full node ids of the latest (not deleted) memory-unit versions that hold the point."""
    ever_held_by: list[str] = field(default_factory=list)
    """Full node ids of every memory-unit version that held it (first ones first)."""
    best_recall: float = 0.0
    """The best word recall over the final units."""

    @property
    def status(self) -> str:
        """`held`, `lost` (an earlier version held it) or `never_held`."""
        if self.held_at_end_by:
            return "held"
        return "lost" if self.ever_held_by else "never_held"


def _metadata(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw:
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            try:
                value = ast.literal_eval(raw)  # smartcomment may export metadata as a Python repr
            except (ValueError, SyntaxError):
                return {}
        return value if isinstance(value, dict) else {}
    return {}


def _memory_units(data: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(every memory-unit version, the latest version of each unit that was not deleted)."""
    versions = [n for n in data.get("nodes", []) if n.get("category") == "memory_entry"
                and str(n.get("name", "")).startswith("memory-unit")]
    latest: dict[str, dict[str, Any]] = {}
    for node in versions:  # the last inserted version is the latest one
        latest[node["full_name"]] = node
    markers = {n["full_node_id"] for n in data.get("nodes", []) if n.get("class_name") == "delete_marker"}
    deleted = {e["source_full_node_id"] for e in data.get("edges", []) if e.get("target_full_node_id") in markers}
    return versions, [n for n in latest.values() if n["full_node_id"] not in deleted]


def check_gold_points(graph: dict[str, Any], *, threshold: float = 0.6) -> list[GoldPointCheck]:
    """Check every gold memory point of an exported graph (see the module docstring).

    Args:
        graph: the JSON of a `graph_construction.json` (or any later graph of the same run).
        threshold: the word recall from which a unit holds a point.
    """
    data = graph.get("data", {})
    versions, final = _memory_units(data)
    checks = []
    for session in data.get("sessions", []):
        for point in _metadata(session.get("metadata")).get("gold_memory_points", []) or []:
            content = str(point.get("content", ""))
            scored = [(point_recall(content, str(n.get("value", ""))), n["full_node_id"]) for n in final]
            checks.append(GoldPointCheck(
                index=point.get("index"), content=content, session_id=str(session.get("session_id")),
                source_message_id=point.get("source_message_id"),
                held_at_end_by=[node for score, node in scored if score >= threshold],
                ever_held_by=[n["full_node_id"] for n in versions
                              if point_recall(content, str(n.get("value", ""))) >= threshold],
                best_recall=round(max((s for s, _ in scored), default=0.0), 3),
            ))
    return checks


def check_run(path: str | Path, *, threshold: float = 0.6) -> dict[str, list[GoldPointCheck]]:
    """Check each user's `graph_construction.json` of a run folder (or one graph file), by user id.

    Raises:
        ValueError: no graph file there, or one that is not a graph (one line naming the file).
    """
    root = Path(path)
    files = [root] if root.is_file() else sorted(root.glob("traced_data/*/graph_construction.json")) or sorted(
        root.glob("*/graph_construction.json"))
    if not files:
        raise ValueError(f"{str(root)!r}: no traced_data/<user>/graph_construction.json; pass a `python -m membase "
                         "run` output folder or a graph file")
    out: dict[str, list[GoldPointCheck]] = {}
    for file in files:
        try:
            graph = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"graph file {str(file)!r} cannot be read as JSON ({exc})") from None
        if not isinstance(graph, dict) or not isinstance(graph.get("data"), dict):
            raise ValueError(f"graph file {str(file)!r} is not an exported execution graph (no data object)")
        out[str(graph.get("user_id") or file.parent.name)] = check_gold_points(graph, threshold=threshold)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print, per user, the gold memory points no memory unit holds; exit 2 on bad input."""
    from membase.utils.argtypes import output_file

    parser = argparse.ArgumentParser(prog="python -m membase.datasets.gold_points",
                                     description="RealMem extraction check: the gold memory points that no memory "
                                                 "unit of a traced run holds.")
    parser.add_argument("run", help="output folder of `python -m membase run` on RealMem, or a graph file")
    parser.add_argument("--threshold", type=float, default=0.6, help="word recall from which a unit holds a point")
    parser.add_argument("--output", type=output_file, default=None, help="also write every point's check as JSON here")
    args = parser.parse_args(argv)
    if not 0.0 < args.threshold <= 1.0:
        parser.error(f"--threshold must be in (0, 1], got {args.threshold}")
    try:
        results = check_run(args.run, threshold=args.threshold)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for user, checks in results.items():
        missing = [c for c in checks if c.status != "held"]
        print(f"{user}: {len(checks) - len(missing)} of {len(checks)} gold memory points held at the end "
              f"({sum(c.status == 'lost' for c in missing)} lost after being held, "
              f"{sum(c.status == 'never_held' for c in missing)} never held)")
        for check in missing:
            text = " ".join(strip_topic(check.content).split())
            print(f"  {check.status}: {check.index} (recall {check.best_recall}): {text[:100]}")
    if args.output:
        from membase.utils.io import atomic_write_json

        try:
            atomic_write_json(args.output, {u: [{**asdict(c), "status": c.status} for c in cs]
                                            for u, cs in results.items()})
        except OSError as exc:
            print(f"error: cannot write --output {args.output!r}: {exc.strerror or exc} (the lines above are complete)",
                  file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
