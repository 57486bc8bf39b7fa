"""Does a segment contradict the fact?  Small named checks, tried in a declared order.

The rules judge (:mod:`._probe`) accepts a segment that holds the answer and enough of the fact's
own words only when none of these checks finds a conflict. Each check covers one general way a
memory keeps the words and changes the meaning; the first that fires names the conflict:

1. ``other_people`` — the segment is about other known people than the fact;
2. ``other_speaker`` — the sentence that states it is said by someone else, who does not even
   name the fact's speaker;
3. ``other_agent`` — the clause that states it is about someone else (a first-person clause is
   about its speaker);
4. ``other_subject`` — the clause's subject was swapped for someone or something the fact's
   clause does not mention;
5. ``number_moved`` — a number of the answer no longer stands next to the word it counts;
6. ``polarity`` — the clause that speaks of the answer is negated in one and not the other;
7. ``replaced_anchor`` — a number, month, weekday, season, relative-time word or time unit was
   replaced by another of the same kind;
8. ``replaced_answer_word`` — a word of a short answer replaced by a noun the evidence never says;
9. ``replaced_question_noun`` — a thing the question asks about replaced, in its place between the
   same words, by a noun the evidence never says;
10. ``other_point_in_time`` — a point in time replaced by one of another kind (a relative time
    written as the date it points to is the same time);
11. ``other_proper_noun`` — a place, title or organisation replaced by another;
12. ``opposite`` — an opposite in a word's place (:mod:`._meaning`);
13. ``swapped`` — two names, numbers or things trading places (:mod:`._meaning`);
14. ``answer_rebound`` — every word kept, the answer moved to other words (:mod:`._binding`).

Polarity, anchors and names are read in the sentence of each side that holds the most of the
answer (for a run of sentences), so a negation elsewhere in a run does not count; people are
compared over the whole of both, because attribution carries across sentences.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from lemminflect import getAllLemmas

from ._binding import rebinds_answer
from ._dates import resolves_relative_time
from ._facts import SAME_RELATION, Statement, agent_of, anchors_of, focus_clause, is_negated_about, subject_of
from ._meaning import opposite_said_instead, opposite_word, swapped_pair
from ._text import content_tokens, token_sequence

__all__ = ["CONFLICT_CHECKS", "ConflictCase", "first_conflict"]


@dataclass(frozen=True, kw_only=True)
class ConflictCase:
    """One fact and one segment, with the sentences and words the checks read."""

    probe: Any
    """The rules probe (:class:`._probe.FactProbe`): answer, question, names, mode, said_on ..."""
    fact: Statement
    segment: Statement

    @cached_property
    def ref_focus(self) -> frozenset[str]:
        # a yes/no answer has no words: the sentence that speaks of the question's own words then
        return self.probe.answer_tokens or self.probe.question_tokens - self.probe.names

    @cached_property
    def fact_ref(self) -> Statement:
        """The fact's sentence that holds the most of the answer."""
        return conflict_reference(self.fact, self.ref_focus)

    @cached_property
    def seg_ref(self) -> Statement:
        """The segment's sentence that holds the most of the answer."""
        return conflict_reference(self.segment, self.ref_focus)

    @cached_property
    def focus(self) -> frozenset[str]:
        """The answer's words (answer mode), else the fact's distinctive words."""
        probe = self.probe
        return probe.answer_tokens if probe.mode == "answer" and probe.answer_tokens else probe.support_tokens(self.fact)

    @cached_property
    def fact_anchors(self) -> dict[str, frozenset[str]]:
        """The fact's anchors, the golden answer's own added, and the words of the segment that
        name the golden answer's day ("18 March" for "the Saturday before 20 March" is that day,
        no other number)."""
        anchors = dict(self.fact.anchors)
        same_day = self.probe.golden_day_words(self.segment)
        for kind, values in anchors_of(self.probe.answer_tokens | same_day).items():
            anchors[kind] = anchors.get(kind, frozenset()) | values
        return anchors


def other_people(c: ConflictCase) -> str | None:
    """Both name known people, and none in common (a companion of a "we" fact aside)."""
    if c.segment.persons and c.fact.persons and not c.segment.persons & c.fact.persons \
            and not _companions_of_we(c.fact_ref.text, c.seg_ref.text, c.segment.persons):
        return "person"
    return None


_WE = frozenset({"we", "we're", "we've", "we'd", "we'll", "us", "our", "let's"})
_COMPANION = re.compile(r"\bwith\s+([^\W\d_][\w'’\-]*)", re.IGNORECASE)


def _companions_of_we(fact: str, segment: str, persons: frozenset[str]) -> bool:
    """The fact speaks for a "we" ("Let's get coffee on Friday") and the segment names its people only
    as company ("Coffee with Ines on Friday", the memory of the one who said it): the one spoken to
    may be in that "we", so naming them is no other person."""
    if not any(w.lower().replace("’", "'") in _WE for w in re.findall(r"[\w'’]+", fact)):
        return False
    company = {m.lower().removesuffix("'s") for m in _COMPANION.findall(segment)}
    return bool(company) and persons <= company


def other_speaker(c: ConflictCase) -> str | None:
    """Said by someone else, who does not even name the fact's speaker ("Tomasz: ... Lisbon" for Ines's fact)."""
    seg, fact = c.seg_ref, c.fact_ref
    if seg.speaker and fact.speaker and seg.speaker != fact.speaker and fact.speaker not in seg.persons - {seg.speaker}:
        return "person"
    return None


def other_agent(c: ConflictCase) -> str | None:
    """The clause that states it is about someone else ("John donated his old car to the shelter
    Maria volunteers at" for Maria's donation)."""
    fact_agent = agent_of(c.fact_ref, c.probe.names, c.focus)
    seg_agent = agent_of(c.seg_ref, c.probe.names, c.focus) if fact_agent else None
    return "person" if fact_agent and seg_agent and fact_agent != seg_agent else None


def other_subject(c: ConflictCase) -> str | None:
    """The subject was swapped for someone (or something) other than the speakers: "Anya signed up"
    for the speaker's "I signed up", "Keiko loved" for "my mother loved", Miso for Pepper."""
    proper = c.probe.proper_names
    fact_clause = focus_clause(c.fact_ref.text, c.focus)
    fact_subject = subject_of(fact_clause, c.fact_ref.speaker, proper)
    if fact_subject is None:
        return None
    # the segment's clause that matches the fact's: a merged memory's other clause ("… and Ines still
    # misses her") shares the fact's other words and is another clause of the same fact
    seg_clause = focus_clause(c.seg_ref.text, content_tokens(fact_clause) & c.focus or c.focus)
    seg_subject = subject_of(seg_clause, c.seg_ref.speaker, proper)
    pair = {fact_subject, seg_subject}
    # someone the fact's clause does not even mention ("Anya will get a portrait" for "I started a
    # portrait of Anya" only turns the sentence round); two speakers are for other_agent
    mentioned = _relation_words(fact_clause)
    if (seg_subject is not None and len(pair) == 2 and not pair <= c.probe.names
            and seg_subject.removeprefix("of:") not in mentioned and not _turned_round(c, fact_subject, seg_clause)):
        return "person"
    return None


def _relation_words(clause: str) -> set[str]:
    """The clause's words, lower case, each relation word read as its relation ("mum" is "mother")."""
    return {SAME_RELATION.get(w, w) for w in (w.lower() for w in re.findall(r"[\w']+", clause))}


def _turned_round(c: ConflictCase, fact_subject: str, seg_clause: str) -> bool:
    """The speaker's relative, the fact's subject ("my grandfather passed away"), is still in the
    segment's clause, whose subject is the speaker ("Ines lost her grandfather"): the same event
    told from the speaker's side."""
    speaker = (c.fact_ref.speaker or "").lower()
    if not speaker or not fact_subject.startswith("of:"):
        return False
    words = _relation_words(seg_clause)
    return speaker in words and fact_subject.removeprefix("of:") in words


def number_moved(c: ConflictCase) -> str | None:
    """A number of the answer and the word it counts are apart in the segment."""
    if not bound_alike(c.probe.answer_sequence, token_sequence(c.fact_ref.text), token_sequence(c.seg_ref.text)):
        return "number"
    return None


def polarity(c: ConflictCase) -> str | None:
    """The clause that speaks of the answer (or of the fact's own words) changed polarity."""
    if not (c.seg_ref.negated or c.fact_ref.negated):
        return None
    if is_negated_about(c.seg_ref.text, c.focus) != is_negated_about(c.fact_ref.text, c.focus) \
            and not opposite_said_instead(c.fact_ref.text, c.seg_ref.text):
        return "negation"
    return None


def replaced_anchor(c: ConflictCase) -> str | None:
    """An anchor of the fact is missing and another of its kind, said nowhere in the evidence, is there
    (a vague word for the same direction in time, "recently" for "last week", replaces nothing, nor
    does a year added to a fact that names none)."""
    for kind, values in c.fact_anchors.items():
        missing = values - c.segment.tokens
        extra = c.seg_ref.anchors.get(kind, frozenset()) - values - c.probe.evidence_tokens
        extra -= frozenset(vague for vague, sides in _VAGUE_TIMES.items() if values & sides)
        if kind == "number" and not any(map(_is_year, values)):
            # the year a memory adds to the fact's date ("in February 2024") replaces no count
            extra = frozenset(n for n in extra if not _is_year(n))
        if missing and extra:
            return kind
    return None


def _is_year(token: str) -> bool:
    return len(token) == 4 and token.isdigit() and 1900 <= int(token) <= 2099


# A vague relative time and the relative-time words of its direction it may stand for.
_VAGUE_TIMES = {"recently": frozenset({"yesterday", "ago", "last", "earlier"}),
                "soon": frozenset({"tomorrow", "next", "later"})}


def replaced_answer_word(c: ConflictCase) -> str | None:
    """One word of a short answer (two to four words) is missing and, beside the answer word that
    stood next to it, the segment has a noun the evidence never says ("a teapot shaped like an owl"
    for "... like a cat"). A longer answer is a description a memory may reword ("taking the silver
    medal" for "winning the silver medal")."""
    probe = c.probe
    answer = probe.answer_sequence
    if probe.mode != "answer" or not 2 <= len(answer) <= _SHORT_ANSWER:
        return None
    missing = [i for i, word in enumerate(answer) if word not in c.segment.tokens]
    if len(missing) != 1:
        return None
    known = probe.evidence_tokens | probe.answer_tokens | probe.question_tokens | probe.names
    text = _content_words(c.seg_ref.text)
    i = missing[0]
    for j, side in ((i - 1, 1), (i + 1, -1)):
        if not 0 <= j < len(answer):
            continue
        slots = [k + side for k, (_, token) in enumerate(text) if token == answer[j]]
        if any(0 <= k < len(text) and text[k][1] not in known and "NOUN" in getAllLemmas(text[k][0])
               for k in slots):
            return "answer word"
    return None


_SHORT_ANSWER = 4


def replaced_question_noun(c: ConflictCase) -> str | None:
    """A thing the question asks about (a word read only as a noun) is missing, and between the two
    words that stood around it in the fact stands a noun the evidence never says ("broke his ankle
    skiing" for "broke my wrist skiing" when the question asks about the wrist)."""
    probe = c.probe
    asked = probe.question_tokens - probe.answer_tokens - probe.names
    if not asked:
        return None
    fact, text = _content_words(c.fact_ref.text), _content_words(c.seg_ref.text)
    known = probe.evidence_tokens | probe.answer_tokens | asked | probe.names
    for i in range(1, len(fact) - 1):
        raw, token = fact[i]
        if token not in asked or token in c.segment.tokens or set(getAllLemmas(raw)) != {"NOUN"}:
            continue
        around = (fact[i - 1][1], fact[i + 1][1])
        for j in range(1, len(text) - 1):
            new_raw, new_token = text[j]
            if (text[j - 1][1], text[j + 1][1]) == around and new_token not in known \
                    and "NOUN" in getAllLemmas(new_raw):
                return "question word"
    return None


def _content_words(text: str) -> list[tuple[str, str]]:
    """``(word, token)`` of each content word of ``text``, in order."""
    out = []
    for raw in re.findall(r"[^\W_][\w'’\-]*", text):
        tokens = token_sequence(raw)
        if len(tokens) == 1:
            out.append((raw.lower(), tokens[0]))
    return out


def other_point_in_time(c: ConflictCase) -> str | None:
    """A point in time replaced by one of another kind ("last Friday" -> "last weekend")."""
    fact_when = points_in_time(c.fact_anchors)
    if not (fact_when - c.segment.tokens and points_in_time(c.seg_ref.anchors) - fact_when - c.probe.evidence_tokens):
        return None
    # "on Tuesday" written as the date it was ("on 17 October 2023") is the same day
    if any(resolves_relative_time(c.fact_ref.text, c.seg_ref.text, day) for day in c.probe.said_on):
        return None
    return "date"


def other_proper_noun(c: ConflictCase) -> str | None:
    """A proper noun of the fact is missing and another, said nowhere in the evidence, is there."""
    missing = c.fact.proper - c.segment.tokens
    extra = c.seg_ref.proper - c.probe.evidence_tokens - c.probe.names
    return "proper noun" if missing and extra else None


def opposite(c: ConflictCase) -> str | None:
    """An opposite in a word's place, with the same polarity (a negation is polarity's)."""
    asked = c.probe.question_tokens - c.probe.names
    if c.fact_ref.negated == c.seg_ref.negated and opposite_word(c.fact_ref.text, c.seg_ref.text,
                                                                 asked | c.probe.answer_tokens):
        return "opposite"
    return None


def swapped(c: ConflictCase) -> str | None:
    """Two names, numbers or things of the fact trade places around a word between them."""
    probe = c.probe
    if swapped_pair(c.fact_ref.text, c.seg_ref.text, keys=probe.question_tokens | probe.answer_tokens,
                    fact_speaker=c.fact_ref.speaker, text_speaker=c.seg_ref.speaker, proper=probe.proper_names):
        return "swapped"
    return None


def answer_rebound(c: ConflictCase) -> str | None:
    """Every word kept, the answer moved: "keep hot yoga but stop swimming" for "keep swimming but
    stop hot yoga" when the question asks what to stop."""
    probe = c.probe
    if probe.mode != "answer":
        return None
    asked = probe.question_tokens - probe.answer_tokens - probe.names
    if rebinds_answer(c.fact_ref.text, c.seg_ref.text, answer=probe.answer_tokens, question=asked,
                      movable=probe.evidence_tokens - probe.answer_tokens - asked - probe.names):
        return "answer bound to other words"
    return None


#: The checks in the order they are tried (the module docstring says what each covers).
CONFLICT_CHECKS: tuple[Callable[[ConflictCase], str | None], ...] = (
    other_people, other_speaker, other_agent, other_subject, number_moved, polarity, replaced_anchor,
    replaced_answer_word, replaced_question_noun, other_point_in_time, other_proper_noun, opposite, swapped, answer_rebound,
)


def first_conflict(probe: Any, fact: Statement, segment: Statement) -> str | None:
    """The conflict the first check of :data:`CONFLICT_CHECKS` finds (None when none does)."""
    case = ConflictCase(probe=probe, fact=fact, segment=segment)
    for check in CONFLICT_CHECKS:
        found = check(case)
        if found is not None:
            return found
    return None


_POINT_KINDS = ("month", "weekday", "season")


def points_in_time(anchors: dict[str, frozenset[str]]) -> frozenset[str]:
    """Months, weekdays, seasons and "weekend" (not durations such as "all day")."""
    points = frozenset().union(*(anchors.get(kind, frozenset()) for kind in _POINT_KINDS))
    return points | (anchors.get("unit", frozenset()) & {"weekend"})


def _near(sequence: Sequence[str], first: str, second: str, reach: int = 2) -> bool:
    positions = [i for i, t in enumerate(sequence) if t == first]
    return any(sequence[j] == second for i in positions for j in range(i + 1, min(len(sequence), i + 1 + reach)))


def bound_alike(answer: Sequence[str], fact: Sequence[str], segment: Sequence[str]) -> bool:
    """A number of the answer and the word it counts ("2 miles") are next to each other in the
    segment whenever they are in the fact ("3 miles each time" with "2 dogs" is another number);
    a day may follow its month."""
    for first, second in zip(answer, answer[1:], strict=False):
        if first.isdigit() == second.isdigit():
            continue
        if _near(fact, first, second) and not _near(segment, first, second):
            # a day and its month are one date in either order ("9 June", "June 9th")
            word = second if first.isdigit() else first
            if "month" in anchors_of((word,)) and _near(segment, second, first):
                continue
            return False
    return True


def conflict_reference(segment: Statement, answer_tokens: frozenset[str]) -> Statement:
    """For a run of sentences, the sentence that holds the most of the answer (polarity, anchors)."""
    parts = segment.parts
    if not parts:
        return segment
    return max(parts, key=lambda p: (len(p.tokens & answer_tokens), len(p.tokens)))
