"""Building a fault-injection benchmark in the MemTraceBench file layout.

Per split, conversations are taken in a seeded order; from each, the windows of ``max_messages``
consecutive messages that hold the most target questions are used (:func:`dense_windows`). A
clean run answers every target question (:mod:`._targets`); the ones it gets right
form the pool. Cases are then planned in *groups* that share one run and one graph: at most one
case per fault kind, on different fact messages (a Long-Context retrieval fault runs alone: its
snapshot of the memory unit would be the version other questions' answering ops name). A group
is kept only when every case passes **counterfactual replay**: with all the group's faults its
answer is wrong, and with its own fault undone (the others kept) its answer is right — so each
fault is decisive, and the other faults do not touch its information. Drop reasons are counted.

The label of a case is the op recorded while its fault acted (:mod:`._labels`) and the error
type its error kind defines (:mod:`._faults`). Seeded and reproducible: the RNG picks
conversations, targets, sites and fault points, and ``uuid.uuid4`` is seeded during each run, so
graph, op, edge and document ids repeat; only ``created_at`` timestamps differ between builds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import shutil
import tempfile
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from membase.utils.io import atomic_write_json
from toolkits.faultbench._catalog import SPLITS, fault_class, split_specs
from toolkits.faultbench._corrupt import KEEPS_WORDS
from toolkits.faultbench._faults import ERROR_KINDS, Fault, FaultSet, FaultSpec
from toolkits.faultbench._labels import label_op
from toolkits.faultbench._pipeline import PipelineRun, run_pipeline
from toolkits.faultbench._targets import Target, find_targets

__all__ = [
    "BuildConfig",
    "BuildReport",
    "build_faultbench",
    "case_nodes",
    "cut_trajectory",
    "dense_windows",
    "relativize_paths",
    "seeded_uuid4",
]

logger = logging.getLogger(__name__)


@dataclass(kw_only=True)
class BuildConfig:
    """What to build."""

    locomo_path: str
    """The dataset file (LoCoMo by default; any type ``membase.datasets.load_dataset`` reads)."""
    out_dir: str
    dataset_type: str = "auto"
    """``auto`` (told by the file's shape), ``LoCoMo``, ``LongMemEval`` or ``RealMem``."""
    splits: Sequence[str] = tuple(SPLITS)
    kinds: Sequence[str] = ERROR_KINDS
    """Error kinds to build (``extraction``, ``update``, ...); every corruption of each."""
    cases_per_kind: int = 1
    """Cases per (split, fault kind); a fault kind is ``<error kind>/<corruption>``."""
    seed: int = 0
    max_messages: int = 40
    """Each conversation is cut to its first ``max_messages`` messages (keeps graphs small)."""
    max_messages_by_split: dict[str, int] = field(default_factory=dict)
    """Per-split override of ``max_messages``."""
    top_k: int = 10
    conversations: Sequence[int] | None = None
    """1-based LoCoMo sample numbers to use (default: all, in seeded order)."""
    max_group: int = 6
    """Most cases sharing one graph."""
    windows_per_conversation: int = 2
    """Windows of ``max_messages`` messages taken from each conversation (its densest in targets)."""
    max_bytes_by_split: dict[str, int] = field(default_factory=dict)
    """Size budget per split: no graph is started when one more of the split's average size
    would exceed it."""


@dataclass(kw_only=True)
class BuildReport:
    """What was built, and why planned cases were dropped."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)

    def drop(self, reason: str, count: int = 1) -> None:
        """Count dropped candidates."""
        if count:
            self.dropped[reason] = self.dropped.get(reason, 0) + count


def cut_trajectory(trajectory: Any, max_messages: int, start: int = 0) -> Any:
    """``trajectory`` cut to ``max_messages`` messages from message ``start`` on (sessions kept in order)."""
    return trajectory.window(start, max_messages)


def dense_windows(trajectory: Any, qas: Sequence[Any], size: int, count: int) -> list[int]:
    """Starts of up to ``count`` non-overlapping windows of ``size`` messages holding the most targets.

    Questions that qualify as targets cluster in parts of a conversation; building from its
    densest windows gives more cases per graph than its first messages would.
    """
    messages = [m for s in trajectory.sessions for m in s.messages]
    positions = sorted(t.fact_index for t in find_targets(trajectory, qas))
    starts: list[int] = []
    taken: list[tuple[int, int]] = []
    for _ in range(count):
        best, best_start = 0, None
        for start in range(0, max(len(messages) - size, 0) + 1):
            if any(start < end and start + size > begin for begin, end in taken):
                continue
            inside = sum(1 for p in positions if start <= p < start + size)
            if inside > best:
                best, best_start = inside, start
        if best_start is None or best < 2:
            break
        starts.append(best_start)
        taken.append((best_start, best_start + size))
    return starts or [0]


@contextlib.contextmanager
def seeded_uuid4(rng: random.Random) -> Iterator[None]:
    """Make ``uuid.uuid4()`` deterministic (graph, op, edge, session and document ids)."""
    original = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]
    try:
        yield
    finally:
        uuid.uuid4 = original  # type: ignore[assignment]


def build_faultbench(config: BuildConfig, *, progress: Callable[[str], None] | None = None,
                     observer: Callable[..., None] | None = None) -> BuildReport:
    """Run the layers over LoCoMo with one injected fault per case and write the benchmark.

    Args:
        config: what to build.
        progress: optional callback receiving one line per written case.
        observer: optional callback called with every written graph's ingredients (keywords
            ``split``, ``trajectory``, ``faults``, ``run``, ``annotations``, ``make_layer``, ``top_k``)
            so a caller can run the same system again (counterfactual replay of the labels).

    Returns:
        The report (cases written, candidates dropped by reason).

    Raises:
        ValueError: unknown split or error kind, or an output folder a build did not write.
        membase.exceptions.DatasetError: the LoCoMo file is missing or malformed.
    """
    from membase.datasets import load_dataset

    for split in config.splits:
        split_specs(split)
    for kind in config.kinds:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}; choose from {ERROR_KINDS}")
    if config.cases_per_kind < 1:
        raise ValueError("cases_per_kind must be at least 1")
    if config.max_group < 1 or config.windows_per_conversation < 1:
        raise ValueError("max_group and windows_per_conversation must be at least 1")
    if config.top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {config.top_k}")
    out = Path(config.out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"output folder {str(out)!r} is a file")
    _refuse_foreign_benchmark(out)
    dataset = load_dataset(config.dataset_type, config.locomo_path)
    outside = sorted({n for n in config.conversations or () if not 1 <= n <= len(dataset)})
    if outside:  # 0 would silently be the last conversation (Python's index -1)
        raise ValueError(f"conversations {outside} are outside 1..{len(dataset)} "
                         f"(1-based {dataset.name} trajectory numbers)")
    report = BuildReport()
    for split in config.splits:
        # Build beside the old split and swap at the end: a failed build keeps the old one.
        building = out / f".{split}.building"
        if building.exists():
            shutil.rmtree(building)
        building.mkdir(parents=True)
        _SplitBuilder(split, dataset, config, building, report, progress, observer).build()
        _swap_in(building, out / split)
    manifest = {"format": "faultbench-v2",
                "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()
                           if k not in ("out_dir", "locomo_path")} | {"dataset_type": dataset.name},
                "cases": report.cases, "dropped": dict(sorted(report.dropped.items()))}
    atomic_write_json(out / "faultbench_manifest.json", manifest, indent=2)
    return report


class _SplitBuilder:
    """Builds one split (see the module docstring)."""

    def __init__(self, split: str, dataset: Any, config: BuildConfig, split_dir: Path, report: BuildReport,
                 progress: Callable[[str], None] | None, observer: Callable[..., None] | None = None) -> None:
        self.split, self.dataset, self.config = split, dataset, config
        self.split_dir, self.report, self.progress, self.observer = split_dir, report, progress, observer
        self.rng = random.Random(f"{config.seed}:{split}")
        self.specs = [s for s in split_specs(split) if s.error in config.kinds]
        self.quota = {s.kind: config.cases_per_kind for s in self.specs}
        self.site_turn = {s.kind: self.rng.randrange(len(s.sites)) for s in self.specs}
        self.fault_cls = fault_class(split)

    def _open(self) -> bool:
        """Cases are still wanted and another graph of average size fits the split's size budget."""
        budget = self.config.max_bytes_by_split.get(self.split)
        if budget is None:
            return any(self.quota.values())
        sizes = [p.stat().st_size for p in self.split_dir.glob("*.json")]
        expected = sum(sizes) / len(sizes) if sizes else 0
        return any(self.quota.values()) and sum(sizes) + expected <= budget

    def build(self) -> None:
        numbers = list(self.config.conversations or range(1, len(self.dataset) + 1))
        self.rng.shuffle(numbers)
        for number in numbers:
            if not self._open():
                break
            self._conversation(number)
        for kind, left in self.quota.items():
            if left:
                logger.warning("faultbench %s: only %d of %d %s cases found", self.split,
                               self.config.cases_per_kind - left, self.config.cases_per_kind, kind)

    # -- runs -------------------------------------------------------------------------------------
    def _run(self, number: int, trajectory: Any, qas: list[Any], faults: list[Fault], tag: str) -> PipelineRun:
        first = next((m.id for s in trajectory.sessions for m in s.messages), "")
        seed = zlib.crc32(f"{self.config.seed}:{self.split}:{number}:{first}:{tag}".encode())
        with tempfile.TemporaryDirectory(prefix="faultbench-layer-") as tmp, seeded_uuid4(random.Random(seed)):
            layer = self.fault_cls.make_layer(trajectory.id, str(Path(tmp) / trajectory.id), faults)  # type: ignore[attr-defined]
            try:
                return run_pipeline(layer, trajectory, qas, injector=FaultSet(faults), top_k=self.config.top_k,
                                    graph_metadata={"save_dir": f"memory/{self.split}/{trajectory.id}",
                                                    "traced_data_save_dir": "traced_data"})
            finally:
                layer.cleanup()

    def _conversation(self, number: int) -> None:
        full, qas = self.dataset[number - 1]
        limit = self.config.max_messages_by_split.get(self.split, self.config.max_messages)
        for start in dense_windows(full, qas, limit, self.config.windows_per_conversation):
            if not self._open():
                return
            self._window(number, cut_trajectory(full, limit, start), qas)

    def _window(self, number: int, trajectory: Any, qas: list[Any]) -> None:
        targets = find_targets(trajectory, qas)
        if not targets:
            return
        try:
            baseline = self._run(number, trajectory, [t.qa for t in targets], [], "baseline")
        except RuntimeError as exc:
            logger.warning("faultbench %s: conversation %d skipped: %s", self.split, number, exc)
            return
        pool = [t for t in targets if baseline.records[t.qa.id].score == 1.0]
        self.report.drop("baseline_wrong", len(targets) - len(pool))
        self.rng.shuffle(pool)
        messages = [m for s in trajectory.sessions for m in s.messages]
        known = frozenset(w.lower() for m in messages for w in re.findall(r"[A-Za-z]+", m.content))
        while pool and self._open():
            group = self._plan_group(pool, len(messages), known)
            if not group:
                return
            self._verify_and_write(number, trajectory, group)

    # -- planning ---------------------------------------------------------------------------------
    def _plan_group(self, pool: list[Target], n_messages: int, known: frozenset[str]) -> list[Fault]:
        group: list[Fault] = []
        used: set[str] = set()
        # Neediest kinds first, then error kinds with the fewest cases so far (so that a size
        # budget still covers every error type); among equals, a seeded order.
        built = {e: sum(1 for c in self.report.cases if c["split"] == self.split and c["kind"].startswith(f"{e}/"))
                 for e in {s.error for s in self.specs}}
        specs = sorted(self.specs, key=lambda s: (-self.quota[s.kind], built[s.error], self.rng.random()))
        for spec in specs:
            if self.quota[spec.kind] <= 0 or len(group) >= self.config.max_group:
                continue
            if self._runs_alone(spec) and group:
                continue
            if any(self._runs_alone(f.spec) for f in group):
                break
            for i, target in enumerate(pool):
                fault = self._make(spec, target, n_messages, known)
                if target.fact.id in used or fault is None:
                    continue
                group.append(fault)
                used.add(target.fact.id)
                del pool[i]
                break
        return group

    def _runs_alone(self, spec: FaultSpec) -> bool:
        return self.split == "long_context" and spec.error == "retrieval"

    def _make(self, spec: FaultSpec, target: Target, n_messages: int, known: frozenset[str]) -> Fault | None:
        if spec.error in ("update", "deletion") and target.fact_index >= n_messages - 1:
            return None
        act = self.rng.randint(target.fact_index + 1, n_messages - 1) if target.fact_index < n_messages - 1 \
            else target.fact_index
        site = spec.sites[self.site_turn[spec.kind] % len(spec.sites)]
        seed = zlib.crc32(f"{self.config.seed}:{self.split}:{spec.kind}:{target.qa.id}".encode())
        fault = self.fault_cls(spec, site, target, seed=seed, act_index=act, known_words=known)
        return fault if fault.applicable() else None

    # -- verification -------------------------------------------------------------------------------
    def _verify_and_write(self, number: int, trajectory: Any, group: list[Fault]) -> None:
        while group:
            faults = [f.fresh() for f in group]
            tag = ",".join(f"{f.kind}@{f.site}:{f.target.qa.id}" for f in faults)
            try:
                run = self._run(number, trajectory, [f.target.qa for f in faults], faults, tag)
            except RuntimeError as exc:
                logger.warning("faultbench %s: group dropped: %s", self.split, exc)
                self.report.drop("run_failed", len(faults))
                return
            keep = []
            for fault in faults:
                if not fault.fired:
                    self.report.drop(f"{fault.kind}:not_fired")
                elif run.records[fault.target.qa.id].score != 0.0:
                    self.report.drop(f"{fault.kind}:answer_still_right")
                elif label_op(fault, run) is None:
                    self.report.drop(f"{fault.kind}:op_not_found")
                else:
                    keep.append(fault)
            for fault in list(keep):
                others = [o.fresh() for o in keep if o is not fault]
                if not others:
                    continue  # undoing its only fault gives the clean run, which answered it right
                replay = self._run(number, trajectory, [fault.target.qa], others,
                                   f"without:{tag}:{fault.target.qa.id}")
                if replay.records[fault.target.qa.id].score != 1.0:
                    self.report.drop(f"{fault.kind}:not_decisive")
                    keep.remove(fault)
            if len(keep) == len(faults):
                self._write(number, run, faults, trajectory)
                return
            for fault in faults:
                if fault not in keep:  # try the kind's next site with the next target
                    self.site_turn[fault.kind] += 1
            group = keep

    def _write(self, number: int, run: PipelineRun, faults: list[Fault], trajectory: Any) -> None:
        export = run.export
        relativize_paths(export)
        source = self.dataset.name  # LoCoMo, LongMemEval or RealMem
        index = len(list(self.split_dir.glob(f"{self.split}-{source.lower()}-{number}-*.json"))) + 1
        filename = f"{self.split}-{source.lower()}-{number}-{index}.json"
        export["metadata"]["memtracebench_graph_filename"] = filename
        export["metadata"]["memtracebench_dataset_source"] = source
        nodes = case_nodes(export)
        latest = {n["full_name"]: n["full_node_id"] for n in export["data"]["nodes"]}
        annotations = []
        for fault in faults:
            qa = fault.target.qa
            op_id = label_op(fault, run)
            found = nodes.get(qa.id)
            if op_id is None or found is None:
                self.report.drop(f"{fault.kind}:op_not_found")
                continue
            annotations.append({
                "query_id": found["query_id"],
                "query": found["query"],
                "golden_answers": list(qa.golden_answers),
                "golden_answers_id": found["golden_answers_id"],
                "prediction": found["prediction"],
                "prediction_id": found["prediction_id"],
                "source_evidence_ids": [latest[e] for e in qa.metadata.get("evidence", []) if e in latest],
                "final_error_type": fault.spec.error_type,
                "final_op_id": op_id,
                "fault": {"kind": fault.kind, "error": fault.spec.error, "corruption": fault.spec.corruption,
                          "site": fault.site, "description": fault.note, "fact_message": fault.target.fact.id,
                          "answer_spread": fault.target.spread,
                          "keeps_words": fault.spec.corruption in KEEPS_WORDS, "conversation": number,
                          "seed": self.config.seed},
            })
            self.quota[fault.kind] -= 1
            self.site_turn[fault.kind] += 1
            case = {"split": self.split, "file": filename, "query_id": found["query_id"], "kind": fault.kind,
                    "site": fault.site, "final_error_type": fault.spec.error_type, "final_op_id": op_id}
            self.report.cases.append(case)
            if self.progress:
                self.progress(f"{self.split}/{filename}: {fault.kind} at {fault.site} -> "
                              f"{case['final_error_type']} {op_id} ({qa.id})")
        if not annotations:
            return
        export["data"]["annotations"] = annotations
        atomic_write_json(self.split_dir / filename, export, indent=None)
        if self.observer is not None:
            self.observer(split=self.split, trajectory=trajectory, faults=faults, run=run,
                          annotations=annotations, make_layer=self.fault_cls.make_layer, top_k=self.config.top_k)


def case_nodes(export: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per question id: its query node, the prediction and golden-answers nodes of its ops."""
    data = export["data"]
    nodes = {n["full_node_id"]: n for n in data["nodes"]}
    names = {o["op_id"]: o.get("op_name") for o in data["operations"]}
    by_op: dict[str, list[dict[str, Any]]] = {}
    for edge in data["edges"]:
        by_op.setdefault(edge["op_id"], []).append(edge)
    out: dict[str, dict[str, str]] = {}
    for op_id, edges in by_op.items():
        if names.get(op_id) not in ("question-answering", "llm-judge"):
            continue
        query = next((nodes[e["source_full_node_id"]] for e in edges
                      if nodes[e["source_full_node_id"]].get("class_name") == "query"), None)
        if query is None:
            continue
        entry = out.setdefault(query["name"], {"query_id": query["full_node_id"], "query": query["value"]})
        for edge in edges:
            for end in ("source_full_node_id", "target_full_node_id"):
                node = nodes[edge[end]]
                if names[op_id] == "question-answering" and node.get("class_name") == "prediction":
                    entry["prediction_id"], entry["prediction"] = node["full_node_id"], node["value"]
                if names[op_id] == "llm-judge" and node.get("class_name") == "golden_answers":
                    entry["golden_answers_id"] = node["full_node_id"]
    return {k: v for k, v in out.items() if {"prediction_id", "golden_answers_id"} <= set(v)}


_REPO_ROOT = str(Path(__file__).resolve().parents[2]) + os.sep


def relativize_paths(export: dict[str, Any]) -> None:
    """Make recorded source paths relative to the repository (no local paths in shared files)."""
    for key in ("nodes", "edges", "operations", "sessions"):
        for rec in export["data"].get(key, []):
            for field_name in ("filename", "trigger_point"):
                value = rec.get(field_name)
                if isinstance(value, str) and value.startswith(_REPO_ROOT):
                    rec[field_name] = value[len(_REPO_ROOT):]


def _refuse_foreign_benchmark(out: Path) -> None:
    """Never overwrite split folders that a faultbench build did not write (e.g. MemTraceBench)."""
    if (out / "faultbench_manifest.json").exists() or not out.exists():
        return
    existing = sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    if existing:
        raise ValueError(
            f"{str(out)!r} already holds {existing} but no faultbench_manifest.json: it is not a faultbench "
            "output folder, so nothing there is replaced; choose an empty or new output folder"
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
