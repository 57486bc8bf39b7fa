"""Replay search on faultbench: does the earliest rescuing repair find the injected fault's op?

A faultbench graph is a run of a memory system *with* its injected faults. Replaying it means
running the same system again — the same layer built around the same faults, the same reader and
judge — and a repair then acts inside the faults (it sees what a fault did and undoes it the way
a repair undoes any op's failure). ``check_labels_by_replay`` builds a benchmark, replays every
written graph, runs ``--replay-search earliest`` on each case with no knowledge of its fault, and
compares the counterfactual label with the injected one.

Response faults have no repair by design (a response check never claims a rescue), so their cases
are counted apart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from membase.replay import RunManifest, RunReplayer
from membase.replay.engine import System
from toolkits.faultbench._build import BuildConfig, build_faultbench, seeded_uuid4
from toolkits.faultbench._faults import FaultSet
from toolkits.faultbench._models import ExtractiveReader
from toolkits.faultbench._pipeline import _judge_model, _qa_model

__all__ = ["FaultGroupReplayer", "check_labels_by_replay"]

_LAYER_OF_SPLIT = {"long_context": "Long-Context", "rag": "NaiveRAG", "mem0": "Mem0", "evermemos": "EverMemOS"}


class FaultGroupReplayer(RunReplayer):
    """Replays one faultbench graph: its trajectory, its faults, faultbench's reader and judge."""

    def __init__(self, *, split: str, trajectory: Any, faults: list[Any], run: Any, make_layer: Callable[..., Any],
                 top_k: int, **_ignored: Any) -> None:
        manifest = RunManifest(layer_type=_LAYER_OF_SPLIT[split], memory_config={}, dataset="", top_k=top_k,
                               metrics=["llm_judge"], cache_dir=None)
        super().__init__(tempfile.gettempdir(), manifest=manifest)
        self.trajectory, self.faults, self.run, self.make_layer = trajectory, faults, run, make_layer
        self.qas = [f.target.qa for f in faults]
        self._runs = 0

    def trajectory_ids(self) -> list[str]:
        return [self.trajectory.id]

    def _trajectory(self, trajectory_id: str) -> tuple[Any, list[Any]]:
        return self.trajectory, self.qas

    def original(self, trajectory_id: str, qa_id: str) -> dict[str, Any] | None:
        record = self.run.records.get(qa_id)
        if record is None:
            return None
        return {"prediction": record.prediction, "metrics": {"llm_judge": {"value": record.score}}}

    def original_export(self, trajectory_id: str) -> dict[str, Any]:
        return self.run.export

    def build_system(self, trajectory_id: str, work: Path, *, qa_model: Any = None) -> System:
        faults = [f.fresh() for f in self.faults]
        injector = FaultSet(faults)
        by_question = {qa.question.strip(): qa for qa in self.qas}
        layer = self.make_layer(trajectory_id, str(work / trajectory_id), faults)
        return System(layer=layer, qa_model=qa_model or _qa_model(injector, ExtractiveReader(), by_question),
                      judge_model=_judge_model(by_question), intervention=injector)

    def run_context(self) -> contextlib.AbstractContextManager[Any]:
        # Seeded so each replay draws its ids in a fixed order; a fresh seed per run keeps the
        # ids of a query-time replay apart from those of the construction graph it extends.
        self._runs += 1
        return seeded_uuid4(random.Random(f"replay:{self.trajectory.id}:{self._runs}"))


def check_labels_by_replay(config: BuildConfig, *, max_candidates: int = 12,
                           progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Build a faultbench with ``config`` (into a scratch folder) and label every case by replay search.

    Returns:
        ``{"cases": [...], "by_split": {...}, "agreement": {...}}``: per case the injected and the
        counterfactual label; per split and overall the share where the two agree.
    """
    from toolkits.replay_verify import earliest_rescue

    groups: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="faultbench-replay-") as out:
        build_faultbench(dataclasses.replace(config, out_dir=out), observer=lambda **g: groups.append(g))
    cases = []
    for group in groups:
        with FaultGroupReplayer(**group) as replayer:
            for annotation in group["annotations"]:
                record = {"trajectory": group["trajectory"].id, "query_id": annotation["query_id"],
                          "source_evidence_ids": annotation["source_evidence_ids"]}
                label = earliest_rescue(replayer, record, max_candidates)
                case = {"split": group["split"], "kind": annotation["fault"]["kind"],
                        "query_id": annotation["query_id"], "injected_type": annotation["final_error_type"],
                        "injected_op": annotation["final_op_id"], "replay_type": label.get("error_type"),
                        "replay_op": label.get("op_id"), "replay_op_name": label.get("op_name"),
                        "searched": label.get("searched")}
                cases.append(case)
                if progress:
                    agree = "agrees" if case["replay_op"] == case["injected_op"] else "differs"
                    progress(f"{case['split']} {case['kind']} {case['query_id']}: replay label {agree} "
                             f"({case['replay_type']} / {case['replay_op_name']})")
    return {"cases": cases, "by_split": _shares(cases, "split"), "by_kind": _shares(cases, "kind"),
            "agreement": _shares(cases, None)}


def _shares(cases: list[dict[str, Any]], key: str | None) -> dict[str, Any]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        groups.setdefault(case[key] if key else "all", []).append(case)
    out = {}
    for name, members in sorted(groups.items()):
        repairable = [c for c in members if c["injected_type"] != "ResponseError"]
        hits = Counter(("type" if c["replay_type"] == c["injected_type"] else "")
                       + ("op" if c["replay_op"] == c["injected_op"] else "") for c in repairable)
        n = len(repairable)
        out[name] = {"cases": len(members), "repairable": n,
                     "type_agreement": round((hits["typeop"] + hits["type"]) / n, 4) if n else None,
                     "op_agreement": round((hits["typeop"] + hits["op"]) / n, 4) if n else None,
                     "no_rescue": sum(1 for c in repairable if c["replay_op"] is None)}
    return out[("all")] if key is None else out
