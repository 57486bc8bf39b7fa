"""A word-for-word copy of the evidence keeps it, even when the judge scores the evidence itself short.

General reason: the evidence message is what the memory had to keep. A judge that reads texts by
segments (which never join two lines) can score a message whose answer spans two paragraphs
below its bar; each copy of that message then scores no better and reads as a loss at the first
operation that copied it, although nothing was lost there.
"""

from __future__ import annotations

import pytest

from toolkits.evidence_flow import attribute_case_evidence_flow
from toolkits.evidence_flow._assessment import Assessment
from toolkits.evidence_flow._calibration import SeedCalibratedJudge, calibrate_to_seeds

# the answer's words are told over two paragraphs of one message
PLAN = "Here is my plan for the spring.\n\nFirst I will sell the old bike.\nThen I fly to Lima in June."
TALK = ["Morning! The shop was quiet today.", PLAN, "Sounds great, enjoy it.", "Thanks, talk soon.",
        "The market was busy today."]


def _buffer_case(toy, keep: int = 3):
    """A Long-Context buffer of the last ``keep`` messages; the plan falls out at the fifth message."""
    unit = toy.node("memory-unit", "", category="memory_entry")
    buffer: list[str] = []
    ops, evidence = [], None
    for i, text in enumerate(TALK):
        message = toy.message(f"U1:D1:{i}", text, name="Bayo")
        evidence = message if text == PLAN else evidence
        buffer = [*buffer, text][-keep:]
        op = toy.op("memory_system.memory_update", "update")
        new = toy.node("memory-unit", "\n".join(buffer), category="memory_entry")
        toy.link(op, [unit, message], [new], "update")
        unit = new
        ops.append(op)
    ids = toy.ask("q1", "What is Bayo's plan for the spring?", [unit])
    return ids, evidence, ops


@pytest.mark.parametrize("annotated", [True, False])
def test_a_verbatim_buffer_loses_the_fact_where_it_drops_the_message_not_where_it_copies_it(toy, case_factory,
                                                                                          annotated):
    ids, evidence, ops = _buffer_case(toy)
    case = case_factory(ids["query"], "Sell the bike, then fly to Lima in June", [evidence] if annotated else [])
    result = attribute_case_evidence_flow(toy.export(), case, **({} if annotated else {"evidence_ids": None}))
    assert (result["error_type"], result["op_id"]) == ("UpdateError", ops[4])  # the fifth message pushed it out


class _Judge:
    name = "stub"

    def __init__(self, verdicts):
        self.verdicts = verdicts
        self.usage = "the wrapped judge's"

    def assess(self, text):
        return self.verdicts.get(text, Assessment(present=False, score=0.5, why="answer missing"))

    def describe(self):
        return "stub"


def test_only_a_whole_copy_of_a_seed_is_accepted_and_a_conflict_is_never_overruled():
    seed = "First I will sell the old bike.\nThen I fly to Lima in June."
    conflict = "First I will sell the old bike.  Then I fly to Lima in June. No, not Lima."
    inner = _Judge({conflict: Assessment(present=False, score=0.2, why="conflict: proper noun")})
    judge = calibrate_to_seeds(inner, [seed])
    assert isinstance(judge, SeedCalibratedJudge) and judge.name == "stub" and judge.usage == "the wrapped judge's"
    kept = judge.assess("Notes:\nFirst I will  sell the old bike. Then I fly to Lima in June.\nBye")
    assert kept.present and "word-for-word copy" in kept.why
    assert not judge.assess("First I will sell the old bike.").present  # a cut copy is the judge's call
    assert judge.assess(conflict).contradicts and not judge.assess(conflict).present


def test_no_wrapping_when_the_judge_already_finds_a_seed():
    seed = "I fly to Lima in June."
    inner = _Judge({seed: Assessment(present=True, score=1.2, why="answer+support")})
    assert calibrate_to_seeds(inner, [seed, "another seed"]) is inner
    assert calibrate_to_seeds(inner, []) is inner
