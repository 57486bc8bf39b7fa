"""What a faultbench case must look like (shared by the build test and the committed-benchmark test)."""

from __future__ import annotations

import json
import re
from typing import Any

from toolkits.faultbench import CORRUPTIONS, SPLITS, split_specs

#: (split, error kind, site) -> names the labelled op may have.
EXPECTED_OPS: dict[tuple[str, str, str], set[str]] = {
    ("long_context", "extraction", "memory_update"): {"memory_system.memory_update"},
    ("long_context", "update", "memory_update"): {"memory_system.memory_update"},
    ("long_context", "retrieval", "retrieve"): {"memory_system.retrieve"},
    ("rag", "extraction", "buffer"): {"memory_system.message_buffer_update"},
    ("rag", "extraction", "doc"): {"memory_system.message_buffer_update"},
    ("rag", "extraction", "add"): {"memory_system.add", "memory_system.message_buffer_update"},
    ("rag", "retrieval", "retrieve"): {"memory_system.retrieve"},
    ("mem0", "extraction", "facts"): {"memory_system.extract_facts"},
    ("mem0", "extraction", "decision"): {"memory_system.update_memory_decision"},
    ("mem0", "update", "decision"): {"memory_system.update_memory_decision"},
    ("mem0", "deletion", "decision"): {"memory_system.update_memory_decision"},
    ("mem0", "retrieval", "search"): {"memory_system.search_vector_store"},
    ("evermemos", "extraction", "episode"): {"memory_system.extract_memory"},
    ("evermemos", "extraction", "boundary"): {"evermemos.boundary_detection"},
    ("evermemos", "extraction", "memcell"): {"memory_system.finalize_memory_unit"},
    ("evermemos", "retrieval", "round1"): {"memory_system.agentic_round1_bundle"},
    ("evermemos", "retrieval", "final"): {"memory_system.agentic_final_rerank"},
}
for _split in ("long_context", "rag", "mem0", "evermemos"):
    EXPECTED_OPS[(_split, "response", "question_answering")] = {"question-answering"}

#: Words that would tell a reader of the graph how the case was built: the builder's package and
#: every fault kind (``update/negate``) and corruption id (``swap_person``) it has.
_KINDS = {s.kind for split in SPLITS for s in split_specs(split)}
_IDS = {s.corruption for split in SPLITS for s in split_specs(split) if "_" in s.corruption}
_BUILDER_WORDS = re.compile(
    r"faultbench|toolkits/|" + "|".join(rf"\b{re.escape(w)}\b" for w in sorted(_KINDS | _IDS | set(CORRUPTIONS) - {
        "drop", "negate", "partial"}))
)


def builder_traces(graph: dict[str, Any]) -> list[str]:
    """Records of a graph that name the builder's files or fault kinds (should be none)."""
    found = []
    for key in ("nodes", "edges", "operations", "sessions"):
        for record in graph["data"].get(key, []):
            where = f"{record.get('filename', '')} {record.get('trigger_point', '')}"
            labels = " ".join(str(record.get(k) or "") for k in ("name", "op_name", "category", "class_name",
                                                               "comment", "session_name"))
            metadata = json.dumps(record["metadata"]) if record.get("metadata") else ""
            value = str(record.get("value", ""))
            if (re.search(r"faultbench|toolkits/", where + value) or _BUILDER_WORDS.search(labels)
                    or _BUILDER_WORDS.search(metadata)):
                found.append(f"{key}: {where} {labels[:80]} {metadata[:80]}")
    metadata = json.dumps(graph.get("metadata", {}))
    if _BUILDER_WORDS.search(metadata):
        found.append(f"metadata: {metadata[:160]}")
    return found


def judge_scores(graph: dict[str, Any], query_id: str) -> list[str]:
    """The judge scores recorded for a question."""
    data = graph["data"]
    nodes = {n["full_node_id"]: n for n in data["nodes"]}
    names = {o["op_id"]: o["op_name"] for o in data["operations"]}
    judge_ops = {e["op_id"] for e in data["edges"]
                 if e["source_full_node_id"] == query_id and names[e["op_id"]] == "llm-judge"}
    return [nodes[e["target_full_node_id"]]["value"] for e in data["edges"]
            if e["op_id"] in judge_ops and nodes[e["target_full_node_id"]].get("class_name") == "judge_score"]


def check_case(split: str, graph: dict[str, Any], annotation: dict[str, Any]) -> None:
    """Assert the properties every case has: label by its fault's site, wrong answer, known nodes."""
    fault = annotation["fault"]
    op = next(o for o in graph["data"]["operations"] if o["op_id"] == annotation["final_op_id"])
    assert op["op_name"] in EXPECTED_OPS[(split, fault["error"], fault["site"])], fault
    assert annotation["final_error_type"] == {
        "extraction": "ExtractionError", "update": "UpdateError", "deletion": "DeletionError",
        "retrieval": "RetrievalError", "response": "ResponseError"}[fault["error"]]
    assert fault["kind"] == f"{fault['error']}/{fault['corruption']}"
    node_ids = {n["full_node_id"] for n in graph["data"]["nodes"]}
    for key in ("query_id", "golden_answers_id", "prediction_id"):
        assert annotation[key] in node_ids
    assert annotation["source_evidence_ids"] and set(annotation["source_evidence_ids"]) <= node_ids
    assert [float(s) for s in judge_scores(graph, annotation["query_id"])] == [0.0], fault
