"""`--max-messages N` / `MemoryDataset.first_messages(N)`: a cut trajectory keeps only answerable questions."""

from __future__ import annotations

from membase.types import MemoryDataset, Message, QuestionAnswerPair, Session, Trajectory


def _dataset() -> MemoryDataset:
    messages = [Message(id=f"m{i}", name="Ines", content=f"line {i}", timestamp=f"2024-01-0{1 + i // 3}T10:00:00")
                for i in range(6)]
    sessions = [Session(id="s1", messages=messages[:3]), Session(id="s2", messages=messages[3:])]
    qas = [QuestionAnswerPair(id="early", question="a?", golden_answers=["x"], metadata={"evidence": ["m1"]}),
           QuestionAnswerPair(id="both", question="b?", golden_answers=["y"], metadata={"evidence": ["m2", "m4"]}),
           QuestionAnswerPair(id="late", question="c?", golden_answers=["z"], metadata={"evidence": ["m5"]}),
           QuestionAnswerPair(id="none", question="d?", golden_answers=["w"])]
    return MemoryDataset(trajectories=[Trajectory(id="t", sessions=sessions)], qa_pair_lists=[qas])


def test_the_cut_keeps_the_first_messages_across_sessions_in_order():
    cut = _dataset().first_messages(4)
    sessions = cut.trajectories[0].sessions
    assert [[m.id for m in s.messages] for s in sessions] == [["m0", "m1", "m2"], ["m3"]]
    assert [[m.id for m in s.messages] for s in _dataset().first_messages(2).trajectories[0].sessions] == [["m0", "m1"]]


def test_only_questions_whose_evidence_lies_inside_the_cut_stay():
    # a question with evidence past the cut, or none to check, could not be answered from the cut
    assert [q.id for q in _dataset().first_messages(4).qa_pair_lists[0]] == ["early"]
    assert [q.id for q in _dataset().first_messages(5).qa_pair_lists[0]] == ["early", "both"]
