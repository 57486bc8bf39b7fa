"""Each repair, on each layer, changes the output of the op it repairs and of no op before it.

A repaired replay of the whole trajectory is compared op by op with the run's own graph: the ops
before the repaired one have the same names and write the same values; the repaired op writes
something else; and the repair says it acted.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from membase.replay import Evidence, RepairUnsupported, RunReplayer, make_repair
from tests.replay._helpers import differing_ops, op_outputs


def _replayer(run: Path) -> Iterator[RunReplayer]:
    with RunReplayer(run, allow_new_calls=True) as replayer:
        yield replayer


@pytest.fixture(scope="module")
def rag(rag_run: Path) -> Iterator[RunReplayer]:
    yield from _replayer(rag_run)


@pytest.fixture(scope="module")
def long_context(long_context_run: Path) -> Iterator[RunReplayer]:
    yield from _replayer(long_context_run)


@pytest.fixture(scope="module")
def mem0(mem0_run: Path) -> Iterator[RunReplayer]:
    yield from _replayer(mem0_run)


def _run_graph(replayer: RunReplayer) -> dict[str, Any]:
    trajectory = replayer.trajectory_ids()[0]
    return json.loads((replayer.run_dir / "traced_data" / trajectory / "graph_evaluation.json").read_text())


def _messages(replayer: RunReplayer) -> list[Any]:
    trajectory, _ = replayer._trajectory(replayer.trajectory_ids()[0])
    return [m for s in trajectory.sessions for m in s.messages]


def _position(replayer: RunReplayer, name: str, pick: Callable[[int, list[str]], bool]) -> int:
    """The first op named ``name`` (in the run's graph) whose position and written values ``pick`` accepts."""
    for i, (op_name, values) in enumerate(op_outputs(_run_graph(replayer))):
        if op_name == name and pick(i, values):
            return i
    raise AssertionError(f"the run has no {name} op as the test needs")


def _repaired(replayer: RunReplayer, position: int, stage: str, evidence: Evidence) -> tuple[Any, dict[str, Any]]:
    trajectory = replayer.trajectory_ids()[0]
    base = replayer.baseline(trajectory)
    assert not base.mismatches and base.graph_divergence is None
    op_id, name = base.ops[position]
    key, _ = base.op_calls[op_id]
    repair = make_repair(replayer.manifest.layer_type, key=key, stage=stage, op_name=name or "", evidence=evidence)
    _, questions = replayer._trajectory(trajectory)
    run, *_ = replayer._run(trajectory, questions, repair)
    return repair, run.export


def _assert_only_from(replayer: RunReplayer, position: int, stage: str, evidence: Evidence) -> None:
    before = _run_graph(replayer)
    repair, after = _repaired(replayer, position, stage, evidence)
    assert repair.applied, f"the {stage} repair did not act: {repair.note}"
    changed = differing_ops(before, after)
    assert changed, "the repaired replay wrote exactly what the run wrote"
    assert changed[0] == position, (
        f"first differing op is #{changed[0]} {op_outputs(after)[changed[0]][0]}, not the repaired #{position}")
    assert op_outputs(before)[position][0] == op_outputs(after)[position][0]


def _by_call(replayer: RunReplayer, call: tuple[Any, ...], name: str) -> int:
    base = replayer.baseline(replayer.trajectory_ids()[0])
    for i, (op_id, op_name) in enumerate(base.ops):
        located = base.op_calls.get(op_id)
        if located is not None and located[0] == call and op_name == name:
            return i
    raise AssertionError(f"no {name} op recorded by the call {call}")


# -- NaiveRAG -------------------------------------------------------------------------------------------
def test_rag_extraction_at_the_buffer_update(rag: RunReplayer) -> None:
    last = _messages(rag)[-1]
    position = _by_call(rag, ("message", 10), "memory_system.message_buffer_update")
    _assert_only_from(rag, position, "extraction", Evidence(messages=[last]))


def test_rag_extraction_at_the_stored_document(rag: RunReplayer) -> None:
    last = _messages(rag)[-1]
    position = _position(rag, "memory_system.add", lambda i, _v: i > 10)
    _assert_only_from(rag, position, "extraction", Evidence(messages=[last]))


def test_rag_retrieval(rag: RunReplayer) -> None:
    """The first message is stored in the first document; a question that does not retrieve it gets it."""
    first = _messages(rag)[0]
    evidence = Evidence(messages=[first])
    position = _position(rag, "memory_system.retrieve", lambda _i, v: not evidence.holds(" ".join(v)))
    _assert_only_from(rag, position, "retrieval", evidence)


# -- Long-Context ---------------------------------------------------------------------------------------
def test_long_context_extraction(long_context: RunReplayer) -> None:
    last = _messages(long_context)[-1]
    position = _by_call(long_context, ("message", 5), "memory_system.memory_update")
    _assert_only_from(long_context, position, "extraction", Evidence(messages=[last]))


def test_long_context_update_keeps_the_trimmed_line(long_context: RunReplayer) -> None:
    first = _messages(long_context)[0]
    evidence = Evidence(messages=[first])
    position = _position(long_context, "memory_system.memory_update", lambda _i, v: not evidence.holds(" ".join(v)))
    assert position > 0, "the window trims nothing: the run cannot show an update loss"
    _assert_only_from(long_context, position, "update", evidence)


def test_long_context_retrieval_has_no_repair(long_context: RunReplayer) -> None:
    with pytest.raises(RepairUnsupported):
        make_repair("Long-Context", key=("retrieve", "q"), stage="retrieval", op_name="memory_system.retrieve",
                    evidence=Evidence(messages=[]))


# -- Mem0 (real mem0ai 1.0.5, fake model and embedder) ------------------------------------------------


def _decisions(replayer: RunReplayer, event: str) -> tuple[int, dict[str, Any]]:
    """The first update decision of the run with an action of ``event``: its op position and the action."""
    for i, (name, values) in enumerate(op_outputs(_run_graph(replayer))):
        if name != "memory_system.update_memory_decision":
            continue
        for value in values:
            if f'"event": "{event}"' not in value:
                continue
            try:
                reply = json.loads(ast.literal_eval(value))
            except (ValueError, SyntaxError):
                continue
            for action in reply.get("memory", []) if isinstance(reply, dict) else []:
                if action.get("event") == event:
                    return i, action
    raise AssertionError(f"the Mem0 run made no {event} decision")


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("op_name", ["memory_system.extract_facts", "memory_system.update_memory_decision"])
def test_mem0_extraction(mem0: RunReplayer, op_name: str) -> None:
    last = _messages(mem0)[-1]
    _assert_only_from(mem0, _by_call(mem0, ("message", 6), op_name), "extraction", Evidence(messages=[last]))


@pytest.mark.slow
@pytest.mark.integration
def test_mem0_update_keeps_the_old_version(mem0: RunReplayer) -> None:
    position, action = _decisions(mem0, "UPDATE")
    lost = sorted(set(action["old_memory"].lower().split()) - set(action["text"].lower().split()))
    word = next(w for w in lost if w.isalpha())  # a word only the old version holds
    _assert_only_from(mem0, position, "update", Evidence(messages=[], answers=[word]))


@pytest.mark.slow
@pytest.mark.integration
def test_mem0_deletion_keeps_the_unit(mem0: RunReplayer) -> None:
    position, action = _decisions(mem0, "DELETE")
    _assert_only_from(mem0, position, "deletion", Evidence(messages=[SimpleNamespace(content=action["text"])]))


@pytest.mark.slow
@pytest.mark.integration
def test_mem0_retrieval(mem0: RunReplayer) -> None:
    """A memory the store holds at query time, which a question's search missed, is among its results."""
    kept = mem0.baseline(mem0.trajectory_ids()[0]).system.layer.get_all()
    evidence = Evidence(messages=[SimpleNamespace(content=str(kept[0]["memory"]))])
    position = _position(mem0, "memory_system.search_vector_store", lambda _i, v: not evidence.holds(" ".join(v)))
    _assert_only_from(mem0, position, "retrieval", evidence)
