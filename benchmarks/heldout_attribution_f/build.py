"""Build the benchmark: plan one fault per case, record it, verify it against the clean replay,
and write a MemTraceBench folder plus a manifest of fault kinds kept outside that folder.

Every accepted case passes these checks (a candidate that fails one is skipped, never relabelled):

* the edit changed the value at its edit point, and the faulted question is judged wrong;
* the same recording without the edit (same seed) answers it right;
* the two recordings are identical up to the gold op: the first edge that differs (endpoints and
  their values) belongs to the gold op, so nothing earlier broke;
* the evidence trail matches the error type (ExtractionError: no memory unit ever states the
  missing piece; Update/DeletionError: the gold op turned a unit that stated it into one that does
  not, or marked it deleted, and no live unit states it at the end; RetrievalError: the store
  states it at query time and the context does not; ResponseError: the context states every piece).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.heldout_attribution_f.conversations import (
    CONVERSATIONS,
    Conversation,
    Piece,
    Question,
    check_consistency,
)
from benchmarks.heldout_attribution_f.faults import KINDS, QUOTAS, Clean, Kind, Plan
from benchmarks.heldout_attribution_f.runtime_env import Hooks
from benchmarks.heldout_attribution_f.textsim import states
from benchmarks.heldout_attribution_f.trace_runner import LAYERS, Recording, record

DATASET_SOURCE = "LoCoMo"
RETRIEVAL_MODES = {"emos-hybrid-miss": "hybrid", "emos-false-sufficient": "agentic", "emos-round2-drift": "agentic",
                   "emos-final-rerank-drop": "agentic"}


@dataclass
class Case:
    split: str
    conv: Conversation
    question: Question
    piece: Piece | None
    kind: Kind
    plan: Plan
    mode: str
    seed: int
    recording: Recording
    gold_op_id: str
    gold_op_name: str


# --------------------------------------------------------------------------------- checks
def _unit_view(layer: str, node: dict[str, Any]) -> str | None:
    value = node["value"]
    if layer == "long_context":
        return value
    data = json.loads(value)
    if layer == "rag":
        return data["content"]
    if layer == "mem0":
        return data["memory"]
    return f"{data['subject']}: {data['episode']}" if data.get("episode") else None


def _units(export: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in export["data"]["nodes"]
            if n["category"] == "memory_entry" and n["name"].startswith("memory-unit") and n["class_name"] is None]


def _edge_trace(export: dict[str, Any]) -> list[tuple[Any, ...]]:
    nodes = {n["full_node_id"]: n["value"] for n in export["data"]["nodes"]}
    ops = {o["op_id"]: (o["op_name"], o["category"]) for o in export["data"]["operations"]}
    return [(ops[e["op_id"]], e["category"], e["source_full_node_id"], nodes[e["source_full_node_id"]],
             e["target_full_node_id"], nodes[e["target_full_node_id"]]) for e in export["data"]["edges"]]


def first_divergent_op(clean: dict[str, Any], faulted: dict[str, Any]) -> str | None:
    """The op id (in ``faulted``) of the first edge that differs from the clean recording."""
    a, b = _edge_trace(clean), _edge_trace(faulted)
    for i, edge in enumerate(b):
        if i >= len(a) or a[i] != edge:
            return faulted["data"]["edges"][i]["op_id"]
    return None


def evidence_holds(case: Case) -> str | None:
    """None when the recorded evidence trail fits the label, else why not."""
    conv, q, rec, layer = case.conv, case.question, case.recording, case.split
    export = rec.export
    context = rec.contexts[q.num]
    error = case.kind.error
    if error == "ResponseError":
        return None if all(states(conv, p, context) for p in q.pieces) else "context lacks evidence"
    piece = case.piece
    units = _units(export)
    stating = {n["full_node_id"] for n in units if (v := _unit_view(layer, n)) and states(conv, piece, v)}
    if error == "ExtractionError":
        return None if not stating else "a memory unit states the piece"
    if error == "RetrievalError":
        if not any(states(conv, piece, t) for t in rec.store):
            return "the store lacks the piece"
        return None if not states(conv, piece, context) else "the context states the piece"
    gold_edges = [e for e in export["data"]["edges"] if e["op_id"] == case.gold_op_id]
    by_id = {n["full_node_id"]: n for n in export["data"]["nodes"]}
    unit_ids = {n["full_node_id"] for n in units}
    if error == "UpdateError":
        lost = any(e["source_full_node_id"] in stating and e["target_full_node_id"] in unit_ids
                   and e["target_full_node_id"] not in stating for e in gold_edges)
    else:
        lost = any(e["source_full_node_id"] in stating
                   and by_id[e["target_full_node_id"]]["class_name"] == "delete_marker" for e in gold_edges)
    if not lost:
        return "the gold op did not remove the piece from a unit"
    latest: dict[str, dict[str, Any]] = {}
    for n in units:
        latest[n["name"]] = n
    deleted = {e["source_full_node_id"] for e in export["data"]["edges"]
               if by_id[e["target_full_node_id"]]["class_name"] == "delete_marker"}
    alive = [n for n in latest.values() if n["full_node_id"] not in deleted]
    if any(n["full_node_id"] in stating for n in alive):
        return "a live unit still states the piece"
    return None


# ---------------------------------------------------------------------------------- build
class Builder:
    def __init__(self, seed: int = 2027, quotas: dict[str, int] | None = None,
                 progress: Callable[[str], None] | None = None) -> None:
        problems = check_consistency()
        if problems:
            raise ValueError("conversation data is inconsistent: " + "; ".join(problems))
        self.seed = seed
        self.quotas = dict(QUOTAS if quotas is None else quotas)
        self.progress = progress or (lambda _m: None)
        self.rng = random.Random(seed)
        self.attempts = 0
        self.rejections: Counter[str] = Counter()
        self._clean: dict[tuple[int, str, str], Clean] = {}

    def clean(self, conv: Conversation, questions: tuple[Question, ...], layer: str, mode: str) -> Clean:
        key = (conv.sample, layer, mode)
        if key not in self._clean:
            self._clean[key] = Clean(conv, questions, record(conv, questions, layer, Hooks(), seed=self.seed, mode=mode))
        return self._clean[key]

    def _try(self, conv: Conversation, questions: tuple[Question, ...], layer: str, mode: str, kind: Kind,
             plan: Plan, q: Question, piece: Piece | None) -> Case | str:
        self.attempts += 1
        seed = self.seed * 1000 + self.attempts
        hooks = Hooks(plan.stage, plan.key, plan.edit)
        rec = record(conv, questions, layer, hooks, seed=seed, mode=mode)
        if not hooks.fired or all(before == after for before, after in hooks.fired):
            return "edit had no effect"
        if rec.correct[q.num]:
            return "question still answered right"
        gold = hooks.ops.get((plan.op_stage, plan.op_key))
        ops = {o["op_id"]: o for o in rec.export["data"]["operations"]}
        if gold not in ops:
            return "gold op not recorded"
        clean = record(conv, questions, layer, Hooks(), seed=seed, mode=mode)
        if not clean.correct[q.num]:
            return "clean replay answers wrong"
        if first_divergent_op(clean.export, rec.export) != gold:
            return "first divergence is not the gold op"
        case = Case(layer, conv, q, piece, kind, plan, mode, seed, rec, gold, ops[gold]["op_name"])
        why = evidence_holds(case)
        return why or case

    def build(self) -> list[Case]:
        cases: list[Case] = []
        for layer in LAYERS:
            used: Counter[tuple[int, int]] = Counter()
            conv_used: Counter[int] = Counter()
            for kind in [k for k in KINDS if k.layer == layer]:
                want = self.quotas.get(kind.name, 0)
                if want <= 0:
                    continue
                candidates = [(conv, qs, q, p) for conv, qs in CONVERSATIONS for q in qs
                              for p in (q.pieces if kind.per_piece else (None,))]
                self.rng.shuffle(candidates)
                got = 0
                tried: set[tuple[int, int, str]] = set()
                while got < want:
                    fresh = [c for c in candidates if (c[0].sample, c[2].num, c[3].msg if c[3] else "") not in tried]
                    if not fresh:
                        break
                    fresh.sort(key=lambda c: (used[(c[0].sample, c[2].num)], conv_used[c[0].sample]))
                    conv, qs, q, piece = fresh[0]
                    tried.add((conv.sample, q.num, piece.msg if piece else ""))
                    mode = RETRIEVAL_MODES.get(kind.name) or (
                        ("hybrid" if (len(cases) % 3 == 2) else "agentic") if layer == "evermemos" else "agentic")
                    clean = self.clean(conv, qs, layer, mode)
                    if not clean.recording.correct[q.num]:
                        continue
                    plan = kind.plan(clean, q, piece)
                    if plan is None:
                        continue
                    outcome = self._try(conv, qs, layer, mode, kind, plan, q, piece)
                    if isinstance(outcome, str):
                        self.rejections[f"{kind.name}: {outcome}"] += 1
                        continue
                    cases.append(outcome)
                    used[(conv.sample, q.num)] += 1
                    conv_used[conv.sample] += 1
                    got += 1
                self.progress(f"{kind.name}: {got}/{want}")
        return cases


# ---------------------------------------------------------------------------------- write
def _excerpt(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(item: Any, case: Case) -> str:
    """One edited item as readable text."""
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], int):
        return f"{case.recording.layer.hit_text(item[0])} (score {item[1]})"
    if isinstance(item, int) and not isinstance(item, bool):
        return case.recording.layer.hit_text(item)
    if isinstance(item, tuple):
        return str(item[1])
    if isinstance(item, dict):
        return f"{item['event']}: {item['text']}"
    if hasattr(item, "entry"):
        return f"{item.entry['speaker_name']}: {item.entry['content']}"
    return str(item)


def _faulted_text(case: Case) -> dict[str, str]:
    """The edited text before and after the edit; for lists, only the items that changed."""
    before, after = case.recording.hooks.fired[0]
    if isinstance(before, list) and isinstance(after, list):
        gone = [x for x in before if x not in after]
        new = [x for x in after if x not in before]
        if case.piece is not None and len(gone) > 1:
            marks = (case.piece.raw_value, case.piece.value)
            gone = [x for x in gone if any(m in _show(x, case) for m in marks)] or gone[:1]
        return {"before": _excerpt(" | ".join(_show(x, case) for x in gone) or "(nothing)"),
                "after": _excerpt(" | ".join(_show(x, case) for x in new) or "(removed)")}
    return {"before": _excerpt(_show(before, case)), "after": _excerpt(_show(after, case))}


def annotation(case: Case) -> dict[str, Any]:
    ids = case.recording.node_ids[case.question.num]
    conv = case.conv
    return {
        "query_id": ids["query"],
        "query": case.question.text,
        "golden_answers": [case.question.answer],
        "golden_answers_id": ids["golden"],
        "prediction": case.recording.predictions[case.question.num],
        "prediction_id": ids["prediction"],
        "source_evidence_ids": sorted({f"{conv.message_id(p.msg)}@1" for p in case.question.pieces}),
        "final_error_type": case.kind.error,
        "final_op_id": case.gold_op_id,
    }


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=4, ensure_ascii=False)
    os.replace(tmp, path)


def write(cases: list[Case], out_dir: Path, seed: int) -> list[dict[str, Any]]:
    """Write ``out_dir/bench/<split>/*.json`` and ``out_dir/manifest.json``; returns the manifest."""
    bench = out_dir / "bench"
    if bench.exists():
        shutil.rmtree(bench)
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    manifest = []
    for n, i in enumerate(order, start=1):
        case = cases[i]
        case_id = f"{n:03d}"
        filename = f"{case.conv.user_id}-{case_id}.json"
        export = json.loads(json.dumps(case.recording.export))
        export["metadata"]["memtracebench_graph_filename"] = filename
        export["metadata"]["memtracebench_dataset_source"] = DATASET_SOURCE
        record_ = annotation(case)
        export["data"]["annotations"] = [record_]
        _write_json(bench / case.split / filename, export)
        manifest.append({
            "case_id": case_id, "split": case.split, "file": f"{case.split}/{filename}", "user_id": case.conv.user_id,
            "question": case.question.num, "query_id": record_["query_id"], "fault_kind": case.kind.name,
            "retrieval_mode": case.mode if case.split == "evermemos" else None,
            "gold_op_id": case.gold_op_id, "gold_op_name": case.gold_op_name, "gold_error_type": case.kind.error,
            "edit_point": [case.plan.stage, case.plan.key], "faulted_text": _faulted_text(case),
            "prediction": record_["prediction"], "golden_answer": case.question.answer, "seed": case.seed,
        })
    manifest.sort(key=lambda m: m["case_id"])
    _write_json(out_dir / "manifest.json", manifest)
    return manifest


def build_benchmark(out_dir: Path, seed: int = 2027, quotas: dict[str, int] | None = None,
                    progress: Callable[[str], None] | None = None) -> tuple[list[dict[str, Any]], Builder]:
    builder = Builder(seed, quotas, progress)
    cases = builder.build()
    return write(cases, Path(out_dir), seed), builder
