"""Each committed case shows its fault at its labelled op, checked by hand-written rules per fault kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolkits.evidence_flow import content_tokens
from toolkits.evidence_flow._text import memory_text
from toolkits.faultbench import CORRUPTIONS
from toolkits.faultbench._targets import _stating

BENCH = Path(__file__).resolve().parents[2] / "examples" / "faultbench"
SPLITS = ("long_context", "rag", "mem0", "evermemos")
_SUFFIX = "\nBelow is this message's metadata:"


class Case:
    """One committed case with the bits of its graph the rules look at."""

    def __init__(self, split: str, graph: dict, annotation: dict) -> None:
        self.split, self.annotation, self.fault = split, annotation, annotation["fault"]
        data = graph["data"]
        self.nodes = {n["full_node_id"]: n for n in data["nodes"]}
        self.op_edges: dict[str, list[dict]] = {}
        for edge in data["edges"]:
            self.op_edges.setdefault(edge["op_id"], []).append(edge)
        message = json.loads(self.nodes[f"{self.fault['fact_message']}@1"]["value"])
        content = message["content"].split(_SUFFIX)[0]
        if content.startswith("Speaker "):  # Long-Context and NaiveRAG record the formatted line
            content = content.split(" says: ", 1)[1].rsplit("\nTimestamp:", 1)[0]
        self.speaker = message["name"]
        speakers = {json.loads(n["value"]).get("name") for n in data["nodes"] if n["category"] == "message"}
        self.other = next(s for s in sorted(speakers - {self.speaker}) if s)
        question = self.nodes[annotation["query_id"]]["value"].strip("'\"")
        names = frozenset(content_tokens(" ".join(s for s in speakers if s)))
        answer = content_tokens(" ".join(annotation["golden_answers"]))
        self.sentences = _stating(content, answer, content_tokens(question) - names)
        self.label = annotation["final_op_id"]

    def text(self, node_id: str) -> str:
        return self.nodes[node_id]["value"].replace('\\"', '"').replace("\\'", "'").replace("\\n", "\n")

    def holds(self, node_id: str) -> bool:
        """A fact sentence occurs verbatim in the node (a unit: in its content, raw copies left out)."""
        text = memory_text(self.nodes[node_id]["value"]) if self.is_unit(node_id) else self.text(node_id)
        return any(s in text for s in self.sentences)

    def sources(self) -> list[str]:
        return [e["source_full_node_id"] for e in self.op_edges[self.label]]

    def targets(self) -> list[str]:
        return [e["target_full_node_id"] for e in self.op_edges[self.label]]

    def is_unit(self, node_id: str) -> bool:
        return self.nodes[node_id]["category"] == "memory_entry"

    def qa(self) -> tuple[str, str]:
        """The question's context and prediction nodes."""
        query = self.annotation["query_id"]
        for edges in self.op_edges.values():
            if any(e["source_full_node_id"] == query for e in edges) and any(
                    self.nodes[e["target_full_node_id"]].get("class_name") == "prediction" for e in edges):
                context = next(e["target_full_node_id"] for e in edges
                               if self.nodes[e["target_full_node_id"]].get("class_name") == "context")
                return context, self.annotation["prediction_id"]
        raise AssertionError("no answering op")


def _cases() -> list[Case]:
    out = []
    for split in SPLITS:
        for path in sorted((BENCH / split).glob("*.json")):
            graph = json.loads(path.read_text())
            out.extend(Case(split, graph, a) for a in graph["data"]["annotations"])
    return out


CASES = _cases()


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))


def _rewritten_copy(case: Case, node_id: str, share: float) -> bool:
    """The node holds a changed copy of a fact sentence: many of its words, not the sentence itself."""
    text = case.text(node_id)
    return not case.holds(node_id) and any(
        len(_words(s) & _words(text)) >= share * len(_words(s)) for s in case.sentences)


def _turns(case: Case, text: str) -> list[tuple[str, str]]:
    """The text cut at speaker attributions (``Speaker X (role: r) says:``, ``X said:``, ``X:``)."""
    names = "|".join(re.escape(n) for n in (case.speaker, case.other))
    marker = re.compile(rf"(?:Speaker )?\b({names})\b(?: \(role: \w+\) says:| said:|:)")
    cuts = list(marker.finditer(text))
    return [(m.group(1), text[m.end(): cuts[i + 1].start() if i + 1 < len(cuts) else len(text)])
            for i, m in enumerate(cuts)]


def check_fault_effect(case: Case) -> None:
    """Assert that the case's fault shows at its labelled op (one rule per corruption)."""
    kind, corruption = case.fault["error"], case.fault["corruption"]
    assert case.sentences, "the fact message states the answer"
    if corruption == "swap_person":
        # the fact's words are kept, now in the other speaker's turn
        def moved(node_id: str) -> bool:
            return any(who == case.other and len(_words(s) & _words(said)) >= 0.8 * len(_words(s))
                       for who, said in _turns(case, case.text(node_id)) for s in case.sentences)
        assert any(case.holds(s) for s in case.sources())
        assert any(moved(t) for t in case.targets()), "no output gives the fact to the other speaker"
    elif corruption == "partial":  # the topic kept, the detail gone: "<words before the answer> some things."
        assert any(case.holds(s) for s in case.sources()), "the op read the fact"
        heads = [s.split()[0] for s in case.sentences]
        assert any(not case.holds(t) and any(f"{h}" in case.text(t) for h in heads) and "some things." in case.text(t)
                   for t in case.targets()), "the op wrote the fact's topic without its detail"
        assert not any(case.is_unit(t) and case.holds(t) for t in case.targets()), "a unit kept it unchanged"
    elif corruption in CORRUPTIONS:
        assert any(case.holds(s) for s in case.sources()), "the op read the fact"
        assert any(_rewritten_copy(case, t, 0.5) for t in case.targets()), "the op wrote a changed copy of it"
        assert not any(case.is_unit(t) and case.holds(t) for t in case.targets()), "a unit kept it unchanged"
    elif corruption == "trim":
        before = [s for s in case.sources() if case.is_unit(s)]
        after = [t for t in case.targets() if case.is_unit(t)]
        assert any(case.holds(b) for b in before) and after and not any(case.holds(a) for a in after)
    elif corruption == "omit":
        actions = [t for t in case.targets() if case.nodes[t].get("class_name") == "update_action"]
        assert any(case.holds(s) for s in case.sources()) and actions
        assert not any(case.holds(a) for a in actions)
    elif corruption == "lose":
        assert any(case.holds(s) for s in case.sources()), "the op received the fact message"
        closed = [t for t in case.targets()
                  if case.nodes[t].get("class_name") == "temporary_variable" or case.is_unit(t)]
        assert closed and not any(case.holds(t) for t in closed), "the memcell / unit left it out"
    elif corruption == "delete":
        assert any(case.is_unit(e["source_full_node_id"]) and case.holds(e["source_full_node_id"])
                   and "delete" in case.nodes[e["target_full_node_id"]].get("class_name", "")
                   for e in case.op_edges[case.label])
    elif kind == "retrieval":
        context, _ = case.qa()
        assert not case.holds(context), "the final context lacks the fact"
        if corruption == "final_drop":
            assert any(case.holds(s) for s in case.sources()), "the final step received it and dropped it"
    elif corruption == "ignore":
        context, prediction = case.qa()
        assert case.holds(context) and not case.holds(prediction)
    else:
        raise AssertionError(f"no rule for {case.fault['kind']}")


@pytest.mark.parametrize("case", CASES, ids=[f"{c.split}:{c.fault['kind']}:{c.fault['site']}" for c in CASES])
def test_the_fault_is_visible_at_its_labelled_op(case):
    check_fault_effect(case)


def test_every_rule_is_exercised():
    seen = {c.fault["corruption"] for c in CASES}
    assert {"drop", "negate", "swap_person", "trim", "omit", "lose", "delete", "skip", "near_duplicate",
            "final_drop", "stale", "ignore"} <= seen
