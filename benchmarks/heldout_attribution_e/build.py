"""Build the benchmark folder: every catalogued case, recorded, checked by counterfactual replay, written.

Each case is recorded twice with the same code and seed: once with no fault (the baseline) and once
with its fault. It is kept only if

* the baseline answers the question correctly from a context that holds the evidence;
* the faulted run answers it wrongly, and the fault changed exactly one decision, whose operation
  exists in the graph (the gold ``final_op_id``; the stage gives ``final_error_type``);
* the store and the context show what the error type says (spec-attribution §5.1): Extraction —
  no memory unit ever held the answer; Update/Deletion — a unit held it, none does at the end;
  Retrieval — the store holds it, the context does not; Response — the context is the baseline's
  and holds it;
* a coincidental-overlap case really has the golden answer's words in its wrong context.

A case that fails a check stops the build (the catalogue is wrong, not the case). Cases are then
shuffled with a fixed seed and numbered; the graphs go to ``<out>/bench/<split>/<id>.json`` and the
fault kinds only to ``<out>/manifest.json``.

Run: ``python benchmarks/heldout_attribution_e/build.py [--out runs/heldout_attribution_e]``
"""

from __future__ import annotations

import argparse
import hashlib
import random
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.heldout_attribution_e.cases import CATALOGUE  # noqa: E402
from benchmarks.heldout_attribution_e.dialogues import dialogue  # noqa: E402
from benchmarks.heldout_attribution_e.faults import CaseSpec, Fault  # noqa: E402
from benchmarks.heldout_attribution_e.memsys.model import normalise_answer  # noqa: E402
from benchmarks.heldout_attribution_e.memsys.pipeline import (  # noqa: E402
    SPLITS,
    Recording,
    is_correct,
    qa_id,
    record,
)
from membase.utils.io import atomic_write_json  # noqa: E402

DEFAULT_OUT = ROOT / "runs" / "heldout_attribution_e"
DATASET_SOURCE = "LoCoMo-style (hand-written)"
SHUFFLE_SEED = 20260611


class CaseError(ValueError):
    """A catalogued case that does not hold up under counterfactual replay."""


@dataclass
class BuiltCase:
    spec: CaseSpec
    graph: dict[str, Any]
    annotation: dict[str, Any]
    before: str
    after: str
    case_id: str = ""


def _seed(position: int) -> int:
    return 1000 + 7919 * position


def _holds(fault: Fault, texts: list[str]) -> bool:
    return any(fault.holds_answer(t) for t in texts)


def verify_case(spec: CaseSpec, position: int) -> BuiltCase:
    """Record ``spec`` with and without its fault and check it (CaseError if it does not hold)."""
    d = dialogue(spec.dialogue)
    q = d.question(spec.question)
    qid = qa_id(d, q)
    seed = _seed(position)
    graph_id = "graph-" + hashlib.sha1(f"e-{position}-{seed}".encode()).hexdigest()[:32]
    where = f"case {position} {spec}"

    baseline = record(d, spec.split, seed=seed, graph_id=graph_id)
    fault = Fault(spec, d)
    if not is_correct(q, baseline.predictions[qid]) or not fault.holds_answer(baseline.contexts[qid]):
        raise CaseError(f"{where}: without the fault the answer is {baseline.predictions[qid]!r}")
    faulted = record(d, spec.split, fault, seed=seed, graph_id=graph_id)
    if is_correct(q, faulted.predictions[qid]):
        raise CaseError(f"{where}: the fault leaves the answer right ({faulted.predictions[qid]!r})")
    if len(fault.fired) != 1:
        raise CaseError(f"{where}: the fault fired {len(fault.fired)} times")
    op_id = fault.fired[0]
    ops = {op["op_id"] for op in faulted.graph["data"]["operations"]}
    edge_ops = {e["op_id"] for e in faulted.graph["data"]["edges"]}
    if op_id not in ops or op_id not in edge_ops:
        raise CaseError(f"{where}: the faulted operation {op_id} has no edges in the graph")
    _check_error_type(spec, fault, baseline, faulted, qid, where)
    if spec.kind == "coincidental_overlap":
        context_words = set(normalise_answer(faulted.contexts[qid]).split())
        if not set(normalise_answer(q.answer).split()) <= context_words:
            raise CaseError(f"{where}: the golden answer's words are not in the faulted context")
    annotation = {
        "query_id": faulted.node_ids[qid]["query"],
        "query": q.question,
        "golden_answers": [q.answer],
        "golden_answers_id": faulted.node_ids[qid]["golden_answers"],
        "prediction": faulted.predictions[qid],
        "prediction_id": faulted.node_ids[qid]["prediction"],
        "source_evidence_ids": [f"U{d.index}:{e}@1" for e in q.evidence],
        "final_error_type": spec.error_type,
        "final_op_id": op_id,
        "question_type": q.category,
    }
    node_ids = {n["full_node_id"] for n in faulted.graph["data"]["nodes"]}
    missing = [e for e in annotation["source_evidence_ids"] if e not in node_ids]
    if missing:
        raise CaseError(f"{where}: evidence nodes {missing} are not in the graph")
    return BuiltCase(spec, faulted.graph, annotation, fault.before, fault.after)


def _check_error_type(spec: CaseSpec, fault: Fault, baseline: Recording, faulted: Recording, qid: str,
                      where: str) -> None:
    stores = [texts for _, texts in faulted.store_history]
    final = stores[-1]
    context = faulted.contexts[qid]
    kind = spec.error_type
    if kind == "ExtractionError" and any(_holds(fault, texts) for texts in stores):
        raise CaseError(f"{where}: a memory unit held the answer at some point (not an extraction loss)")
    if kind in ("UpdateError", "DeletionError"):
        if not any(_holds(fault, texts) for texts in stores) or _holds(fault, final):
            raise CaseError(f"{where}: the answer was not captured and then lost")
    if kind == "RetrievalError" and (not _holds(fault, final) or fault.holds_answer(context)):
        raise CaseError(f"{where}: the store does not hold the answer, or the context still does")
    if kind == "ResponseError" and (context != baseline.contexts[qid] or not fault.holds_answer(context)):
        raise CaseError(f"{where}: the context changed or lacks the answer")


def verify_all(catalogue: Sequence[CaseSpec] = CATALOGUE) -> list[BuiltCase]:
    """Every case of the catalogue, verified; raises CaseError listing every case that fails."""
    built, errors = [], []
    for position, spec in enumerate(catalogue):
        try:
            built.append(verify_case(spec, position))
        except (CaseError, ValueError) as exc:
            errors.append(str(exc))
    if errors:
        raise CaseError(f"{len(errors)} case(s) failed:\n" + "\n".join(errors))
    return built


def assign_ids(built: list[BuiltCase], seed: int = SHUFFLE_SEED) -> list[BuiltCase]:
    order = list(range(len(built)))
    random.Random(seed).shuffle(order)
    out = []
    for number, i in enumerate(order, 1):
        case = built[i]
        case.case_id = f"e{number:03d}"
        out.append(case)
    return out


def write(built: list[BuiltCase], out_dir: Path) -> dict[str, Any]:
    """Write ``<out>/bench/<split>/<id>.json`` (fresh) and ``<out>/manifest.json``; return the manifest."""
    bench = out_dir / "bench"
    if bench.exists():
        shutil.rmtree(bench)
    entries = []
    for case in built:
        name = f"{case.case_id}.json"
        graph = dict(case.graph)
        graph["metadata"] = {**graph["metadata"], "memtracebench_graph_filename": name,
                             "memtracebench_dataset_source": DATASET_SOURCE}
        graph["data"] = {**graph["data"], "annotations": [case.annotation]}
        atomic_write_json(bench / case.spec.split / name, graph)
        entries.append({
            "case_id": case.case_id, "split": case.spec.split, "file": f"bench/{case.spec.split}/{name}",
            "fault_kind": case.spec.kind, "stage": case.spec.stage, "twist": case.spec.twist,
            "dialogue": case.spec.dialogue, "question_key": case.spec.question, "query": case.annotation["query"],
            "golden_answer": case.annotation["golden_answers"][0], "prediction": case.annotation["prediction"],
            "gold_op_id": case.annotation["final_op_id"], "gold_error_type": case.annotation["final_error_type"],
            "faulted_before": case.before, "faulted_after": case.after,
        })
    entries.sort(key=lambda e: e["case_id"])
    manifest = {"bench_dir": "bench", "cases": entries}
    atomic_write_json(out_dir / "manifest.json", manifest)
    return manifest


def build(out_dir: Path = DEFAULT_OUT, catalogue: Sequence[CaseSpec] = CATALOGUE) -> dict[str, Any]:
    """Verify, shuffle and write the whole benchmark; returns the manifest."""
    return write(assign_ids(verify_all(catalogue)), Path(out_dir))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        manifest = build(args.out)
    except CaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    counts = {s: sum(1 for c in manifest["cases"] if c["split"] == s) for s in SPLITS}
    print(f"wrote {len(manifest['cases'])} cases to {args.out / 'bench'} ({counts}); manifest {args.out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
