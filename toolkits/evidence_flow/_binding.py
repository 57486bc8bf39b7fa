"""Which words an answer is bound to: the check for meaning swaps that keep every word.

"keep swimming but stop hot yoga" and "keep hot yoga but stop swimming" hold the same tokens; only
what the answer stands next to changed. A sentence is cut into *chunks* at punctuation (not at the
comma of an apposition: "Mango, a collie mix") and at coordinating words (``but``, ``and``, ``or`` ...); a question word is *bound* to the answer when
both stand in one chunk with at most :data:`_REACH` content words between them (stop words take
no room: "stop hot yoga", "the studio is in Chiado", "selling mine at the Saturday market").

A text *rebinds* the answer when the fact binds it to some of the question's words, the text
still holds those words and the answer, none of them is bound to the answer any more, and a word
of the evidence moved in beside them: into the answer's chunk or into a chunk of the question
words, where the fact did not have it. Requiring both the loss of every binding and a word that
moved in keeps paraphrases apart: a memory that reorders a sentence ("Adopted the puppy
(March)") loses bindings but moves nothing of another clause in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ._text import token_sequence

__all__ = ["BARRIER_WORDS", "chunks", "rebinds_answer"]

#: Content words that may stand between a question word and the answer it is bound to.
_REACH = 2
BARRIER_WORDS = frozenset({"but", "and", "or", "while", "whereas", "although", "though", "however", "yet",
                            "instead", "except", "unlike"})
_APPOSITION = frozenset({"a", "an", "the"})
_PIECE = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+|[^\s0-9A-Za-z\u00c0-\u024f'’]")


@lru_cache(maxsize=8192)
def chunks(text: str) -> tuple[tuple[str, ...], ...]:
    """The chunks of ``text``: each a tuple of its normalised content tokens, in order."""
    out: list[tuple[str, ...]] = []
    current: list[str] = []
    pieces = _PIECE.findall(text)
    for i, piece in enumerate(pieces):
        lowered = piece.lower()
        if piece == "," and i + 1 < len(pieces) and pieces[i + 1].lower() in _APPOSITION:
            continue  # "Mango, a collie mix": the comma opens an apposition, not another clause
        if not piece[0].isalnum() or lowered in BARRIER_WORDS:
            if current:
                out.append(tuple(current))
            current = []
            continue
        current.extend(token_sequence(lowered))  # stop words take no room: "sells her honey at the market"
    if current:
        out.append(tuple(current))
    return tuple(out)


def _bound(chunks: Iterable[tuple[str, ...]], terms: frozenset[str], answer: frozenset[str]) -> frozenset[str]:
    """The terms standing within reach of an answer token in one chunk."""
    bound: set[str] = set()
    for chunk in chunks:
        answer_at = [i for i, token in enumerate(chunk) if token in answer]
        if not answer_at:
            continue
        for i, token in enumerate(chunk):
            if token in terms and any(abs(i - j) <= _REACH + 1 for j in answer_at):
                bound.add(token)
    return frozenset(bound)


def _around(chunks: Iterable[tuple[str, ...]], anchors: frozenset[str]) -> frozenset[str]:
    """Content tokens of the chunks that hold any of ``anchors``."""
    out: set[str] = set()
    for chunk in chunks:
        tokens = set(chunk)
        if tokens & anchors:
            out |= tokens
    return frozenset(out)


def _labelled(text: str, answer: frozenset[str]) -> bool:
    """The text gives the answer as the value after a colon ("their first holiday in years: Japan"):
    the label before the colon is what it is bound to, however far its words stand."""
    for _, after in (text.split(":", 1),) if ":" in text else ():
        value = token_sequence(re.split(r"[,;.(]", after, maxsplit=1)[0])
        if value and value[0] in answer:
            return True
    return False


def rebinds_answer(fact: str, text: str, *, answer: frozenset[str], question: frozenset[str],
                   movable: frozenset[str]) -> bool:
    """True when ``text`` keeps the answer and the question's words but binds the answer elsewhere.

    Args:
        fact: the evidence sentence that states the answer.
        text: a sentence derived from it (an extracted fact, a summary).
        answer: the golden answer's content tokens.
        question: the question's content tokens, answer and person names left out.
        movable: evidence tokens that count as having moved in (answer, question words and names
            left out).
    """
    if not answer or not question or _labelled(text, answer):
        return False
    fact_chunks, text_chunks = chunks(fact), chunks(text)
    # a question word the fact says twice ("accepted the offer ... declined the offer") binds nothing
    repeated = {t for t in question if sum(t in chunk for chunk in fact_chunks) > 1}
    anchors = _bound(fact_chunks, question - repeated, answer)
    if not anchors:
        return False
    text_tokens = {t for chunk in text_chunks for t in chunk}
    kept = anchors & text_tokens
    if not kept or not answer & text_tokens or _bound(text_chunks, kept, answer):
        return False
    for side in (answer, kept):
        moved_in = (_around(text_chunks, side) - _around(fact_chunks, side)) & movable
        if moved_in:
            return True
    return False
