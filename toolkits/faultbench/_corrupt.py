"""Text corruptions: what a faulty component writes instead of the fact.

Each corruption rewrites the *fact sentences* (the fact message's sentences that state the
answer) wherever they occur in a text — a buffer line, an extracted fact, an episode, a
document — and leaves the rest of the text alone:

* ``drop`` — the answer's words are left out;
* ``partial`` — a summary that keeps the topic and loses the detail: the sentence is cut before
  the answer and ends vaguely;
* ``negate`` — the statement is negated (or a negated one affirmed); the words stay;
* ``swap_person`` — the fact is attached to the other speaker (attribution and names swapped);
* ``swap_date`` / ``swap_number`` / ``swap_place`` — a date or time expression, a number, or a
  place (a capitalised name that is not a person) is replaced by a different one.

``merge_texts`` writes the wrong merge of two memories (the first's topic with the second's
detail). All choices are drawn from a seeded RNG, so a build is reproducible.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

from toolkits.evidence_flow import content_tokens
from toolkits.faultbench._targets import Target

__all__ = ["CORRUPTIONS", "KEEPS_WORDS", "Corruptor", "degrade", "merge_texts"]

CORRUPTIONS = ("drop", "partial", "negate", "swap_person", "swap_date", "swap_number", "swap_place")
#: Corruptions that keep the answer's words (only the meaning changes).
KEEPS_WORDS = frozenset({"negate", "swap_person"})

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_MONTHS = ("January February March April May June July August September October November December").split()
_WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_RELATIVE = {
    "yesterday": "last week", "today": "yesterday", "tonight": "last night", "last night": "two nights ago",
    "last week": "last month", "this week": "last month", "last weekend": "two months ago",
    "this weekend": "last month", "last month": "last year", "this month": "last year", "next month": "next year",
    "last year": "two years ago", "this year": "last year", "next week": "next month", "tomorrow": "next week",
    "recently": "years ago",
}
_NUMBER_WORDS = "two three four five six seven eight nine ten eleven twelve".split()
_PLACES = ("Lisbon", "Nairobi", "Oslo", "Denver", "Kyoto", "Manila", "Quebec", "Tucson", "Galway", "Perth")
_AUX = re.compile(r"\b(am|is|are|was|were|have|has|had|will|would|can|could|should|do|does|did)\b|(?<=\w)'(m|re|ve|ll)\b",
                  re.IGNORECASE)
_SUBJECT = re.compile(r"\b(I|we|We|she|She|he|He|they|They|you|You)\s+(?=[a-z])")
_NEGATION = re.compile(r"\s*\b(not|never)\b|n't\b", re.IGNORECASE)


def degrade(text: str, answer_tokens: frozenset[str]) -> str:
    """Remove from ``text`` every word whose normalised token belongs to the answer."""

    def repl(match: re.Match[str]) -> str:
        tokens = content_tokens(match.group(0))
        return "" if tokens and tokens <= answer_tokens else match.group(0)

    return re.sub(r"  +", " ", _WORD.sub(repl, text)).strip()


def _first_answer_word(sentence: str, answer: frozenset[str]) -> re.Match[str] | None:
    for match in _WORD.finditer(sentence):
        tokens = content_tokens(match.group(0))
        if tokens and tokens <= answer:
            return match
    return None


def _partial(sentence: str, answer: frozenset[str], names: frozenset[str]) -> str | None:
    first = _first_answer_word(sentence, answer)
    if first is None:
        return None
    head = sentence[: first.start()].rstrip(" ,;:-—(")
    if not content_tokens(head) - names:
        return None
    return f"{head} some things."


def _negate(sentence: str, answer: frozenset[str]) -> str | None:
    """Negate the clause that states the answer (or affirm it when it is negated)."""
    if _NEGATION.search(sentence):
        flipped = re.sub(r"  +", " ", _NEGATION.sub("", sentence))
        return flipped if flipped != sentence else None
    first = _first_answer_word(sentence, answer)
    end = first.start() if first is not None else len(sentence)
    aux = [m for m in _AUX.finditer(sentence, 0, end)]
    if aux:
        cut = aux[-1].end()
        return f"{sentence[:cut]} not{sentence[cut:]}"
    subject = [m for m in _SUBJECT.finditer(sentence, 0, end)]
    if subject:
        cut = subject[-1].end()
        return f"{sentence[:cut]}never {sentence[cut:]}"
    after = _AUX.search(sentence, end, end + 20) if first is not None else None
    if after is not None:
        return f"{sentence[: after.end()]} not{sentence[after.end():]}"
    lead = re.match(r"\W*", sentence).end()
    if lead < len(sentence) and sentence[lead].isalpha():
        return f"{sentence[:lead]}Not {sentence[lead].lower()}{sentence[lead + 1:]}"
    return None


def _swap_date(sentence: str, answer: frozenset[str], rng: random.Random) -> str | None:
    options: list[tuple[int, int, str]] = []
    lowered = sentence.lower()
    for phrase, new in _RELATIVE.items():
        for match in re.finditer(rf"\b{re.escape(phrase)}\b", lowered):
            options.append((match.start(), match.end(), new))
    for names in (_MONTHS, _WEEKDAYS):
        for match in re.finditer(rf"\b({'|'.join(names)})\b", sentence):
            others = [n for n in names if n != match.group(0)]
            options.append((match.start(), match.end(), rng.choice(others)))
    for match in re.finditer(r"\b(19|20)\d\d\b", sentence):
        options.append((match.start(), match.end(), str(int(match.group(0)) - rng.randint(1, 3))))
    return _replace_one(sentence, options, answer, rng)


def _swap_number(sentence: str, answer: frozenset[str], rng: random.Random) -> str | None:
    options: list[tuple[int, int, str]] = []
    for match in re.finditer(r"\b\d+\b", sentence):
        if re.fullmatch(r"(19|20)\d\d", match.group(0)):
            continue
        options.append((match.start(), match.end(), str(int(match.group(0)) + rng.randint(1, 4))))
    for match in re.finditer(rf"\b({'|'.join(_NUMBER_WORDS)})\b", sentence, re.IGNORECASE):
        others = [w for w in _NUMBER_WORDS if w != match.group(0).lower()]
        options.append((match.start(), match.end(), rng.choice(others)))
    return _replace_one(sentence, options, answer, rng)


def _swap_place(sentence: str, answer: frozenset[str], names: frozenset[str], known: frozenset[str],
                rng: random.Random) -> str | None:
    options: list[tuple[int, int, str]] = []
    calendar = {w.lower() for w in (*_MONTHS, *_WEEKDAYS)}
    places = [p for p in _PLACES if p.lower() not in known]
    for i, match in enumerate(_WORD.finditer(sentence)):
        word = match.group(0)
        lowered = word.lower()
        if i == 0 or not word[0].isupper() or len(word) < 3 or lowered in names or lowered in calendar:
            continue
        if "'" in word or "’" in word or lowered in ("i", "i'm", "i've", "i'll", "i'd"):
            continue  # "I've", "Jon's": not a place
        if sentence[max(0, match.start() - 2): match.start()].strip() in (".", "!", "?", ":"):
            continue
        if places:
            options.append((match.start(), match.end(), rng.choice(places)))
    return _replace_one(sentence, options, answer, rng)


def _replace_one(sentence: str, options: list[tuple[int, int, str]], answer: frozenset[str],
                 rng: random.Random) -> str | None:
    if not options:
        return None
    in_answer = [o for o in options if content_tokens(sentence[o[0]:o[1]]) & answer]
    start, end, new = rng.choice(in_answer or options)
    old = sentence[start:end]
    if old[:1].isupper() and not new[:1].isupper():
        new = new[:1].upper() + new[1:]
    return sentence[:start] + new + sentence[end:]


def merge_texts(text: str, other: str, answer: frozenset[str]) -> str | None:
    """A wrong merge: ``text`` up to its answer, then the detail of ``other``."""
    first = _first_answer_word(text, answer)
    if first is None:
        return None
    head = text[: first.start()].rstrip(" ,;:-—(")
    words = other.split()
    tail = " ".join(words[max(2, len(words) // 2):]).strip()
    if not head or not tail:
        return None
    return f"{head} {tail}"


@dataclass(frozen=True, kw_only=True)
class Corruptor:
    """Applies one corruption to the fact sentences of one target."""

    kind: str
    target: Target
    seed: int
    known_words: frozenset[str] = frozenset()
    """Lower-case words of the conversation (a swapped-in place never occurs in it)."""

    @property
    def names(self) -> frozenset[str]:
        """Lower-case names of the speakers."""
        return frozenset(n.lower() for n in (self.target.speaker, *self.target.others) if n)

    def _sentence_fn(self) -> Callable[[str, random.Random], str | None]:
        answer = self.target.answer_tokens
        if self.kind == "drop":
            return lambda s, _rng: degrade(s, answer) or None
        if self.kind == "partial":
            return lambda s, _rng: _partial(s, answer, self.names)
        if self.kind == "negate":
            return lambda s, _rng: _negate(s, answer)
        if self.kind == "swap_date":
            return lambda s, rng: _swap_date(s, answer, rng)
        if self.kind == "swap_number":
            return lambda s, rng: _swap_number(s, answer, rng)
        if self.kind == "swap_place":
            return lambda s, rng: _swap_place(s, answer, self.names, self.known_words, rng)
        raise ValueError(f"unknown corruption {self.kind!r}")

    def rewrite(self, sentence: str) -> str | None:
        """The corrupted form of one fact sentence (None: the corruption does not apply)."""
        if self.kind == "swap_person":
            return None
        rng = random.Random(f"{self.seed}:{self.kind}:{sentence}")
        new = self._sentence_fn()(sentence, rng)
        return new if new and new != sentence else None

    def applicable(self) -> bool:
        """True when the corruption changes the fact (for ``swap_person``: the question names the speaker)."""
        if self.kind == "swap_person":
            return bool(self.target.others) and self.target.question_names_speaker
        return any(self.rewrite(s) for s in self.target.fact_sentences)

    def apply(self, text: str) -> str | None:
        """Corrupt every occurrence of the fact sentences in ``text`` (None when nothing changed)."""
        if self.kind == "swap_person":
            return self._swap_person(text)
        out = text
        for sentence in self.target.fact_sentences:
            new = self.rewrite(sentence)
            if new is not None and sentence in out:
                out = out.replace(sentence, new)
        return out if out != text else None

    def _swap_person(self, text: str) -> str | None:
        """Attach the fact to the other speaker: the attribution before it and names inside it swap."""
        speaker, other = self.target.speaker, self.target.others[0] if self.target.others else ""
        if not speaker or not other:
            return None
        attribution = re.compile(rf"(Speaker )?\b({re.escape(speaker)})\b(?= \(role: \w+\) says:| said:|:)")
        out, changed, pos = text, False, 0
        for sentence in self.target.fact_sentences:
            start = out.find(sentence, pos)
            while start >= 0:
                line_start = out.rfind("\n", 0, start) + 1
                before = list(attribution.finditer(out, line_start, start))
                if before:
                    match = before[-1]
                    end = start + len(sentence)
                    chunk = _swap_names(out[match.start(2):end], speaker, other)
                    out = out[: match.start(2)] + chunk + out[end:]
                    changed = True
                    start = out.find(sentence, match.start(2) + len(chunk))
                else:
                    start = out.find(sentence, start + len(sentence))
        return out if changed else None


def _swap_names(text: str, a: str, b: str) -> str:
    pattern = re.compile(rf"\b({re.escape(a)}|{re.escape(b)})\b")
    return pattern.sub(lambda m: b if m.group(0) == a else a, text)
