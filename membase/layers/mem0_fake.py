r"""A deterministic fake LLM that answers mem0's two prompts (tests and offline demos).

mem0 1.0.5 sends two kinds of requests per message:

* fact extraction: a system prompt (mem0's own or `custom_fact_extraction_prompt`) and a user
  message `Input:\nuser: <content>\n`. The fake splits the message text into sentences and keeps
  up to `max_facts` statements (no questions, at least three content words), each prefixed with
  the speaker name found in the content's metadata suffix. The reply is fenced (```json ... ```),
  so mem0's code-block removal is exercised. A message whose content (the text before the
  metadata suffix) has an entry in `memories` gets that entry's texts as its facts, verbatim:
  a caller that knows how a real memory LLM would reword a message (third person, resolved
  dates, merged or split facts) puts those rewordings there.
* update decision: one user message holding the existing memories and the new facts in
  triple-backtick blocks. For each fact the fake finds the unused existing memory with the highest
  word overlap (overlap coefficient over stemmed content words, speaker prefix ignored):
  overlap >= `update_threshold` and same text -> NONE; one of the two negated ("not", "never",
  "n't", ...) and the other not -> DELETE; otherwise -> UPDATE; no such memory -> ADD.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from membase.clients.fake import FunctionChatModel
from membase.layers.evermemos.index import bm25_tokenize

__all__ = ["Mem0FakeBrain", "make_mem0_fake"]

METADATA_MARKER = "\nBelow is this message's metadata:"
_SPEAKER_RE = re.compile(r"Speaker Name: (?P<name>[^\n]*)")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
_BLOCK_RE = re.compile(r"```[a-z]*\n(?P<body>.*?)\n\s*```", re.DOTALL)
_NEGATIONS = frozenset({"not", "never", "no", "nothing", "nobody", "none", "neither", "nor", "cannot"})


def _is_negated(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return any(w in _NEGATIONS or w.endswith("n't") for w in words)


def _body(fact: str) -> str:
    head, sep, tail = fact.partition(": ")
    return tail if sep and len(head.split()) <= 3 else fact


class Mem0FakeBrain:
    """Reply function of the fake (`fn(messages, **kwargs) -> str`)."""

    def __init__(self, *, max_facts: int = 3, update_threshold: float = 0.5,
                 memories: Mapping[str, Sequence[str]] | None = None) -> None:
        self.max_facts = max_facts
        self.update_threshold = update_threshold
        self.memories = {k.strip(): list(v) for k, v in (memories or {}).items()}

    def __call__(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        """Answer one mem0 request: fact extraction when it opens with a system prompt, else the update decision."""
        if messages and messages[0].get("role") == "system":
            return self.extract(str(messages[-1].get("content", "")))
        return self.decide(str(messages[-1].get("content", "")))

    # -- fact extraction ----------------------------------------------------------------------
    def extract(self, user_prompt: str) -> str:
        """Answer a fact-extraction request."""
        text = user_prompt.removeprefix("Input:\n")
        for role in ("user: ", "assistant: ", "system: "):
            if text.startswith(role):
                text = text[len(role) :]
                break
        speaker_match = _SPEAKER_RE.search(text)
        speaker = speaker_match.group("name").strip() if speaker_match else ""
        content = text.split(METADATA_MARKER, 1)[0].strip()
        if content in self.memories:
            return "```json\n" + json.dumps({"facts": self.memories[content]}) + "\n```"
        facts = []
        for sentence in _SENTENCE_RE.split(content):
            sentence = sentence.strip()
            if not sentence or sentence.endswith("?") or len(bm25_tokenize(sentence)) < 3:
                continue
            facts.append(f"{speaker}: {sentence}" if speaker else sentence)
            if len(facts) == self.max_facts:
                break
        return "```json\n" + json.dumps({"facts": facts}) + "\n```"

    # -- update decision ---------------------------------------------------------------------
    @staticmethod
    def _parse_decision_prompt(prompt: str) -> tuple[list[dict[str, str]], list[str]]:
        blocks = [m.group("body").strip() for m in _BLOCK_RE.finditer(prompt)]
        if not blocks:
            raise ValueError("mem0 fake: update prompt has no ``` blocks")
        facts = ast.literal_eval(blocks[-1])
        old: list[dict[str, str]] = []
        if "Current memory is empty" not in prompt and len(blocks) >= 2:
            old = ast.literal_eval(blocks[-2])
        return old, [str(f) for f in facts]

    def decide(self, prompt: str) -> str:
        """Answer an update-decision request."""
        old, facts = self._parse_decision_prompt(prompt)
        used: set[str] = set()
        actions: list[dict[str, str]] = []
        for i, fact in enumerate(facts):
            tokens = set(bm25_tokenize(_body(fact)))
            best, best_score = None, 0.0
            for mem in old:
                if mem["id"] in used:
                    continue
                mem_tokens = set(bm25_tokenize(_body(mem["text"])))
                denom = min(len(tokens), len(mem_tokens))
                score = len(tokens & mem_tokens) / denom if denom else 0.0
                if score > best_score:
                    best, best_score = mem, score
            if best is None or best_score < self.update_threshold:
                actions.append({"id": f"new-{i}", "text": fact, "event": "ADD"})
                continue
            used.add(best["id"])
            if fact.strip().lower() == best["text"].strip().lower():
                actions.append({"id": best["id"], "text": best["text"], "event": "NONE"})
            elif _is_negated(_body(fact)) != _is_negated(_body(best["text"])):
                actions.append({"id": best["id"], "text": best["text"], "event": "DELETE"})
            else:
                actions.append(
                    {"id": best["id"], "text": fact, "event": "UPDATE", "old_memory": best["text"]}
                )
        return json.dumps({"memory": actions})


def make_mem0_fake(
    *, max_facts: int = 3, update_threshold: float = 0.5, model: str = "mem0-fake",
    memories: Mapping[str, Sequence[str]] | None = None,
) -> FunctionChatModel:
    """Build the fake as a `FunctionChatModel` (same `complete(...)` interface as `ChatClient`)."""
    return FunctionChatModel(
        Mem0FakeBrain(max_facts=max_facts, update_threshold=update_threshold, memories=memories), model=model
    )
