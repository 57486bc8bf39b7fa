"""evidence_flow attributes failures on Mem0v3 graphs to the op that lost the information."""

from __future__ import annotations

import pytest

from tests.membase_mem0v3._helpers import NEEDS_MEM0V3, message

pytest.importorskip("mem0.utils.scoring", reason=NEEDS_MEM0V3)

from toolkits.evidence_flow import attribute_case_evidence_flow  # noqa: E402
from toolkits.optimization.grouping import group_attributions  # noqa: E402
from toolkits.optimization.targets import TARGETS  # noqa: E402

CAT_MESSAGES = [
    message(1, "I adopted a cat last spring from the shelter."),
    message(2, "I adopted a grey cat named Miso last spring from the shelter."),
    message(3, "My brother Tomas moved to Lisbon to teach chemistry."),
]


def _case(run, question: str, golden: str, evidence: str) -> dict:
    return {
        "query_full_node_id": run.query_id,
        "query": question,
        "golden_answer": golden,
        "prediction": "I do not know.",
        "source_evidence_full_node_ids": [f"{evidence}@1"],
    }


def _op_reading(run, op_name: str, source: str):
    return next(op for op in run.ops(op_name) if any(e.source_full_node_id == source for e in run.edges(op)))


def test_a_fact_skipped_as_already_known_is_an_extraction_error_at_its_extraction_call(traced_question):
    question = "What is the name of Ana's cat?"
    run = traced_question(CAT_MESSAGES, question, ["mem0v3-message-2"], "I do not know.")
    result = attribute_case_evidence_flow(run.graph, _case(run, question, "Miso", "mem0v3-message-2"))

    extraction = _op_reading(run, "memory_system.extract_memories", "mem0v3-message-2@1")
    assert (result["status"], result["error_type"], result["op_id"]) == (
        "attributed", "ExtractionError", extraction.op_id)
    # the memory that looked equivalent is recorded at that op: as its input and in its metadata
    first_unit = next(u for u in run.layer.get_all() if "adopted a cat" in u["memory"])
    shown = extraction.metadata["existing_memories"]
    assert [m["memory_id"] for m in shown] == [first_unit["id"]]
    existing = {e.source_full_node_id for e in run.edges(extraction) if e.source_full_node_id.startswith("existing_memories:")}
    assert len(existing) == 1
    feeding = {e.source_full_node_id for e in run.graph.get_all_edges() if e.target_full_node_id in existing}
    assert feeding == {f"memory-unit-{first_unit['id']}@1"}
    # the optimizer routes this attribution to the layer's prompt knob
    groups = group_attributions([result], run.graph, TARGETS.for_layer("Mem0v3"))
    assert list(groups.by_field) == ["custom_instructions"]


def test_a_holding_memory_under_the_threshold_is_a_retrieval_error_at_score_fusion(traced_question):
    question = "Where does Tomas teach chemistry?"
    run = traced_question(CAT_MESSAGES, question, ["mem0v3-message-3"], "I do not know.", search_threshold=0.6)
    result = attribute_case_evidence_flow(run.graph, _case(run, question, "Lisbon", "mem0v3-message-3"))

    (fusion,) = run.ops("memory_system.score_fusion")
    assert (result["status"], result["error_type"], result["op_id"]) == ("attributed", "RetrievalError", fusion.op_id)
    dropped = {d["memory"]: d["reason"] for d in fusion.metadata["dropped"]}
    assert dropped["Ana: My brother Tomas moved to Lisbon to teach chemistry."] == "below_threshold"


def test_a_holding_memory_ranked_out_of_the_top_k_is_a_retrieval_error_at_score_fusion(traced_question):
    messages = [
        message(1, "My brother Tomas moved to Lisbon last year."),
        message(2, "Tomas said teaching chemistry is tiring but where he teaches chemistry matters."),
    ]
    question = "Where does Tomas teach chemistry?"
    run = traced_question(messages, question, ["mem0v3-message-1"], "I do not know.", k=1)
    result = attribute_case_evidence_flow(run.graph, _case(run, question, "Lisbon", "mem0v3-message-1"))

    (fusion,) = run.ops("memory_system.score_fusion")
    assert [e.content for e in run.entries] == [
        "Ana: Tomas said teaching chemistry is tiring but where he teaches chemistry matters."]
    assert {d["reason"] for d in fusion.metadata["dropped"]} == {"below_top_k"}
    assert (result["error_type"], result["op_id"]) == ("RetrievalError", fusion.op_id)


def test_a_truncated_reply_is_an_extraction_error_at_the_parse(traced_question):
    from membase.clients.fake import FunctionChatModel
    from membase.layers.mem0v3_fake import Mem0v3FakeBrain

    def truncating(messages, **kwargs):
        reply = Mem0v3FakeBrain()(messages)
        return reply[: reply.index("Miso") + 20] if "Miso" in reply else reply

    question = "What is the name of Ana's cat?"
    messages = [message(1, "My brother Tomas moved to Lisbon to teach chemistry."),
                message(2, "I adopted a grey cat named Miso last spring from the shelter.")]
    run = traced_question(messages, question, ["mem0v3-message-2"], "I do not know.",
                          chat_model=FunctionChatModel(truncating, model="truncating"))
    result = attribute_case_evidence_flow(run.graph, _case(run, question, "Miso", "mem0v3-message-2"))

    parse = run.ops("memory_system.parse_extraction")[1]
    assert any((e.metadata or {}).get("error") for e in run.edges(parse))
    assert (result["error_type"], result["op_id"]) == ("ExtractionError", parse.op_id)
