"""A deterministic fake LLM that answers every EverMemOS prompt (tests and offline demos).

It dispatches on the prompt's task tag (see `prompts.TASK_TAGS`):

* boundary: closes the episode when the time gap is at least an hour (`hours`/`days` in the gap
  line) or the new message contains `[new topic]`;
* episode: title = the first words of the segment, content = "<speaker> said: <text>" sentences;
* event log: one atomic fact per message;
* foresight: one prediction per segment;
* sufficiency: sufficient when every query term (BM25 tokens) occurs in the documents, else it
  names the missing terms (`sufficiency="always"`/`"never"` force a verdict);
* multi-query: two queries built from the missing terms; refined query: the query + missing terms.

`broken=("episode",)` etc. makes those tasks answer unparseable text, to exercise failure paths.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Literal

from membase.clients.fake import FunctionChatModel
from membase.layers.evermemos.index import bm25_tokenize
from membase.layers.evermemos.prompts import TASK_TAGS

__all__ = ["EverMemOSFakeBrain", "make_evermemos_fake"]

_BLOCK_RE = re.compile(
    r'\{timestamp: (?P<ts>[^,]*), speaker: "(?P<speaker>[^"]*)", content: "(?P<content>.*)"\}$'
)
_LINE_RE = re.compile(r"^\[(?P<ts>[^\]]*)\] (?P<speaker>[^:]+): (?P<content>.*)$")


def _section(prompt: str, start: str, stop: str | None) -> str:
    begin = prompt.find(start)
    if begin < 0:
        return ""
    begin += len(start)
    end = prompt.find(stop, begin) if stop else -1
    return prompt[begin : end if end >= 0 else None].strip()


class EverMemOSFakeBrain:
    """The reply function of the fake (callable as `fn(messages, **kwargs) -> str`)."""

    def __init__(
        self,
        *,
        sufficiency: Literal["terms", "always", "never"] = "terms",
        broken: Iterable[str] = (),
    ) -> None:
        self.sufficiency = sufficiency
        self.broken = frozenset(broken)

    def __call__(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        """Answer one chat request by the task tag its prompt starts with (a task in ``broken`` gets a non-JSON reply)."""
        prompt = str(messages[-1].get("content", ""))
        for kind, tag in TASK_TAGS.items():
            if prompt.startswith(tag):
                if kind in self.broken:
                    return "I am not able to answer in JSON today."
                return getattr(self, f"_{kind}")(prompt)
        raise ValueError(f"EverMemOS fake: unrecognised prompt starting {prompt[:60]!r}")

    # -- construction -------------------------------------------------------------------------
    def _boundary(self, prompt: str) -> str:
        gap = next((ln for ln in prompt.splitlines() if ln.startswith("Time gap:")), "")
        new = _section(prompt, "Newly arrived messages:", "Decide whether")
        history = _section(prompt, "Earlier messages of the current (still open) episode:", "Time gap:")
        should_end = (" hours (" in gap or " days (" in gap or "[new topic]" in new) and bool(history)
        first = _LINE_RE.match(history.splitlines()[0]) if history else None
        summary = " ".join(first.group("content").split()[:8]) if first else ""
        reply = {
            "reasoning": f"fake judge: {gap or 'no gap line'}",
            "should_end": should_end,
            "confidence": 0.9,
        }
        if should_end:
            reply["topic_summary"] = summary
        return json.dumps(reply)

    def _messages(self, prompt: str, block: bool) -> list[tuple[str, str, str]]:
        out = []
        for line in prompt.splitlines():
            match = (_BLOCK_RE if block else _LINE_RE).match(line.strip())
            if match:
                out.append((match.group("ts"), match.group("speaker"), match.group("content")))
        return out

    def _episode(self, prompt: str) -> str:
        msgs = self._messages(prompt, block=True)
        words = " ".join(c for _, _, c in msgs).split()
        title = " ".join(words[:12]) or "Empty conversation"
        content = " ".join(f"{s} said: {c}" for _, s, c in msgs) or "Nothing was said."
        return "```json\n" + json.dumps({"title": title, "content": content}) + "\n```"

    def _event_log(self, prompt: str) -> str:
        time = next((ln[len("TIME: ") :] for ln in prompt.splitlines() if ln.startswith("TIME: ")), "unknown")
        facts = [f"{s} said: {c}" for _, s, c in self._messages(prompt, block=False)] or ["Nothing was said."]
        return json.dumps({"event_log": {"time": time, "atomic_fact": facts}})

    def _foresight(self, prompt: str) -> str:
        msgs = self._messages(prompt, block=False)
        speaker = msgs[0][1] if msgs else "The speaker"
        date = next(
            (
                ln[len("Reference time: ") :]
                for ln in prompt.splitlines()
                if ln.startswith("Reference time: ")
            ),
            "",
        )
        item = {
            "content": f"{speaker} will follow up on this conversation.",
            "evidence": msgs[0][2] if msgs else "",
            "start_time": date or None,
            "duration_days": 7,
        }
        return json.dumps([item])

    # -- retrieval ---------------------------------------------------------------------------
    def _missing_terms(self, prompt: str) -> tuple[list[str], list[str]]:
        query = _section(prompt, "Question:", "\n")
        docs = _section(prompt, "Documents:", "Be careful with time") or _section(
            prompt, "Retrieved documents:", "Guidelines"
        )
        doc_terms = set(bm25_tokenize(docs))
        terms = bm25_tokenize(query)
        titles = [
            ln.strip()[len("Title: ") :] for ln in docs.splitlines() if ln.strip().startswith("Title: ")
        ]
        return [t for t in terms if t not in doc_terms], titles

    def _sufficiency(self, prompt: str) -> str:
        missing, titles = self._missing_terms(prompt)
        sufficient = {"always": True, "never": False}.get(self.sufficiency, not missing)
        return json.dumps(
            {
                "is_sufficient": sufficient,
                "reasoning": "fake check: "
                + ("all query terms found" if not missing else "missing " + ", ".join(missing)),
                "key_information_found": titles[:3],
                "missing_information": [] if sufficient else (missing or ["more detail"]),
            }
        )

    def _multi_query(self, prompt: str) -> str:
        query = _section(prompt, "Original question:", "\n")
        missing = _section(prompt, "Missing information:", "\n")
        focus = missing if missing and missing != "N/A" else query
        return json.dumps(
            {
                "queries": [f"What is known about {focus}?", f"The conversation mentions {focus}."],
                "reasoning": "fake",
            }
        )

    def _refined_query(self, prompt: str) -> str:
        query = _section(prompt, "Question:", "\n")
        missing = _section(prompt, "Missing information:", "\n")
        return f"Refined Query: {query} ({missing})"


def make_evermemos_fake(
    *,
    sufficiency: Literal["terms", "always", "never"] = "terms",
    broken: Iterable[str] = (),
    model: str = "evermemos-fake",
) -> FunctionChatModel:
    """Build the fake as a `FunctionChatModel` (same `complete(...)` interface as `ChatClient`).

    Args:
        sufficiency: `terms` (query terms must all occur), `always` or `never` sufficient.
        broken: task kinds (`boundary`, `episode`, `event_log`, ...) answered with unparseable text.
        model: model name reported in results.
    """
    return FunctionChatModel(EverMemOSFakeBrain(sufficiency=sufficiency, broken=broken), model=model)
