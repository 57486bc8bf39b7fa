"""The ``llm`` judge: an OpenAI-compatible chat model answers "does this text still state the fact?".

The graph side asks only about the texts it visits on the fact's lineage, so a case costs a few
short calls. Each call is one atomic question per text — ``yes`` / ``no`` / ``contradicts`` —
answered as structured JSON (:mod:`.prompts`), for up to ``batch_size`` texts at once (the graph
side hands over the unit versions of a lifecycle together through :meth:`LLMJudge.prefetch`).
Verdicts are cached per (fact, text) across the cases of a run; the chat client's disk cache makes
reruns replay. An unparsable reply is asked again (``max_retries``); after that, and on a failed
request, the rules' verdict stands and the fallback is counted. Texts the rules find clearly
without the fact — the golden answer's words missing and a rules score below ``ask_floor`` —
are not asked about: the model would only confirm it. A text that holds the answer is always
asked about, however little of the fact's other words it keeps (a paraphrase).

``usage`` counts this judge's calls and prompt/completion tokens (as the endpoint reports them);
the attributor puts them into every result.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from membase.exceptions import ModelRequestsBlockedError, ModelUnreachableError

from .._assessment import CONFLICT_PREFIX, Assessment
from .._probe import FactProbe
from .._text import content_tokens, token_recall
from ._protocol import CaseFacts
from .prompts import PRESENCE_SYSTEM, PRESENCE_USER, VERDICT_SCHEMA, VERDICTS
from .rules import rules_probe

__all__ = ["LLMJudge", "LLMJudgeFactory", "parse_verdicts"]

#: Structured-output forms, tried in order until the endpoint accepts one.
RESPONSE_FORMATS: tuple[dict[str, Any] | None, ...] = (
    VERDICT_SCHEMA,
    {"type": "json_object", "schema": VERDICT_SCHEMA["json_schema"]["schema"]},
    None,
)
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)


class VerdictParseError(ValueError):
    """A reply that is not the verdict JSON asked for; carries the raw reply."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(f"{message}; the reply was {raw[:200]!r} (expected "
                         '{"verdicts": [{"id": N, "verdict": "yes"|"no"|"contradicts"}]})')
        self.raw = raw


def parse_verdicts(raw: str, expected: Iterable[int]) -> dict[int, str]:
    """The verdict per text id of a model reply (JSON, bare or in a code fence).

    Raises:
        VerdictParseError: when the reply is no such JSON or misses an expected id.
    """
    match = _FENCE.match(raw)
    body = (match.group("body") if match else raw).strip()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise VerdictParseError(f"not JSON ({exc})", raw) from exc
    items = data.get("verdicts") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise VerdictParseError("no 'verdicts' list", raw)
    verdicts: dict[int, str] = {}
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("verdict"), str):
            word = item["verdict"].strip().lower()
            if word in VERDICTS and isinstance(item.get("id"), int):
                verdicts[item["id"]] = word
    missing = [i for i in expected if i not in verdicts]
    if missing:
        raise VerdictParseError(f"no verdict for text(s) {missing}", raw)
    return verdicts


def _assessment(verdict: str, text: str) -> Assessment:
    if verdict == "yes":
        return Assessment(present=True, score=1.0, why="llm: states the fact", segment=text[:160])
    if verdict == "contradicts":
        return Assessment(present=False, score=0.2, why=f"{CONFLICT_PREFIX}: llm says it contradicts the fact",
                          segment=text[:160])
    return Assessment(present=False, score=0.0, why="llm: does not state the fact", segment=text[:160])


@dataclass(kw_only=True)
class _Usage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    asked: int = 0
    """Texts put to the model."""
    fallbacks: int = 0
    """Texts left to the rules after failed or unparsable replies."""

    def as_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "asked": self.asked, "fallbacks": self.fallbacks}


@dataclass(kw_only=True)
class LLMJudge:
    """Asks the model about the texts the graph side visits; the rules screen out clear absences."""

    rules: FactProbe
    factory: LLMJudgeFactory
    fact: str
    answer: str
    name: str = "llm"
    usage: _Usage = field(default_factory=_Usage)
    _excerpts: dict[str, str] = field(default_factory=dict, repr=False)

    def describe(self) -> str:
        """What is followed."""
        return f"the fact {self.fact[:120]!r} (judged by the model {self.factory.model_name})"

    def _key(self, text: str) -> tuple[str, str, str]:
        # the verdict depends only on what the model is shown: the versions of a growing buffer
        # that keep the fact's line unchanged share one question
        return (self.fact, self.answer, self._excerpt(text))

    def _excerpt(self, text: str) -> str:
        """A long text (a buffer, a whole context) as the lines that speak of the fact: those with the
        answer's words, else those sharing the most of the fact's words; at most ``max_text_chars``."""
        limit = self.factory.max_text_chars
        if len(text) <= limit:
            return text
        cached = self._excerpts.get(text)
        if cached is None:
            cached = self._excerpts[text] = self._cut(text, limit)
        return cached

    def _cut(self, text: str, limit: int) -> str:
        lines = [line for line in text.splitlines() if line.strip()]
        fact_words = frozenset().union(*(f.tokens for f in self.rules.facts))
        answer = self.rules.answer_tokens
        scored = sorted(range(len(lines)), key=lambda i: (-len(content_tokens(lines[i]) & answer),
                                                          -len(content_tokens(lines[i]) & fact_words), i))
        kept: list[int] = []
        size = 0
        for i in scored:
            if size + len(lines[i]) > limit and kept:
                break
            kept.append(i)
            size += len(lines[i]) + 5
        return " [...] ".join(lines[i][:limit] for i in sorted(kept))

    def _worth_asking(self, text: str) -> bool:
        best, borderline = self.rules.judge_text(text)
        if best.score >= self.factory.ask_floor or borderline:
            return True
        answer = self.rules.answer_tokens
        return bool(answer) and token_recall(answer, content_tokens(text)) >= self.rules.answer_threshold

    def prefetch(self, texts: Iterable[str]) -> None:
        """Ask about every text of ``texts`` not yet judged, in batches."""
        by_key: dict[tuple[str, str, str], str] = {}
        for text in texts:
            key = self._key(text)
            if key not in by_key and self.factory.cached(key) is None and self._worth_asking(text):
                by_key[key] = text
        pending = list(by_key.values())
        for start in range(0, len(pending), self.factory.batch_size):
            self._ask(pending[start:start + self.factory.batch_size])

    def assess(self, text: str) -> Assessment:
        """The model's verdict on ``text`` (the rules' where it is clearly absent or the model failed)."""
        if not self._worth_asking(text):
            return self.rules.assess(text)
        hit = self.factory.cached(self._key(text))
        if hit is None:
            self._ask([text])
            hit = self.factory.cached(self._key(text))
        return hit if hit is not None else self.rules.assess(text)

    def _ask(self, texts: list[str]) -> None:
        shown = [self._excerpt(t) for t in texts]
        body = "\n".join(f'<text id="{i}">{t}</text>' for i, t in enumerate(shown, start=1))
        messages = [{"role": "system", "content": PRESENCE_SYSTEM},
                    {"role": "user", "content": PRESENCE_USER.format(fact=self.fact, answer=self.answer, texts=body)}]
        self.usage.asked += len(texts)
        for _ in range(self.factory.max_retries + 1):
            reply = self._request(messages, 32 + 24 * len(texts))
            if reply is None:  # the endpoint failed (after the client's own retries): the rules decide
                break
            self.usage.calls += 1
            self.usage.input_tokens += reply.input_tokens
            self.usage.output_tokens += reply.output_tokens
            try:
                verdicts = parse_verdicts(reply.text, range(1, len(texts) + 1))
            except VerdictParseError:
                continue
            for i, text in enumerate(texts, start=1):
                self.factory.store(self._key(text), _assessment(verdicts[i], text))
            return
        self.usage.fallbacks += len(texts)


    def _request(self, messages: list[dict[str, str]], max_tokens: int) -> Any:
        """One completion in the first structured-output form the endpoint accepts (OpenAI's
        ``json_schema``, llama.cpp's ``json_object`` with a schema, then none: the prompt asks for
        JSON too); None when every form fails."""
        while True:
            form = self.factory.response_format()
            try:
                return self.factory.model.complete(messages, temperature=0.0, max_tokens=max_tokens,
                                                   response_format=form)
            except (ModelUnreachableError, ModelRequestsBlockedError):
                return None  # no endpoint: no form would help
            except Exception:  # noqa: BLE001 - a refused request: the next form is tried, this one no more
                if not self.factory.next_response_format(form):
                    return None


def _fact_text(case: CaseFacts) -> str:
    lines = []
    for statement in case.facts:
        who = f"{statement.speaker.title()}: " if statement.speaker else ""
        lines.append(f"{who}{statement.text}")
    return " / ".join(dict.fromkeys(lines)) or case.golden


@dataclass(kw_only=True)
class LLMJudgeFactory:
    """Builds an :class:`LLMJudge` per case around one chat model and one verdict cache."""

    model: Any
    """A ``membase.clients.chat.ChatModel``: ``ChatClient`` (any OpenAI-compatible endpoint) or a fake."""
    batch_size: int = 8
    max_retries: int = 2
    """Re-asks after an unparsable reply."""
    ask_floor: float = 0.3
    """Rules score below which a text is not put to the model."""
    max_text_chars: int = 600
    """Longer texts are shown as their lines that speak of the fact, up to this many characters."""
    name: str = "llm"
    _cache: dict[tuple[str, str, str], Assessment] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _form: int = field(default=0, repr=False)

    def response_format(self) -> dict[str, Any] | None:
        """The structured-output form to send (the first one this endpoint has not refused)."""
        with self._lock:
            return RESPONSE_FORMATS[self._form]

    def next_response_format(self, failed: dict[str, Any] | None) -> bool:
        """Give up ``failed``; False when no form is left to try (the request itself fails)."""
        with self._lock:
            if RESPONSE_FORMATS[self._form] is failed and self._form + 1 < len(RESPONSE_FORMATS):
                self._form += 1
            return RESPONSE_FORMATS[self._form] is not failed

    @property
    def model_name(self) -> str:
        """The chat model's name."""
        return str(getattr(self.model, "model", "model"))

    def cached(self, key: tuple[str, str, str]) -> Assessment | None:
        """A verdict given earlier in this run."""
        with self._lock:
            return self._cache.get(key)

    def store(self, key: tuple[str, str, str], verdict: Assessment) -> None:
        """Keep a verdict for the rest of the run."""
        with self._lock:
            self._cache[key] = verdict

    def judge(self, case: CaseFacts) -> LLMJudge:
        """The model judge of ``case``."""
        return LLMJudge(rules=rules_probe(case), factory=self, fact=_fact_text(case), answer=case.golden)
