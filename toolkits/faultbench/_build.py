"""Building a fault-injection benchmark in the MemTraceBench file layout."""

from __future__ import annotations

import contextlib
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

from membase.utils.io import atomic_write_json
from toolkits.evidence_flow import content_tokens
from toolkits.faultbench._faults import (
    ERROR_TYPE_OF,
    FAULT_KINDS,
    Fault,
    FaultSet,
    FaultTarget,
    states_answer,
)
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
    max_messages_by_split: dict[str, int] = field(default_factory=dict)
    """Per-split override of `max_messages` (Mem0/EverMemOS graphs grow fastest)."""
    top_k: int = 10
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


def make_layer(split: str, user_id: str, save_dir: str, faults: list[Fault] | None = None) -> Any:
    """Build the split's layer with deterministic components (no network, no model)."""
    from membase.layers import build_layer

    if split == "long_context":
        return build_layer("Long-Context", user_id=user_id, save_dir=save_dir, context_window=100_000)
    if split == "rag":
        return build_layer("NaiveRAG", user_id=user_id, save_dir=save_dir, deferred=True, max_tokens=200,
                           vector_store="memory", retriever_name_or_path="fake:64", retriever_dim=64)
    return _fault_class(split).make_layer(user_id, save_dir, list(faults or []))  # type: ignore[attr-defined]


def build_faultbench(config: BuildConfig, *, progress: Callable[[str], None] | None = None) -> BuildReport:
    """Run the layers over LoCoMo with one injected fault per case and write the benchmark.

    Args:
        config: what to build.
        progress: optional callback receiving one line per written case.

    Returns:
        The report (cases written, candidates dropped by reason).

    Raises:
        ValueError: unknown split or fault kind.
        membase.exceptions.DatasetError: the LoCoMo file is missing or malformed.
    """
    from membase.datasets.locomo import load_locomo

    for split in config.splits:
        _fault_class(split)
    for kind in config.kinds:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; choose one of {FAULT_KINDS}")
    if config.cases_per_kind < 1:
        raise ValueError("cases_per_kind must be at least 1")
    out = Path(config.out_dir)
    _refuse_foreign_benchmark(out)
    dataset = load_locomo(config.locomo_path)
    report = BuildReport()
    for split in config.splits:
        # Build beside the old split and swap at the end: a failed build keeps the old one.
        building = out / f".{split}.building"
        if building.exists():
            shutil.rmtree(building)
        building.mkdir(parents=True)
        _SplitBuilder(split, dataset, config, building, report, progress).build()
        _swap_in(building, out / split)
    manifest = {"config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()
                           if k not in ("out_dir", "locomo_path")},
                "cases": report.cases, "dropped": report.dropped}
    _atomic_write(out / "faultbench_manifest.json", manifest, indent=2)
    return report


@contextlib.contextmanager
def _run_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="faultbench-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class _SplitBuilder:
    """Builds one split: conversations in seeded order, one graph per group of cases.

    A group holds at most one case per fault kind, on questions with different fact messages
    (Long-Context deletions, which forget everything, get a graph of their own). A group is
    kept only when every case is valid: with all of the group's faults its answer fails, and
    without its own fault (the others kept) its answer is correct — so each case's fault is
    the decisive one, and the faults of the other cases do not touch its information.
    """

    def __init__(self, split: str, dataset: Any, config: BuildConfig, split_dir: Path, report: BuildReport,
                 progress: Callable[[str], None] | None) -> None:
        self.split, self.dataset, self.config = split, dataset, config
        self.split_dir, self.report, self.progress = split_dir, report, progress
        self.rng = random.Random(f"{config.seed}:{split}")
        self.quota = {kind: config.cases_per_kind for kind in config.kinds}
        self.fault_cls = _fault_class(split)

    def build(self) -> None:
        numbers = list(self.config.conversations or range(1, len(self.dataset) + 1))
        self.rng.shuffle(numbers)
        for number in numbers:
            if not any(self.quota.values()):
                return
            self._conversation(number)
        for kind, left in self.quota.items():
            if left:
                logger.warning("faultbench %s: only %d of %d %s cases found", self.split,
                               self.config.cases_per_kind - left, self.config.cases_per_kind, kind)

    def _run(self, number: int, trajectory: Any, qas: list[Any], faults: list[Fault], tag: str) -> Any:
        seed = zlib.crc32(f"{self.config.seed}:{self.split}:{number}:{tag}".encode())
        with _run_dir() as tmp, seeded_uuid4(random.Random(seed)):
            layer = make_layer(self.split, trajectory.id, str(Path(tmp) / "run"), faults)
            try:
                # The layer lives in a temporary folder; record a stable, relative save_dir instead.
                return run_pipeline(layer, trajectory, qas, injector=FaultSet(faults), top_k=self.config.top_k,
                                    graph_metadata={"faultbench_seed": self.config.seed,
                                                    "save_dir": f"memory/{self.split}/{trajectory.id}"})
            finally:
                layer.cleanup()

    def _conversation(self, number: int) -> None:
        trajectory, qas = self.dataset[number - 1]
        limit = self.config.max_messages_by_split.get(self.split, self.config.max_messages)
        trajectory = cut_trajectory(trajectory, limit)
        targets = candidate_targets(trajectory, qas)
        if not targets:
            return
        baseline = self._run(number, trajectory, [t[0] for t in targets], [], "baseline")
        pool = [t for t in targets if baseline.records[t[0].id].score == 1.0]
        self.report.dropped["baseline_wrong"] = self.report.dropped.get("baseline_wrong", 0) + len(targets) - len(pool)
        self.rng.shuffle(pool)
        n_messages = sum(len(s.messages) for s in trajectory.sessions)
        while pool and any(self.quota.values()):
            group = self._plan_group(pool, n_messages)
            if not group:
                return
            self._group(number, trajectory, group)

    def _plan_group(self, pool: list[tuple[Any, Any, int]], n_messages: int) -> list[Fault]:
        group: list[Fault] = []
        used_facts: set[str] = set()
        # Neediest kinds first, so that a small pool of targets is shared fairly.
        kinds = sorted(self.config.kinds, key=lambda k: -self.quota[k])
        for kind in kinds:
            if self.quota[kind] <= 0:
                continue
            if self.split == "long_context" and kind == "deletion" and group:
                continue
            if self.split == "long_context" and any(f.kind == "deletion" for f in group):
                break
            for i, (qa, fact, fact_index) in enumerate(pool):
                if fact.id in used_facts:
                    continue
                if kind in ("update", "deletion") and fact_index >= n_messages - 1:
                    continue
                act = self.rng.randint(fact_index + 1, n_messages - 1) if fact_index < n_messages - 1 else fact_index
                target = FaultTarget(qa=qa, fact_message=fact, fact_index=fact_index,
                                     answer_tokens=content_tokens(" ".join(qa.golden_answers)), act_index=act)
                group.append(self.fault_cls(kind, target))
                used_facts.add(fact.id)
                del pool[i]
                break
        return group

    def _group(self, number: int, trajectory: Any, group: list[Fault]) -> None:
        while group:
            faults = [self._fresh(f) for f in group]
            tag = ",".join(f"{f.kind}:{f.target.qa.id}" for f in faults)
            run = self._run(number, trajectory, [f.target.qa for f in faults], faults, tag)
            keep = []
            for f in faults:
                if not f.fired:
                    self.report.drop(f"{f.kind}_not_fired")
                elif run.records[f.target.qa.id].score != 0.0:
                    self.report.drop(f"{f.kind}_answer_still_correct")
                else:
                    keep.append(f)
            for f in list(keep):
                others = [self._fresh(o) for o in keep if o is not f]
                if not others:
                    continue
                without = self._run(number, trajectory, [f.target.qa], others, f"without:{tag}:{f.target.qa.id}")
                if without.records[f.target.qa.id].score != 1.0:
                    self.report.drop(f"{f.kind}_not_decisive_in_group")
                    keep.remove(f)
            if len(keep) == len(faults):
                self._write(number, run, faults)
                return
            group = keep

    def _fresh(self, fault: Fault) -> Fault:
        return self.fault_cls(fault.kind, fault.target)

    def _write(self, number: int, run: Any, faults: list[Fault]) -> None:
        export = run.graph.export_graph()
        _relativize(export)
        cases = []
        for fault in faults:
            record = run.records[fault.target.qa.id]
            op_id = find_label_op(fault, export, record)
            if op_id is None:
                self.report.drop(f"{fault.kind}_op_not_found")
                continue
            cases.append((fault, record, op_id))
        if not cases:
            return
        index = len(list(self.split_dir.glob(f"{self.split}-locomo-{number}-*.json"))) + 1
        filename = f"{self.split}-locomo-{number}-{index}.json"
        export["metadata"]["memtracebench_graph_filename"] = filename
        export["metadata"]["memtracebench_dataset_source"] = "LoCoMo"
        latest = {n["full_name"]: n["full_node_id"] for n in export["data"]["nodes"]}
        values = {n["full_node_id"]: n["value"] for n in export["data"]["nodes"]}
        annotations = []
        for fault, record, op_id in cases:
            qa = fault.target.qa
            annotations.append({
                "query_id": record.query_id,
                "query": values[record.query_id],
                "golden_answers": list(qa.golden_answers),
                "golden_answers_id": record.golden_id,
                "prediction": record.prediction,
                "prediction_id": record.prediction_id,
                "source_evidence_ids": [latest[e] for e in qa.metadata.get("evidence", []) if e in latest],
                "final_error_type": ERROR_TYPE_OF[fault.kind],
                "final_op_id": op_id,
                "fault": {"kind": fault.kind, "description": fault.note, "fact_message": fault.target.fact_message.id,
                          "conversation": number, "seed": self.config.seed},
            })
            self.quota[fault.kind] -= 1
            case = {"split": self.split, "file": filename, "query_id": record.query_id, "kind": fault.kind,
                    "final_error_type": ERROR_TYPE_OF[fault.kind], "final_op_id": op_id}
            self.report.cases.append(case)
            if self.progress:
                self.progress(f"{self.split}/{filename}: {case['final_error_type']} at {op_id} ({record.query_id})")
        export["data"]["annotations"] = annotations
        _atomic_write(self.split_dir / filename, export)


_REPO_ROOT = str(Path(__file__).resolve().parents[2]) + os.sep


def _relativize(export: dict[str, Any]) -> None:
    """Make recorded source paths relative to the repository (no local paths in shared files)."""
    for key in ("nodes", "edges", "operations", "sessions"):
        for rec in export["data"].get(key, []):
            for field_name in ("filename", "trigger_point"):
                value = rec.get(field_name)
                if isinstance(value, str) and value.startswith(_REPO_ROOT):
                    rec[field_name] = value[len(_REPO_ROOT):]


def _atomic_write(path: Path, data: Any, indent: int | None = None) -> None:
    atomic_write_json(path, data, indent=indent)


def _refuse_foreign_benchmark(out: Path) -> None:
    """Never overwrite split folders that a faultbench build did not write (e.g. MemTraceBench)."""
    if (out / "faultbench_manifest.json").exists() or not out.exists():
        return
    existing = sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    if existing:
        raise ValueError(
            f"{str(out)!r} already holds {existing} but no faultbench_manifest.json: it is not a faultbench "
            "output folder, so nothing there is replaced; choose an empty or new --out-dir"
        )


def _swap_in(built: Path, target: Path) -> None:
    if target.exists():
        retired = target.with_name(f".{target.name}.old")
        if retired.exists():
            shutil.rmtree(retired)
        os.replace(target, retired)
        os.replace(built, target)
        shutil.rmtree(retired)
    else:
        os.replace(built, target)
