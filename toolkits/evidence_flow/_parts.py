"""Answers in several parts ("a ryokan near the Kamo river, 14 April"; "pottery, camping").

When no single message states every part, each part is its own critical information, told by
its own message: the question is answered right only if every part reaches the context, so each
part is followed on its own and the part lost earliest decides (spec-attribution §5.1: all
evidence in the final context, and still wrong, is a ``ResponseError``; otherwise the op that
lost a piece of it is at fault).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._graph_view import GraphView, NodeRec
from ._text import content_tokens, token_recall

__all__ = ["answer_parts", "one_message_states_all"]

_SEPARATORS = re.compile(r"\s*(?:[;,]|\band\b|&)\s*", re.IGNORECASE)
_MAX_PARTS = 6


def answer_parts(golden: str, *, question: str = "") -> list[str]:
    """The parts of a golden answer (one item when it has no separate parts, or too many to be a
    short list of facts).

    Parts are cut at commas, semicolons and "and"; a part without content words ("a") joins
    nothing and is dropped; parts that say the same thing are kept once. A part the ``question`` already says ("Ines" of "Ines and her sister have run
    the bakery for 7 years" asked "How long have Ines and her sister run the bakery?") is no
    information the answer adds: it is no part of its own.
    """
    asked = content_tokens(question)
    parts: list[str] = []
    seen: set[frozenset[str]] = set()
    for piece in _SEPARATORS.split(golden):
        tokens = content_tokens(piece)
        if tokens and tokens not in seen:
            seen.add(tokens)
            parts.append(piece.strip())
    new = [part for part in parts if not content_tokens(part) <= asked]
    if len(new) < 2 or len(parts) > _MAX_PARTS:
        return [golden]
    return new


def one_message_states_all(view: GraphView, seeds: Sequence[NodeRec], parts: Sequence[str], threshold: float) -> bool:
    """Some seed message holds every part (then the answer is one fact, followed as one)."""
    wanted = [content_tokens(p) for p in parts]
    for seed in seeds:
        tokens = view.message_tokens.get(seed.full_node_id) or content_tokens(seed.value)
        if all(token_recall(w, tokens) >= threshold for w in wanted):
            return True
    return False
