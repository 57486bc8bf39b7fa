"""The ``llm`` judge: an OpenAI-compatible chat model answers "does this text still state the fact?".

A hybrid: the rules (:mod:`.rules`) judge every text first, and the model is asked only where
they are unsure (:meth:`LLMJudge.why_ask`):

* a text that lacks the golden answer's words (or, for an inferred answer, most of the evidence's
  words) is clearly without the fact: the rules decide, the model would only confirm it;
* a text whose deciding sentence restates the fact in its own words — the rules find it present,
  no conflict, and it adds no content word beyond the fact, the question and the answer — is
  clearly with it: the rules decide;
* a named rules conflict (another person, date, number ...) is a finding, not a doubt: the rules
  decide;
* the rest is asked: the answer held but the fact's context short (a paraphrase), the fact found
  with new words around it (a change of meaning the rules may miss).

Only the texts the graph side visits are asked about, and questions are batched: the graph side
announces the texts it may visit (:meth:`LLMJudge.prefetch`), and the first text that needs the
model is asked together with every announced one that needs it too, in one call of up to
``batch_size`` texts. Each question is atomic — ``yes`` / ``no`` / ``contradicts`` — answered as
structured JSON (:mod:`.prompts`); a long text (a buffer, a whole context) is shown as its sentences
that speak of the fact. Verdicts are cached per (fact, shown text) across the cases of a run; the
chat client's disk cache makes reruns replay. An unparsable reply is asked again
(``max_retries``); after that, and on a failed request, the rules' verdict stands and the fallback
is counted.

``usage`` counts this judge's calls and prompt/completion tokens (as the endpoint reports them)
and the texts it asked about; the attributor puts them into every result.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from membase.exceptions import ModelRequestsBlockedError, ModelUnreachableError
from smartcomment.runtime.errors import MemTraceError

from .._assessment import CONFLICT_PREFIX, Assessment
from .._probe import FactProbe
from .._text import content_tokens, token_recall
from ._protocol import CaseFacts
from .prompts import PRESENCE_SYSTEM, VERDICT_SCHEMA, VERDICTS, presence_question
from .rules import rules_probe

__all__ = ["LLMJudge", "LLMJudgeFactory", "parse_verdicts"]

#: Structured-output forms, tried in order until the endpoint accepts one.
RESPONSE_FORMATS: tuple[dict[str, Any] | None, ...] = (
    VERDICT_SCHEMA,
    {"type": "json_object", "schema": VERDICT_SCHEMA["json_schema"]["schema"]},
    None,
)
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
#: Rules score, relative to the answer's own, from which a text without a full answer is still asked
#: about (most of a several-word answer held: "New York" for "New York City").
_NEAR_ANSWER = 0.75


class VerdictParseError(MemTraceError, ValueError):
    """A reply that is not the verdict JSON asked for; carries the raw reply."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(f"{message}; the reply was {raw[:200]!r} (expected "
                         '{"v": ["yes"|"no"|"contradicts", ...]}, one per text)')
        self.raw = raw


def _verdict_list(data: Any, raw: str) -> list[Any]:
    if isinstance(data, dict):
        data = data.get("v", data.get("verdicts"))
    if not isinstance(data, list):
        raise VerdictParseError("no 'v' list", raw)
    return data


def parse_verdicts(raw: str, expected: Iterable[int]) -> dict[int, str]:
    """The verdict per text id (1-based) of a model reply: JSON, bare or in a code fence, either the
    asked ``{"v": [verdict, ...]}`` in the texts' order or ``{"verdicts": [{"id", "verdict"}]}``.

    Raises:
        VerdictParseError: when the reply is no such JSON or misses an expected id.
    """
    match = _FENCE.match(raw)
    body = (match.group("body") if match else raw).strip()
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise VerdictParseError(f"not JSON ({exc})", raw) from exc
    verdicts: dict[int, str] = {}
    for position, item in enumerate(_verdict_list(data, raw), start=1):
        number, word = position, item
        if isinstance(item, dict):
            number, word = item.get("id"), item.get("verdict")
        if isinstance(number, int) and isinstance(word, str) and word.strip().lower() in VERDICTS:
            verdicts[number] = word.strip().lower()
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
    rules_sure: int = 0
    """Texts the rules decided alone (clearly without the fact, a verbatim restatement, a conflict)."""

    def as_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "asked": self.asked, "fallbacks": self.fallbacks, "rules_sure": self.rules_sure}


@dataclass(kw_only=True)
class LLMJudge:
    """Asks the model about the visited texts the rules are unsure of (see the module docstring)."""

    rules: FactProbe
    factory: LLMJudgeFactory
    fact: str
    answer: str
    name: str = "llm"
    usage: _Usage = field(default_factory=_Usage)
    _pending: dict[tuple[str, str, str], str] = field(default_factory=dict, repr=False)
    """Announced texts that need the model, not asked yet (asked with the next question)."""
    _excerpts: dict[str, str] = field(default_factory=dict, repr=False)
    _own_words: frozenset[str] | None = field(default=None, repr=False)

    def describe(self) -> str:
        """What is followed."""
        return f"the fact {self.fact[:120]!r} (judged by the model {self.factory.model_name})"

    def _key(self, text: str) -> tuple[str, str, str]:
        # the verdict depends only on what the model is shown: the versions of a growing buffer
        # that keep the fact's sentence unchanged share one question
        return (self.fact, self.answer, self._excerpt(text))

    def _excerpt(self, text: str) -> str:
        """A long text as its sentences that speak of the fact: those with the answer's words, else
        those sharing the most of the fact's words, in their order; at most ``max_text_chars``."""
        limit = self.factory.max_text_chars
        if len(text) <= limit:
            return text
        cached = self._excerpts.get(text)
        if cached is None:
            cached = self._excerpts[text] = self._cut(text, limit)
        return cached

    def _cut(self, text: str, limit: int) -> str:
        parts = [p.strip() for p in _SENTENCE_END.split(text) if p and p.strip()]
        fact_words = frozenset().union(*(f.tokens for f in self.rules.facts))
        answer = self.rules.answer_tokens
        tokens = [content_tokens(p) for p in parts]
        ranked = sorted(range(len(parts)), key=lambda i: (-len(tokens[i] & answer), -len(tokens[i] & fact_words), i))
        kept: list[int] = []
        size = 0
        for i in ranked:
            if kept and (size + len(parts[i]) > limit or not tokens[i] & (answer | fact_words)):
                break
            kept.append(i)
            size += len(parts[i]) + 5
        return " [...] ".join(parts[i][:limit] for i in sorted(kept))

    def _fact_words(self) -> frozenset[str]:
        """Words a restatement may use without saying anything new: the fact's, the question's, the
        answer's and the people's."""
        if self._own_words is None:
            self._own_words = frozenset().union(*(f.tokens for f in self.rules.facts), self.rules.question_tokens,
                                                self.rules.answer_tokens, self.rules.names)
        return self._own_words

    def why_ask(self, text: str) -> str | None:
        """Why the model is asked about ``text`` (None: the rules are sure and decide)."""
        best, borderline = self.rules.judge_text(text)
        if borderline:
            return "answer held, the fact's context a little short"
        if best.contradicts:
            return None
        if best.present:
            added = content_tokens(best.segment) - self._fact_words()
            if not added or self._restated(text):
                return None
            return f"the fact with new words around it ({', '.join(sorted(added)[:3])})"
        answer = self.rules.answer_tokens
        if self.rules.mode == "answer" and answer:
            held = token_recall(answer, content_tokens(text)) >= self.rules.answer_threshold * _NEAR_ANSWER
            return "answer held without the fact's context" if held else None
        return "part of the evidence's content" if best.score >= self.factory.ask_floor else None

    def _restated(self, text: str) -> bool:
        """Some sentence of ``text`` states the fact by itself with none but the fact's own words (a raw
        copy of the message inside a prompt or a buffer): the words around it are other facts."""
        own = self._fact_words()
        for sentence in _SENTENCE_END.split(text):
            words = content_tokens(sentence)
            if words and words <= own and self.rules.assess(sentence).present:
                return True
        return False

    def prefetch(self, texts: Iterable[str]) -> None:
        """Announce texts the graph side may visit: those that need the model are asked with the
        next question (one call for what would be several)."""
        for text in texts:
            key = self._key(text)
            if key not in self._pending and self.factory.cached(key) is None and self.why_ask(text) is not None:
                self._pending[key] = text

    def assess(self, text: str) -> Assessment:
        """The model's verdict on ``text`` where the rules are unsure; the rules' elsewhere."""
        if self.why_ask(text) is None:
            self.usage.rules_sure += 1
            return self.rules.assess(text)
        key = self._key(text)
        hit = self.factory.cached(key)
        if hit is None:
            self._pending.pop(key, None)
            others = [t for k, t in self._pending.items() if self.factory.cached(k) is None]
            batch = [text, *others[:self.factory.batch_size - 1]]
            for asked in batch[1:]:
                self._pending.pop(self._key(asked), None)
            self._ask(batch)
            hit = self.factory.cached(key)
        return hit if hit is not None else self.rules.assess(text)

    def _ask(self, texts: list[str]) -> None:
        messages = [{"role": "system", "content": PRESENCE_SYSTEM},
                    {"role": "user", "content": presence_question(self.fact, self.answer,
                                                                  [self._excerpt(t) for t in texts])}]
        self.usage.asked += len(texts)
        for _ in range(self.factory.max_retries + 1):
            reply = self._request(messages, 8 + 4 * len(texts))
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
    ask_floor: float = 0.75
    """Inferred answers (no message states the answer): rules score from which a text that falls short
    of the evidence's content is still asked about."""
    max_text_chars: int = 320
    """Longer texts are shown as their sentences that speak of the fact, up to this many characters."""
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
