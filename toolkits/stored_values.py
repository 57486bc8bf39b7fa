"""Values as smartcomment stored them: a traced ``str`` is kept as its ``repr`` (``"'When did ...?'"``)."""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["decode_stored_text", "unquote"]


def decode_stored_text(raw: Any) -> Any:
    """The Python value of a traced variable stored with smartcomment's default ``repr`` encoding.

    Prompt variables are recorded as ``repr(text)``; this returns ``text``. Anything that is not a
    Python literal is returned unchanged.
    """
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0]:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return raw
    if text and text[0] in "0123456789-[{(" or text in ("True", "False", "None"):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return raw
    return raw


def unquote(text: Any) -> Any:
    """A text traced with ``repr`` (``"'When did ...?'"``) as the plain text; anything else unchanged.

    Questions and answers read from a graph keep smartcomment's repr quotes; shown to the optimizer
    they read as part of the question.
    """
    if not isinstance(text, str):
        return text
    value = decode_stored_text(text)
    return value if isinstance(value, str) else text
