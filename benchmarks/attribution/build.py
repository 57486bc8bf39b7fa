"""Build a benchmark from its data: one graph per case, written by the real membase layers, verified.

Each case runs its conversation through the split's layer (``membase``'s runners, faultbench's
deterministic answer model and judge) with its planned fault (:mod:`.faults`). A case is kept
only when it passes **counterfactual replay**: with its fault the answer is judged wrong, and
in the same system without the fault (the clean run of the conversation) it is judged right —
the fault is decisive. Its label is the op recorded while the fault acted and the error type of
its error kind, both by construction. Every drop is counted with its reason, per case.

The output is the MemTraceBench layout (``<out>/<split>/<name>-<case>.json`` with one
annotation each) plus ``attribution_manifest.json`` (the cases kept, the cases dropped).
"""

from __future__ import annotations

import functools
import random
import tempfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.attribution.data import Benchmark, Case, Conversation
from benchmarks.attribution.faults import planned_fault
from benchmarks.attribution.reader import EvidenceReader, evidence_keys
from membase.utils.io import atomic_write_json
from toolkits.faultbench import (
    FaultSet,
    PipelineRun,
    case_nodes,
    fault_class,
    label_op,
    relativize_paths,
    run_pipeline,
    seeded_uuid4,
)

__all__ = ["MANIFEST", "BuildReport", "build_benchmark"]

MANIFEST = "attribution_manifest.json"


@dataclass(kw_only=True)
class BuildReport:
    """Cases written and cases dropped (with the reason)."""

    cases: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)


class _Builder:
    def __init__(self, bench: Benchmark, out: Path, top_k: int, progress: Callable[[str], None] | None) -> None:
        self.bench, self.out, self.top_k, self.progress = bench, out, top_k, progress
        self.report = BuildReport()
        self._clean: dict[tuple[str, str], PipelineRun] = {}

    def _run(self, case: Case, qas: list[Any], faults: list[Any], tag: str) -> PipelineRun:
        conv = self.bench.conversations[case.conversation]
        trajectory = conv.trajectory()
        seed = zlib.crc32(f"{self.bench.name}:{case.split}:{case.conversation}:{tag}".encode())
        make_layer = type(faults[0]).make_layer if faults else fault_class(case.split).make_layer  # type: ignore[attr-defined]
        if case.split == "mem0" and conv.memories:  # the memory LLM's rewordings of the table's messages
            make_layer = functools.partial(make_layer, memories=conv.memory_table())
        with tempfile.TemporaryDirectory(prefix="attribution-layer-") as tmp, seeded_uuid4(random.Random(seed)):
            layer = make_layer(trajectory.id, str(Path(tmp) / trajectory.id), faults)
            try:
                return run_pipeline(layer, trajectory, qas, injector=FaultSet(faults), top_k=self.top_k,
                                    reader=self._reader(conv, case.split),
                                    graph_metadata={"save_dir": f"memory/{case.split}/{trajectory.id}",
                                                    "traced_data_save_dir": "traced_data"})
            finally:
                layer.cleanup()

    def _reader(self, conv: Conversation, split: str) -> Any:
        """The benchmark's answer model (None: faultbench's extractive reader).

        On the Mem0 split a message of the paraphrase table reaches the store as its memory texts,
        so the reader's key for it is the memory text that states the answer.
        """
        if self.bench.reader != "evidence":
            return None
        texts = [text for _id, _who, text, _time in conv.messages()]
        memories = conv.memories if split == "mem0" else {}
        questions = {q["question"].strip(): q for q in conv.questions.values()}
        return EvidenceReader(keys={text: evidence_keys(q, texts, memories) for text, q in questions.items()},
                              answers={text: conv.qa(q["key"]).golden_answers[0] for text, q in questions.items()})

    def _clean_run(self, case: Case) -> PipelineRun:
        """The conversation's run without any fault, answering every question its cases ask."""
        key = (case.conversation, case.split)
        if key not in self._clean:
            conv = self.bench.conversations[case.conversation]
            keys = dict.fromkeys(c.question for c in self.bench.cases if (c.conversation, c.split) == key)
            self._clean[key] = self._run(case, [conv.qa(k) for k in keys], [], "clean")
        return self._clean[key]

    def drop(self, case: Case, reason: str, prediction: str | None = None) -> None:
        self.report.dropped.append({"case": case.number, "split": case.split, "origin": case.origin,
                                    "kind": f"{case.fault.error}/{case.fault.corruption}", "reason": reason}
                                   | ({"prediction": prediction} if prediction is not None else {}))
        if self.progress:
            self.progress(f"case {case.number} ({case.split} {case.origin}): dropped, {reason}")

    def case(self, case: Case) -> None:
        conv = self.bench.conversations[case.conversation]
        qa = conv.qa(case.question)
        try:
            clean = self._clean_run(case)
            fault = planned_fault(case, conv, qa, conv.trajectory())
            run = self._run(case, [qa], [fault], f"case:{case.number}")
        except RuntimeError as exc:
            self.drop(case, f"run_failed: {exc}")
            return
        if not _right(clean.records[qa.id]):
            self.drop(case, "clean_run_wrong", clean.records[qa.id].prediction)  # not decisive: it fails anyway
        elif not fault.fired:
            self.drop(case, "not_fired")
        elif _right(run.records[qa.id]):
            self.drop(case, "answer_still_right", run.records[qa.id].prediction)
        elif (op_id := label_op(fault, run)) is None:
            self.drop(case, "op_not_found")
        else:
            self._write(case, qa, fault, run, op_id)

    def _write(self, case: Case, qa: Any, fault: Any, run: PipelineRun, op_id: str) -> None:
        export = run.export
        relativize_paths(export)
        name = f"{self.bench.name}-{case.number:03d}.json"
        export["metadata"].update({"memtracebench_graph_filename": name,
                                   "memtracebench_dataset_source": "HandWritten"})
        found = case_nodes(export).get(qa.id)
        if found is None:
            self.drop(case, "op_not_found")
            return
        latest = {n["full_name"]: n["full_node_id"] for n in export["data"]["nodes"]}
        export["data"]["annotations"] = [{
            "query_id": found["query_id"], "query": found["query"], "golden_answers": list(qa.metadata["answer_parts"]),
            "golden_answers_id": found["golden_answers_id"], "prediction": found["prediction"],
            "prediction_id": found["prediction_id"],
            "source_evidence_ids": [latest[e] for e in qa.metadata.get("evidence", []) if e in latest],
            "final_error_type": fault.spec.error_type, "final_op_id": op_id}]
        (self.out / case.split).mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.out / case.split / name, export, indent=None)
        self.report.cases.append({"case": case.number, "split": case.split, "file": f"{case.split}/{name}",
                                  "origin": case.origin, "kind": fault.kind, "site": fault.site,
                                  "query_id": found["query_id"], "question": qa.id,
                                  "final_error_type": fault.spec.error_type, "final_op_id": op_id,
                                  "note": fault.note})
        if self.progress:
            self.progress(f"case {case.number} ({case.split} {case.origin}): {fault.spec.error_type} {op_id}")


def _right(record: Any) -> bool:
    """The judge's verdict, or an answer that is a golden answer word for word.

    faultbench's token judge reads content words only, so it can never accept "No", "Yes" or a
    name it cannot tokenise ("Inês") even when the answer is exactly the golden one.
    """
    said = record.prediction.strip().lower().rstrip(".")
    return record.score == 1.0 or any(said == g.strip().lower().rstrip(".") for g in record.qa.golden_answers)


def build_benchmark(bench: Benchmark, out_dir: str | Path, *, splits: Sequence[str] | None = None,
                    numbers: Sequence[int] | None = None, top_k: int = 10,
                    progress: Callable[[str], None] | None = None) -> BuildReport:
    """Build the cases of ``bench`` (those of ``splits`` / case ``numbers``, default all) into ``out_dir``.

    Returns:
        The report; ``<out_dir>/attribution_manifest.json`` holds the same.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    builder = _Builder(bench, out, top_k, progress)
    for case in bench.cases:
        if (splits is None or case.split in splits) and (numbers is None or case.number in numbers):
            builder.case(case)
    report = builder.report
    atomic_write_json(out / MANIFEST, {"format": "attribution-build-v1", "benchmark": bench.name,
                                       "data": bench.path.name, "top_k": top_k, "cases": report.cases,
                                       "dropped": report.dropped}, indent=1)
    return report
