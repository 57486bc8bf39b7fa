"""EverMemOS pipeline logic without tracing: boundary, memcells, extraction, index, retrieval rounds."""

from __future__ import annotations

import itertools
import json

import pytest

from membase.clients.embeddings import FakeEmbedder
from membase.clients.fake import ScriptedChatModel
from membase.layers.evermemos.boundary import (
    check_hard_limits,
    describe_time_gap,
    detect_boundary,
    parse_boundary_reply,
)
from membase.layers.evermemos.config import (
    BoundaryDetectionConfig,
    MemoryExtractionConfig,
    OnlineRetrieverConfig,
)
from membase.layers.evermemos.extraction import parse_episode_reply, parse_event_log_reply
from membase.layers.evermemos.fake import make_evermemos_fake
from membase.layers.evermemos.index import HybridIndex, rrf_fuse
from membase.layers.evermemos.manager import OnlineMemoryManager
from membase.layers.evermemos.retrieval import (
    agentic_search,
    hybrid_search,
    parse_multi_query_reply,
    parse_refined_query_reply,
)

DAY1 = [
    ("Caroline", "I went to an LGBTQ support group yesterday.", "2023-05-08T13:56:00"),
    ("Melanie", "That sounds powerful!", "2023-05-08T13:57:00"),
    ("Caroline", "It was, I felt accepted there.", "2023-05-08T13:58:00"),
]
DAY2 = [
    ("Melanie", "Where did you grow up?", "2023-05-25T13:14:00"),
    ("Caroline", "I moved from Sweden four years ago.", "2023-05-25T13:15:00"),
]


def _manager(llm=None, *, boundary=None, extraction=None, retrieval=None) -> OnlineMemoryManager:
    ids = itertools.count()
    return OnlineMemoryManager(
        llm=llm or make_evermemos_fake(),
        embedder=FakeEmbedder(64),
        boundary=boundary or BoundaryDetectionConfig(),
        extraction=extraction or MemoryExtractionConfig(),
        retrieval=retrieval or OnlineRetrieverConfig(),
        id_factory=lambda: f"{next(ids):024x}",
    )


def _feed(manager, messages):
    return [manager.add_message(role="user", name=n, content=t, timestamp=ts) for n, t, ts in messages]


# -- boundary ---------------------------------------------------------------------------------
def test_parse_boundary_reply_reads_first_flat_object_and_defaults():
    text = 'Sure! {"should_end": true, "topic_summary": "trip"} and {"should_end": false}'
    result = parse_boundary_reply(text)
    assert result is not None
    assert result.should_end is True and result.topic_summary == "trip"
    assert result.confidence == 1.0 and result.reasoning == "No reason provided"
    assert parse_boundary_reply("no json here") is None
    assert parse_boundary_reply('{"a": {"should_end": true}}').should_end is True  # inner flat object


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("2023-05-08T13:56:00", "2023-05-08T13:56:30", "30 seconds (immediate response)"),
        ("2023-05-08T13:56:00", "2023-05-08T14:40:00", "44 minutes (recent conversation)"),
        ("2023-05-08T13:56:00", "2023-05-08T20:00:00", "6 hours (same day"),
        ("2023-05-08T13:56:00", "2023-05-25T13:14:00", "16 days (long gap"),
        ("2023-05-25T13:14:00", "2023-05-08T13:56:00", "out of order"),
        (None, "2023-05-08T13:56:00", "unknown"),
    ],
)
def test_time_gap_sentence(before, after, expected):
    assert expected in describe_time_gap(before, after)


def test_smart_mask_hides_last_history_message_and_retries_until_parse():
    llm = ScriptedChatModel(["garbage", '{"should_end": true, "topic_summary": "x"}'])
    history = [
        {"speaker_name": "A", "content": f"m{i}", "timestamp": "2023-05-08T13:56:00"} for i in range(3)
    ]
    new = [{"speaker_name": "B", "content": "new", "timestamp": "2023-05-08T13:57:00"}]
    decision = detect_boundary(llm, history, new, smart_mask=True)
    assert [m["content"] for m in decision.shown_history] == ["m0", "m1"]
    assert "m2" not in decision.prompt
    assert [a.response for a in decision.attempts] == [
        "garbage",
        '{"should_end": true, "topic_summary": "x"}',
    ]
    assert decision.result.should_end and not decision.fallback


def test_boundary_falls_back_to_no_split_after_five_failures():
    llm = ScriptedChatModel(["nope"] * 5)
    history = [{"speaker_name": "A", "content": "m", "timestamp": None}]
    decision = detect_boundary(llm, history, history, smart_mask=False)
    assert decision.fallback and decision.result.should_end is False and len(decision.attempts) == 5


def test_hard_message_limit_forces_split_without_llm():
    config = BoundaryDetectionConfig(hard_message_limit=3, use_smart_mask=False)
    check = check_hard_limits(
        [{"speaker_name": "a", "content": "x"}] * 2, [{"speaker_name": "b", "content": "y"}], config
    )
    assert check.reached and check.trigger_type == "message_limit" and check.total_messages == 3
    llm = make_evermemos_fake()
    manager = _manager(llm, boundary=config)
    records = _feed(manager, DAY1)
    assert records[-1].force_split and records[-1].decision is None
    assert [m["content"] for m in records[-1].memcell.memcell.original_data] == [t for _, t, _ in DAY1[:2]]
    assert records[-1].buffer_after_reset == [records[-1].message]
    boundary_calls = [
        c for c in llm.calls if c.messages[0]["content"].startswith("[task: episode-boundary]")
    ]
    assert len(boundary_calls) == 1  # only the second message reached the judge


# -- memcells and extraction -------------------------------------------------------------------
def test_long_gap_closes_memcell_and_smart_mask_reset_keeps_two_messages():
    manager = _manager(boundary=BoundaryDetectionConfig(smart_mask_threshold=2))
    records = _feed(manager, DAY1 + DAY2[:1])
    split = records[-1]
    assert split.decision.result.should_end and split.smart_mask_flag
    cell = split.memcell.memcell
    assert [m["content"] for m in cell.original_data] == [t for _, t, _ in DAY1]
    assert cell.timestamp.isoformat() == "2023-05-08T13:58:00+00:00"
    assert cell.summary.startswith("Caroline said:")  # the episode overwrites the topic summary
    assert [s.kind for s in split.memcell.stages] == ["episode", "event_log"]
    assert split.memcell.unit_v1["episode"] is None and "original_data" in split.memcell.unit_v1
    assert "original_data" not in split.memcell.unit_final
    assert split.memcell.unit_final["event_log"]["atomic_fact"][0] == "Caroline said: " + DAY1[0][1]
    assert [m["content"] for m in manager.buffer] == [DAY1[-1][1], DAY2[0][1]]
    assert len(manager.index) == 1


def test_failed_extraction_keeps_buffer_and_indexes_nothing():
    manager = _manager(make_evermemos_fake(broken=["episode"]))
    records = _feed(manager, DAY1 + DAY2[:1])
    assert records[-1].memcell.failure and "episode extraction failed" in records[-1].memcell.failure
    assert records[-1].buffer_after_reset is None
    assert len(manager.buffer) == 4 and len(manager.index) == 0


def test_flush_closes_remaining_buffer():
    manager = _manager()
    _feed(manager, DAY2)
    record = manager.flush()
    assert (
        record.memcell.source == "flush" and record.memcell.unit_v1["summary"] == "Final conversation segment"
    )
    assert manager.buffer == [] and manager.flush() is None


def test_extraction_parsers_accept_fences_and_reject_empty_fields():
    assert parse_episode_reply('```json\n{"title": "T", "content": "C"}\n```')["summary"] == "C"
    with pytest.raises(ValueError):
        parse_episode_reply('{"title": "", "content": "C"}')
    log = parse_event_log_reply('x {"event_log": {"time": "May 8", "atomic_fact": ["a", "b"]}} y')
    assert log == {"time": "May 8", "atomic_fact": ["a", "b"]}
    with pytest.raises(ValueError):
        parse_event_log_reply('{"event_log": {"time": "May 8", "atomic_fact": []}}')


# -- index and retrieval -----------------------------------------------------------------------
def _doc(eid: str, facts: list[str]) -> dict:
    return {
        "event_id": eid,
        "timestamp": "t",
        "subject": eid,
        "summary": "",
        "episode": " ".join(facts),
        "event_log": {"time": "t", "atomic_fact": facts},
        "foresights": None,
    }


def test_rrf_scores_and_tie_order():
    a, b, c = _doc("a", ["x"]), _doc("b", ["y"]), _doc("c", ["z"])
    fused = rrf_fuse([[(a, 9.0), (b, 1.0)], [(b, 0.9), (c, 0.1)]], rrf_k=60)
    assert [d["event_id"] for d, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    tie = rrf_fuse([[(a, 1.0)], [(b, 1.0)]], rrf_k=60)
    assert [d["event_id"] for d, _ in tie] == ["a", "b"]


def test_hybrid_returns_other_side_when_query_has_no_bm25_terms():
    index = HybridIndex(FakeEmbedder(32))
    index.add(_doc("a", ["Caroline moved from Sweden"]))
    run = hybrid_search(index, "the of and", 5, OnlineRetrieverConfig())
    assert run.sparse == [] and [d["event_id"] for d, _ in run.fused] == ["a"]


def _index_with(*docs) -> HybridIndex:
    index = HybridIndex(FakeEmbedder(64))
    for d in docs:
        index.add(d)
    return index


def test_agentic_sufficient_stops_after_round_one():
    index = _index_with(_doc("a", ["Caroline moved from Sweden"]), _doc("b", ["Melanie paints sunsets"]))
    llm = make_evermemos_fake()
    run = agentic_search(index, llm, "Where did Caroline move from?", 2, OnlineRetrieverConfig())
    assert run.sufficient and run.round2_runs == [] and len(llm.calls) == 1
    assert [d["event_id"] for d, _ in run.final] == [d["event_id"] for d, _ in run.r1][:2]


def test_agentic_insufficient_runs_round_two_and_merges_without_duplicates():
    docs = [_doc(f"d{i}", [f"topic{i} sentence about things"]) for i in range(6)]
    docs.append(_doc("target", ["Caroline ate pancakes for breakfast"]))
    index = _index_with(*docs)
    llm = make_evermemos_fake()
    config = OnlineRetrieverConfig(sufficiency_check_docs=1, final_top_k=2, bm25_top_n=3, emb_top_n=3)
    run = agentic_search(index, llm, "What did Caroline eat for breakfast with Oscar?", 2, config)
    assert not run.sufficient and "oscar" in " ".join(run.check_result["missing_information"])
    assert len(run.refined_queries) == 2 and len(run.round2_runs) == 2
    ids = [d["event_id"] for d, _ in run.combined]
    assert len(ids) == len(set(ids)) <= 4
    assert ids[: len(run.r1)] == [d["event_id"] for d, _ in run.r1]
    assert run.final == run.combined[:2]
    assert [c.temperature for c in llm.calls] == [0.0, 0.4]


def test_agentic_with_reranker_reorders_round_one():
    index = _index_with(_doc("a", ["weather was nice"]), _doc("b", ["Caroline moved from Sweden"]))
    config = OnlineRetrieverConfig(use_reranker=True)
    run = agentic_search(index, make_evermemos_fake(sufficiency="never"), "Caroline Sweden", 2, config)
    assert run.reranked_round1[0][0]["event_id"] == "b"
    assert run.final_reranked is not None and run.final[0][0]["event_id"] == "b"


def test_unparseable_sufficiency_counts_as_sufficient():
    index = _index_with(_doc("a", ["x y z"]))
    run = agentic_search(
        index, make_evermemos_fake(broken=["sufficiency"]), "x question", 1, OnlineRetrieverConfig()
    )
    assert run.sufficient and run.check_error is not None


def test_query_reply_parsers():
    reply = json.dumps(
        {
            "queries": [
                "Where did she go?",
                "short",
                "x",
                "Where did she go?",
                "Q two here",
                "Q three",
                "Q4 extra",
            ]
        }
    )
    assert parse_multi_query_reply(reply, "orig question") == ["Where did she go?", "short", "Q two here"]
    assert parse_multi_query_reply("broken", "orig question") == ["orig question"]
    assert parse_refined_query_reply("Refined Query: When did Anna move?", "q?") == "When did Anna move?"
    assert parse_refined_query_reply("abc", "orig") == "orig"


def test_retrieve_modes_and_empty_cases():
    manager = _manager(retrieval=OnlineRetrieverConfig(retrieval_mode="bm25_only"))
    assert manager.retrieve("anything", 3) == ([], None)
    _feed(manager, DAY1 + DAY2 + [("Melanie", "I painted a lake sunrise.", "2023-06-20T10:00:00")])
    manager.flush()
    docs, record = manager.retrieve("Sweden", 1)
    assert len(docs) == 1 and "Sweden" in docs[0][0]["episode"] and record.dense == []
    assert manager.retrieve("   ", 3) == ([], None)
