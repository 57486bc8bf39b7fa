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
from collections.abc import Callable

import pytest

from tests.evidence_flow.conftest import ToyGraph, make_case
from toolkits.evidence_flow import attribute_case_evidence_flow

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _rising(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-{n:012x}"


def _falling(n: int) -> str:
    return _rising(0xFFFF - n)


def _by_creation(text: str, graph_text: str) -> str:
    """``text`` with each uuid replaced by the order in which the graph first names it."""
    places: dict[str, int] = {}
    for found in _UUID.findall(graph_text):
        places.setdefault(found, len(places))
    return _UUID.sub(lambda m: f"<unit-{places[m.group(0)]}>", text)


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
    holders = [f"memory-unit-<unit-{i}>@1" for i in range(3)]
    assert ", ".join(holders) in json.loads(results[0])["reason"]  # in the order they were stored
