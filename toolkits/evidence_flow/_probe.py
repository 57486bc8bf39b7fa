"""Does a text still say what the evidence said?  The fact probe of one failed case.

The probe holds the *facts* of the case — the evidence statements that state the golden answer
(answer mode), or, when no message states it, the evidence statements closest to the question
(evidence mode) — and judges any text by its best segment (:func:`._facts.segments`):

* **answer** (answer mode): the segment holds the golden answer's content tokens (recall at
  least ``answer_threshold``);
* **support**: the segment holds the fact's *distinctive* content — the fact statement's content
  tokens other than the answer and person names, each weighted by how rare it is among the
  conversation's messages (inverse document frequency), tokens shared with the question
  counting double. In answer mode the support needed grows with how common the answer is: an
  answer stated by one message only needs a quarter of it (the same answer attached to another
  event is not the fact), an answer that many messages state (a common word such as "happy")
  needs up to half, so the word alone in unrelated text does not count. Evidence mode always
  needs ``evidence_threshold``;
* **no conflict**: the segment is not about other people than the fact (a known person named
  instead of the fact's), has the fact's polarity (negation), and does not replace an anchor of
  the fact or the golden answer (a number, month, weekday, season, relative-time word, time
  unit) or one of its proper nouns by a different one of the same kind, and keeps the answer bound
  to the question's words (:mod:`._binding`: the same words, the answer moved to another clause).

The score is normalised so that 1.0 is the threshold (capped at 2.0; a conflict scores 0.2).
A segment that holds the answer and no conflict but falls a little short of the support it
needs (at least 0.75 of it) is *borderline*: :meth:`FactProbe.judge_text` hands such segments to a
second-opinion judge (:mod:`.judges.embedding`), which may accept a paraphrase. A missing answer
word is never overruled that way. This probe is the ``rules`` presence judge
(:class:`.judges.PresenceJudge`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from ._assessment import Assessment
from ._conflicts import first_conflict
from ._dates import resolves_relative_time
from ._facts import (
    Statement,
    anchors_of,
    contrast_tokens,
    segments,
)
from ._text import LIGHT_VERBS, stem, token_recall, token_sequence
from ._time_ranges import DayRange, named_ranges, named_spans
from ._wordlists import words

__all__ = ["Assessment", "FactProbe"]

_MAX_SCORE = 2.0
_LIGHT_VERBS = frozenset(map(stem, LIGHT_VERBS))
_HEDGES = frozenset(map(stem, words("hedges")))
_CONFLICT_SCORE = 0.2
_BORDERLINE = 0.75
_QUESTION_WEIGHT = 2.0
_BASE_NEED = 0.25
# Words of an answer only its message states that, all in a segment, are context enough.
_OWN_CONTEXT = 3
# A segment that holds a rival statement's own words this fully, and clearly more than the fact's,
# is that rival's copy.
_RIVAL_SUPPORT = 0.75
_RIVAL_MARGIN = 0.2
_RIVAL_SCORE = 0.5
# Answers of more words than this are descriptions (see ``_conflicts.replaced_answer_word``).
_SHORT_ANSWER = 4
# A segment that names the day a computed "when" answer names needs this much of the fact's or
# the question's own words to be about the fact.
_DATED_LINK = 0.25


@dataclass(kw_only=True)
class FactProbe:
    """The critical information of one case and the rule that detects it in a text."""

    mode: str
    """``answer`` or ``evidence``."""
    facts: list[Statement]
    """The evidence statements that carry the information."""
    answer_tokens: frozenset[str]
    question_tokens: frozenset[str]
    names: frozenset[str]
    """Known person names (lower case)."""
    evidence_tokens: frozenset[str]
    """All content tokens of the evidence messages (a word found there is never foreign)."""
    weights: dict[str, float]
    """Rarity weight per token (missing tokens get ``default_weight``)."""
    default_weight: float
    need: float
    """Share of a fact's weighted support a segment must hold (answer mode)."""
    answer_threshold: float
    evidence_threshold: float
    asked_kinds: frozenset[str] = frozenset()
    """Anchor kinds the question asks for (``when`` → time words, ``how many`` → numbers)."""
    answer_sequence: tuple[str, ...] = ()
    """The golden answer's tokens in order (a number and the word it counts stay together)."""
    rivals: list[Statement] = field(default_factory=list)
    """Statements of *other* messages that also hold the golden answer (answer mode)."""
    proper_names: frozenset[str] = frozenset()
    """Names the conversation writes with a capital inside a sentence (people, pets, places), lower case."""
    sole_statement: bool = False
    """Answer mode: no message but the evidence states the golden answer."""
    said_on: tuple[date, ...] = ()
    """The days the evidence messages were sent (what their relative times point from)."""
    golden_days: tuple[DayRange, ...] = ()
    """For a "when" question, the days the golden answer names ("the Friday before 23 January 2022")."""
    _cache: dict[str, Assessment] = field(default_factory=dict, repr=False)
    _rival_keys: list[tuple[frozenset[str], float]] | None = field(default=None, repr=False)
    _borderline: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _dated: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)
    name: str = "rules"
    """The judge's name, recorded in every result."""

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        *,
        mode: str,
        facts: Sequence[Statement],
        answer_tokens: frozenset[str],
        question_tokens: frozenset[str],
        names: frozenset[str],
        evidence_tokens: frozenset[str],
        document_frequency: dict[str, int],
        documents: int,
        answer_spread: int,
        answer_threshold: float,
        evidence_threshold: float,
        question: str = "",
        golden: str = "",
        rivals: Sequence[Statement] = (),
        proper_names: frozenset[str] = frozenset(),
        said_on: Sequence[date] = (),
    ) -> FactProbe:
        """Build the probe.

        Args:
            mode: ``answer`` or ``evidence``.
            facts: the fact statements.
            answer_tokens: content tokens of the golden answer.
            question_tokens: content tokens of the question.
            names: known person names.
            evidence_tokens: content tokens of the evidence messages.
            document_frequency: messages per token.
            documents: number of messages.
            answer_spread: how many messages state the golden answer (1 = only the evidence).
            answer_threshold: answer-token recall that counts as holding the answer.
            evidence_threshold: support needed in evidence mode.
            question: the question's text (what it asks for: a time, a number).
            golden: the golden answer's text.
            rivals: statements of other messages that hold the golden answer too.
            proper_names: the conversation's names (people, pets, places), lower case.
            said_on: the days the evidence messages were sent.
        """
        names = names | frozenset(map(stem, names))  # compared with words and with tokens alike
        answer_tokens = answer_tokens - _HEDGES or answer_tokens
        worded = answer_tokens
        if len(answer_tokens) > _SHORT_ANSWER:
            # a long answer is a description a memory rewords, and its light verbs ("get producers to
            # read it") are the first words a rewording drops
            answer_tokens = answer_tokens - _LIGHT_VERBS
        n = max(documents, 1)
        weights = {t: max(0.05, math.log((n + 1) / (df + 0.5))) for t, df in document_frequency.items()}
        default_weight = math.log((n + 1) / 0.5)
        if mode == "answer":
            # The answer needs some of its fact's own words beside it (the same answer attached to
            # another event is not the fact); a common answer needs more of them.
            need = _BASE_NEED if answer_spread <= 1 else min(0.5, 0.3 + 0.1 * (answer_spread - 2))
        else:
            need = evidence_threshold
        kinds = asked_kinds(question)
        year = said_on[0].year if said_on else date.today().year
        golden_days = tuple(named_ranges(golden, year)) if kinds == _TIME_KINDS and golden else ()
        return cls(mode=mode, facts=list(facts), answer_tokens=answer_tokens, question_tokens=question_tokens,
                   names=names, evidence_tokens=evidence_tokens, weights=weights, default_weight=default_weight,
                   need=need, answer_threshold=answer_threshold, evidence_threshold=evidence_threshold,
                   asked_kinds=kinds, golden_days=golden_days,
                   answer_sequence=tuple(t for t in token_sequence(golden) if t in worded),
                   rivals=list(rivals) if mode == "answer" else [],
                   proper_names=proper_names | names, sole_statement=mode == "answer" and answer_spread <= 1,
                   said_on=tuple(said_on))

    # ------------------------------------------------------------------ measures
    @property
    def span(self) -> int:
        """How many adjacent sentences a segment may join: two, or as many as a fact spans."""
        return max([2, *(len(f.parts) for f in self.facts)])

    def _weight(self, token: str) -> float:
        base = self.weights.get(token, self.default_weight)
        return base * (_QUESTION_WEIGHT if token in self.question_tokens else 1.0)

    def support_tokens(self, fact: Statement) -> frozenset[str]:
        """The fact's distinctive tokens: its content tokens minus the answer, person names, the
        alternative a contrast clause rules out, and light verbs."""
        tokens = fact.tokens - self.answer_tokens - self.names - contrast_tokens(fact.text) - _LIGHT_VERBS
        return tokens or fact.tokens - self.names

    def support(self, fact: Statement, segment: Statement) -> float:
        """Weighted share of the fact's distinctive tokens found in the segment (its relative-time
        words count as found where the segment names the date they point to)."""
        key = self.support_tokens(fact)
        # sums over sorted tokens: the same in every process, whatever the hash seed
        total = math.fsum(self._weight(t) for t in sorted(key))
        if total <= 0:
            return 1.0
        found = key & segment.tokens
        times = (key - found) & _relative_time_tokens(fact)
        if times and self._resolves(fact, segment):
            found |= times
        return math.fsum(self._weight(t) for t in sorted(found)) / total

    def _resolves(self, fact: Statement, segment: Statement) -> bool:
        """The segment names a date where a relative time of the fact points ("the week of 7 August
        2023" for "last week" said on 14 August)."""
        if not self.said_on or not any(ch.isdigit() for ch in segment.text):
            return False
        return any(resolves_relative_time(fact.text, segment.text, day) for day in self.said_on)

    def question_support(self, segment: Statement) -> float:
        """Weighted share of the question's own words (answer and person names aside) in the segment."""
        key = self.question_tokens - self.answer_tokens - self.names - _LIGHT_VERBS
        total = math.fsum(self._weight(t) for t in sorted(key))
        if total <= 0:
            return 0.0
        return math.fsum(self._weight(t) for t in sorted(key & segment.tokens)) / total

    def _rival_support(self, segment: Statement) -> float:
        """How fully the segment holds the distinctive content of the best-matching rival statement."""
        if self._rival_keys is None:
            keys = []
            for rival in self.rivals:
                # a rival that says nothing but the answer ("Porto!", "Loving it.") is no other statement
                if not rival.tokens - self.answer_tokens - self.names:
                    continue
                key = self.support_tokens(rival)
                total = math.fsum(self._weight(t) for t in sorted(key))
                if total > 0:
                    keys.append((key, total))
            self._rival_keys = keys
        best = 0.0
        for key, total in self._rival_keys:
            if key & segment.tokens:
                best = max(best, math.fsum(self._weight(t) for t in sorted(key & segment.tokens)) / total)
        return best

    def key_tokens(self, fact: Statement) -> frozenset[str]:
        """Evidence mode: the words of a fact that carry the answer — those it shares with the golden
        answer (with the question, for a yes/no answer), and, when the question asks when or how
        long/many, its time or number words."""
        key = set(fact.tokens & self.answer_tokens)
        if not self.answer_tokens:
            # "Yes"/"No" confirms the question's own claim: its words as the evidence states them
            # ("passed my driving test") must stay, not a look-alike ("failed my first driving test")
            key |= (fact.tokens & self.question_tokens) - self.names
        for kind, values in fact.anchors.items():
            if kind in self.asked_kinds:
                key |= values
        return frozenset(key)

    def _answer_support(self, fact: Statement, segment: Statement, support: float) -> float:
        """The support of a segment that holds the answer, counting what stands for the fact's words."""
        if self.sole_statement:
            # an answer only the evidence states, told in the question's own terms ("Maren planted
            # runner beans at her allotment" for "Garden update: the runner beans are in"), is this
            # fact even when a paraphrase kept none of the evidence's other words
            support = max(support, self.question_support(segment))
            if self._says_nothing_else(fact, segment) or len(self.answer_tokens & segment.tokens) >= _OWN_CONTEXT:
                # an answer of several words that no other message states is its own context
                support = max(support, self.need)
        return support

    def _answer_keys(self, fact: Statement) -> list[frozenset[str]]:
        """The answer words a segment matched to ``fact`` must hold: the fact's own, or, for a fact that
        carries none (a sentence of context beside the one that says "LGBTQ+ folks"), those of one of
        the facts that do: a memory of the context alone has lost the evidence's share of the answer."""
        own = self.key_tokens(fact)
        if own:
            return [own]
        return [key for key in (self.key_tokens(other) for other in self.facts if other is not fact) if key]

    def _evidence_support(self, fact: Statement, segment: Statement, support: float) -> float:
        """Evidence mode: a segment that holds the evidence's share of the golden answer and states
        the golden answer (or holds the question's words) is the fact: "married for five years" for
        the reply "5 years already!" to "how long have you been married?", whose other words are
        small talk."""
        key = self.key_tokens(fact)
        if not key & self.answer_tokens or token_recall(key, segment.tokens) < self.answer_threshold:
            return support
        if token_recall(self.answer_tokens, segment.tokens) >= self.answer_threshold:
            return max(support, self.need)
        return max(support, self.question_support(segment))

    def _says_nothing_else(self, fact: Statement, segment: Statement) -> bool:
        """The segment holds the answer and no content word beyond the fact's, the question's and the
        people's ("Ines is a vet" for "I've been a vet at the zoo for ten years"): a terse memory of
        an answer no other message states cannot be about another event."""
        if not self.answer_tokens or not self.answer_tokens <= segment.tokens:
            return False
        return not segment.tokens - self.answer_tokens - fact.tokens - self.question_tokens - self.names

    def names_golden_day(self, segment: Statement) -> bool:
        """The segment names a day (or stretch) inside the one the golden answer of a "when" question
        names: "on 21 January 2022" for "the Friday before 23 January 2022", "the week before 9
        June 2023" for itself; a memory that resolved the message's "last Friday" states the answer."""
        return bool(self.golden_day_words(segment))

    def golden_day_words(self, segment: Statement) -> frozenset[str]:
        """The tokens of the segment's words that name the golden answer's day (none when it names
        no day inside it)."""
        if not self.golden_days or not any(ch.isdigit() for ch in segment.text):
            return frozenset()
        found = self._dated.get(segment.text)
        if found is None:
            year = self.said_on[0].year if self.said_on else date.today().year
            found = frozenset(token for (start, end), words in named_spans(segment.text, year)
                              if any(low <= start and end <= high for low, high in self.golden_days)
                              for token in token_sequence(words))
            self._dated[segment.text] = found
        return found

    def _states_answer(self, segment: Statement) -> bool:
        """The segment states the golden answer's own anchors (a resolved date, a computed count)."""
        if self.names_golden_day(segment):
            return True
        own = frozenset().union(*anchors_of(self.answer_tokens).values()) - self.evidence_tokens if self.answer_tokens \
            else frozenset()
        return bool(own) and token_recall(own, segment.tokens) >= 0.5

    def conflict(self, fact: Statement, segment: Statement) -> str | None:
        """Why the segment contradicts the fact (None when it does not): the first of the named
        checks of :mod:`._conflicts`, in their declared order, that finds a conflict."""
        return first_conflict(self, fact, segment)

    def _judge(self, fact: Statement, segment: Statement) -> tuple[float, str, bool]:
        """``(score, why, borderline)`` of one segment against one fact."""
        own = self.support(fact, segment)
        support = self._answer_support(fact, segment, own) if self.mode == "answer" else \
            self._evidence_support(fact, segment, own)
        support_score = min(support / self.need if self.need > 0 else _MAX_SCORE, _MAX_SCORE)
        if self.mode == "answer":
            recall = token_recall(self.answer_tokens, segment.tokens) if self.answer_tokens else 1.0
            if recall < self.answer_threshold and self.names_golden_day(segment):
                recall = 1.0
            answer_score = recall / self.answer_threshold
            score = min(answer_score, support_score, _MAX_SCORE)
            why = ("answer+support" if score >= 1.0 else
                   "answer missing" if answer_score < 1.0 else "answer without the fact's context")
            if score >= 1.0 and self.rivals:
                rival = self._rival_support(segment)
                if rival >= _RIVAL_SUPPORT and rival > own + _RIVAL_MARGIN:
                    # the segment is another message's statement of the same answer, copied into a
                    # memory that holds both (a buffer, a document, an episode)
                    return min(score, _RIVAL_SCORE), "another message's statement of the answer", False
            # only the context around a present answer may be a paraphrase worth a second opinion
            borderline = answer_score >= 1.0 and _BORDERLINE <= support_score < 1.0
        else:
            score = support_score
            if score < 1.0 and self.names_golden_day(segment) \
                    and max(own, self.question_support(segment)) >= _DATED_LINK:
                # the answer was computed from the evidence's time, so only a memory that resolved
                # that time says it: with a few of the fact's words it is the fact, reworded or not
                score = 1.0
            why = "evidence content" if score >= 1.0 else "evidence content missing"
            keys = self._answer_keys(fact)
            if keys and score >= 1.0 and not self._states_answer(segment):
                # the words that carry the answer (its share of the evidence, the date of a "when")
                key_score = max(token_recall(key, segment.tokens) for key in keys) / self.answer_threshold
                if key_score < 1.0:
                    score, why = key_score, "the evidence's answer words missing"
            borderline = _BORDERLINE <= score < 1.0
        if score >= _BORDERLINE:
            clash = self.conflict(fact, segment)
            if clash is not None:
                return _CONFLICT_SCORE, f"conflict: {clash}", False
        return score, why, borderline

    def assess(self, text: str) -> Assessment:
        """Judge whether ``text`` still carries the information (cached per text)."""
        return self.judge_text(text)[0]

    def judge_text(self, text: str) -> tuple[Assessment, tuple[str, ...]]:
        """The verdict on ``text`` and its borderline segments (answer held, support a little short),
        which a second opinion may look at; both cached per text."""
        cached = self._cache.get(text)
        if cached is not None:
            return cached, self._borderline.get(text, ())
        best = Assessment(present=False, score=0.0, why="no text")
        borderline: list[str] = []
        for segment in segments(text, self.names, span=self.span):
            for fact in self.facts:
                score, why, is_borderline = self._judge(fact, segment)
                if is_borderline:
                    borderline.append(segment.text)
                if score > best.score:
                    best = Assessment(present=score >= 1.0 and not why.startswith("conflict"), score=round(score, 3),
                                      why=why, segment=segment.text[:160])
            if best.score >= _MAX_SCORE:
                break
        self._cache[text] = best
        if borderline and not best.present:
            self._borderline[text] = tuple(borderline)
        return best, self._borderline.get(text, ())

    def describe(self) -> str:
        """One line naming what is followed."""
        if self.mode == "answer":
            return "golden-answer tokens " + ", ".join(sorted(self.answer_tokens)) + (
                f" with their context (support ≥ {self.need:.2f})" if self.need else "")
        return f"the distinctive content of {len(self.facts)} evidence statement(s)"


def _relative_time_tokens(fact: Statement) -> frozenset[str]:
    """The fact's words of a time relative to when it was said ("last", "week", "Tuesday", "yesterday")."""
    anchors = fact.anchors
    return anchors.get("relative", frozenset()) | anchors.get("unit", frozenset()) | anchors.get("weekday", frozenset())


_TIME_KINDS = frozenset({"month", "weekday", "season", "relative", "unit", "number"})
_ASKS_TIME = re.compile(r"^\s*when\b|\bwhat (?:date|day|month|year|time|week|weekend)\b|\bhow long ago\b|\bwhich "
                        r"(?:date|day|month|year|week|weekend)\b", re.IGNORECASE)
_ASKS_COUNT = re.compile(r"\bhow (?:many|much|long|old|often|far)\b|\bwhat (?:number|age|percentage)\b", re.IGNORECASE)


def asked_kinds(question: str) -> frozenset[str]:
    """Anchor kinds whose words answer the question: time words for "when", numbers and time units
    for "how many/long/much"."""
    if _ASKS_TIME.search(question):
        return _TIME_KINDS
    if _ASKS_COUNT.search(question):
        return frozenset({"number", "unit"})
    return frozenset()
