"""Planned faults: faultbench's per-layer faults, driven by the authors' texts instead of a seeded corruption.

A faultbench fault acts through the layer's own code (a fake model's reply, a buffer line, a
store, a search) and notes the op recorded while it acted; its text change comes from a
:class:`~toolkits.faultbench.Corruptor`. A planned fault is the same class with a
:class:`PlannedEdit` in the corruptor's place, the plan's texts as the *fact sentences* that
say where the information is, and the plan's wrong answer for a response fault. Two
Long-Context behaviours the real layer lacks are emulated here, as small as possible:

* ``window`` — not an emulation: the real layer trims to its ``context_window`` tokens; the
  fault only watches for the update that pushes the fact line out (the label);
* ``compact`` — the update at message ``after`` replaces the lines of the ``span`` messages by
  the plan's summary (the real layer never summarises).

On Mem0, a message of the conversation's paraphrase table is held by its memory texts, not its
sentences: a plan's ``holds`` and edits name words of those texts.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from benchmarks.attribution.data import Case, Conversation
from toolkits.evidence_flow import DEFAULT_ANSWER_THRESHOLD, content_tokens, token_recall
from toolkits.faultbench import (
    Fault,
    FaultSpec,
    LongContextFault,
    Mem0Fault,
    Target,
    fault_class,
    message_sentences,
    patch_attr,
)

__all__ = ["PlannedEdit", "planned_fault"]

_FENCED = re.compile(r"```(?:json)?\n(?P<body>.*)\n```", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class PlannedEdit:
    """The corruptor of a planned fault: each ``(old, new)`` pair replaces ``old`` by ``new``.

    ``old`` None replaces the whole text, but only a text that holds the fact (``holds``).
    """

    pairs: tuple[tuple[str | None, str], ...]
    holds: tuple[str, ...] = ()
    """The fact's texts: with ``old`` None, only a text holding one of them is replaced."""

    def applicable(self) -> bool:
        """A plan is always applicable; whether it meets its text shows when it fires."""
        return True

    def apply(self, text: str) -> str | None:
        """The edited text, or None when no pair meets ``text``."""
        out = text
        for old, new in self.pairs:
            if old is None:
                if any(h in out for h in self.holds):
                    out = new
            elif old in out:
                out = re.sub(r"[ \t]{2,}", " ", out.replace(old, new)).strip()
        return out if out != text else None


class _Planned:
    """Mixin over a faultbench fault class: the plan replaces the seeded corruption."""

    plan_case: Case
    prediction: str

    def __init__(self, spec: FaultSpec, site: str, target: Target, *, case: Case, act_index: int,
                 extra: dict[str, Any]) -> None:
        super().__init__(spec, site, target, seed=0, act_index=act_index)  # type: ignore[call-arg]
        self.plan_case, self.extra = case, extra
        edits = case.fault.edits
        self.corruptor = (PlannedEdit(pairs=edits, holds=target.fact_sentences)  # type: ignore[assignment]
                          if edits else None)
        self.prediction = case.prediction

    def fresh(self) -> Fault:
        return type(self)(self.spec, self.site, self.target, case=self.plan_case,  # type: ignore[attr-defined]
                          act_index=self.act_index, extra=self.extra)  # type: ignore[attr-defined]

    def answer(self, qa: Any, question: str, memories: str, reader: Any) -> str:
        if self.spec.error != "response" or qa.id != self.target.qa.id:  # type: ignore[attr-defined]
            return super().answer(qa, question, memories, reader)  # type: ignore[misc]
        if self.corruptor is not None:  # the answer model misreads its context as the plan says
            misread = self.corruptor.apply(memories)  # type: ignore[attr-defined]
            if misread is None:
                return reader.answer(question, memories)
            self.fire("question-answering", "the answer model misread its context")  # type: ignore[attr-defined]
            return reader.answer(question, misread)
        self.fire("question-answering", "the answer model gave the plan's wrong answer")  # type: ignore[attr-defined]
        return self.prediction or "I don't know."


class PlannedLongContextFault(_Planned, LongContextFault):
    """Long-Context: faultbench's faults plus ``window`` (observed) and ``compact`` (emulated)."""

    @staticmethod
    def make_layer(user_id: str, save_dir: str, faults: list[Fault]) -> Any:
        """Long-Context with the plan's ``context_window`` (default: nothing trimmed)."""
        from membase.layers import build_layer

        window = max((f.plan_case.fault.layer.get("context_window", 100_000) for f in faults
                      if isinstance(f, _Planned)), default=100_000)
        return build_layer("Long-Context", user_id=user_id, save_dir=save_dir, context_window=window)

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        kind = self.spec.corruption
        if self.spec.error != "update" or kind not in ("window", "compact") or self.fired:
            with super().around_message(layer, message, index):
                yield
            return
        line = self._fact_line()
        held = line in layer._buffer
        if kind == "compact" and index == self.act_index:
            original = layer._buffer_and_get_doc

            def append_and_compact(text: str | None = None) -> str | None:
                doc = original(text)
                self._compact(layer, message)  # inside the recorded update, as a summarising buffer does
                return doc

            with patch_attr(layer, "_buffer_and_get_doc", append_and_compact):
                yield
            return
        yield
        if kind == "window" and held and line not in layer._buffer:
            self.fire("memory_system.memory_update",
                      f"the memory update appending {message.id} pushed the fact line out of the context window")

    def _compact(self, layer: Any, message: Any) -> None:
        from membase.utils.tokens import count_tokens

        replaced = set(self.extra["span_lines"])
        if self._fact_line() not in replaced or self._fact_line() not in layer._buffer:
            return  # a summary that keeps the fact's message loses nothing of it
        keep = [i for i, text in enumerate(layer._buffer) if text not in replaced]
        summary = self.plan_case.fault.summary
        layer._buffer[:] = [summary] + [layer._buffer[i] for i in keep]
        layer._buffer_tokens[:] = [count_tokens(summary, getattr(layer, "_buffer_model", None))] + [
            layer._buffer_tokens[i] for i in keep]
        self.fire("memory_system.memory_update",
                  f"the memory update appending {message.id} replaced earlier messages by a summary")


class PlannedMem0Fault(_Planned, Mem0Fault):
    """Mem0: an extracted fact that the plan empties is left out, not kept as a bare speaker prefix."""

    def _corrupt_facts(self, reply: str) -> str:
        match = _FENCED.search(reply)
        facts = json.loads(match.group("body") if match else reply).get("facts", [])
        changed = []
        for fact in facts:
            new = self.corrupt(fact)
            if new is None:
                changed.append(fact)
            elif content_tokens(new.partition(": ")[2] if ": " in new else new):
                changed.append(new)
        if changed == facts:
            return reply
        self.fire("memory_system.extract_facts", f"the facts extracted from {self.target.fact.id} follow the plan's "
                  f"edit ({self.spec.corruption})")
        return "```json\n" + json.dumps({"facts": changed}) + "\n```"


def _planned_class(split: str) -> type[Fault]:
    if split == "long_context":
        return PlannedLongContextFault
    if split == "mem0":
        return PlannedMem0Fault
    base = fault_class(split)
    return type(f"Planned{base.__name__}", (_Planned, base), {})


_CLASSES: dict[str, type[Fault]] = {}


def _stating(units: list[str], answers: list[str]) -> list[str]:
    tokens = content_tokens(" ".join(answers))
    hits = [s for s in units if token_recall(tokens, content_tokens(s)) >= DEFAULT_ANSWER_THRESHOLD]
    return hits or units


def planned_fault(case: Case, conversation: Conversation, qa: Any, trajectory: Any) -> Fault:
    """The fault of ``case`` on its conversation's trajectory and question ``qa``."""
    from membase.layers.long_context import format_message

    plan = case.fault
    messages = trajectory.messages
    number = plan.message or conversation.questions[case.question]["evidence"][0]
    fact = messages[number - 1]
    if plan.holds:
        sentences = plan.holds
    elif plan.edits and all(old for old, _new in plan.edits):
        sentences = tuple(old for old, _new in plan.edits if old)
    else:  # on Mem0 a message of the paraphrase table is held by its memory texts, not its sentences
        units = conversation.memories.get(number) if case.split == "mem0" else None
        sentences = tuple(_stating(list(units or message_sentences(fact.content)), list(qa.metadata["answer_parts"])))
    speakers = list(dict.fromkeys(m.name for m in messages))
    target = Target(qa=qa, fact=fact, fact_index=number - 1, answer_tokens=frozenset(content_tokens(
        " ".join(qa.metadata["answer_parts"]))), fact_sentences=sentences, speaker=fact.name,
        others=tuple(s for s in speakers if s != fact.name), spread=1)
    spec = FaultSpec(error=plan.error, corruption=plan.corruption, sites=(plan.site,))
    extra: dict[str, Any] = {}
    if plan.span:
        extra["span_lines"] = [format_message(m) for m in messages[plan.span[0] - 1:plan.span[1]]]
    act = (plan.after or number + 1) - 1 if plan.error in ("update", "deletion") else number - 1
    cls = _CLASSES.setdefault(case.split, _planned_class(case.split))
    return cls(spec, plan.site, target, case=case, act_index=act, extra=extra)  # type: ignore[call-arg]
