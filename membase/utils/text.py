"""One tokenizer, one stop-word list and one stemmer for the whole project.

BM25 retrieval (``toolkits/retrieval.py``, the EverMemOS layer's index), ``evidence_flow``'s
presence judge and the data checks compare texts with these, so a word that meets its other
forms in one place meets them everywhere:

* :func:`words` — NFKC-normalised, case-folded runs of letters and digits of every script
  (no underscore); a run of CJK characters, written without spaces, becomes its characters and
  their adjacent pairs;
* :data:`STOP_WORDS` — closed-class English words and chat fillers (``wordlists/stop_words.txt``,
  whose comment says what it covers);
* :func:`stem` — a light suffix stripper (plural, -ing, -ed, final e, doubled consonant),
  irregular past forms to their verb from ``lemminflect``'s tables, number words to digits;
* :func:`content_words` — :func:`words` without stop words, stemmed, numbers without leading zeros.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache
from importlib import resources

__all__ = ["STOP_WORDS", "content_words", "stem", "words"]


@cache
def _word_file(name: str) -> frozenset[str]:
    text = resources.files(__package__).joinpath("wordlists", f"{name}.txt").read_text(encoding="utf-8")
    return frozenset(w for line in text.splitlines() if not line.lstrip().startswith("#") for w in line.split())


STOP_WORDS: frozenset[str] = _word_file("stop_words")
"""Words that carry no fact: no comparison and no BM25 index counts them."""

_ASCII_WORD = re.compile(r"[0-9a-z]+")
_WORD = re.compile(r"[^\W_]+")


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # hiragana, katakana
        or 0x3400 <= code <= 0x4DBF  # CJK extension A
        or 0x4E00 <= code <= 0x9FFF  # CJK unified ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
        or 0xF900 <= code <= 0xFAFF  # CJK compatibility ideographs
        or 0x20000 <= code <= 0x2FA1F  # CJK extensions B+
    )


def _split_cjk(word: str) -> list[str]:
    out: list[str] = []
    run: list[str] = []
    for ch in word + " ":
        if _is_cjk(ch):
            run.append(ch)
            continue
        if run:
            out.extend(run)
            out.extend(a + b for a, b in zip(run, run[1:], strict=False))
            run = []
    # the other parts of a mixed word ("iphone手机")
    out.extend("".join(" " if _is_cjk(ch) else ch for ch in word).split())
    return out


def words(text: str) -> list[str]:
    """The words of ``text``, in order: lower case, letters and digits of any script."""
    if text.isascii():  # the common case, and the fast one
        return _ASCII_WORD.findall(text.lower())
    out: list[str] = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()):
        if any(_is_cjk(ch) for ch in word):
            out.extend(_split_cjk(word))
        else:
            out.append(word)
    return out


_NUMBER_WORDS = {
    word: str(i)
    for i, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "once": "1", "twice": "2"})


@lru_cache(maxsize=65536)
def _irregular_lemma(token: str) -> str | None:
    """The verb an irregular past form belongs to ("bought" → "buy", "went" → "go"; lemminflect's
    tables); None for any other word."""
    if len(token) < 3 or token.endswith(("ed", "ing", "s")) or not token.isascii():
        return None
    from lemminflect import getInflection, getLemma

    lemma = next(iter(getLemma(token, upos="VERB")), token)
    if lemma == token:
        return None
    past = set(getInflection(lemma, tag="VBD")) | set(getInflection(lemma, tag="VBN"))
    return lemma if token in past else None


@lru_cache(maxsize=65536)  # a conversation reuses a few thousand words across many texts
def stem(token: str) -> str:
    """A deliberately light stemmer, applied to both sides of every comparison alike.

    Plural, -ing and -ed forms meet ("agencies"/"agency", "painted"/"painting"/"paint"), a doubled
    final consonant is undone ("skipped"/"skip", "planning"/"plan"), a final silent "e" goes on
    every form ("invited"/"invite"/"invites" all "invit"), irregular past forms meet their verb
    ("bought"/"buy") and number words up to twenty (and the tens) are digits. Short words are left
    alone.
    """
    if token in _NUMBER_WORDS:
        return _NUMBER_WORDS[token]
    lemma = _irregular_lemma(token)
    if lemma is not None:
        return stem(lemma)  # "gave" is "give", and "give" is "giv"
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        token = token[:-1]
    if len(token) > 5 and token.endswith("ing"):
        return _undouble(token[:-3])
    if len(token) > 4 and token.endswith("ed") and not token.endswith("eed"):
        return _undouble(token[:-2])
    if len(token) > 3 and token.endswith("e") and not token.endswith(("ee", "ie", "ye")):
        return token[:-1]
    return token


# "skipp" (skipped) is "skip"; "ll", "ss", "zz", "ff" and "dd" ends are kept ("called", "passed", "added").
_UNDOUBLE = frozenset("bgmnprt")


def _undouble(token: str) -> str:
    if len(token) > 2 and token[-1] == token[-2] and token[-1] in _UNDOUBLE:
        return token[:-1]
    return token


def content_words(text: str, *, drop_stop_words: bool = True, stemmed: bool = True) -> list[str]:
    """The words of ``text`` that carry content, in order: stop words dropped, stemmed, numbers
    without leading zeros ("05" is "5")."""
    out = []
    for word in words(text):
        if drop_stop_words and word in STOP_WORDS:
            continue
        if word.isdigit():
            out.append(word.lstrip("0") or "0")
        else:
            out.append(stem(word) if stemmed else word)
    return out
