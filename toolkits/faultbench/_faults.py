"""The fault model: one fault per case, acting through a layer's own code path.

A fault has an **error kind** — the stage whose op goes wrong, which fixes the label by the
definitions of spec-attribution §5.1: the information never captured into any memory unit
(``extraction`` → ``ExtractionError``, even when the op that lost it is a buffer update or a
boundary decision), captured then degraded (``update`` → ``UpdateError``), explicitly removed
(``deletion`` → ``DeletionError``), in the store but not in the final context (``retrieval`` →
``RetrievalError``), all in the context and the answer still wrong (``response`` →
``ResponseError``) — a **corruption** (what goes wrong: a text corruption of
:mod:`._corrupt`, or ``trim``, ``merge``, ``omit``, ``lose``, ``delete``, ``skip``,
``near_duplicate``, ``stale``, ``final_drop``, ``ignore``) and a **site** (which op of the layer
does it). The *fault kind* reported per case is ``<error kind>/<corruption>``.

Faults act where the layer itself works: the deterministic fake model returns the degraded
reply, the buffer keeps a degraded line, the store keeps a degraded document, a search returns a
near-duplicate. The ops are therefore recorded by the layer and the runners, never by this
package. A fault notes the layer call during which it acted and the name of the op that does
the faulty work there; the case's ``final_op_id`` is that op among the ops the call created.

Update, deletion and retrieval faults wait for their moment: an update or deletion acts at the
first message from the drawn ``act_index`` on at which a unit holds the fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from membase.interventions import InterventionSet, patch_attr
from toolkits.faultbench._corrupt import CORRUPTIONS, Corruptor
from toolkits.faultbench._models import ExtractiveReader, parse_statements
from toolkits.faultbench._pipeline import FaultInjector
from toolkits.faultbench._targets import Target

__all__ = ["ERROR_KINDS", "ERROR_TYPE_OF", "Fault", "FaultSet", "FaultSpec", "patch_attr"]

ERROR_KINDS = ("extraction", "update", "deletion", "retrieval", "response")
ERROR_TYPE_OF = {
    "extraction": "ExtractionError",
    "update": "UpdateError",
    "deletion": "DeletionError",
    "retrieval": "RetrievalError",
    "response": "ResponseError",
}


@dataclass(frozen=True, kw_only=True)
class FaultSpec:
    """What a fault does and where."""

    error: str
    corruption: str
    sites: tuple[str, ...]
    """The layer's ops that can do it (cases rotate through them)."""

    @property
    def kind(self) -> str:
        """``<error kind>/<corruption>``."""
        return f"{self.error}/{self.corruption}"

    @property
    def error_type(self) -> str:
        """The label's error type."""
        return ERROR_TYPE_OF[self.error]


class Fault(FaultInjector):
    """Base of the per-layer faults: one spec, one site, one target."""

    def __init__(self, spec: FaultSpec, site: str, target: Target, *, seed: int, act_index: int,
                 known_words: frozenset[str] = frozenset()) -> None:
        self.spec = spec
        self.site = site
        self.target = target
        self.seed = seed
        self.act_index = act_index
        self.known_words = known_words
        self.corruptor = (Corruptor(kind=spec.corruption, target=target, seed=seed, known_words=known_words)
                          if spec.corruption in CORRUPTIONS else None)
        self.fired = False
        self.fired_call: tuple[Any, ...] | None = None
        self.op_names: tuple[str, ...] = ()
        """Names of the op that does the faulty work, in order of preference."""
        self.note = ""

    @property
    def kind(self) -> str:
        """The fault kind."""
        return self.spec.kind

    def fresh(self) -> Fault:
        """The same fault, not yet fired (for another run)."""
        return type(self)(self.spec, self.site, self.target, seed=self.seed, act_index=self.act_index,
                          known_words=self.known_words)

    def applicable(self) -> bool:
        """Whether this fault can act on its target at all (checked before any run)."""
        if self.corruptor is not None:
            return self.corruptor.applicable()
        return True

    def fire(self, op_names: str | tuple[str, ...], note: str) -> None:
        """Record that the fault acted now, in the current layer call."""
        if not self.fired:
            self.fired = True
            self.fired_call = self.current_call
            self.op_names = (op_names,) if isinstance(op_names, str) else op_names
            self.note = note

    # -- shared knowledge about the fact --------------------------------------------------------
    def holds_fact(self, text: str) -> bool:
        """True when ``text`` still contains one of the fact sentences verbatim."""
        return any(s in text for s in self.target.fact_sentences)

    def corrupt(self, text: str) -> str | None:
        """The corrupted text (None when the corruption does not change it)."""
        return self.corruptor.apply(text) if self.corruptor is not None else None

    # -- the response fault is the same for every layer ---------------------------------------------
    def answer(self, qa: Any, question: str, memories: str, reader: ExtractiveReader) -> str:
        """``response/ignore``: the answer model skips the statements that carry the fact."""
        if self.spec.error != "response" or qa.id != self.target.qa.id:
            return super().answer(qa, question, memories, reader)
        skipped = [s.text for s in parse_statements(memories)
                   if any(s.text in f or f in s.text for f in self.target.fact_sentences)]
        if skipped:
            self.fire("question-answering", f"the answer model ignored {len(skipped)} statement(s) of the fact")
        return reader.answer(question, memories, exclude=skipped)


class FaultSet(InterventionSet, FaultInjector):
    """Several faults on different questions in one run; each hook goes to every fault."""

    def __init__(self, faults: Sequence[Fault]) -> None:
        super().__init__(faults)
        self.faults = list(faults)

    def search_order(self, qas: Sequence[Any]) -> list[Any]:
        """Questions with a retrieval fault are searched last: a faulted Long-Context retrieval
        records a snapshot of the memory unit that later searches must not meet."""
        faulted = {f.target.qa.id for f in self.faults if f.spec.error == "retrieval"}
        return [q for q in qas if q.id not in faulted] + [q for q in qas if q.id in faulted]

    def answer(self, qa: Any, question: str, memories: str, reader: ExtractiveReader) -> str:
        for fault in self.faults:
            if fault.spec.error == "response" and fault.target.qa.id == qa.id:
                return fault.answer(qa, question, memories, reader)
        return super().answer(qa, question, memories, reader)
