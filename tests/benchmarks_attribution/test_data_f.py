"""Benchmark F as data: the cases its planner chose once (seed 2027), checked against the conversations.

F's old generator planned each case from its simulator's clean run; ``data/f.json`` freezes those
choices, so these checks read the data file only.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks.attribution import load_benchmark

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "attribution" / "data" / "f.json"


def test_f_keeps_three_conversations_and_spreads_its_plan_over_every_layer_and_error():
    bench = load_benchmark(DATA)
    assert sorted(bench.conversations) == ["f31", "f32", "f33"]
    assert bench.reader == "evidence"
    by_split = Counter(c.split for c in bench.cases)
    assert by_split == {"long_context": 24, "rag": 24, "mem0": 30, "evermemos": 22}
    for split in by_split:
        errors = {c.fault.error for c in bench.cases if c.split == split}
        assert {"extraction", "response"} <= errors and len(errors) >= 3, split
    assert {c.fault.error for c in bench.cases} == {"extraction", "update", "deletion", "retrieval", "response"}
    assert len({c.origin for c in bench.cases}) == 42


def test_every_f_question_key_and_fault_text_sits_in_the_message_it_names():
    bench = load_benchmark(DATA)
    for conv in bench.conversations.values():
        texts = [text for _id, _who, text, _time in conv.messages()]
        for q in conv.questions.values():
            assert q["keys"] and all(any(k in texts[n - 1] for n in q["evidence"]) for k in q["keys"]), q["key"]
    for case in bench.cases:
        conv = bench.conversations[case.conversation]
        texts = [text for _id, _who, text, _time in conv.messages()]
        plan = case.fault
        if plan.error == "response":
            assert case.prediction, case.number  # the authors' wrong answer
            continue
        assert plan.holds and all(h in texts[plan.message - 1] for h in plan.holds), case.number
        if plan.corruption in ("cut", "swap", "vague"):
            assert all(old in texts[plan.message - 1] for old, _new in plan.edits), case.number
