"""Text normalisation shared by the attributor: tokens, decoded values, what a node says.

Both sides of every comparison are normalised the same way (lower case, punctuation dropped,
stop words removed, a light plural/-ing/-ed stem, number words as digits: the project's one
tokenizer, stop-word list and stemmer in :mod:`membase.utils.text`) and compared as token sets.
:mod:`._facts` cuts texts into statements and :mod:`._probe` judges them.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from membase.utils.text import content_words, stem

__all__ = [
    "DEFAULT_ANSWER_THRESHOLD",
    "DEFAULT_EMBEDDING_THRESHOLD",
    "DEFAULT_EVIDENCE_THRESHOLD",
    "Embedder",
    "content_tokens",
    "cosine",
    "decode_value",
    "memory_text",
    "stem",
    "message_text",
    "text_lines",
    "token_recall",
    "token_sequence",
]

#: Share of the golden answer's content tokens a text must contain to carry the answer.
#: 0.75 means: 1 of 1, 2 of 2, 3 of 3, 3 of 4, 4 of 5 … tokens (a changed day in
#: "7 May 2023" is a loss, a dropped article is not).
DEFAULT_ANSWER_THRESHOLD = 0.75
#: Share of the evidence message's content tokens a text must contain when the golden answer
#: does not occur in the evidence itself (inferred answers, e.g. dates from "yesterday").
DEFAULT_EVIDENCE_THRESHOLD = 0.5
#: Cosine similarity that also counts as presence when an embedder is given.
DEFAULT_EMBEDDING_THRESHOLD = 0.75

_SPEAKER_KEYS = ("speaker_name", "name", "speaker", "sender", "user_name")
_MEM0_SUFFIX = "\nBelow is this message's metadata:"
# Fields of a memory-unit JSON value that are bookkeeping, not memory content: raw copies of
# the source messages (original data, a foresight's quoted evidence) would make every unit
# "carry" everything it was built from.
_NON_CONTENT_KEYS = frozenset(
    {
        "id",
        "event_id",
        "hash",
        "timestamp",
        "created_at",
        "updated_at",
        "user_id",
        "original_data",
        "original_messages",
        "original_text",
        "raw_messages",
        "raw_text",
        "raw_content",
        "source_messages",
        "evidence",
        "metadata",
        "score",
        "namespace",
        "key",
    }
)


#: Light verbs carry little meaning of their own ("went to the lake" is not "went to the museum"):
#: their forms still meet the question's verb, but the probe gives them no weight as a fact's own
#: words (tests/evidence_flow/test_text.py, test_a_light_verb_alone_is_no_support_for_a_fact).
LIGHT_VERBS = frozenset("go get make take come have do".split())


def content_tokens(text: str) -> frozenset[str]:
    """Return the normalised content tokens of ``text``.

    Args:
        text: any text.

    Returns:
        Lower-cased alphanumeric tokens without stop words, lightly stemmed; numbers are kept
        without leading zeros so that ``"05"`` and ``"5"`` match, and number words up to twenty
        (plus tens) become digits (``"four"`` = ``"4"``).
    """
    return frozenset(token_sequence(text))


# "4th", "22nd": the number an ordinal names ("March 4th" is "4 March", "her 7th birthday" she turns 7)
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th)$")


# "fifty-two": a ten and a unit written as one number word; "start-up": one word with a hyphen
_COMPOUND_NUMBER = re.compile(r"\b([A-Za-z]+)-([A-Za-z]+)\b")


def _compound_number(match: re.Match[str]) -> str:
    tens, unit = stem(match.group(1).lower()), stem(match.group(2).lower())
    if tens.isdigit() and unit.isdigit() and int(tens) % 10 == 0 and 20 <= int(tens) <= 90 and 0 < int(unit) < 10:
        return str(int(tens) + int(unit))
    if any(len(part) == 1 or not content_words(part) for part in match.groups()):
        # "start-up", "e-mail": one word written with a hyphen, also written without ("startup")
        return f"{match.group(1)}{match.group(2)} {match.group(0)}"
    return match.group(0)


def token_sequence(text: str) -> list[str]:
    """The normalised content tokens of ``text`` in order (see :func:`content_tokens`); an ordinal
    is its number, and so is a ten and a unit written as one word ("fifty-two" is 52); a word written
    with a hyphen after a letter or before a stop word ("start-up", "e-mail") is also that word
    without it ("startup")."""
    if "-" in text:
        text = _COMPOUND_NUMBER.sub(_compound_number, text)
    return [_ORDINAL.sub(r"\1", token) for token in content_words(text)]


def token_recall(probe: Iterable[str], tokens: Iterable[str]) -> float:
    """Return the share of ``probe`` tokens found in ``tokens`` (0.0 for an empty probe)."""
    probe_set = set(probe)
    if not probe_set:
        return 0.0
    return len(probe_set & set(tokens)) / len(probe_set)


def decode_value(raw: str) -> Any:
    """Decode a stored graph value: JSON first, then a Python literal (repr-encoded strings).

    Args:
        raw: the node's raw string value.

    Returns:
        The decoded object, or ``raw`` itself when it is neither JSON nor a literal.
    """
    text = raw.strip()
    if not text:
        return raw
    if text[0] in "{[\"" or text[0].isdigit() or text in ("true", "false", "null"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    if text[0] in "'\"[{(" or text.startswith(("u'", "b'")):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return raw


def _flatten(value: Any, *, skip_keys: frozenset[str]) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool | int | float):
        return [str(value)]
    if isinstance(value, dict):
        parts: list[str] = []
        who = next((value[k] for k in _SPEAKER_KEYS if isinstance(value.get(k), str) and value[k].strip()), None)
        if who is not None and isinstance(value.get("content"), str) and "content" not in skip_keys:
            # a message in a buffer or memcell: its words stay with who said them ("Nora: I liked ...")
            parts.extend(f"{who.strip()}: {line}" for line in text_lines(value["content"]) if line.strip())
            skip_keys = skip_keys | {"content", *_SPEAKER_KEYS}
        for key, item in value.items():
            if str(key) in skip_keys:
                continue
            parts.extend(_flatten(item, skip_keys=skip_keys))
        return parts
    if isinstance(value, list | tuple):
        parts = []
        for item in value:
            parts.extend(_flatten(item, skip_keys=skip_keys))
        return parts
    return [str(value)]


_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n(?P<body>.*?)\n?\s*```\s*$", re.DOTALL)


def _structured(text: str) -> Any:
    """A model reply that is JSON inside a code fence (or bare JSON) as data; else the text."""
    match = _FENCE.match(text)
    body = match.group("body") if match else text
    stripped = body.strip()
    if stripped[:1] in "{[":
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def memory_text(raw: str, *, unit: bool = True) -> str:
    """Return the content of a memory-unit (or, with ``unit=False``, any intermediate) value.

    For memory units, JSON objects contribute every string field except bookkeeping fields
    (ids, timestamps, raw copies of the source messages), because only the remaining fields
    are what retrieval hands to the answer model. Intermediates (buffers, memcells, prompts)
    contribute all their fields: information flows *through* them. A model reply holding JSON
    (bare or in a code fence) is read as that JSON, one string field per line.
    """
    decoded = decode_value(raw)
    if isinstance(decoded, str):
        decoded = _structured(decoded)
        if isinstance(decoded, str):
            return decoded
    skip = frozenset()
    if unit:
        skip = _NON_CONTENT_KEYS
        if isinstance(decoded, dict) and "episode" in decoded:
            # an episode's summary is a preview of it (or, before extraction, of the raw segment)
            skip = skip | {"summary"}
    # one field, one line: facts listed in one reply are separate statements
    return "\n".join(_flatten(decoded, skip_keys=skip))


# How the Long-Context and NaiveRAG layers word a message (spec §4.6): the speaker line and the
# timestamp line are the same for every message, so they are framing, not what the message says.
_SPEAKER_FRAME = re.compile(r"^Speaker .{1,80}? \(role: [^)\n]{0,40}\) says: (?P<body>.*?)(?:\nTimestamp: [^\n]*)?\s*$",
                            re.DOTALL)


def message_text(raw: str) -> str:
    """Return what a message node says: its ``content`` field without Mem0's metadata suffix and
    without the ``Speaker X (role: r) says: ... Timestamp: ...`` frame of the buffer layers."""
    decoded = decode_value(raw)
    if isinstance(decoded, dict) and isinstance(decoded.get("content"), str):
        content = decoded["content"]
    elif isinstance(decoded, str):
        content = decoded
    else:
        content = "\n".join(_flatten(decoded, skip_keys=frozenset()))
    cut = content.find(_MEM0_SUFFIX)
    content = content if cut < 0 else content[:cut]
    framed = _SPEAKER_FRAME.match(content)
    return framed.group("body") if framed else content


class Embedder(Protocol):
    """The subset of ``membase.clients.embeddings.Embedder`` used here."""

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed each text."""
        ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when one is zero)."""
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def text_lines(text: str) -> list[str]:
    """The non-empty lines of ``text`` (the units in which presence is measured)."""
    return [line for line in text.splitlines() if line.strip()] or [text]
