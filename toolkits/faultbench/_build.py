"""Building a fault-injection benchmark in the MemTraceBench file layout."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import tempfile
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolkits.evidence_flow import content_tokens
from toolkits.faultbench._faults import ERROR_TYPE_OF, FAULT_KINDS, Fault, FaultTarget, states_answer
from toolkits.faultbench._labels import find_label_op
from toolkits.faultbench._pipeline import run_pipeline

__all__ = ["SPLITS", "BuildConfig", "BuildReport", "build_faultbench", "candidate_targets", "cut_trajectory"]

logger = logging.getLogger(__name__)

#: MemTraceBench split → membase layer type.
SPLITS = {"long_context": "Long-Context", "rag": "NaiveRAG", "mem0": "Mem0", "evermemos": "EverMemOS"}


@dataclass(kw_only=True)
class BuildConfig:
    """What to build."""

    locomo_path: str
    out_dir: str
    splits: Sequence[str] = tuple(SPLITS)
    kinds: Sequence[str] = FAULT_KINDS
    cases_per_kind: int = 2
    """Cases per (split, fault kind)."""
    seed: int = 0
    max_messages: int = 60
    """Each conversation is cut to its first `max_messages` messages (keeps graphs small)."""
    top_k: int = 5
    conversations: Sequence[int] | None = None
    """1-based LoCoMo sample numbers to use (default: all, in seeded order)."""


@dataclass(kw_only=True)
class BuildReport:
    """What was built, and why candidate cases were dropped."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str) -> None:
        """Count one dropped candidate."""
        self.dropped[reason] = self.dropped.get(reason, 0) + 1


def cut_trajectory(trajectory: Any, max_messages: int) -> Any:
    """Return `trajectory` cut to its first `max_messages` messages (whole sessions kept in order)."""
    sessions, left = [], max_messages
    for session in trajectory.sessions:
        if left <= 0:
            break
        messages = session.messages[:left]
        left -= len(messages)
        sessions.append(session.model_copy(update={"messages": messages}))
    return trajectory.model_copy(update={"sessions": sessions})


def candidate_targets(trajectory: Any, qas: Sequence[Any]) -> list[tuple[Any, Any, int]]:
    """Questions a fault can aim at: `(qa, fact message, its index)`.

    A question qualifies when it is not adversarial, all its evidence lies in the trajectory,
    and exactly one message of the trajectory states the golden answer and it is an evidence
    message (the *fact message*). Uniqueness makes every injected fault decisive: once the
    fact is gone, nothing else in the conversation restores it.
    """
    messages = [m for s in trajectory.sessions for m in s.messages]
    index = {m.id: i for i, m in enumerate(messages)}
    out = []
    for qa in qas:
        evidence = qa.metadata.get("evidence") or []
        if qa.metadata.get("category_id") == 5 or not evidence or any(e not in index for e in evidence):
            continue
        answer = content_tokens(" ".join(qa.golden_answers))
        stating = [i for i, m in enumerate(messages) if states_answer(answer, m.content)]
        if len(stating) == 1 and messages[stating[0]].id in evidence:
            out.append((qa, messages[stating[0]], stating[0]))
    return out


@contextlib.contextmanager
def seeded_uuid4(rng: random.Random) -> Iterator[None]:
    """Make `uuid.uuid4()` deterministic (graph, op, edge, session and document ids)."""
    original = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]
    try:
        yield
    finally:
        uuid.uuid4 = original  # type: ignore[assignment]


def _fault_class(split: str) -> type[Fault]:
    from toolkits.faultbench import _layer_faults

    if split == "long_context":
        return _layer_faults.LongContextFault
    if split == "rag":
        return _layer_faults.NaiveRAGFault
    if split == "mem0":
        from toolkits.faultbench._mem0_faults import Mem0Fault

        return Mem0Fault
    if split == "evermemos":
        from toolkits.faultbench._evermemos_faults import EverMemOSFault

        return EverMemOSFault
    raise ValueError(f"unknown split {split!r}; choose from {sorted(SPLITS)}")


def make_layer(split: str, user_id: str, save_dir: str, fault: Fault | None = None) -> Any:
    """Build the split's layer with deterministic components (no network, no model)."""
    from membase.layers import build_layer

    if split == "long_context":
        return build_layer("Long-Context", user_id=user_id, save_dir=save_dir, context_window=100_000)
    if split == "rag":
        return build_layer("NaiveRAG", user_id=user_id, save_dir=save_dir, deferred=True, max_tokens=200,
                           vector_store="memory", retriever_name_or_path="fake:64", retriever_dim=64)
    return _fault_class(split).make_layer(user_id, save_dir, fault)  # type: ignore[attr-defined]


def build_faultbench(config: BuildConfig, *, progress: Callable[[str], None] | None = None) -> BuildReport:
    """Run the layers over LoCoMo with one injected fault per case and write the benchmark.

    Args:
        config: what to build.
        progress: optional callback receiving one line per written case.

    Returns:
        The report (cases written, candidates dropped by reason).

    Raises:
        ValueError: unknown split or fault kind.
    """
    from membase.datasets.locomo import load_locomo

    for split in config.splits:
        _fault_class(split)
    for kind in config.kinds:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; choose one of {FAULT_KINDS}")
    dataset = load_locomo(config.locomo_path)
    out = Path(config.out_dir)
    report = BuildReport()
    for split in config.splits:
        split_dir = out / split
        if split_dir.exists():
            shutil.rmtree(split_dir)
        split_dir.mkdir(parents=True)
        _build_split(split, dataset, config, split_dir, report, progress)
    manifest = {"config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()
                           if k not in ("out_dir", "locomo_path")},
                "cases": report.cases, "dropped": report.dropped}
    _atomic_write(out / "faultbench_manifest.json", manifest, indent=2)
    return report


def _build_split(split: str, dataset: Any, config: BuildConfig, split_dir: Path, report: BuildReport,
                 progress: Callable[[str], None] | None) -> None:
    rng = random.Random(f"{config.seed}:{split}")
    numbers = list(config.conversations or range(1, len(dataset) + 1))
    rng.shuffle(numbers)
    quota = {kind: config.cases_per_kind for kind in config.kinds}
    fault_cls = _fault_class(split)
    for number in numbers:
        if not any(quota.values()):
            return
        trajectory, qas = dataset[number - 1]
        trajectory = cut_trajectory(trajectory, config.max_messages)
        targets = candidate_targets(trajectory, qas)
        if not targets:
            continue
        n_messages = sum(len(s.messages) for s in trajectory.sessions)
        with _run_dir() as tmp, seeded_uuid4(random.Random(zlib.crc32(f"{config.seed}:{split}:{number}".encode()))):
            layer = make_layer(split, trajectory.id, str(Path(tmp) / "baseline"))
            try:
                baseline = run_pipeline(layer, trajectory, [t[0] for t in targets], top_k=config.top_k)
            finally:
                layer.cleanup()
        correct = [t for t in targets if baseline.records[t[0].id].score == 1.0]
        report.dropped["baseline_wrong"] = report.dropped.get("baseline_wrong", 0) + len(targets) - len(correct)
        for kind in config.kinds:
            pool = list(correct)
            rng.shuffle(pool)
            for qa, fact, fact_index in pool:
                if quota[kind] <= 0:
                    break
                if kind in ("update", "deletion") and fact_index >= n_messages - 1:
                    report.drop("no_message_after_fact")
                    continue
                act_index = rng.randint(fact_index + 1, n_messages - 1) if fact_index < n_messages - 1 else fact_index
                target = FaultTarget(qa=qa, fact_message=fact, fact_index=fact_index,
                                     answer_tokens=content_tokens(" ".join(qa.golden_answers)), act_index=act_index)
                case = _run_case(split, kind, number, trajectory, target, fault_cls, config, split_dir, report)
                if case is not None:
                    quota[kind] -= 1
                    report.cases.append(case)
                    if progress:
                        progress(f"{split}/{case['file']}: {case['final_error_type']} at {case['final_op_id']}")


@contextlib.contextmanager
def _run_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="faultbench-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _run_case(split: str, kind: str, number: int, trajectory: Any, target: FaultTarget, fault_cls: type[Fault],
              config: BuildConfig, split_dir: Path, report: BuildReport) -> dict[str, Any] | None:
    fault = fault_cls(kind, target)
    seed = zlib.crc32(f"{config.seed}:{split}:{kind}:{target.qa.id}".encode())
    with _run_dir() as tmp, seeded_uuid4(random.Random(seed)):
        layer = make_layer(split, trajectory.id, str(Path(tmp) / "run"), fault)
        try:
            run = run_pipeline(layer, trajectory, [target.qa], injector=fault, top_k=config.top_k,
                               graph_metadata={"faultbench_seed": config.seed})
        finally:
            layer.cleanup()
    record = run.records[target.qa.id]
    if not fault.fired:
        report.drop(f"{kind}_not_fired")
        return None
    if record.score != 0.0:
        report.drop(f"{kind}_answer_still_correct")
        return None
    export = run.graph.export_graph()
    op_id = find_label_op(fault, export, record)
    if op_id is None:
        report.drop(f"{kind}_op_not_found")
        return None
    filename = f"{split}-{kind}-{target.qa.id}.json"
    export["metadata"]["memtracebench_graph_filename"] = filename
    export["metadata"]["memtracebench_dataset_source"] = "LoCoMo"
    nodes = {n["full_name"]: n["full_node_id"] for n in export["data"]["nodes"]}  # last version wins
    query_value = next(n["value"] for n in export["data"]["nodes"] if n["full_node_id"] == record.query_id)
    annotation = {
        "query_id": record.query_id,
        "query": query_value,
        "golden_answers": list(target.qa.golden_answers),
        "golden_answers_id": record.golden_id,
        "prediction": record.prediction,
        "prediction_id": record.prediction_id,
        "source_evidence_ids": [nodes[e] for e in target.qa.metadata.get("evidence", []) if e in nodes],
        "final_error_type": ERROR_TYPE_OF[kind],
        "final_op_id": op_id,
        "fault": {"kind": kind, "description": fault.note, "fact_message": target.fact_message.id,
                  "conversation": number, "seed": config.seed},
    }
    export["data"]["annotations"] = [annotation]
    _atomic_write(split_dir / filename, export)
    return {"split": split, "file": filename, "query_id": record.query_id, "kind": kind,
            "final_error_type": annotation["final_error_type"], "final_op_id": op_id}


def _atomic_write(path: Path, data: Any, indent: int | None = None) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=indent), encoding="utf-8")
    os.replace(tmp, path)
