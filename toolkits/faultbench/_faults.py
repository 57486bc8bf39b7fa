"""The fault model: one fault per case, injected at a chosen operation of a real layer run.

Every fault acts on the *fact message* (the case's evidence message that states the golden
answer) and is placed so that its own operation is, by construction, the earliest decisive
faulty operation:

* ``extraction`` → ``ExtractionError``: the operation that turns the fact message into memory
  keeps the message but drops the fact — the answer's words are removed from what it writes
  (Long-Context: the buffer version that appends the message; NaiveRAG: the document cut
  from the buffer; Mem0: the extracted facts; EverMemOS: the episode).
* ``update`` → ``UpdateError``: after the fact is in memory, a later update degrades the unit
  that holds it (the answer's words are removed): Long-Context's next buffer update; a
  ``memory_system.update`` mutation of the NaiveRAG document / EverMemOS event unit; an
  UPDATE event of Mem0's decision model.
* ``deletion`` → ``DeletionError``: a later operation explicitly deletes every unit that holds
  the fact (a ``delete_marker`` edge): ``memory_system.delete`` for Long-Context (the whole
  context is forgotten), NaiveRAG and EverMemOS; a DELETE event of Mem0's decision model.
* ``retrieval`` → ``RetrievalError``: the question's retrieval returns its usual results
  except the units that carry the answer.
* ``response`` → ``ResponseError``: the answer model skips the statements that carry the
  answer (the context still has them).

"Degrade" means: every word whose normalised token belongs to the golden answer is removed.
The update and deletion points are drawn with the builder's seeded RNG among the messages
after the fact message (they fire at the first message from there on at which a unit holds the
fact; Mem0: at the first later update decision that is shown such a unit).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from toolkits.evidence_flow import DEFAULT_ANSWER_THRESHOLD, content_tokens, token_recall
from toolkits.evidence_flow._text import text_lines
from toolkits.faultbench._models import ExtractiveReader, split_statements
from toolkits.faultbench._pipeline import FaultInjector

__all__ = [
    "CONSTRUCTION_KINDS",
    "ERROR_TYPE_OF",
    "FAULT_KINDS",
    "Fault",
    "FaultSet",
    "FaultTarget",
    "degrade",
    "states_answer",
]

FAULT_KINDS = ("extraction", "update", "deletion", "retrieval", "response")
#: Kinds that change what is stored (the others act on one question's retrieval or answer).
CONSTRUCTION_KINDS = ("extraction", "update", "deletion")
ERROR_TYPE_OF = {
    "extraction": "ExtractionError",
    "update": "UpdateError",
    "deletion": "DeletionError",
    "retrieval": "RetrievalError",
    "response": "ResponseError",
}
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")


def degrade(text: str, answer_tokens: frozenset[str]) -> str:
    """Remove from ``text`` every word whose normalised token belongs to the answer."""

    def repl(match: re.Match[str]) -> str:
        tokens = content_tokens(match.group(0))
        return "" if tokens and tokens <= answer_tokens else match.group(0)

    return re.sub(r"  +", " ", _WORD.sub(repl, text))


@dataclass(kw_only=True)
class FaultTarget:
    """The question a fault aims at and where in the conversation it acts."""

    qa: Any
    fact_message: Any
    fact_index: int
    answer_tokens: frozenset[str]
    act_index: int
    """Message index at (or after) which update/deletion faults fire."""

    def carries(self, text: str) -> bool:
        """True when a line of ``text`` states the golden answer (the measure evidence_flow uses)."""
        return states_answer(self.answer_tokens, text)


def states_answer(answer_tokens: frozenset[str], text: str) -> bool:
    """True when some line of ``text`` holds the answer's tokens (recall ≥ the answer threshold)."""
    return bool(answer_tokens) and any(
        token_recall(answer_tokens, content_tokens(line)) >= DEFAULT_ANSWER_THRESHOLD for line in text_lines(text)
    )


class Fault(FaultInjector):
    """Base of the per-layer faults: remembers whether and where it fired."""

    def __init__(self, kind: str, target: FaultTarget) -> None:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; choose one of {FAULT_KINDS}")
        self.kind = kind
        self.target = target
        self.fired = False
        self.op_id: str | None = None
        """Id of the faulty op when the fault records it itself (else found in the graph)."""
        self.note = ""
        """What exactly was done (goes into the annotation)."""
        self.fault_message: str | None = None
        """Id of the message whose ingestion op carried the fault, when not the fact message."""
        self.corrupted_doc: str | None = None
        """NaiveRAG extraction: the corrupted document (locates its op in the graph)."""

    # response faults are the same for every layer
    def answer(self, qa: Any, question: str, context: str, reader: ExtractiveReader) -> str:
        """Skip the statements that carry the answer when this is the target's response fault."""
        if self.kind != "response" or qa.id != self.target.qa.id:
            return super().answer(qa, question, context, reader)
        carrying = [s for s in split_statements(context) if self.target.carries(s)]
        if carrying:
            self.fired = True
            self.note = f"the answer model ignored {len(carrying)} context statement(s) stating the answer"
        return reader.answer(question, [context], exclude=carrying)


class StoreEditFault(Fault):
    """A fault whose update or deletion edits the store directly, once the fact is stored.

    Subclasses say which stored items hold the fact (``_holding``) and how to edit them while
    recording the faulty op (``_edit``, which sets ``op_id`` and ``note``).
    """

    def after_message(self, layer: Any, message: Any, index: int) -> None:
        if index >= self.target.act_index:
            self._maybe_edit(layer)

    def after_flush(self, layer: Any) -> None:
        self._maybe_edit(layer)

    def _maybe_edit(self, layer: Any) -> None:
        if self.fired or self.kind not in ("update", "deletion"):
            return
        holding = self._holding(layer)
        if holding:
            self._edit(layer, holding)
            self.fired = True

    def _holding(self, layer: Any) -> list[Any]:
        raise NotImplementedError

    def _edit(self, layer: Any, holding: list[Any]) -> None:
        raise NotImplementedError


def patch_attr(obj: Any, name: str, value: Any) -> contextlib.AbstractContextManager[None]:
    """Shadow ``obj.name`` with ``value`` for the duration of the block (instance attribute)."""

    @contextlib.contextmanager
    def scope() -> Iterator[None]:
        had = name in vars(obj)
        old = vars(obj).get(name)
        setattr(obj, name, value)
        try:
            yield
        finally:
            if had:
                setattr(obj, name, old)
            else:
                delattr(obj, name)

    return scope()


def record_delete(units: list[tuple[Any, dict[str, Any]]], *, comment: str) -> str:
    """Trace one ``memory_system.delete`` op: each unit → ``delete_marker``; returns the op id."""
    from smartcomment import comment_link, comment_op_scope, comment_variable

    with comment_op_scope(op_name="memory_system.delete", category="update", comment=comment) as op:
        marker = comment_variable("DELETED", to_runtime=True, class_name="delete_marker", category="marker")
        for value, options in units:
            comment_link(source=(value, options), target=marker, category="update",
                         comment="The memory unit is deleted.")
    return op.op_id


class FaultSet(FaultInjector):
    """Several faults on *different* questions in one run; each hook goes to every fault."""

    def __init__(self, faults: list[Fault]) -> None:
        self.faults = list(faults)

    def on_start(self, layer: Any, graph: Any) -> None:
        for fault in self.faults:
            fault.on_start(layer, graph)

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for fault in self.faults:
                stack.enter_context(fault.around_message(layer, message, index))
            yield

    def after_message(self, layer: Any, message: Any, index: int) -> None:
        for fault in self.faults:
            fault.after_message(layer, message, index)

    def after_flush(self, layer: Any) -> None:
        for fault in self.faults:
            fault.after_flush(layer)

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any, graph: Any) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for fault in self.faults:
                stack.enter_context(fault.around_retrieve(layer, qa, graph))
            yield

    def search_order(self, qas: Sequence[Any]) -> list[Any]:
        """Questions with a retrieval fault are searched last: a faulted Long-Context retrieval
        records a filtered snapshot of the memory unit that later searches must not meet."""
        faulted = {f.target.qa.id for f in self.faults if f.kind == "retrieval"}
        return [q for q in qas if q.id not in faulted] + [q for q in qas if q.id in faulted]

    def answer(self, qa: Any, question: str, context: str, reader: ExtractiveReader) -> str:
        for fault in self.faults:
            if fault.kind == "response" and fault.target.qa.id == qa.id:
                return fault.answer(qa, question, context, reader)
        return super().answer(qa, question, context, reader)
