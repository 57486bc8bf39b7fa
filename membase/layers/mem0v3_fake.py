"""A deterministic fake LLM for mem0ai 2.x's additive extraction call (tests and offline demos).

mem0 2.x makes one LLM call per `add`: a system prompt and a user prompt made of `## ...` sections
(recent messages, existing memories as a JSON list of `{id, text}`, the new messages as
`role: content` lines, dates, optional custom instructions). The fake reads the `## New Messages`
section, splits it into sentences and keeps up to `max_memories` statements (no questions, at
least three content words), each prefixed with the speaker name found in the metadata suffix.

It also reproduces the failure this layer is traced for: a statement is *skipped* when an existing
memory shown in the prompt looks equivalent (overlap coefficient of stemmed content words, speaker
prefix ignored, at least `skip_threshold`), even when the statement adds a detail. The reply is
fenced (```json ... ```) so that mem0's code-block removal is exercised.
"""

from __future__ import annotations

import json
import re
from typing import Any

from membase.clients.fake import FunctionChatModel
from membase.layers.evermemos.index import bm25_tokenize
from membase.layers.mem0_fake import METADATA_MARKER

__all__ = ["Mem0v3FakeBrain", "make_mem0v3_fake"]

_SECTION_RE = re.compile(r"^## (?P<title>[^\n]+)\n(?P<body>.*?)(?=\n\n## |\n\n# Output:|\Z)", re.DOTALL | re.MULTILINE)
_SPEAKER_RE = re.compile(r"Speaker Name: (?P<name>[^\n]*)")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
_ROLE_PREFIX_RE = re.compile(r"^(user|assistant|system): ", re.MULTILINE)


def _sections(prompt: str) -> dict[str, str]:
    return {m.group("title").strip(): m.group("body").strip() for m in _SECTION_RE.finditer(prompt)}


def _body(text: str) -> str:
    head, sep, tail = text.partition(": ")
    return tail if sep and len(head.split()) <= 3 else text


def _overlap(a: str, b: str) -> float:
    left, right = set(bm25_tokenize(_body(a))), set(bm25_tokenize(_body(b)))
    denom = min(len(left), len(right))
    return len(left & right) / denom if denom else 0.0


class Mem0v3FakeBrain:
    """Reply function of the fake (`fn(messages, **kwargs) -> str`)."""

    def __init__(self, *, max_memories: int = 3, skip_threshold: float = 0.75) -> None:
        self.max_memories = max_memories
        self.skip_threshold = skip_threshold

    def __call__(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        """Answer one additive-extraction request (the last message holds the prompt)."""
        return self.extract(str(messages[-1].get("content", "")))

    def extract(self, prompt: str) -> str:
        """Answer an additive-extraction request."""
        sections = _sections(prompt)
        new = _ROLE_PREFIX_RE.sub("", sections.get("New Messages", ""))
        speaker_match = _SPEAKER_RE.search(new)
        speaker = speaker_match.group("name").strip() if speaker_match else ""
        content = new.split(METADATA_MARKER.strip(), 1)[0].strip()
        try:
            existing = [str(m.get("text", "")) for m in json.loads(sections.get("Existing Memories", "[]") or "[]")]
        except (json.JSONDecodeError, AttributeError):
            existing = []
        memories: list[dict[str, str]] = []
        for sentence in _SENTENCE_RE.split(content):
            sentence = sentence.strip()
            if not sentence or sentence.endswith("?") or len(bm25_tokenize(sentence)) < 3:
                continue
            if any(_overlap(sentence, old) >= self.skip_threshold for old in existing):
                continue  # "already known": the additive pipeline has no UPDATE to fall back on
            memories.append({"id": str(len(memories)), "text": f"{speaker}: {sentence}" if speaker else sentence})
            if len(memories) == self.max_memories:
                break
        return "```json\n" + json.dumps({"memory": memories}) + "\n```"


def make_mem0v3_fake(
    *, max_memories: int = 3, skip_threshold: float = 0.75, model: str = "mem0v3-fake"
) -> FunctionChatModel:
    """Build the fake as a `FunctionChatModel` (same `complete(...)` interface as `ChatClient`)."""
    return FunctionChatModel(Mem0v3FakeBrain(max_memories=max_memories, skip_threshold=skip_threshold), model=model)
