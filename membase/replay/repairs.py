"""Repairs: interventions that make one op do its job, through the layer's own code path.

A repair acts during exactly one layer call — the call that recorded the blamed op — and changes
what that call returns or keeps, never what later calls do (downstream ops run for real):

* ``extraction`` — the op's output also states the evidence, in the layer's own unit format (a
  buffered line of Long-Context or NaiveRAG, a stored RAG document, a Mem0 fact or an ADD of it);
* ``update`` — a unit keeps the version it had before the op (a trimmed Long-Context line stays,
  a Mem0 UPDATE of a unit that held the information becomes NONE);
* ``deletion`` — the unit is not deleted (a Mem0 DELETE becomes NONE);
* ``retrieval`` — the unit that holds the information is among the op's results, in place of the
  lowest-ranked result (the context budget is kept); only a unit the store holds at query time
  qualifies (Long-Context reads its whole memory, so its retrieval has no repair).

"Holds the information" is :class:`Evidence.holds`: the answer's words with part of an evidence
message around them, or — when the answer is inferred — most of an evidence message. Response errors have no repair: the
replayer answers the same context again and records whether the answer is stable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from membase.evaluation.metrics import normalize_answer
from membase.interventions import CallKey, Intervention, patch_attr
from smartcomment.runtime.errors import MemTraceError

__all__ = ["REPAIR_STAGES", "VERBATIM_LAYERS", "Evidence", "Repair", "RepairUnsupported", "make_repair"]

REPAIR_STAGES = ("extraction", "update", "deletion", "retrieval")
VERBATIM_LAYERS = frozenset({"Long-Context", "NaiveRAG"})
"""Layers whose memory units keep the message text itself."""
EVIDENCE_RECALL = 0.7
"""Share of an evidence message's words a text must keep to count as stating it."""
ANSWER_CONTEXT_RECALL = 0.3
"""Share of an evidence message's words that must surround the answer's words (a bare "yes" or
"2023" elsewhere is not the information)."""


class RepairUnsupported(MemTraceError, ValueError):
    """No repair of this stage exists for this layer or op (the reason is the message)."""


def _words(text: str) -> set[str]:
    return set(normalize_answer(text).split())


@dataclass(kw_only=True)
class Evidence:
    """The information a failed question needed: its source messages and golden answers."""

    messages: Sequence[Any]
    """``membase.types.Message`` objects of the source evidence."""
    answers: Sequence[str] = ()
    verbatim: bool = False
    """The layer keeps message text as it came (Long-Context, NaiveRAG): the information is held
    only where an evidence message's text is, unchanged; layers that rephrase are compared by words."""
    _message_words: list[set[str]] = field(default_factory=list, init=False, repr=False)
    _answer_words: list[set[str]] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self._message_words = [w for w in (_words(m.content) for m in self.messages) if w]
        self._answer_words = [w for w in (_words(a) for a in self.answers) if w]
        self._answer_stated = any(a <= m for a in self._answer_words for m in self._message_words)

    @staticmethod
    def contains(text: str, statement: str) -> bool:
        """Whether ``statement`` appears in ``text`` unchanged (case, punctuation and spacing aside)."""
        return normalize_answer(statement) in normalize_answer(text)

    def holds(self, text: str) -> bool:
        """Whether ``text`` still states the information.

        Where an evidence message states a golden answer in words, those words must survive (a
        copy with a changed number or name no longer states it) next to part of the message; where
        the answer is inferred (a date from "yesterday"), most of an evidence message must survive.
        """
        if self.verbatim:
            return any(self.contains(text, m.content) for m in self.messages if m.content.strip())
        words = _words(text)
        recall = max((len(m & words) / len(m) for m in self._message_words), default=0.0)
        has_answer = any(answer <= words for answer in self._answer_words)
        if self._answer_stated:
            return has_answer and recall >= ANSWER_CONTEXT_RECALL
        return has_answer or recall >= EVIDENCE_RECALL

    def rank(self, texts: Sequence[str]) -> int | None:
        """Index of the text that holds the information best (None when none holds it)."""
        best, best_score = None, -1.0
        for i, text in enumerate(texts):
            if not self.holds(text):
                continue
            words = _words(text)
            score = max((len(m & words) / len(m) for m in self._message_words), default=0.0)
            score += sum(1.0 for a in self._answer_words if a <= words)
            if score > best_score:
                best, best_score = i, score
        return best


class Repair(Intervention):
    """Base of the repairs: one call, one stage, one piece of evidence; ``applied`` says whether it acted."""

    def __init__(self, *, key: CallKey, stage: str, op_name: str, evidence: Evidence) -> None:
        self.key = key
        self.stage = stage
        self.op_name = op_name
        self.evidence = evidence
        self.applied = False
        self.note = ""

    def acting(self) -> bool:
        """True while the repaired call runs."""
        return self.current_call == self.key

    def at(self, stage: str) -> bool:
        """True while the repaired call runs and the repair is one of ``stage``."""
        return self.acting() and self.stage == stage

    def only_at(self, stage: str, repaired: Callable[[], contextlib.AbstractContextManager[Any]]
                ) -> contextlib.AbstractContextManager[Any]:
        """``repaired()`` while the repaired call of ``stage`` runs; otherwise nothing."""
        return repaired() if self.at(stage) else contextlib.nullcontext()

    def done(self, note: str) -> None:
        """Record that the repair changed the call's result."""
        self.applied = True
        self.note = self.note or note

    def holder(self, hits: list[Any], text: Callable[[Any], str], stored: Callable[[], list[Any]]) -> Any | None:
        """The stored unit that holds the information, when none of a search's ``hits`` does (else None).

        ``stored()`` lists the units the store keeps outside the hits (read only when needed);
        ``text`` reads a hit or a unit. The caller puts the holder in place of the lowest-ranked hit.
        """
        if not hits or any(self.evidence.holds(text(h)) for h in hits):
            return None
        pool = stored()
        best = self.evidence.rank([text(u) for u in pool])
        return None if best is None else pool[best]


# -- buffer layers (Long-Context, NaiveRAG) ------------------------------------------------------------
class _BufferRepair(Repair):
    """Long-Context and NaiveRAG keep formatted message lines in a buffer (``_buffer_and_get_doc``)."""

    formatter: Callable[[Any], str]

    def _evidence_lines(self) -> list[str]:
        return [self.formatter(m) for m in self.evidence.messages]

    def _missing(self, kept: str) -> list[str]:
        return [line for line in self._evidence_lines() if not Evidence.contains(kept, line)]

    @contextlib.contextmanager
    def _stating_evidence(self, layer: Any) -> Iterator[None]:
        """After the call's buffer update, the buffer also states the evidence lines it lacks.

        The check runs on what the update left (not on its input), so whatever else changed the
        line on its way in — the layer itself or an injected fault — is what the repair sees.
        """
        original = layer._buffer_and_get_doc

        def feed(text: str | None = None) -> str | None:
            doc = original(text)
            if text is not None:
                missing = self._missing(layer._buffer_separator.join([*layer._buffer, doc or ""]))
                for line in missing:
                    layer._append(line)
                if missing:
                    self.done(f"the buffer update also states {len(missing)} evidence message(s)")
            return doc

        with patch_attr(layer, "_buffer_and_get_doc", feed):
            yield

    @contextlib.contextmanager
    def _keeping_lines(self, layer: Any) -> Iterator[None]:
        """Lines holding the information that the buffer update drops stay (inside the op, so the
        unit version the op records is the repaired one)."""
        original = layer._buffer_and_get_doc

        def feed(text: str | None = None) -> str | None:
            before = list(zip(layer._buffer, layer._buffer_tokens, strict=True))
            doc = original(text)
            kept = set(layer._buffer)
            lost = [(line, tokens) for line, tokens in before if line not in kept and self.evidence.holds(line)]
            if lost:
                layer._buffer[:0] = [line for line, _ in lost]
                layer._buffer_tokens[:0] = [tokens for _, tokens in lost]
                self.done(f"the buffer keeps {len(lost)} line(s) the update dropped")
            return doc

        with patch_attr(layer, "_buffer_and_get_doc", feed):
            yield

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        if not self.acting():
            yield
            return
        if self.stage == "extraction":
            with self._stating_evidence(layer):
                yield
            return
        if self.stage == "update":
            with self._keeping_lines(layer):
                yield
            return
        raise RepairUnsupported(f"no {self.stage} repair for a buffer update of {type(layer).__name__}")


class LongContextRepair(_BufferRepair):
    """Long-Context: one memory unit, the whole buffer, read whole at query time."""

    @staticmethod
    def formatter(message: Any) -> str:
        from membase.layers.long_context import format_message

        return format_message(message)


class NaiveRAGRepair(_BufferRepair):
    """NaiveRAG: buffered message lines cut into documents kept in a vector store."""

    @staticmethod
    def formatter(message: Any) -> str:
        from membase.layers.naive_rag import format_message

        return format_message(message)

    @contextlib.contextmanager
    def _storing_evidence(self, layer: Any) -> Iterator[None]:
        """The store also keeps the evidence lines the stored document lacks (checked on what was stored)."""
        add = layer.store.add

        def add_repaired(doc: str, *args: Any, **kwargs: Any) -> Any:
            stored = add(doc, *args, **kwargs)
            content = getattr(stored, "content", doc)
            missing = [] if self.applied else self._missing(content)
            if not missing:
                return stored
            # The same document again under the same key, now stating the evidence: it replaces the
            # queued (or written) one, and the op records what the store finally keeps.
            pending = getattr(layer.store, "_pending", [])
            if stored in pending:
                pending.remove(stored)
            self.done(f"the stored document also states {len(missing)} evidence message(s)")
            return add("\n".join([content, *missing]), key=stored.key)

        with patch_attr(layer.store, "add", add_repaired):
            yield

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        if self.at("extraction") and self.op_name == "memory_system.add":
            with self._storing_evidence(layer):
                yield
            return
        with super().around_message(layer, message, index):
            yield

    @contextlib.contextmanager
    def around_flush(self, layer: Any) -> Iterator[None]:
        with self.only_at("extraction", lambda: self._storing_evidence(layer)):
            yield

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        if not self.at("retrieval"):
            yield
            return
        store = layer.store
        search = store.search

        def search_repaired(query: str, k: int, *args: Any, **kwargs: Any) -> list[Any]:
            hits = search(query, k, *args, **kwargs)
            unit = self.holder(hits, lambda d: d.content, lambda: _stored_documents(store, {h.key for h in hits}))
            if unit is None:
                return hits
            self.done("the retrieval returns the document holding the evidence in place of its lowest-ranked result")
            return [*hits[:-1], dataclasses.replace(unit, score=hits[-1].score)]

        with patch_attr(store, "search", search_repaired):
            yield


def _stored_documents(store: Any, leave_out: set[str]) -> list[Any]:
    from membase.layers.rag_store import StoredDocument

    return [StoredDocument(key=r["key"], content=r["content"], namespace=r.get("namespace", []),
                           created_at=r.get("created_at", ""), updated_at=r.get("updated_at", ""))
            for r in store.export() if r["key"] not in leave_out]


# -- Mem0 ---------------------------------------------------------------------------------------------
_FENCED = re.compile(r"```(?:json)?\s*\n(?P<body>.*?)\n\s*```", re.DOTALL)


def _json_body(reply: str) -> Any:
    match = _FENCED.search(reply)
    return json.loads(match.group("body") if match else reply)


class Mem0Repair(Repair):
    """Mem0 (mem0ai 1.0.5): its two model calls (fact extraction, update decision) and its vector search."""

    @staticmethod
    def fact(message: Any) -> str:
        """A source message as a Mem0 fact."""
        return f"{message.name}: {message.content}"

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        if not self.acting() or self.stage not in ("extraction", "update", "deletion"):
            yield
            return
        llm = getattr(getattr(layer, "memory", None), "llm", None)
        if llm is None or not hasattr(llm, "chat_model"):
            raise RepairUnsupported("this Mem0 layer's model cannot be reached (no memory.llm.chat_model)")
        with patch_attr(llm, "chat_model", _RewritingModel(llm.chat_model, self._rewrite)):
            yield

    def _rewrite(self, messages: list[dict[str, Any]], reply: str) -> str:
        extraction_call = bool(messages) and messages[0].get("role") == "system"
        try:
            if extraction_call:
                if self.stage == "extraction" and self.op_name.endswith("extract_facts"):
                    return self._add_facts(reply)
                return reply
            return self._fix_decision(reply)
        except (ValueError, TypeError, AttributeError):
            return reply  # a reply mem0 cannot parse either: the repair does not apply

    def _add_facts(self, reply: str) -> str:
        facts = list(_json_body(reply).get("facts", []))
        if any(self.evidence.holds(f) for f in facts):
            return reply
        new = [self.fact(m) for m in self.evidence.messages]
        self.done(f"the extracted facts also state {len(new)} evidence message(s)")
        return json.dumps({"facts": facts + new})

    def _fix_decision(self, reply: str) -> str:
        actions = list(_json_body(reply).get("memory", []))
        if self.stage == "extraction":
            if any(a.get("event") in ("ADD", "UPDATE") and self.evidence.holds(str(a.get("text", ""))) for a in actions):
                return reply
            new = [{"id": str(len(actions) + i), "text": self.fact(m), "event": "ADD"}
                   for i, m in enumerate(self.evidence.messages)]
            self.done(f"the update decision also ADDs {len(new)} evidence fact(s)")
            return json.dumps({"memory": actions + new})
        out = []
        for action in actions:
            event, text = action.get("event"), str(action.get("text", ""))
            old = str(action.get("old_memory", text))
            if self.stage == "update" and event == "UPDATE" and self.evidence.holds(old) and not self.evidence.holds(text):
                action = {"id": action.get("id"), "text": old, "event": "NONE"}
                self.done("an UPDATE of a unit that held the information became NONE")
            elif self.stage == "deletion" and event == "DELETE" and self.evidence.holds(text):
                action = {"id": action.get("id"), "text": text, "event": "NONE"}
                self.done("a DELETE of a unit that held the information became NONE")
            out.append(action)
        return json.dumps({"memory": out}) if self.applied else reply

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        if not self.at("retrieval"):
            yield
            return
        memory = layer.memory
        search = memory.search

        def search_repaired(query: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
            found = search(query, *args, **kwargs)
            hits = list(found.get("results", []))
            unit = self.holder(hits, lambda m: str(m.get("memory", "")),
                               lambda: [m for m in layer.get_all() if m.get("id") not in {h.get("id") for h in hits}])
            if unit is None:
                return found
            self.done("the search returns the memory holding the evidence in place of its lowest-ranked result")
            return {**found, "results": [*hits[:-1], {**unit, "score": hits[-1].get("score")}]}

        with patch_attr(memory, "search", search_repaired):
            yield


class EverMemOSRepair(Repair):
    """EverMemOS: the episode a memcell's extraction writes, and the query's final selection of episodes."""

    @staticmethod
    def text(doc: dict[str, Any]) -> str:
        """What an episode unit states."""
        return "\n".join(str(doc.get(k) or "") for k in ("subject", "summary", "episode"))

    def _ingested(self, memcell: Any) -> bool:
        """Whether the memcell was cut from the evidence messages (only its episode had them to state)."""
        said = "\n".join(str(m.get("content", "")) for m in getattr(memcell, "original_data", []) or [])
        return any(Evidence.contains(said, m.content) for m in self.evidence.messages if m.content.strip())

    @contextlib.contextmanager
    def _stating_evidence(self) -> Iterator[None]:
        """The episode the call's extraction writes from the evidence messages also states what it lacks."""
        import membase.layers.evermemos.manager as manager_module

        apply = manager_module._apply

        def apply_repaired(memcell: Any, kind: str, value: Any) -> None:
            if kind == "episode" and isinstance(value, dict) and self._ingested(memcell) \
                    and not self.evidence.holds(str(value.get("content", ""))):
                lines = [f"{m.name}: {m.content}" for m in self.evidence.messages]
                value = {**value, "content": "\n".join([str(value.get("content", "")), *lines])}
                self.done(f"the episode also states {len(lines)} evidence message(s)")
            apply(memcell, kind, value)

        with patch_attr(manager_module, "_apply", apply_repaired):
            yield

    @contextlib.contextmanager
    def around_message(self, layer: Any, message: Any, index: int) -> Iterator[None]:
        with self.only_at("extraction", self._stating_evidence):
            yield

    @contextlib.contextmanager
    def around_flush(self, layer: Any) -> Iterator[None]:
        with self.only_at("extraction", self._stating_evidence):
            yield

    @contextlib.contextmanager
    def around_retrieve(self, layer: Any, qa: Any) -> Iterator[None]:
        if not self.at("retrieval"):
            yield
            return
        manager = layer.manager
        retrieve = manager.retrieve

        def retrieve_repaired(query: str, k: int) -> tuple[list[Any], Any]:
            docs, run = retrieve(query, k)
            seen = {d["event_id"] for d, _ in docs}
            unit = self.holder([d for d, _ in docs], self.text,
                               lambda: [d for d in manager.index.documents if d["event_id"] not in seen])
            if unit is None:
                return docs, run
            repaired = [*docs[:-1], (unit, docs[-1][1])]
            for name in ("final", "fused"):  # the record the tracer reads names the same units
                if getattr(run, name, None) is docs:
                    setattr(run, name, repaired)
            self.done("the final selection holds the episode with the evidence in place of its lowest-ranked unit")
            return repaired, run

        with patch_attr(manager, "retrieve", retrieve_repaired):
            yield


class _RewritingModel:
    """A chat model whose replies pass through ``rewrite(messages, reply)``."""

    def __init__(self, model: Any, rewrite: Callable[[list[dict[str, Any]], str], str]) -> None:
        self._model = model
        self._rewrite = rewrite

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        from dataclasses import replace

        result = self._model.complete(messages, **kwargs)
        text = self._rewrite(messages, result.text)
        return result if text == result.text else replace(result, text=text)


_REPAIRS: dict[str, type[Repair]] = {
    "Long-Context": LongContextRepair,
    "NaiveRAG": NaiveRAGRepair,
    "Mem0": Mem0Repair,
    "EverMemOS": EverMemOSRepair,
}


def make_repair(layer_type: str, *, key: CallKey, stage: str, op_name: str, evidence: Evidence) -> Repair:
    """The repair of ``stage`` at the call ``key`` for a layer type.

    Raises:
        RepairUnsupported: the stage has no repair, or the layer has none yet.
    """
    if stage not in REPAIR_STAGES:
        raise RepairUnsupported(f"{stage!r} errors have no repair (only {', '.join(REPAIR_STAGES)})")
    cls = _REPAIRS.get(layer_type)
    if cls is None:
        raise RepairUnsupported(f"no repairs for the {layer_type} layer yet (supported: {', '.join(_REPAIRS)})")
    if cls is EverMemOSRepair and stage not in ("extraction", "retrieval"):
        raise RepairUnsupported(f"no {stage} repair for EverMemOS yet (extraction and retrieval only)")
    if stage == "deletion" and cls is not Mem0Repair:
        raise RepairUnsupported(f"the {layer_type} layer deletes nothing, so it has no deletion repair")
    if stage == "retrieval" and cls is LongContextRepair:
        raise RepairUnsupported("Long-Context retrieval returns the whole memory: it cannot miss what the memory holds")
    if stage == "retrieval" and key[0] != "retrieve":
        raise RepairUnsupported(f"op {op_name!r} was not recorded by a retrieval call, so it has no retrieval repair")
    if stage != "retrieval" and key[0] == "retrieve":
        raise RepairUnsupported(f"op {op_name!r} was recorded at query time: only a retrieval repair applies")
    return cls(key=key, stage=stage, op_name=op_name, evidence=evidence)
