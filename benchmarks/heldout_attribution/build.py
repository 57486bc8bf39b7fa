"""Build the held-out benchmark: one graph per case, in MemTraceBench's layout.

``<out>/<split>/<case id>.json`` is a smartcomment export with ``data.annotations`` holding one
annotation (spec-attribution §1.2 fields); ``<out>/manifest.json`` maps each case id to its fault
kind and label. Nothing in a graph names the fault: faulted and healthy steps run through the same
recording code with different data, and case ids are shuffled with the seed.

Every case is checked against its own construction before it is written (the store holds the
fact for a retrieval fault, no unit holds it for a construction fault, the final context holds all
evidence for a response fault); a plan that does not do what its kind says stops the build.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

from .conversations import Conversation, Question
from .layer_evermemos import EverMemOSLayer
from .layer_long_context import LongContextLayer, trim_window
from .layer_mem0 import Mem0Layer
from .layer_rag import NaiveRagLayer
from .plans import CasePlan, all_plans
from .recording import OpLog, Recorded, line_of, record_conversation
from .text_tools import answer_part, fact_key

__all__ = ["EXPECTED_OP_NAMES", "build_benchmark", "prediction_for"]

CLOCK_START = 1_772_442_000.0  # 2026-03-02 09:00:00 UTC
DATASET_SOURCE = "heldout-synthetic"

EXPECTED_OP_NAMES: dict[tuple[str, str], str] = {
    ("long_context", "append"): "memory_system.memory_update",
    ("long_context", "trim"): "memory_system.memory_update",
    ("long_context", "retrieve"): "memory_system.retrieve",
    ("rag", "emit"): "memory_system.message_buffer_update",
    ("rag", "store"): "memory_system.add",
    ("rag", "retrieve"): "memory_system.retrieve",
    ("mem0", "extract"): "memory_system.extract_facts",
    ("mem0", "decide"): "memory_system.update_memory_decision",
    ("mem0", "retrieve"): "memory_system.search_vector_store",
    ("evermemos", "extract"): "memory_system.extract_memory",
    ("evermemos", "boundary"): "evermemos.boundary_detection",
    ("evermemos", "retrieve"): "memory_system.hybrid_retrieval",
    ("evermemos", "final_rerank"): "memory_system.agentic_final_rerank",
}
"""The op each (layer, stage) label must point at; ``answer`` is ``question-answering`` everywhere."""


def prediction_for(plan: CasePlan) -> str:
    """The wrong answer a reader of the faulted memory gives."""
    q, suffix = plan.question, plan.kind.name.split("/")[1]
    if suffix == "answer_wrong":
        return q.wrong
    if plan.multi:
        lost = answer_part(q, plan.conversation.message(plan.target))
        return " and ".join(a for a in q.answers if a != lost)
    change = {"extract_rewrite": q.rewrite, "episode_rewrite": q.rewrite, "compaction_rewrite": q.rewrite,
              "extract_vague": q.vague, "episode_vague": q.vague, "update_degrade": q.degrade,
              "delete": q.delete}.get(suffix)
    return change.prediction if change is not None and change.prediction else q.wrong


def _layer(plan: CasePlan, log: OpLog, rng: random.Random) -> Any:
    conv = plan.conversation
    if plan.kind.layer == "long_context":
        window = trim_window(conv, plan.target) if plan.kind.name == "lc/window_trim" else 100_000
        return LongContextLayer(conv, plan, log, window)
    if plan.kind.layer == "rag":
        return NaiveRagLayer(conv, plan, log, rng)
    if plan.kind.layer == "mem0":
        return Mem0Layer(conv, plan, log, rng)
    return EverMemOSLayer(conv, plan, log, rng, agentic=plan.variant == "agentic")


def _holders(layer: Any, conv: Conversation, question: Question) -> dict[str, list[str]]:
    """Per evidence message, the memory units holding its fact when the question is asked."""
    result = {}
    for mid in question.evidence:
        message = conv.message(mid)
        if isinstance(layer, LongContextLayer):
            intact = (mid, line_of(message, conv.session_of(mid))) in layer.lines
            result[mid] = ["memory-unit"] if intact else []
        elif isinstance(layer, NaiveRagLayer):
            result[mid] = [f"memory-unit-{u['id']}" for u, held in layer.units if mid in held]
        else:
            key = fact_key(question, message)
            result[mid] = [f"memory-unit-{uid}" for uid, held in layer.holds.items() if key in held]
    return result


def _check(plan: CasePlan, layer: Any, recorded: Recorded) -> None:
    q, conv = plan.question, plan.conversation
    holders = _holders(layer, conv, q)
    context = recorded.contexts[q.qid]

    def in_context(mid: str) -> bool:
        if isinstance(layer, LongContextLayer):
            return line_of(conv.message(mid), conv.session_of(mid)) in context
        return any(f"{h}" in recorded.retrieved[q.qid] for h in holders[mid])

    error = plan.kind.error_type
    problem = ""
    if error in {"ExtractionError", "UpdateError", "DeletionError"} and holders[plan.target]:
        problem = f"a unit still holds {plan.target}"
    elif error == "RetrievalError" and (not holders[plan.target] or in_context(plan.target)):
        problem = f"{plan.target} is not held by the store, or reached the context"
    elif error == "ResponseError" and not all(holders[m] and in_context(m) for m in q.evidence):
        problem = "not every evidence reached the final context"
    if problem:
        raise ValueError(f"plan {plan.kind.name} on {q.qid} does not build its fault: {problem}")


def _atomic_write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False, indent=4)
    os.replace(tmp, path)


def build_case(plan: CasePlan, index: int, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Record one case; return its graph export (annotation included) and its manifest row."""
    rng = random.Random(f"{seed}:{plan.kind.name}:{plan.question.qid}")
    conv, q = plan.conversation, plan.question
    log = OpLog()
    layer = _layer(plan, log, rng)
    others = [o for o in conv.questions if o.qid != q.qid and not set(o.evidence) & set(q.evidence)]
    questions = [q, *rng.sample(others, 2)]
    rng.shuffle(questions)
    predictions = {o.qid: o.answers[0] if len(o.answers) == 1 else " and ".join(o.answers) for o in questions}
    predictions[q.qid] = prediction_for(plan)
    filename = f"{plan.case_id}.json"
    metadata = {"save_dir": f"heldout/{conv.id}", "layer_type": layer.project_id,
                "traj_metadata": {"speaker_a": conv.speaker_a, "speaker_b": conv.speaker_b},
                "traced_data_save_dir": "traced_data", "dataset_cls": "LoCoMo",
                "memtracebench_graph_filename": filename, "memtracebench_dataset_source": DATASET_SOURCE}
    recorded = record_conversation(conv, layer, log, questions=questions, predictions=predictions, wrong={q.qid},
                                   clock_start=CLOCK_START + 3600 * index, graph_metadata=metadata)
    _check(plan, layer, recorded)
    subject = {"target": plan.target, "trigger": plan.trigger, "question": q.qid}[plan.kind.subject]
    op_id = log.ops.get((plan.kind.stage, subject))
    if not op_id:
        raise ValueError(f"plan {plan.kind.name} on {q.qid}: no {plan.kind.stage} op for {subject}")
    annotation = {
        "query_id": recorded.query_ids[q.qid],
        "query": q.text,
        "golden_answers": list(q.answers),
        "golden_answers_id": recorded.golden_ids[q.qid],
        "prediction": predictions[q.qid],
        "prediction_id": recorded.prediction_ids[q.qid],
        "source_evidence_ids": [f"{mid}@1" for mid in q.evidence],
        "final_error_type": plan.kind.error_type,
        "final_op_id": op_id,
    }
    graph = recorded.graph
    graph["data"]["annotations"] = [annotation]
    op_name = next(o["op_name"] for o in graph["data"]["operations"] if o["op_id"] == op_id)
    row = {"case_id": plan.case_id, "split": plan.kind.layer, "file": f"{plan.kind.layer}/{filename}",
           "fault_kind": plan.kind.name, "error_type": plan.kind.error_type, "final_op_id": op_id,
           "op_name": op_name, "stage": plan.kind.stage, "qid": q.qid, "target": plan.target,
           "trigger": plan.trigger, "multi_evidence": plan.multi, "retrieval_mode": plan.variant or "default",
           "nodes": len(graph["data"]["nodes"]), "ops": len(graph["data"]["operations"])}
    return graph, row


def build_benchmark(out_dir: str | Path, seed: int = 0, *, only: str | None = None) -> dict[str, Any]:
    """Write every case under ``out_dir`` and return the manifest (also written as ``manifest.json``).

    ``only`` keeps the plans whose fault kind or layer starts with it (for quick checks).
    """
    out = Path(out_dir)
    rng = random.Random(seed)
    plans = [p for p in all_plans() if only is None or p.kind.name.startswith(only)]
    numbered: list[CasePlan] = []
    for layer in ("long_context", "rag", "mem0", "evermemos"):
        group = [p for p in plans if p.kind.layer == layer]
        rng.shuffle(group)
        numbered += [CasePlan(case_id=f"{layer}-{i:03d}", kind=p.kind, conversation=p.conversation,
                              question=p.question, target=p.target, trigger=p.trigger, variant=p.variant)
                     for i, p in enumerate(group, 1)]
    rows = []
    for index, plan in enumerate(numbered):
        graph, row = build_case(plan, index, seed)
        _atomic_write(out / row["file"], graph)
        rows.append(row)
    manifest = {"seed": seed, "dataset_source": DATASET_SOURCE, "cases": rows}
    _atomic_write(out / "manifest.json", manifest)
    return manifest
