"""Meaning changes that keep the words: an opposite in a word's place, two words trading places.

A memory that copies a sentence but writes "hired" for "rejected", "sold" for "bought", or "Karl
beat Priya" for "Priya beat Karl" keeps nearly every content word, so word overlap calls it the
same fact. Two checks catch such changes without a model; both look only at clauses that speak of
the question (its words or the answer), so a distortion elsewhere in a long sentence does not
count against the fact:

* **opposite** — a clause of the text stands where a clause of the fact stands (they share most of
  their other words) and holds the opposite of one of its words: a small lexicon of opposite
  verbs and adjectives, plus "dis-"/"un-" forms ("liked"/"disliked"). A text whose polarity
  differs from the fact's (a negation) is left to the negation check: "didn't accept" for
  "declined" is the same fact.
* **swap** — two words of the fact that name something (numbers, names of the conversation,
  things after a determiner), one of them the answer or a question word, trade places around a
  word that stands between them in both ("invited 12 guests, but only 8
  confirmed" → "invited 8 ..., but only 12 ..."; "I liked the ramen more than the takoyaki").
  First-person words count as their speaker, so "I taught Ana to surf" said by Mia and "Ana
  taught me to surf" trade Mia and Ana. A coordinating word ("but", "and") is no such pivot:
  clauses told in the other order are the same facts. A passive ("was taught by") turns roles
  round without changing them and is left alone. One of the pair must take the other's place
  (stand between the words the other stood between): a phrase moved whole ("trained for 8
  months" told after "the October marathon" instead of before it) keeps its neighbours. Verbs turned round their object ("loved the
  kimono she rented" / "rented a kimono and loved it") name nothing and are a paraphrase.
"""

from __future__ import annotations

import re
from functools import lru_cache

from lemminflect import getAllLemmas

from ._binding import BARRIER_WORDS, chunks
from ._text import content_tokens, stem
from ._wordlists import word_lines

__all__ = ["opposite_said_instead", "opposite_word", "swapped_pair"]

_PREFIXES = ("dis", "un")
_COORDINATORS = BARRIER_WORDS | {"so"}
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
_WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+|[^\W_]+")
_PART_BREAK = re.compile(r"[:;—]")
# A share of a clause's other words the text's clause must keep to stand in its place.
_ALIGNED = 0.5


def _opposites() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for line in word_lines("opposites"):
        left, right = (frozenset(stem(w) for w in side.split()) for side in line.split("/"))
        for word in left:
            table.setdefault(word, set()).update(right)
        for word in right:
            table.setdefault(word, set()).update(left)
    return {word: frozenset(others) for word, others in table.items()}


_OPPOSITES = _opposites()


def _are_opposites(a: str, b: str) -> bool:
    if b in _OPPOSITES.get(a, ()):
        return True
    return any(a == p + b or b == p + a for p in _PREFIXES)


def opposite_said_instead(fact: str, text: str) -> bool:
    """One side says with an opposite word what the other says with a negation ("not the best habit",
    "a bad habit"): a word of one, read as itself or as the adjective it inflects ("best" is "good"),
    is an opposite of a word only the other has."""
    f = {form for raw in re.findall(r"[^\W\d_]+", fact.lower()) for form in _forms(raw)}
    t = {form for raw in re.findall(r"[^\W\d_]+", text.lower()) for form in _forms(raw)}
    return any(_are_opposites(a, b) for a in sorted(f - t) for b in sorted(t - f))


@lru_cache(maxsize=4096)
def _forms(word: str) -> frozenset[str]:
    """The word's stem and the stems of the adjectives it inflects ("best" is also "good")."""
    return frozenset({stem(word), *(stem(lemma) for lemma in getAllLemmas(word).get("ADJ", ()))})


def _opposite_forms(a: str, b: str) -> bool:
    return any(_are_opposites(x, y) for x in sorted(_forms(a)) for y in sorted(_forms(b)))


def opposite_word(fact: str, text: str, focus: frozenset[str]) -> tuple[str, str] | None:
    """The ``(fact word, text word)`` pair when a clause of ``text`` puts an opposite in the place of
    a word of the fact's clause about ``focus`` (the answer and question tokens); else None."""
    if not focus:
        return None
    fact_chunks = [set(c) for c in chunks(fact)]
    text_chunks = [set(c) for c in chunks(text) if set(c) & focus]
    for fact_chunk in fact_chunks:
        for text_chunk in text_chunks:
            # clauses that stand in each other's place: each shares the most of its words with the other
            if not _best_match(fact_chunk, text_chunk, text_chunks) or not _best_match(text_chunk, fact_chunk,
                                                                                        fact_chunks):
                continue
            lost, new = fact_chunk - text_chunk, text_chunk - fact_chunk
            pairs = [(a, b) for a in sorted(lost) for b in sorted(new) if _opposite_forms(a, b)]
            if not pairs:
                continue
            a, b = pairs[0]
            rest = fact_chunk - {a}
            if rest and len(rest & text_chunk) >= _ALIGNED * len(rest):
                return a, b
    return None


def _best_match(chunk: set[str], other: set[str], candidates: list[set[str]]) -> bool:
    """``other`` shares at least as many of ``chunk``'s words as any of ``candidates`` does."""
    shared = len(chunk & other)
    return shared > 0 and all(len(chunk & c) <= shared for c in candidates)


_DETERMINERS = frozenset({"the", "a", "an", "my", "your", "his", "her", "our", "their", "this", "that"})
# the two ends of a change or a preference ("switched from coffee to tea", "tea over coffee")
_CHANGE_ENDS = frozenset({"from", "to", "over", "than"})


@lru_cache(maxsize=8192)
def _sequence(text: str, speaker: str | None, proper: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """Every word of ``text`` in order as ``(word, kind)``: stop words kept as they are, content
    words stemmed, first-person words replaced by the speaker's name. ``kind`` says what may trade
    places with what: ``number``, ``name`` (a name of ``proper``, or the speaker), ``thing`` (after
    a determiner: "the ramen", "the drums"; or at an end of a change or preference: "from coffee
    to tea", "tea over coffee"), else empty."""
    who = stem(speaker) if speaker else None
    out: list[tuple[str, str]] = []
    previous = ""
    for raw in _WORD.findall(text.lower().replace("’", "'")):
        if "-" in raw:
            # a compound ("cat-shaped teapot") modifies its noun: its parts name nothing by themselves
            out.append((raw, ""))
        elif raw in _FIRST_PERSON and who:
            out.append((who, "name"))
        elif not content_tokens(raw):
            out.append((raw, ""))
        else:
            kind = ("number" if raw.isdigit() else "name" if raw in proper else
                    "thing" if previous in _DETERMINERS or previous in _CHANGE_ENDS else "")
            out.append((stem(raw), kind))
        previous = raw
    return tuple(out)


def _once(sequence: tuple[tuple[str, str], ...]) -> dict[str, tuple[int, str]]:
    seen: dict[str, tuple[int, str]] = {}
    twice: set[str] = set()
    for i, (word, kind) in enumerate(sequence):
        if word in seen:
            twice.add(word)
        seen[word] = (i, kind)
    return {w: at for w, at in seen.items() if w not in twice}


def swapped_pair(fact: str, text: str, *, keys: frozenset[str], fact_speaker: str | None = None,
                 text_speaker: str | None = None, proper: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """Two words of ``fact`` that name something (numbers, names, things) and trade places in ``text``
    around a word between them in both, at least one of them in ``keys``; None when there are none.

    Args:
        fact: the evidence sentence.
        text: a sentence that may restate it.
        keys: stemmed tokens one of the pair must be (the answer, the question's words, names).
        fact_speaker: who says ``fact`` ("I" is that person).
        text_speaker: who says ``text``.
        proper: the conversation's names (people, places), lower case.
    """
    for fact_part in _parts(fact):
        for text_part in _parts(text):
            found = _swap(fact_part, text_part, keys, fact_speaker, text_speaker, proper)
            if found:
                return found
    return None


def _parts(text: str) -> list[str]:
    """The text, then its parts between colons and semicolons ("She paid me back: Ana taught me"
    names "me" twice; "Speaker Mia (role: user) says: ..." names Mia once more)."""
    parts = [p for p in _PART_BREAK.split(text) if p.strip()]
    return [text, *parts] if len(parts) > 1 else [text]


def _swap(fact: str, text: str, keys: frozenset[str], fact_speaker: str | None, text_speaker: str | None,
          proper: frozenset[str]) -> tuple[str, str] | None:
    f_seq = _sequence(fact, fact_speaker, proper)
    f_at = _once(f_seq)
    t_seq = _sequence(text, text_speaker, proper)
    t_at = _once(t_seq)
    shared = [w for w in f_at if w in t_at]
    # verbs turned round an object ("loved the kimono she rented" / "rented a kimono and loved it")
    # are a paraphrase: only words that name something trade roles
    typed = [w for w in shared if f_at[w][1]]  # as the fact has it: a memory drops articles
    for x in typed:
        if x not in keys:
            continue
        # a partner that is itself an answer or question word first ("Mia" for "Ana")
        for y in sorted(typed, key=lambda w: w not in keys):
            if y == x:
                continue
            if (f_at[x][0] < f_at[y][0]) == (t_at[x][0] < t_at[y][0]):
                continue  # the pair keeps its order
            for v in shared:
                if v in (x, y) or v in _COORDINATORS:
                    continue
                if _between(f_at, x, v, y) and _between(t_at, x, v, y) \
                        and not _passive(t_seq, t_at, v, x, y) and not _passive(f_seq, f_at, v, x, y) \
                        and _takes_the_others_place(f_seq, f_at, t_seq, t_at, x, y) \
                        and not _counts_the_same(f_seq, f_at, t_seq, t_at, x, y):
                    return x, y
    return None


def _counts_the_same(f_seq: tuple[tuple[str, str], ...], f_at: dict[str, tuple[int, str]],
                     t_seq: tuple[tuple[str, str], ...], t_at: dict[str, tuple[int, str]], x: str, y: str) -> bool:
    """A number of the pair still counts the word it counted, a word each sentence says once ("52
    minutes" in both): it moved with its noun as one phrase. A number that traded places counts the
    other's word ("invited 8 guests, but only 12 guests confirmed")."""
    for word in (x, y):
        if f_at[word][1] != "number":
            continue
        f_next, t_next = f_at[word][0] + 1, t_at[word][0] + 1
        if f_next >= len(f_seq) or t_next >= len(t_seq):
            continue
        counted = f_seq[f_next][0]
        if counted == t_seq[t_next][0] and content_tokens(counted) \
                and [w for w, _ in f_seq].count(counted) == 1 == [w for w, _ in t_seq].count(counted):
            return True
    return False


def _neighbours(sequence: tuple[tuple[str, str], ...], at: int) -> set[str]:
    """The nearest word before and after position ``at`` (articles and possessives skipped)."""
    out = set()
    for step in (-1, 1):
        i = at + step
        while 0 <= i < len(sequence) and sequence[i][0] in _DETERMINERS:
            i += step
        if 0 <= i < len(sequence):
            out.add(sequence[i][0])
    return out


def _takes_the_others_place(f_seq: tuple[tuple[str, str], ...], f_at: dict[str, tuple[int, str]],
                            t_seq: tuple[tuple[str, str], ...], t_at: dict[str, tuple[int, str]], x: str,
                            y: str) -> bool:
    """One of the pair stands in the text where the other stood in the fact, between the same
    words ("Karl beat Priya" / "Priya beat Karl"). A phrase moved whole keeps its own neighbours
    ("she trained for 8 months" / "trained for 8 months for the October marathon") and only
    changes the order in which the sentence tells things."""
    return bool(_neighbours(t_seq, t_at[x][0]) & _neighbours(f_seq, f_at[y][0])
                or _neighbours(t_seq, t_at[y][0]) & _neighbours(f_seq, f_at[x][0]))


def _between(at: dict[str, tuple[int, str]], x: str, v: str, y: str) -> bool:
    return min(at[x][0], at[y][0]) < at[v][0] < max(at[x][0], at[y][0])


def _passive(sequence: tuple[tuple[str, str], ...], at: dict[str, tuple[int, str]], v: str, x: str, y: str) -> bool:
    """"by" stands between the pivot and the later word of the pair ("Mia was taught by Ana")."""
    end = max(at[x][0], at[y][0])
    return any(word == "by" for word, _ in sequence[at[v][0] + 1:end])
