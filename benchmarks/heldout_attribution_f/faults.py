"""The fault catalogue: where each kind of failure strikes, how it edits the value, and its label.

A kind plans one case from the clean recording of the same conversation and layer: it picks the
edit point (stage + key, e.g. the fact extraction of one message), the edit itself, and the op
that consumes that edit point, which is the gold op. The error type follows from the stage by
spec-attribution §5.1: information that never reaches a memory unit is an ExtractionError of the
construction op that lost it; a unit that held it and was rewritten or deleted later is an
Update/DeletionError of that later op; a store that holds it while the context lacks it is a
RetrievalError; a context that holds everything is a ResponseError.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.heldout_attribution_f.conversations import Conversation, Piece, Question
from benchmarks.heldout_attribution_f.textsim import mentions, states, trigram_cosine

_TRAILING = re.compile(r"(?:[\s,;:]+|\b(?:on|at|in|for|with|from|of|the|a|an|about|only|to|by|is|was|and|as)\b)+$")


def cut_fact(text: str, value: str) -> str:
    """The fact with everything from ``value`` on lost (an extraction that stopped short)."""
    head = _TRAILING.sub("", text[: text.index(value)]).rstrip()
    return head + "." if head and not head.endswith(".") else head


def cut_raw(text: str, value: str) -> str:
    """A raw message cut off right before ``value`` (the timestamp line goes with it)."""
    return text[: text.index(value)].rstrip()


@dataclass(frozen=True)
class Plan:
    stage: str
    key: str
    op_stage: str
    op_key: str
    edit: Callable[..., Any]


@dataclass
class Clean:
    """What planning reads from the clean recording of one conversation through one layer."""

    conv: Conversation
    questions: tuple[Question, ...]
    recording: Any

    @property
    def layer(self) -> Any:
        return self.recording.layer

    def qa_id(self, q: Question) -> str:
        return f"locomo-qa-{self.conv.sample}-{q.num}"

    def order(self) -> list[str]:
        return [self.conv.message_id(m.dia) for _, m in self.conv.messages()]

    def content(self, dia: str) -> str:
        """The raw-message text the Long-Context and NaiveRAG layers store for ``dia``."""
        msg = self.conv.message(dia)
        ts = self.conv.session_of(dia).when.isoformat()
        return f"Speaker {msg.speaker} (role: user) says: {msg.text}\nTimestamp: {ts}"


@dataclass(frozen=True)
class Kind:
    name: str
    layer: str
    error: str
    plan: Callable[[Clean, Question, Piece | None], Plan | None]
    per_piece: bool = True


# ------------------------------------------------------------------------- raw message edits
def _raw_edit(conv: Conversation, piece: Piece, how: str) -> Callable[[str], str] | None:
    msg = conv.message(piece.msg)
    if how == "cut":
        return lambda c: cut_raw(c, piece.raw_value)
    if how == "speaker":
        if msg.speaker != piece.who:
            return None
        other = conv.other(piece.who)
        return lambda c: c.replace(f"Speaker {piece.who} ", f"Speaker {other} ", 1)
    if how == "swap":
        new = piece.msg_swap if piece.msg_value else piece.swap
        if not new:
            return None
        return lambda c: c.replace(piece.raw_value, new)
    raise ValueError(how)


def _replace_entry(target: str, change: Callable[[str], str] | None) -> Callable[..., Any]:
    def edit(entries: list[str], **_: Any) -> list[str]:
        return [change(e) if e == target and change else e for e in entries]
    return edit


def lc_append(how: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        key = clean.conv.message_id(piece.msg)
        target = clean.content(piece.msg)
        if how == "skip":
            return Plan("append", key, "append", key, lambda entries, before, **_: list(before))
        change = _raw_edit(clean.conv, piece, how)
        return Plan("append", key, "append", key, _replace_entry(target, change)) if change else None
    return plan


def _later(clean: Clean, dia: str) -> list[str]:
    order = clean.order()
    return order[order.index(clean.conv.message_id(dia)) + 1:]


def lc_trim(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    session = clean.conv.session_of(piece.msg)
    later = _later(clean, piece.msg)
    nxt = [m for m in later if not any(clean.conv.message_id(x.dia) == m for x in session.messages)]
    if not nxt:
        return None
    target = clean.content(piece.msg)

    def edit(entries: list[str], **_: Any) -> list[str]:
        return entries[entries.index(target) + 1:] if target in entries else entries
    return Plan("append", nxt[0], "append", nxt[0], edit)


def _most_similar_later(clean: Clean, dia: str, skip: int = 1) -> str | None:
    later = _later(clean, dia)[skip:]
    text = clean.conv.message(dia).text
    scored = [(trigram_cosine(text, clean.conv.message(m.split(":", 1)[1]).text), m) for m in later]
    return max(scored)[1] if scored else None


def lc_merge_drop(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    key = _most_similar_later(clean, piece.msg)
    if key is None:
        return None
    target = clean.content(piece.msg)
    return Plan("append", key, "append", key, lambda entries, **_: [e for e in entries if e != target])


# -------------------------------------------------------------------------------- NaiveRAG
def rag_append(how: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        key = clean.conv.message_id(piece.msg)
        if how == "skip":
            return Plan("append", key, "buffer", key, lambda entries, before, **_: list(before))
        change = _raw_edit(clean.conv, piece, how)
        target = clean.content(piece.msg)
        return Plan("append", key, "buffer", key, _replace_entry(target, change)) if change else None
    return plan


def _document_key(clean: Clean, dia: str) -> str | None:
    target = clean.content(dia)
    return next((key for key, entries in clean.layer.emitted if target in entries), None)


def rag_cut(stage: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        key = _document_key(clean, piece.msg)
        if key is None:
            return None
        target = clean.content(piece.msg)

        def edit(text: str, **_: Any) -> str:
            if target not in text:
                return text
            return text[: text.index(target) + target.index(piece.raw_value)].rstrip()
        return Plan(stage, key, "buffer" if stage == "emit" else "store", key, edit)
    return plan


# ------------------------------------------------------------------------------ retrieval
def _drop_stating(conv: Conversation, piece: Piece) -> Callable[..., Any]:
    """Keep the top-k size, but every memory stating ``piece`` loses its place to the next one."""

    def edit(hits: list[Any], ranking: list[int], texts: list[str], **_: Any) -> list[Any]:
        def idx(h: Any) -> int:
            return h[0] if isinstance(h, tuple) else h
        bad = {i for i, t in enumerate(texts) if states(conv, piece, t)}
        kept = [h for h in hits if idx(h) not in bad]
        for i in ranking:
            if len(kept) >= len(hits):
                break
            if i not in bad and i not in {idx(h) for h in kept}:
                kept.append((i, _next_score(kept)) if hits and isinstance(hits[0], tuple) else i)
        return kept
    return edit


def _next_score(kept: list[Any]) -> float:
    return round((kept[-1][1] if kept else 0.5) * 0.97, 4)


def retrieval(stage: str, op_stage: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        key = clean.qa_id(q)
        return Plan(stage, key, op_stage, key, _drop_stating(clean.conv, piece))
    return plan


# ------------------------------------------------------------------------------------ Mem0
def _fact_edit(conv: Conversation, piece: Piece, how: str) -> Callable[[str], str] | None:
    if how == "cut":
        return lambda t: cut_fact(t, piece.value)
    if how == "vague":
        return (lambda t: t.replace(piece.value, piece.vague)) if piece.vague else None
    if how == "swap":
        return (lambda t: t.replace(piece.value, piece.swap)) if piece.swap else None
    if how == "speaker":
        if piece.who not in (conv.speaker_a, conv.speaker_b):
            return None
        other = conv.other(piece.who)
        return lambda t: t.replace(piece.who, other)
    if how == "negate":
        return (lambda t: t.replace(*piece.negation)) if piece.negation else None
    raise ValueError(how)


def mem0_extract(how: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        key = clean.conv.message_id(piece.msg)
        if how == "drop":
            return Plan("extract", key, "extract", key,
                        lambda facts, **_: [(k, t) for k, t in facts if k != piece.fact])
        change = _fact_edit(clean.conv, piece, how)
        if change is None:
            return None
        return Plan("extract", key, "extract", key,
                    lambda facts, **_: [(k, change(t) if k == piece.fact else t) for k, t in facts])
    return plan


def mem0_none(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    key = clean.conv.message_id(piece.msg)
    return Plan("decide", key, "decide", key,
                lambda actions, **_: [a for a in actions if a.get("fact") != piece.fact])


def _rival(clean: Clean, piece: Piece) -> tuple[str, str] | None:
    """The later decision that saw the unit holding ``piece``, with its fact closest to it."""
    layer = clean.layer
    unit = layer.unit_of_fact.get(piece.fact)
    start = clean.conv.message_id(piece.msg)
    order = clean.order()
    text = clean.conv.fact(piece.fact).text
    best: tuple[float, str, str] | None = None
    for msg_id, shown in layer.history:
        if order.index(msg_id) <= order.index(start) or unit not in shown:
            continue
        msg = clean.conv.message(msg_id.split(":", 1)[1])
        for fact in msg.facts:
            if fact.replaces or fact.retires:
                continue
            score = trigram_cosine(text, fact.text)
            if best is None or score > best[0]:
                best = (score, msg_id, fact.key)
    return (best[1], best[2]) if best else None


def mem0_rewrite(how: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        found = _rival(clean, piece)
        if found is None or (how == "merge" and not piece.vague):
            return None
        key, rival = found

        def edit(actions: list[dict[str, Any]], shown: list[str], layer: Any, **_: Any) -> list[dict[str, Any]]:
            unit = layer.unit_of_fact.get(piece.fact)
            if unit not in shown or unit in layer.deleted:
                return actions
            out = [dict(a) for a in actions]
            if how == "delete":
                return out + [{"event": "DELETE", "unit": unit, "text": layer.units[unit]["memory"]}]
            for a in out:
                if a.get("fact") == rival and a["event"] == "ADD":
                    held = layer.units[unit]["memory"]
                    merged = a["text"] if how == "overwrite" else \
                        f"{a['text'].rstrip('.')}; {held.replace(piece.value, piece.vague)}"
                    a.update(event="UPDATE", unit=unit, text=merged, fact=None)
                    return out
            return actions
        return Plan("decide", key, "decide", key, edit)
    return plan


# ------------------------------------------------------------------------------- EverMemOS
def _cell_key(clean: Clean, dia: str) -> str | None:
    keys = [key for key, dias in clean.layer.cells if dia in dias]
    return keys[0] if len(keys) == 1 else None


def emos_boundary(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    key = _cell_key(clean, piece.msg)
    if key is None or key == "flush":
        return None
    return Plan("boundary", key, "boundary", key, lambda items, **_: [i for i in items if i.msg.dia != piece.msg])


def emos_memcell_cut(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    from benchmarks.heldout_attribution_f.trace_evermemos import Item

    key = _cell_key(clean, piece.msg)
    if key is None:
        return None
    fact = clean.conv.fact(piece.fact).text

    def edit(items: list[Any], **_: Any) -> list[Any]:
        out = []
        for i in items:
            if i.msg.dia == piece.msg:
                entry = dict(i.entry, content=cut_raw(i.entry["content"], piece.raw_value))
                i = Item(entry, [cut_fact(f, piece.value) if f == fact else f for f in i.facts], i.msg)
            out.append(i)
        return out
    return Plan("finalize", key, "finalize", key, edit)


def emos_episode(how: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        key = _cell_key(clean, piece.msg)
        change = _fact_edit(clean.conv, piece, how)
        if key is None or change is None:
            return None
        fact = clean.conv.fact(piece.fact).text
        return Plan("episode", key, "episode", key, lambda facts, **_: [change(f) if f == fact else f for f in facts])
    return plan


def _went_to_round2(clean: Clean, q: Question) -> bool:
    return ("round2", clean.qa_id(q)) in clean.recording.hooks.ops


def emos_false_sufficient(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    if not _went_to_round2(clean, q):
        return None
    key = clean.qa_id(q)
    return Plan("check", key, "round1", key, lambda verdict, **_: True)


def emos_drift(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    """Round 2 asks the question again in other words instead of chasing what is missing."""
    if not _went_to_round2(clean, q):
        return None
    key = clean.qa_id(q)
    restated = [f"Tell me {q.text[0].lower()}{q.text[1:]}", f"{q.text.rstrip('?')}, according to the conversation?"]
    return Plan("queries", key, "round2", key, lambda queries, **_: restated)


def emos_final(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
    if not _went_to_round2(clean, q):
        return None
    key = clean.qa_id(q)
    return Plan("final", key, "final", key, _drop_stating(clean.conv, piece))


# -------------------------------------------------------------------------------- answering
def answer(how: str) -> Callable[[Clean, Question, Piece | None], Plan | None]:
    def plan(clean: Clean, q: Question, piece: Piece | None) -> Plan | None:
        key = clean.qa_id(q)
        if how == "slip":
            wrong = q.slip
        elif how == "pick":
            wrong = q.confused if q.confused and mentions(q.confusion, clean.recording.contexts[q.num]) else None
        else:
            wrong = q.unknown
        return Plan("answer", key, "answer", key, lambda pred, **_: wrong) if wrong else None
    return plan


E, U, D, R, A = "ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError"

KINDS: tuple[Kind, ...] = (
    Kind("lc-skip-message", "long_context", E, lc_append("skip")),
    Kind("lc-truncated-message", "long_context", E, lc_append("cut")),
    Kind("lc-wrong-speaker", "long_context", E, lc_append("speaker")),
    Kind("lc-swapped-detail", "long_context", E, lc_append("swap")),
    Kind("lc-window-trim", "long_context", U, lc_trim),
    Kind("lc-merge-drop", "long_context", U, lc_merge_drop),
    Kind("rag-skip-message", "rag", E, rag_append("skip")),
    Kind("rag-wrong-speaker", "rag", E, rag_append("speaker")),
    Kind("rag-chunk-cut", "rag", E, rag_cut("emit")),
    Kind("rag-unit-truncated", "rag", E, rag_cut("store")),
    Kind("rag-retrieval-miss", "rag", R, retrieval("retrieve", "retrieve")),
    Kind("mem0-fact-dropped", "mem0", E, mem0_extract("drop")),
    Kind("mem0-fact-truncated", "mem0", E, mem0_extract("cut")),
    Kind("mem0-fact-vague", "mem0", E, mem0_extract("vague")),
    Kind("mem0-fact-swapped", "mem0", E, mem0_extract("swap")),
    Kind("mem0-fact-other-speaker", "mem0", E, mem0_extract("speaker")),
    Kind("mem0-fact-negated", "mem0", E, mem0_extract("negate")),
    Kind("mem0-none-for-new-fact", "mem0", E, mem0_none),
    Kind("mem0-wrong-update", "mem0", U, mem0_rewrite("overwrite")),
    Kind("mem0-lossy-merge", "mem0", U, mem0_rewrite("merge")),
    Kind("mem0-wrong-delete", "mem0", D, mem0_rewrite("delete")),
    Kind("mem0-retrieval-miss", "mem0", R, retrieval("retrieve", "retrieve")),
    Kind("emos-boundary-drops-message", "evermemos", E, emos_boundary),
    Kind("emos-memcell-truncated", "evermemos", E, emos_memcell_cut),
    Kind("emos-episode-vague", "evermemos", E, emos_episode("vague")),
    Kind("emos-episode-swapped", "evermemos", E, emos_episode("swap")),
    Kind("emos-episode-other-speaker", "evermemos", E, emos_episode("speaker")),
    Kind("emos-hybrid-miss", "evermemos", R, retrieval("hybrid", "hybrid")),
    Kind("emos-false-sufficient", "evermemos", R, emos_false_sufficient),
    Kind("emos-round2-drift", "evermemos", R, emos_drift),
    Kind("emos-final-rerank-drop", "evermemos", R, emos_final),
    *(Kind(f"{layer}-qa-wrong-reasoning", layer, A, answer("slip"), per_piece=False)
      for layer in ("long_context", "rag", "mem0", "evermemos")),
    *(Kind(f"{layer}-qa-wrong-pick", layer, A, answer("pick"), per_piece=False)
      for layer in ("long_context", "rag", "mem0", "evermemos")),
    *(Kind(f"{layer}-qa-no-answer", layer, A, answer("unknown"), per_piece=False)
      for layer in ("long_context", "rag", "mem0", "evermemos")),
)

QUOTAS: dict[str, int] = {
    "lc-skip-message": 4, "lc-truncated-message": 3, "lc-wrong-speaker": 3, "lc-swapped-detail": 2,
    "lc-window-trim": 4, "lc-merge-drop": 3,
    "long_context-qa-wrong-reasoning": 2, "long_context-qa-wrong-pick": 2, "long_context-qa-no-answer": 1,
    "rag-skip-message": 3, "rag-wrong-speaker": 2, "rag-chunk-cut": 4, "rag-unit-truncated": 3,
    "rag-retrieval-miss": 6, "rag-qa-wrong-reasoning": 2, "rag-qa-wrong-pick": 2, "rag-qa-no-answer": 2,
    "mem0-fact-dropped": 3, "mem0-fact-truncated": 2, "mem0-fact-vague": 2, "mem0-fact-swapped": 4,
    "mem0-fact-other-speaker": 2, "mem0-fact-negated": 1, "mem0-none-for-new-fact": 2, "mem0-wrong-update": 3,
    "mem0-lossy-merge": 2, "mem0-wrong-delete": 3, "mem0-retrieval-miss": 3, "mem0-qa-wrong-reasoning": 1,
    "mem0-qa-wrong-pick": 1, "mem0-qa-no-answer": 1,
    "emos-boundary-drops-message": 3, "emos-memcell-truncated": 2, "emos-episode-vague": 2,
    "emos-episode-swapped": 2, "emos-episode-other-speaker": 1, "emos-hybrid-miss": 3, "emos-false-sufficient": 2,
    "emos-round2-drift": 2, "emos-final-rerank-drop": 3, "evermemos-qa-wrong-reasoning": 2,
    "evermemos-qa-wrong-pick": 1, "evermemos-qa-no-answer": 1,
}
