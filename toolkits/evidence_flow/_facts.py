"""Reading statements out of memory text: who they are about, their polarity and their anchors.

A memory text (a message, a buffer, an episode, an extracted fact) is cut into *statements*:
its lines, each cut into sentences. Every statement records what decides whether it still says
the same thing as the evidence:

* ``tokens`` — its normalised content tokens (:func:`._text.content_tokens`);
* ``persons`` — the known people it is about: the names it mentions plus, for a sentence that
  names nobody, the speaker that an earlier sentence of the same line introduced (``Speaker X
  says:``, ``X said:``, ``X:``), so a narrative keeps its attribution across sentences;
* ``negated`` — whether it is negated (``not``, ``never``, ``n't``, ...);
* ``anchors`` — its numbers, months, weekdays, seasons, relative-time words and time units,
  grouped by kind (a swapped date or number shows up as a different anchor of the same kind);
* ``proper`` — capitalised words inside the sentence that are not known people or calendar
  words (places, organisations, titles).

*Segments* are single statements and runs of adjacent statements of one speaker's turn (pairs,
or as many as the fact itself spans): a fact may be spread over a few sentences of its speaker,
never over unrelated lines or another speaker's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from ._text import content_tokens, stem, text_lines
from ._wordlists import word_lines, words

__all__ = [
    "ANCHOR_KINDS",
    "SAME_RELATION",
    "Statement",
    "agent_of",
    "anchors_of",
    "clauses",
    "is_negated",
    "is_negated_about",
    "merge_statements",
    "pair_statements",
    "segments",
    "speaks_in_first_person",
    "statements",
    "without_address",
]

# Compared with content tokens, so stemmed as they are ("june" is "jun", "minute" "minut").
_MONTHS = frozenset(map(stem, (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec").split()))
_WEEKDAYS = frozenset(map(stem, "monday tuesday wednesday thursday friday saturday sunday".split()))
_SEASONS = frozenset(map(stem, "spring summer fall autumn winter".split()))
_RELATIVE = frozenset(map(stem, "yesterday today tomorrow tonight recently ago earlier later soon last next".split()))
# "evening" would stem to "even", an adverb
_UNITS = frozenset(map(stem, "day week weekend month year decade hour minute morning night".split()))
#: Anchor kinds, in the order they are reported.
ANCHOR_KINDS = ("number", "month", "weekday", "season", "relative", "unit")

_NEGATORS = frozenset("not never no nobody nothing none neither nor cannot".split())
_INTERJECTION_NO = re.compile(r"(^|[.!?]\s*)no\s*[,.!]", re.IGNORECASE)
# letters of any script, as the project's tokenizer reads them ("Graça" is one word, not "Gra" and "a")
_WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['’\-])*|[0-9]+")
# A sentence ends at . ! ? before whitespace and a capital, a digit or an opening quote; items of
# a quoted list ("a.", "b") end at their closing quote and comma.
# Titles and short forms end with a dot inside a sentence ("St. Aidan's", "Dr. Rivera").
_ABBREVIATIONS = ("St", "Dr", "Mr", "Mrs", "Ms", "Mt", "Jr", "Sr", "Prof", "vs", "etc", "approx")
_NOT_AFTER_ABBREVIATION = "".join(rf"(?<!\b{a}\.)" for a in _ABBREVIATIONS)
_SENTENCE_END = re.compile(_NOT_AFTER_ABBREVIATION + r"(?<=[.!?])[\"'’”)\]]*,?\s+(?=[\"'(\[A-Z0-9])"
                           r"|(?<=[\"'])\s*,\s*(?=[\"'])")
_LEAD_COLON = regex.compile(r"^[\"'(\[]*(?:\p{L}+:\s*)?(?P<name>\p{Lu}[\p{L}'’\-]*)\s*:\s")
_NAME_COLON = regex.compile(r"(?P<name>\p{Lu}[\p{L}'’\-]*)\s*:\s")
_LEAD_WINDOW = 48
_PROSE_BEFORE = re.compile(r",\s*$|[A-Za-z]{2,}\s+[A-Za-z]{2,}")
_ATTRIBUTION_VERBS = frozenset({"said", "says", "say", "asked", "asks", "replied", "replies", "told", "tells",
                                "wrote", "writes", "added", "adds", "mentioned", "mentions", "shared", "shares"})


def anchors_of(tokens: Iterable[str]) -> dict[str, frozenset[str]]:
    """Group the anchor tokens of a token set by kind (kinds without tokens are left out)."""
    groups: dict[str, set[str]] = {}
    for token in tokens:
        if token.isdigit():
            kind = "number"
        elif token in _MONTHS:
            kind = "month"
        elif token in _WEEKDAYS:
            kind = "weekday"
        elif token in _SEASONS:
            kind = "season"
        elif token in _RELATIVE:
            kind = "relative"
        elif token in _UNITS:
            kind = "unit"
        else:
            continue
        groups.setdefault(kind, set()).add(token)
    return {kind: frozenset(values) for kind, values in groups.items()}


# Negators that do not negate anything ("can't wait" is eagerness, "no doubt" agreement).
_NEGATION_IDIOMS = re.compile(
    r"\b(?:can'?t|cannot|can not|couldn'?t|could not)\s+(?:wait|believe)\b|\bno\s+(?:doubts?|wonder|worries|problem)\b"
    r"|\bnot\s+only\b|\bnever\s+mind\b", re.IGNORECASE)
# Where one clause ends and another, with its own polarity, begins: semicolons, dashes, or a
# conjunction or comma before a new subject ("..., I only started ...", "... but she ..."), or a
# comma before a contrast ("..., not at my place"). A
# conjunction without a subject joins verb phrases that share the negation ("I have not a painting
# to remind me to stay true and be a leader").
_SUBJECT = r"(?:(?i:i|we|he|she|they|it|you|i'm|it's|that's|there's|this|that)\b|\p{Lu}\p{Ll}+\b)"
_CLAUSE_BREAK = regex.compile(
    # a name alone before "and" is half of a compound subject ("Ravi and Rufus hike"), no clause
    r"\s*(?:;|—|–|\s-\s|(?<!^[\s\"'(\[]*\p{Lu}[\p{L}'’\-]*)"
    r",?\s+(?i:but|and|so|while|although|though|whereas)\s+(?=" + _SUBJECT + r")"
    r"|,\s*(?=" + _SUBJECT + r")"
    # "..., so no pottery yet": a comma before "so"/"but" opens a clause of its own polarity
    r"|,\s*(?=(?i:so|but)\s)"
    # a contrast that negates only the alternative ("it's at Anya's flat, not at my place"), and a
    # relative clause with its own polarity ("she enjoyed it, which nobody expected")
    r"|,\s*(?=(?i:not|rather than|instead of|which|who|whom|whose)\b))\s*")


def clauses(text: str) -> list[str]:
    """The clauses of a sentence (see ``_CLAUSE_BREAK``)."""
    return [part for part in _CLAUSE_BREAK.split(text.replace("’", "'")) if part and part.strip()] or [text]


_CONTRAST = re.compile(r"^\s*(?:not|rather than|instead of)\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def contrast_tokens(text: str) -> frozenset[str]:
    """Content tokens that only a contrast clause names ("..., not at my place"): the alternative,
    which a faithful memory of the statement leaves out."""
    parts = clauses(text)
    named = frozenset().union(*(content_tokens(p) for p in parts if _CONTRAST.match(p)))
    kept = frozenset().union(*(content_tokens(p) for p in parts if not _CONTRAST.match(p)))
    return named - kept


def is_negated_about(text: str, focus: frozenset[str]) -> bool:
    """True when the clause of ``text`` that speaks of ``focus`` (content tokens) is negated; when no
    clause does, whether the sentence is. "I signed with the Wolves and can't wait to play" is not a
    negated signing; "I didn't start surfing five years ago, I only ..." is a negated start."""
    parts = clauses(text)
    focused = [part for part in parts if content_tokens(part) & focus] if focus else []
    return any(is_negated(part) for part in (focused or parts))


_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"})
# A statement that opens by naming who speaks: the buffer layers' frame, "X said:", "X:".
_ATTRIBUTION_LEAD = re.compile(r"^[\s\"'(\[]*(?:Speaker\s+\S+(?:\s+\([^)]*\))?\s+says:|[A-Z][A-Za-z'’\-]*\s+"
                               r"(?:said|says|wrote|writes|replied|replies|told \w+|asked|asks)\b[:,]?|[A-Z][A-Za-z'’\-]*:)\s*")


def focus_clause(text: str, focus: frozenset[str]) -> str:
    """The clause of ``text`` that holds the most of ``focus`` (the first on ties; the whole text
    when none holds any)."""
    parts = clauses(text)
    scored = [(len(content_tokens(part) & focus), -i, part) for i, part in enumerate(parts)]
    return max(scored)[2] if focus and max(scored)[0] > 0 else text


def speaks_in_first_person(text: str) -> bool:
    """True when ``text`` says "I", "me", "my" ... (its speaker speaks of themself)."""
    return any(raw.lower().replace("’", "'") in _FIRST_PERSON for raw in _WORD.findall(text))


_ADDRESS_OPENERS = r"(?:hey|hi|hello|thanks|thank you|dear|oh|yes|no|ok|okay|well|sorry|so|look|listen)"


@lru_cache(maxsize=1024)
def _address_of(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?i)(^\s*|[,;:!?.]\s*|\b{_ADDRESS_OPENERS}\s+){re.escape(name)}(?=\s*[,:!?.]|\s*$)")


def without_address(text: str, names: frozenset[str]) -> str:
    """``text`` without the names it addresses ("Bad news, Ines: ...", "Thanks, Ines!", "Ines, guess
    what"): the one spoken to is not the one the clause is about."""
    lowered = text.lower()
    for name in names:
        if name in lowered:
            text = _address_of(name).sub(r"\1", text)
    return text


def agent_of(statement: Statement, names: frozenset[str], focus: frozenset[str]) -> str | None:
    """Whom the clause about ``focus`` is about: the first known person it names (outside ``focus``,
    so a name that is the answer does not count), else its speaker when it speaks in the first
    person; None when it does not say. "John donated his old car to the shelter Maria volunteers
    at" is about John, "I donated my old car" about its speaker."""
    body = without_address(_ATTRIBUTION_LEAD.sub("", statement.text, count=1), names)
    for raw in _WORD.findall(focus_clause(body, focus)):
        word = raw.lower().replace("’", "'")
        bare = word[:-2] if word.endswith("'s") else word
        if bare in names and bare not in focus:
            return bare
        if word in _FIRST_PERSON:
            return statement.speaker
    return None


_WE = frozenset({"we", "we're", "we've", "we'd", "we'll", "us", "our"})
_POSSESSIVES = frozenset({"my", "our", "his", "her", "their", "your"})
_OPENERS = frozenset({"yes", "no", "wow", "oh", "well", "so", "and", "but", "also", "then", "now", "actually",
                      "anyway", "still", "honestly", "yeah", "ok", "okay"})
# Whom "my ..." can name as the one a clause is about (not "my birthday", "Anya's flat").
_RELATIONS = words("relations")
#: Each relation word as its line's first word ("mum" and "mom" are "mother").
SAME_RELATION = {word: line.split()[0] for line in word_lines("relations") for word in line.split()}
# "Big news: ...", "Update: ..." — a short label before the statement
_LABEL = re.compile(r"^\s*(?:[A-Za-z'’\-]+\s+){0,2}[A-Za-z'’\-]+:\s+")


def subject_of(text: str, speaker: str | None, proper: frozenset[str]) -> str | None:
    """Who a clause is about, read from its subject: its speaker for "I"/"we"; a relation for "my
    mother"/"Keiko's mother" (``of:mother``), or the name that follows it ("my daughter Ellie"); a
    name of the conversation (``proper``, lower case) that opens the clause. None when the subject
    is a pronoun, missing ("Signed up for ..."), a thing ("Anya's birthday") or anything else."""
    body = _LABEL.sub("", _ATTRIBUTION_LEAD.sub("", text, count=1), count=1)
    words = [w.replace("’", "'") for w in _WORD.findall(body)]
    while words and words[0].lower() in _OPENERS:
        words = words[1:]
    if not words:
        return None
    first = words[0].lower()
    if first in _FIRST_PERSON - _POSSESSIVES or first in _WE - _POSSESSIVES:
        return speaker
    owner = first in _POSSESSIVES or (first.endswith("'s") and first[:-2] in proper)
    if owner and len(words) > 1:
        if len(words) > 2 and words[2][:1].isupper() and words[2].lower() in proper:
            return words[2].lower()
        relation = words[1].lower()
        return f"of:{SAME_RELATION[relation]}" if relation in _RELATIONS else None
    bare = first[:-2] if first.endswith("'s") else first
    return bare if words[0][:1].isupper() and bare in proper else None


def is_negated(text: str) -> bool:
    """True when ``text`` is negated (a lone "No," answering a question, and idioms such as "can't
    wait" or "no doubt", do not count)."""
    cleaned = _NEGATION_IDIOMS.sub(" ", _INTERJECTION_NO.sub(" ", text.replace("’", "'")))
    for raw in _WORD.findall(cleaned.lower()):
        word = raw.replace("’", "'")
        if word in _NEGATORS or word.endswith("n't"):
            return True
    return False


@dataclass(frozen=True, kw_only=True, slots=True)
class Statement:
    """One sentence (or two adjacent sentences) of a memory text, analysed."""

    text: str
    tokens: frozenset[str]
    persons: frozenset[str]
    negated: bool
    anchors: dict[str, frozenset[str]] = field(hash=False)
    proper: frozenset[str]
    parts: tuple[Statement, ...] = ()
    """For a run of adjacent sentences, the sentences."""
    opens_turn: bool = False
    """The sentence names its speaker at its start (``X said:``): another speaker's turn begins."""
    speaker: str | None = None
    """Who says it: named at its start, carried over from an earlier sentence, or given."""


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _lead_speaker(sentence: str, words: list[str], names: frozenset[str]) -> str | None:
    """The person a sentence opens with as its speaker (``Speaker X``, ``X said``, ``X:``, also
    after a short prefix such as a timestamp: ``[10:02] X: ...``)."""
    colon = _LEAD_COLON.match(sentence)
    if colon and colon.group("name").lower() in names:
        return colon.group("name").lower()
    for match in _NAME_COLON.finditer(sentence, 0, _LEAD_WINDOW):
        # after a timestamp or a bracket, not after words: "Bad news, Ines: ..." addresses Ines
        if match.group("name").lower() in names and not _PROSE_BEFORE.search(sentence[:match.start()]):
            return match.group("name").lower()
    lowered = [w.lower() for w in words[:6]]
    for i, word in enumerate(lowered[:4]):
        if word not in names:
            continue
        if i > 0 and lowered[i - 1] == "speaker":
            return word
        if i + 1 < len(lowered) and lowered[i + 1] in _ATTRIBUTION_VERBS:
            return word
    return None


def _proper_nouns(sentence: str, names: frozenset[str]) -> frozenset[str]:
    words = _words(sentence)
    out = set()
    for i, word in enumerate(words):
        if i == 0 or not word[0].isupper() or len(word) < 3:
            continue
        tokens = content_tokens(word)
        if len(tokens) != 1:
            continue
        token = next(iter(tokens))
        lowered = word.lower()
        if lowered in names or token in _MONTHS or token in _WEEKDAYS or lowered in ("speaker", "role", "memory"):
            continue
        out.add(token)
    return frozenset(out)


def _statement(text: str, names: frozenset[str], speaker: str | None) -> tuple[Statement, str | None]:
    """Analyse one sentence; returns it and the speaker context for the next sentence."""
    words = _words(text)
    lead = _lead_speaker(text, words, names)
    speaker = lead or speaker
    # "Ben's cat" is about Ben's
    persons = {w.lower().replace("’", "'").removesuffix("'s") for w in words} & names
    if speaker is not None:
        persons.add(speaker)
    tokens = content_tokens(text)
    statement = Statement(text=text, tokens=tokens, persons=frozenset(persons), negated=is_negated(text),
                          anchors=anchors_of(tokens), proper=_proper_nouns(text, names), opens_turn=lead is not None,
                          speaker=speaker)
    return statement, speaker


def statements(text: str, names: frozenset[str] = frozenset(), speaker: str | None = None) -> list[Statement]:
    """Cut ``text`` into analysed sentences, line by line (speakers carry over within a line).

    Args:
        text: a memory text.
        names: known person names, lower case.
        speaker: who says ``text`` when it does not say so itself (a message's speaker).
    """
    out: list[Statement] = []
    for line in text_lines(text):
        context = speaker
        for sentence in _SENTENCE_END.split(line.strip()):
            if not sentence.strip():
                continue
            statement, context = _statement(sentence.strip(), names, context)
            out.append(statement)
    return out


def merge_statements(parts: list[Statement]) -> Statement:
    """Several adjacent statements read as one (a fact told over a few sentences)."""
    if len(parts) == 1:
        return parts[0]
    anchors: dict[str, frozenset[str]] = {}
    for part in parts:
        for kind, values in part.anchors.items():
            anchors[kind] = anchors.get(kind, frozenset()) | values
    return Statement(text=" ".join(p.text for p in parts), tokens=frozenset().union(*(p.tokens for p in parts)),
                     persons=frozenset().union(*(p.persons for p in parts)), negated=any(p.negated for p in parts),
                     anchors=anchors, proper=frozenset().union(*(p.proper for p in parts)), parts=tuple(parts),
                     opens_turn=parts[0].opens_turn, speaker=parts[-1].speaker)


def pair_statements(a: Statement, b: Statement) -> Statement:
    """Two adjacent statements read as one."""
    return merge_statements([a, b])


def segments(text: str, names: frozenset[str] = frozenset(), speaker: str | None = None,
             span: int = 2) -> list[Statement]:
    """The statements of ``text`` and every run of up to ``span`` adjacent statements of one
    speaker's turn (a run never crosses a line, nor a sentence that opens another speaker's turn)."""
    out: list[Statement] = []
    for line in text_lines(text):
        line_statements = statements(line, names, speaker)
        out.extend(line_statements)
        turns: list[list[Statement]] = []
        for statement in line_statements:
            if statement.opens_turn or not turns:
                turns.append([])
            turns[-1].append(statement)
        for turn in turns:
            for size in range(2, span + 1):
                out.extend(merge_statements(turn[i:i + size]) for i in range(len(turn) - size + 1))
    return out
