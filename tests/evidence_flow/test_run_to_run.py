"""Two runs that differ only in their random ids get the same evidence_flow result.

Memory layers name units after fresh uuids (Mem0's memory ids, NaiveRAG's chunk keys), so two
runs of the same conversation record the same graph under other ids. Whatever evidence_flow lists
(holding units, trail steps) must follow the graph's order, not the ids' sort order: the cases
below are built twice, once with ids that rise in creation order and once with ids that fall, and
the results must be equal once each id is replaced by its place of creation.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from itertools import count
from pathlib import Path

import pytest

from tests.evidence_flow.conftest import ToyGraph, make_case
from toolkits.evidence_flow import attribute_case_evidence_flow, clear_graph_cache

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                   r"|(?:graph|session|op|edge)-[0-9a-f]{32}")


def _rising(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def _falling(n: int) -> str:
    return _rising(0xFFFF - n)


def _by_creation(text: str, graph_text: str) -> str:
    """``text`` with each fresh id replaced by the order in which the graph first names it."""
    places: dict[str, int] = {}
    for found in _UUID.findall(graph_text):
        places.setdefault(found, len(places))
    return _UUID.sub(lambda m: f"<id-{places[m.group(0)]}>", text)


def _unit(toy: ToyGraph, source: str, uid: str, text: str) -> str:
    """A Mem0-style extraction and ADD decision that stores ``text`` as unit ``uid``."""
    extract = toy.op("memory_system.extract_facts", "extraction")
    facts = toy.node("extracted_facts", [text], category="llm_response")
    toy.edge(extract, source, facts, "extraction")
    decide = toy.op("memory_system.update_memory_decision", "update")
    unit = toy.node(f"memory-unit-{uid}", {"id": uid, "memory": text, "timestamp": "2023"}, category="memory_entry")
    toy.edge(decide, facts, unit, "update")
    return unit


def _told_three_times(new_id: Callable[[int], str], *, retrieved: bool) -> tuple[dict, dict]:
    """One fact told in three messages, each stored as its own unit; the question's retrieval serves
    all three units (the answer step is at fault) or none of them (retrieval is)."""
    toy = ToyGraph()
    tellings = ["My sister Ines keeps two ferrets called Waffle and Pico.",
                "Ines still has those two ferrets, Waffle and Pico.",
                "Did I mention Ines and her ferrets Waffle and Pico?"]
    messages, units = [], []
    for i, text in enumerate(tellings, start=1):
        message = toy.message(f"U1:D1:{i}", text, name="Tomas")
        messages.append(message)
        units.append(_unit(toy, message, new_id(i), f"Tomas's sister Ines keeps ferrets named Waffle and Pico ({i})"))
    other = _unit(toy, toy.message("U1:D1:9", "The bakery on the corner closed in spring.", name="Tomas"),
                  new_id(9), "The bakery on the corner closed in spring")
    ids = toy.ask("q1", "What are the names of Ines's ferrets?", units if retrieved else [other], prediction="Bruno")
    case = make_case(ids["query"], "Waffle and Pico", messages, prediction="Bruno")
    return toy.export(), case


@pytest.mark.parametrize("retrieved", [True, False], ids=["context-holds-it", "retrieval-missed-it"])
def test_the_result_follows_the_graph_not_the_unit_ids(retrieved):
    results = []
    for new_id in (_rising, _falling):
        graph, case = _told_three_times(new_id, retrieved=retrieved)
        result = attribute_case_evidence_flow(graph, case)
        assert result["status"] == "attributed"
        results.append(_by_creation(json.dumps(result, sort_keys=True), json.dumps(graph)))
    assert results[0] == results[1]
    listed = [int(n) for n in re.findall(r"memory-unit-<id-(\d+)>", json.loads(results[0])["reason"])]
    assert len(listed) == 3 and listed == sorted(listed)  # the holding units, in the order they were stored


# -- the real NaiveRAG layer, run twice with uuid4 drawing rising and then falling ids -------------

_TURNS = [("Tomas", "My sister Ines keeps two ferrets called Waffle and Pico."),
          ("Lena", "That sounds lively. I spent the weekend fixing my bicycle."),
          ("Tomas", "The bakery on the corner closed in spring."),
          ("Lena", "I started learning the cello last month."),
          ("Tomas", "Ines still has those two ferrets, Waffle and Pico, and they are loud."),
          ("Lena", "My neighbour painted his fence bright green.")]


def _conversation():
    from membase.types import MemoryDataset, Message, QuestionAnswerPair, Session, Trajectory

    messages = [Message(id=f"D1:{i}", role="user", name=name, content=text, timestamp="2024-03-02T10:00:00")
                for i, (name, text) in enumerate(_TURNS, start=1)]
    trajectory = Trajectory(id="synthetic-1", sessions=[Session(id="synthetic-1:s1", messages=messages)])
    question = QuestionAnswerPair(id="q1", question="What are the names of Ines's ferrets?",
                                  golden_answers=["Waffle and Pico"],
                                  metadata={"evidence": ["D1:1", "D1:5"], "question_type": "single_hop"})
    return MemoryDataset(name="LoCoMo", trajectories=[trajectory], qa_pair_lists=[[question]])


def _rag_run(out: Path, ids: Callable[[], uuid.UUID], monkeypatch: pytest.MonkeyPatch) -> str:
    """Build, search and answer the conversation (every answer wrong); the mapped evidence_flow result."""
    from membase.clients import FunctionChatModel
    from tests.membase._helpers import run_pipeline
    from toolkits.bench_utils import load_membase_run

    with monkeypatch.context() as patched:
        patched.setattr(uuid, "uuid4", ids)  # the layer's chunk keys and the tracer's op and edge ids
        run_pipeline("NaiveRAG", {"retriever_name_or_path": "fake:64", "retriever_dim": 64, "vector_store": "memory",
                                  "deferred": True, "max_tokens": 30}, _conversation(), out,
                     qa_model=FunctionChatModel(lambda _m, **_k: "Bruno", model="fake-qa"),
                     judge_model=FunctionChatModel(lambda _m, **_k: '{"label": "WRONG"}', model="fake-judge"))
    (graph,), (case,), _ = load_membase_run(out / "traced")
    result = attribute_case_evidence_flow(graph, case)
    clear_graph_cache()
    assert result["status"] == "attributed"
    graph_text = (out / "traced" / "synthetic-1" / "graph_evaluation.json").read_text(encoding="utf-8")
    return _by_creation(json.dumps(result, sort_keys=True), graph_text)


def test_two_runs_of_the_real_layer_with_other_ids_give_the_same_result(tmp_path, monkeypatch):
    rising, falling = count(1), count(1)
    first = _rag_run(tmp_path / "rising", lambda: uuid.UUID(int=next(rising), version=4), monkeypatch)
    second = _rag_run(tmp_path / "falling", lambda: uuid.UUID(int=(1 << 128) - next(falling), version=4), monkeypatch)
    assert first == second
    assert json.loads(first)["reason"].count("memory-unit-<id-") >= 2  # two chunks hold it: their order shows
