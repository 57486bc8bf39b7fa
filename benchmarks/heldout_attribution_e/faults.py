"""One injected fault: a hook object that alters exactly one decision of one recording.

A fault knows its stage (where in the pipeline it acts), the twist it applies (from the question's
list in ``dialogues.py``) and, for later-operation faults, the turn at which it acts. The layers
call ``edit`` at every decision point and ``bind`` once the operation exists; the fault changes the
value at its point only, and remembers the operation that recorded the changed value — that
operation is the gold ``final_op_id`` and the stage gives the gold ``final_error_type``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.heldout_attribution_e.memsys.common import Faithful
from benchmarks.heldout_attribution_e.memsys.model import (
    Dialogue,
    Message,
    Question,
    Twist,
    evidence_claims,
    match_claims,
    messages,
    normalise_answer,
)

# stage -> (splits it applies to, hook site, error type by spec-attribution §5.1)
STAGES: dict[str, tuple[tuple[str, ...], str, str]] = {
    "capture": (("long_context",), "lc.update", "ExtractionError"),
    "rewrite": (("long_context",), "lc.update", "UpdateError"),
    "trim": (("long_context",), "lc.update", "UpdateError"),
    "doc": (("rag",), "rag.doc", "ExtractionError"),
    "unit": (("rag",), "rag.unit", "ExtractionError"),
    "facts": (("mem0",), "mem0.facts", "ExtractionError"),
    "add": (("mem0",), "mem0.decide", "ExtractionError"),
    "ignore": (("mem0",), "mem0.decide", "ExtractionError"),
    "update": (("mem0",), "mem0.decide", "UpdateError"),
    "delete": (("mem0",), "mem0.decide", "DeletionError"),
    "memcell": (("evermemos",), "emos.memcell", "ExtractionError"),
    "episode": (("evermemos",), "emos.extract", "ExtractionError"),
    "drop": (("rag", "mem0", "evermemos"), "retrieve", "RetrievalError"),
    "swap": (("rag", "mem0", "evermemos"), "retrieve", "RetrievalError"),
    "answer": (("long_context", "rag", "mem0", "evermemos"), "qa.read", "ResponseError"),
}


@dataclass(frozen=True)
class CaseSpec:
    dialogue: int
    question: str
    split: str
    stage: str
    kind: str
    """The fault kind (manifest only)."""
    twist: str | None = None
    at: str | None = None
    """Dialogue id of the later turn whose operation is faulted (rewrite/trim/update/delete)."""
    swap_in: str | None = None
    """Text of the look-alike unit a retrieval returns instead (swap), or of the new fact that a
    wrong merge folds into the evidence's unit (update)."""
    keep_from: str | None = None
    """trim: the oldest turn the over-eager trim keeps."""

    @property
    def error_type(self) -> str:
        return STAGES[self.stage][2]


class FaultError(ValueError):
    """A case specification that does not fit its dialogue."""


def _shorten(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Fault(Faithful):
    def __init__(self, spec: CaseSpec, dialogue: Dialogue) -> None:
        splits, self.site, _ = STAGES[spec.stage]
        if spec.split not in splits:
            raise FaultError(f"stage {spec.stage!r} does not apply to split {spec.split!r}")
        self.spec = spec
        self.dialogue = dialogue
        self.question: Question = dialogue.question(spec.question)
        self.twist: Twist | None = self.question.twists[spec.twist] if spec.twist else None
        if spec.twist and self.twist is None:
            raise FaultError(f"{spec.question} has no twist {spec.twist!r}")
        self.msgs: dict[str, Message] = {m.dia_id: m for session in messages(dialogue) for m in session}
        self.fired: list[str] = []
        self.before: str = ""
        self.after: str = ""
        self._pending = False

    # ---------------------------------------------------------------- hook protocol
    def edit(self, site: str, key: str, value: Any) -> Any:
        if site != self.site or not self._applies(key):
            return value
        new, before, after = self._apply(value)
        if before != after:
            if self._pending or self.fired:
                raise FaultError(f"{self.spec}: the fault changed more than one decision")
            self._pending = True
            self.before, self.after = _shorten(before), _shorten(after)
        return new

    def bind(self, site: str, key: str, op_id: str) -> None:
        if site == self.site and self._pending:
            self.fired.append(op_id)
            self._pending = False

    def _applies(self, key: str) -> bool:
        stage = self.spec.stage
        if stage == "capture":
            return key == self._raw_msg_id()
        if stage in ("rewrite", "trim", "update", "delete"):
            return key == self._msg_id(self.spec.at)
        if stage in ("facts", "add", "ignore"):
            return key == self._fact_msg_id()
        if stage in ("drop", "swap", "answer"):
            return key == self._qa_id()
        return True

    # ---------------------------------------------------------------- helpers
    def _msg_id(self, dia_id: str | None) -> str:
        if dia_id not in self.msgs:
            raise FaultError(f"{self.spec}: no turn {dia_id!r}")
        return self.msgs[dia_id].id

    def _raw_msg_id(self) -> str:
        ids = {d for d, _, _ in self._need_twist().raw}
        if len(ids) != 1:
            raise FaultError(f"{self.spec}: a capture fault edits one message, the twist edits {sorted(ids)}")
        return self._msg_id(ids.pop())

    def _fact_msg_id(self) -> str:
        old = self._need_twist().fact[0][0]
        owners = [m.id for m in self.msgs.values() if any(old in f for f in m.turn.facts)]
        if len(owners) != 1:
            raise FaultError(f"{self.spec}: {old!r} is in the facts of {len(owners)} turns, expected one")
        return owners[0]

    def _qa_id(self) -> str:
        return f"{self.dialogue.user_id}-qa-{self.dialogue.questions.index(self.question) + 1}"

    def _need_twist(self) -> Twist:
        if self.twist is None:
            raise FaultError(f"{self.spec}: stage {self.spec.stage!r} needs a twist")
        return self.twist

    def holds_answer(self, text: str) -> bool:
        """Whether ``text`` states the answer (loose guessing claims do not count)."""
        got = match_claims(evidence_claims(self.question), text)
        return got is not None and normalise_answer(got) == normalise_answer(self.question.answer)

    def _raw_text(self, text: str, *, require_all: bool) -> str:
        """Apply the twist's raw edits to the message lines found in ``text``."""
        out = text
        applied = 0
        for dia_id, old, new in self._need_twist().raw:
            line = self.msgs[dia_id].line()
            if line not in out:
                continue
            if old not in line:
                raise FaultError(f"{self.spec}: {old!r} is not in turn {dia_id}")
            out = out.replace(line, line.replace(old, new or "", 1))
            applied += 1
        if applied and require_all and applied != len(self._need_twist().raw):
            raise FaultError(f"{self.spec}: the twist's turns are not all in the same text")
        return out

    def _fact_list(self, facts: list[str], *, require_all: bool) -> list[str]:
        out = list(facts)
        applied = 0
        for old, new in self._need_twist().fact:
            hits = [i for i, f in enumerate(out) if old in f]
            if not hits:
                continue
            applied += 1
            i = hits[0]
            if new is None:
                out.pop(i)
            else:
                out[i] = out[i].replace(old, new, 1)
        if applied and require_all and applied != len(self._need_twist().fact):
            raise FaultError(f"{self.spec}: the twist's facts are not all in the same list")
        return out

    def _fact_text(self, text: str) -> str:
        out = text
        for old, new in self._need_twist().fact:
            if old not in out:
                raise FaultError(f"{self.spec}: {old!r} is not in the text")
            if new is None:
                start = out.index(old)
                end = out.find(".", start)
                end = len(out) if end < 0 else end + 1
                out = out[:start] + out[end:].lstrip(" ")
            else:
                out = out.replace(old, new, 1)
        return out

    # ---------------------------------------------------------------- the faults
    def _apply(self, value: Any) -> tuple[Any, str, str]:
        stage = self.spec.stage
        if stage in ("capture", "rewrite", "doc"):
            text = "\n".join(t for _, t in value)
            changed = self._raw_text(text, require_all=True)
            if changed == text:
                return value, "", ""
            edited = [(mid, self._raw_text(t, require_all=False)) for mid, t in value]
            before = [t for (_, t), (_, n) in zip(value, edited, strict=True) if t != n]
            after = [n for (_, t), (_, n) in zip(value, edited, strict=True) if t != n]
            return edited, " | ".join(before), " | ".join(after)
        if stage == "unit":
            changed = self._raw_text(value, require_all=True)
            return changed, value, changed
        if stage == "trim":
            start = next((i for i, (mid, _) in enumerate(value) if mid == self._msg_id(self.spec.keep_from)), None)
            if start is None:
                raise FaultError(f"{self.spec}: turn {self.spec.keep_from} is not in the buffer")
            cut = value[:start]
            return value[start:], " | ".join(t for _, t in cut[-3:]), f"(buffer trimmed to start at turn {self.spec.keep_from})"
        if stage in ("facts", "episode"):
            changed = self._fact_list(value, require_all=True)
            if changed == value:
                return value, "", ""
            return changed, " | ".join(f for f in value if f not in changed), " | ".join(f for f in changed if f not in value)
        if stage == "memcell":
            evidence = set(self.question.evidence)
            kept = [m for m in value if m.dia_id not in evidence]
            dropped = [m for m in value if m.dia_id in evidence]
            if not dropped:
                return value, "", ""
            return kept, " | ".join(m.line().split("\n")[0] for m in dropped), "(turn left out of the memcell)"
        if stage in ("add", "ignore", "update", "delete"):
            return self._decide(value)
        if stage in ("drop", "swap"):
            return self._retrieve(value)
        if stage == "answer":
            edit = self._raw_text if self.spec.split in ("long_context", "rag") else None
            changed = edit(value, require_all=True) if edit else self._fact_text(value)
            if changed == value:
                raise FaultError(f"{self.spec}: the twist does not touch the context")
            return changed, *_diff_lines(value, changed)
        raise FaultError(f"unknown stage {stage!r}")

    def _decide(self, proposal: dict[str, Any]) -> tuple[dict[str, Any], str, str]:
        actions = [dict(a) for a in proposal["actions"]]
        memories: dict[str, str] = proposal["memories"]
        stage = self.spec.stage
        if stage in ("add", "ignore"):
            olds = [old for old, _ in self._need_twist().fact]
            hits = [a for a in actions if a["event"] in ("ADD", "UPDATE") and any(o in a["text"] for o in olds)]
            if not hits:
                raise FaultError(f"{self.spec}: no decision on the evidence's fact")
            before = " | ".join(f"{a['event']} {a['text']}" for a in hits)
            for a in hits:
                if stage == "add":
                    a["text"] = self._fact_list([a["text"]], require_all=False)[0]
                else:
                    a["event"] = "NONE"
                    a.pop("_uid", None)
                    a.pop("old_memory", None)
            return {"actions": actions, "memories": memories}, before, " | ".join(f"{a['event']} {a['text']}" for a in hits)
        if stage == "update":
            old = self._need_twist().fact[0][0]
            targets = [uid for uid, text in memories.items() if old in text]
            if not targets:
                raise FaultError(f"{self.spec}: the similarity search at {self.spec.at} did not return the unit with {old!r}")
            uid = targets[0]
            new_text = self._fact_list([memories[uid]], require_all=False)[0]
            if self.spec.swap_in:
                merged = [a for a in actions if a["event"] == "ADD" and self.spec.swap_in in a["text"]]
                if not merged:
                    raise FaultError(f"{self.spec}: no new fact {self.spec.swap_in!r} at {self.spec.at}")
                actions.remove(merged[0])
            actions.append({"event": "UPDATE", "text": new_text, "old_memory": memories[uid], "_uid": uid})
            return {"actions": actions, "memories": memories}, memories[uid], new_text
        # delete: the unit(s) that hold the answer
        targets = [uid for uid, text in memories.items() if self.holds_answer(text)]
        if not targets:
            raise FaultError(f"{self.spec}: the similarity search at {self.spec.at} did not return the evidence's unit")
        for uid in targets:
            actions.append({"event": "DELETE", "text": memories[uid], "_uid": uid})
        return {"actions": actions, "memories": memories}, " | ".join(memories[u] for u in targets), "(deleted)"

    def _retrieve(self, ranking: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], str, str]:
        holding = [i for i, (_, text) in enumerate(ranking) if self.holds_answer(text)]
        if not holding:
            raise FaultError(f"{self.spec}: no stored unit holds the answer")
        first = holding[0]
        removed = [ranking[i] for i in holding]
        kept = [r for i, r in enumerate(ranking) if i not in holding]
        after = "(next-ranked units)"
        if self.spec.stage == "swap":
            look = [r for r in kept if self.spec.swap_in and self.spec.swap_in in r[1]]
            if not look:
                raise FaultError(f"{self.spec}: no stored unit contains {self.spec.swap_in!r}")
            kept.remove(look[0])
            kept.insert(min(first, len(kept)), look[0])
            after = look[0][1]
        return kept, " | ".join(t for _, t in removed), after


def _diff_lines(before: str, after: str) -> tuple[str, str]:
    b, a = before.split("\n"), after.split("\n")
    changed = [(x, y) for x, y in zip(b, a, strict=False) if x != y]
    return " | ".join(x for x, _ in changed), " | ".join(y for _, y in changed)
