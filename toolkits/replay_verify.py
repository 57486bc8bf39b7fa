"""Verify attributions by counterfactual replay, and label natural failures without humans.

``verify_records`` takes the records of ``run_error_attribution.py`` on a run folder of
``python -m membase run`` and replays each case with its blamed op repaired
(:class:`membase.replay.RunReplayer`): ``record["replay"]`` says whether the repair rescued the
answer, the new prediction and verdict, and what the replay cost. With ``search="earliest"`` the
candidate ops of a case — the ops downstream of its evidence messages, in execution order — are
repaired one after another, and the first whose repair rescues the answer is the case's
``counterfactual_label``. Finished replays are journaled (one JSON line each), so an interrupted
verification resumes where it stopped.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from membase.replay import RunReplayer

__all__ = [
    "ERROR_TYPE_OF_STAGE",
    "STAGE_OF_ERROR_TYPE",
    "add_replay_arguments",
    "candidate_ops",
    "check_replay_arguments",
    "earliest_rescue",
    "read_output",
    "replay_line",
    "replay_metrics",
    "verify_output",
    "verify_records",
    "write_labelled_benchmark",
]

STAGE_OF_ERROR_TYPE = {
    "ExtractionError": "extraction",
    "UpdateError": "update",
    "DeletionError": "deletion",
    "RetrievalError": "retrieval",
    "ResponseError": "response",
}
ERROR_TYPE_OF_STAGE = {stage: error for error, stage in STAGE_OF_ERROR_TYPE.items()}
_SPLIT_OF_LAYER = {"Long-Context": "long_context", "NaiveRAG": "rag", "Mem0": "mem0", "EverMemOS": "evermemos"}

Progress = Callable[[str], None]


def qa_id_of(record: dict[str, Any]) -> str:
    """The question's id out of a record's ``query_id`` (``query:<id>@<version>``)."""
    name = str(record.get("query_id", "")).rsplit("@", 1)[0]
    return name.split(":", 1)[1] if name.startswith("query:") else name


def trajectory_of(record: dict[str, Any]) -> str:
    """The trajectory of a record: its ``trajectory`` field, else its graph's folder (``traced_data/<trajectory>/``)."""
    return str(record.get("trajectory") or Path(str(record.get("graph_path", ""))).parent.name)


class _Journal:
    """Finished replays as JSON lines, keyed by case, op and stage (resume after Ctrl-C or kill -9)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.done: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                    self.done[item["key"]] = item["outcome"]
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a kill: that replay runs again

    def get(self, key: str) -> dict[str, Any] | None:
        return self.done.get(key)

    def put(self, key: str, outcome: dict[str, Any]) -> None:
        self.done[key] = outcome
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"key": key, "outcome": outcome}) + "\n")
                handle.flush()

    def remove(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def _replay(replayer: RunReplayer, journal: _Journal, record: dict[str, Any], op_id: str, stage: str) -> dict[str, Any]:
    trajectory, qa_id = trajectory_of(record), qa_id_of(record)
    key = f"{trajectory}|{qa_id}|{op_id}|{stage}"
    cached = journal.get(key)
    if cached is not None:
        return cached
    outcome = replayer.repair(trajectory, qa_id, op_id, stage).as_dict()
    journal.put(key, outcome)
    return outcome


def verify_records(
    run_dir: str | Path,
    records: list[dict[str, Any]],
    *,
    search: str | None = None,
    answer_model: str | None = None,
    allow_new_calls: bool = True,
    max_candidates: int = 12,
    journal_path: str | Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Replay every attributed record with its blamed op repaired (and search the earliest rescuing op).

    Each record gains ``replay`` (and, with ``search="earliest"``, ``counterfactual_label``) in place.

    Args:
        run_dir: the run folder the records were attributed on.
        records: ``run_error_attribution.py`` records (``query_id``, ``graph_path``,
            ``error_attribution_result``).
        search: None, or ``"earliest"`` to label each case by the earliest op whose repair rescues it.
        answer_model: a second answer model spec for response checks.
        allow_new_calls: False fails a replay whose call is not in the run's cache.
        max_candidates: most candidate ops repaired per case in the search.
        journal_path: where finished replays are kept (resume); removed when all are done.
        progress: called with one line per case.

    Returns:
        ``replay_metrics(records)``.

    Raises:
        membase.replay.ReplayDataMissing: the folder is not a replayable run (before any case).
    """
    journal = _Journal(Path(journal_path) if journal_path is not None else None)
    with RunReplayer(run_dir, allow_new_calls=allow_new_calls, answer_model=answer_model) as replayer:
        for n, record in enumerate(records, start=1):
            started = time.perf_counter()
            result = record.get("error_attribution_result") or {}
            stage = STAGE_OF_ERROR_TYPE.get(str(result.get("error_type", "")))
            if stage and result.get("op_id"):
                record["replay"] = _replay(replayer, journal, record, str(result["op_id"]), stage)
            if search == "earliest":
                record["counterfactual_label"] = _earliest(replayer, journal, record, max_candidates)
            if progress:
                progress(f"replay {n}/{len(records)} {record.get('query_id')}: {_describe(record)} "
                         f"({time.perf_counter() - started:.1f}s)")
    journal.remove()
    return replay_metrics(records)


def _describe(record: dict[str, Any]) -> str:
    replay = record.get("replay")
    said = "not attributed" if replay is None else (
        f"rescued={replay.get('rescued')}" if replay.get("status") == "replayed" else replay.get("status", "?"))
    label = record.get("counterfactual_label")
    if label is not None:
        said += f", earliest rescue: {label.get('op_name') or 'none'}"
    return said


def candidate_ops(replayer: RunReplayer, record: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    """Ops ``(op_id, name, stage)`` to try, in execution order, along the lineage of the case's evidence.

    A construction op is a candidate where the information could have been lost (``_loses``):
    a unit holding it rewritten without it, or something the op processed that none of its
    outputs passes on. The question's own retrieval call comes last, as one candidate. Each op is tried with the repair its stage implies: a
    loss in the call that ingested an evidence message is an extraction, a later loss an update
    or a deletion.
    """
    trajectory, qa_id = trajectory_of(record), qa_id_of(record)
    base = replayer.baseline(trajectory)
    graph = replayer.original_export(trajectory)["data"]
    evidence = replayer.evidence(trajectory, qa_id)
    holds = {_full_id(n): evidence.holds(_text_of(n.get("value"))) for n in graph["nodes"]}
    category = {_full_id(n): n.get("category") for n in graph["nodes"]}
    inputs: dict[str, set[str]] = defaultdict(set)
    outputs: dict[str, set[str]] = defaultdict(set)
    for edge in graph["edges"]:
        inputs[edge["op_id"]].add(edge["source_full_node_id"])
        outputs[edge["op_id"]].add(edge["target_full_node_id"])
    evidence_calls = _evidence_calls(replayer, trajectory, evidence)
    out: list[tuple[str, str | None, str]] = []
    query_ops: list[tuple[str, str | None]] = []
    for op_id, name in base.ops:
        located = base.op_calls.get(op_id)
        if located is None:
            continue
        key = located[0]
        if key[0] == "retrieve":
            if key[1] == qa_id:
                query_ops.append((op_id, name))
            continue
        if _loses(inputs[op_id], outputs[op_id], holds, category):
            stages = ["extraction"] if key in evidence_calls else _later_loss_stages(replayer.layer_type, name)
            out.extend((op_id, name, stage) for stage in stages)
    losing = _losing_retrieval(query_ops, outputs, holds, category)
    return [*out, (*losing, "retrieval")] if losing else out


def _losing_retrieval(ops: list[tuple[str, str | None]], outputs: dict[str, set[str]], holds: dict[str, bool],
                      category: dict[str, Any]) -> tuple[str, str | None] | None:
    """The op of the question's retrieval call to blame: one repair fixes the call's final result,
    so the call is one candidate, named by its first op whose results no longer hold the information
    after an earlier step of the same call had it (a rerank that dropped it), else its first op."""
    had = False
    for op_id, name in ops:
        kept = any(holds.get(n, False) for n in _kept(outputs[op_id], category))
        if had and not kept:
            return op_id, name
        had = had or kept
    return ops[0] if ops else None


_RESTATING = frozenset({"prompt", "similar_memories", "message", "parameter", "message & query"})
_SHOWN = frozenset({"prompt", "similar_memories", "parameter", "message & query"})
"""Inputs an op is shown, not given to keep (a decision sees the memories similar to a new fact)."""


def _loses(inputs: set[str], outputs: set[str], holds: dict[str, bool], category: dict[str, Any]) -> bool:
    """Whether an op lost the information.

    A memory unit that held it loses it where the op writes the unit's next version without it
    (an update or a deletion); a unit the op only read stays as it was. Anything else the op was
    given to process (a message, a buffer, extracted facts, a document) is lost when none of what
    the op passes on still holds it.
    """
    written = {_unit_name(n): n for n in outputs if category.get(n) == "memory_entry"}
    for node in inputs:
        if category.get(node) == "memory_entry" and holds.get(node, False):
            after = written.get(_unit_name(node))
            if after is not None and after != node and not holds.get(after, False):
                return True
    carried = [n for n in inputs if category.get(n) not in _SHOWN | {"memory_entry"} and holds.get(n, False)]
    return bool(carried) and not any(holds.get(n, False) for n in _kept(outputs, category))


def _unit_name(full_id: str) -> str:
    return full_id.rsplit("@", 1)[0]


def _kept(outputs: set[str], category: dict[str, Any]) -> set[str]:
    """What an op passes on: the memory units it writes when it writes any (a decision that also
    restates the old unit in its reply has still replaced it), else its outputs other than
    restated inputs (prompts, the memories it was shown)."""
    units = {n for n in outputs if category.get(n) == "memory_entry"}
    return units or {n for n in outputs if category.get(n) not in _RESTATING}


def _full_id(node: dict[str, Any]) -> str:
    """A node's full id as edges name it (``class:...:name@version``)."""
    return str(node.get("full_node_id") or f"{node.get('full_name') or node.get('name')}@{node.get('version')}")


def _text_of(value: Any) -> str:
    """The words of a node value: JSON-encoded values are decoded, so escapes do not glue words together."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return "\n".join(_text_of(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    return str(value)


def _evidence_calls(replayer: RunReplayer, trajectory: str, evidence: Any) -> set[tuple[Any, ...]]:
    traj, _ = replayer._trajectory(trajectory)
    positions = {m.id: i for i, m in enumerate(m for s in traj.sessions for m in s.messages)}
    return {("message", positions[m.id]) for m in evidence.messages if m.id in positions}


def _later_loss_stages(layer_type: str, name: str | None) -> list[str]:
    if layer_type == "Mem0" and name and name.endswith("update_memory_decision"):
        return ["update", "deletion"]
    if layer_type in ("Long-Context", "Mem0"):
        return ["update"]
    return ["extraction"]


def earliest_rescue(replayer: RunReplayer, record: dict[str, Any], max_candidates: int = 12) -> dict[str, Any]:
    """The case's counterfactual label: the earliest candidate op whose repair rescues the answer."""
    return _earliest(replayer, _Journal(None), record, max_candidates)


def _earliest(replayer: RunReplayer, journal: _Journal, record: dict[str, Any], limit: int) -> dict[str, Any]:
    try:
        candidates = candidate_ops(replayer, record)
    except (OSError, ValueError, KeyError) as exc:
        return {"op_id": None, "error_type": None, "searched": 0, "error": f"no candidates: {exc}"}
    tried = 0
    chosen = candidates[:limit]
    if len(candidates) > limit and candidates[-1][2] == "retrieval":  # a cap never hides the query's own retrieval
        chosen = [*candidates[: max(limit - 1, 0)], candidates[-1]]
    for op_id, name, stage in chosen:
        outcome = _replay(replayer, journal, record, op_id, stage)
        if outcome.get("status") == "replayed":
            tried += 1
        if outcome.get("rescued"):
            return {"op_id": op_id, "op_name": name, "error_type": ERROR_TYPE_OF_STAGE[stage], "searched": tried,
                    "candidates": len(candidates)}
    return {"op_id": None, "error_type": None, "searched": tried, "candidates": len(candidates),
            "note": "no single-op repair among the candidates rescues the answer"}


def replay_metrics(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Rescued share per error type and per op name, the recovery gain, and the agreement with the labels."""
    records = list(records)
    by_type: dict[str, Counter[str]] = defaultdict(Counter)
    by_op: dict[str, Counter[str]] = defaultdict(Counter)
    totals: Counter[str] = Counter()
    for record in records:
        replay = record.get("replay")
        if replay is None:
            continue
        result = record.get("error_attribution_result") or {}
        error = str(result.get("error_type") or "none")
        op = str((record.get("attributed_operation") or {}).get("op_name") or "unknown")
        kind = _kind(replay)
        for counter in (by_type[error], by_op[op], totals):
            counter[kind] += 1
            counter["replays"] += 1
    out: dict[str, Any] = {
        "replayed_cases": totals["replays"],
        "rescued": totals["rescued"],
        "rescued_share": _share(totals),
        "not_rescued": totals["not_rescued"],
        "unsupported": totals["unsupported"],
        "failed": totals["failed"],
        "response_checks": totals["response_check"],
        "by_error_type": {k: {**dict(v), "rescued_share": _share(v)} for k, v in sorted(by_type.items())},
        "by_op_name": {k: {**dict(v), "rescued_share": _share(v)} for k, v in sorted(by_op.items())},
    }
    labelled = [r for r in records if "counterfactual_label" in r]
    if labelled:
        out["counterfactual"] = _agreement(labelled)
    return out


def _kind(replay: dict[str, Any]) -> str:
    status = replay.get("status")
    if status != "replayed":
        return str(status)
    if replay.get("stage") == "response":
        return "response_check"
    return "rescued" if replay.get("rescued") else "not_rescued"


def _share(counter: Counter[str]) -> float | None:
    judged = counter["rescued"] + counter["not_rescued"]
    return round(counter["rescued"] / judged, 4) if judged else None


def _agreement(records: list[dict[str, Any]]) -> dict[str, Any]:
    labelled = [r for r in records if r["counterfactual_label"].get("op_id")]
    type_hits = op_hits = 0
    for record in labelled:
        label, result = record["counterfactual_label"], record.get("error_attribution_result") or {}
        type_hits += result.get("error_type") == label["error_type"]
        op_hits += result.get("op_id") == label["op_id"]
    n = len(labelled)
    return {
        "cases": len(records),
        "labelled": n,
        "no_single_op_rescue": len(records) - n,
        "label_types": dict(Counter(r["counterfactual_label"]["error_type"] for r in labelled)),
        "error_type_agreement": round(type_hits / n, 4) if n else None,
        "op_agreement": round(op_hits / n, 4) if n else None,
    }


def write_labelled_benchmark(run_dir: str | Path, records: list[dict[str, Any]], out_dir: str | Path) -> list[Path]:
    """Write the counterfactually labelled cases in MemTraceBench layout (``<out>/<split>/<graph>.json``).

    Every graph that has labelled cases is copied with ``data.annotations`` = its records carrying
    ``final_error_type`` and ``final_op_id`` from ``counterfactual_label``, so any strategy can be
    scored against counterfactual labels with ``run_error_attribution.py <out> <split>``.
    """
    from membase.replay import read_manifest
    from toolkits._case_cache import atomic_write_json

    split = _SPLIT_OF_LAYER.get(read_manifest(run_dir).layer_type, "rag")
    by_graph: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        label = record.get("counterfactual_label") or {}
        if label.get("op_id"):
            annotation = {k: v for k, v in record.items() if k in _ANNOTATION_KEYS}
            annotation.update(final_error_type=label["error_type"], final_op_id=label["op_id"],
                              label_source="counterfactual_replay")
            by_graph[str(record["graph_path"])].append(annotation)
    written = []
    for graph_path, labelled in sorted(by_graph.items()):
        export = json.loads(Path(graph_path).read_text(encoding="utf-8"))
        export["data"]["annotations"] = labelled
        target = Path(out_dir) / split / f"{split}-{Path(graph_path).parent.name}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(target, export)
        written.append(target)
    return written


_ANNOTATION_KEYS = ("query_id", "query", "golden_answers", "golden_answers_id", "prediction", "prediction_id",
                    "source_evidence_ids")



def add_replay_arguments(parser: Any) -> None:
    """``--verify replay`` and its options (run_error_attribution.py)."""
    from toolkits._cli import positive_int

    group = parser.add_argument_group("counterfactual replay (run folders of `python -m membase run`)")
    group.add_argument("--verify", choices=("none", "replay"), default="none",
                       help="replay: re-run the memory system with each blamed op repaired and record whether the "
                       "answer is rescued (record['replay'], metrics['replay']); see docs/replay.md")
    group.add_argument("--from", dest="from_output", default=None, metavar="OUTPUT.json",
                       help="verify the records of an existing attribution output instead of attributing again")
    group.add_argument("--replay-search", choices=("none", "earliest"), default="none",
                       help="earliest: repair the candidate ops of each case in execution order; the first that "
                       "rescues the answer is its counterfactual_label")
    group.add_argument("--replay-max-candidates", type=positive_int, default=12,
                       help="most candidate ops repaired per case by --replay-search")
    group.add_argument("--replay-answer-model", default=None,
                       help="a second answer model for response checks (never counted as a repair)")
    group.add_argument("--replay-offline", action="store_true",
                       help="make no model request: a call missing from the run's cache fails that case's replay")
    group.add_argument("--replay-labels-out", default=None, metavar="DIR",
                       help="write the counterfactually labelled cases in MemTraceBench layout to DIR")


def check_replay_arguments(args: Any) -> str | None:
    """The usage problem of the replay flags, or None (checked before any case runs)."""
    from membase.replay import ReplayDataMissing, read_manifest

    wants = args.verify == "replay" or args.replay_search != "none" or args.from_output or args.replay_labels_out
    if not wants:
        return None
    if args.verify != "replay":
        return "--from, --replay-search and --replay-labels-out need --verify replay"
    if args.replay_labels_out and args.replay_search != "earliest":
        return "--replay-labels-out needs --replay-search earliest (the labels come from the search)"
    if args.from_output and not Path(args.from_output).is_file():
        return f"--from {args.from_output!r}: no such attribution output"
    try:
        read_manifest(args.dataset_dir)
    except ReplayDataMissing as exc:
        return f"--verify replay: {exc}"
    return None


def verify_output(args: Any, output: dict[str, Any], journal_path: Path, progress: Progress | None) -> dict[str, Any]:
    """Add ``replay`` to each record and ``metrics.replay`` to an attribution output (in place)."""
    metrics = verify_records(
        args.dataset_dir, output.get("results", []), search=None if args.replay_search == "none" else args.replay_search,
        answer_model=args.replay_answer_model, allow_new_calls=not args.replay_offline,
        max_candidates=args.replay_max_candidates, journal_path=journal_path, progress=progress)
    output.setdefault("metrics", {})["replay"] = metrics
    if args.replay_labels_out:
        written = write_labelled_benchmark(args.dataset_dir, output.get("results", []), args.replay_labels_out)
        metrics["labels_written"] = [str(p) for p in written]
    return output


def read_output(path: str) -> dict[str, Any]:
    """An attribution output file (``--from``); ValueError when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--from {path!r} is not readable JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError(f"--from {path!r} is not an attribution output (no results list)")
    return data


def replay_line(metrics: dict[str, Any]) -> str:
    """The summary line the CLI prints."""
    line = (f"replay: {metrics['rescued']} of {metrics['rescued'] + metrics['not_rescued']} repaired case(s) "
            f"rescued ({metrics['unsupported']} unsupported, {metrics['failed']} failed, "
            f"{metrics['response_checks']} response check(s))")
    cf = metrics.get("counterfactual")
    if cf:
        line += (f"; counterfactual labels for {cf['labelled']} of {cf['cases']} case(s): the attribution agrees on "
                 f"the error type in {cf['error_type_agreement']} and on the op in {cf['op_agreement']}")
    return line
