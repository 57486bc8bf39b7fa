"""Token counting for trace budgets: tiktoken ``o200k_base`` with an offline fallback.

tiktoken fetches the ``o200k_base`` BPE file on first use and caches it (``TIKTOKEN_CACHE_DIR``).
On a machine without network and without that cache the encoding cannot load; budgets then use a
documented estimate (one token per four UTF-8 bytes, rounded up) so that nothing breaks offline.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable

__all__ = ["TokenCounter", "default_token_counter", "estimate_tokens"]

TokenCounter = Callable[[str], int]

ENCODING_NAME = "o200k_base"


def estimate_tokens(text: str) -> int:
    """Estimate a token count without a tokenizer: ``ceil(utf8_bytes / 4)``.

    Args:
        text: The text to measure.

    Returns:
        The estimated number of tokens (0 for the empty string).
    """
    return math.ceil(len(text.encode("utf-8")) / 4)


@functools.cache
def default_token_counter() -> TokenCounter:
    """Return a counter backed by tiktoken ``o200k_base``, or the byte estimate if it cannot load.

    The result is cached for the process, so the (possibly failing) load is attempted once.

    Returns:
        A function mapping a text to its token count.
    """
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(ENCODING_NAME)
    except Exception as exc:  # any load failure (no network, no cache) falls back
        warnings.warn(
            f"tiktoken encoding {ENCODING_NAME!r} is unavailable ({type(exc).__name__}); token budgets "
            "use the estimate ceil(utf8_bytes/4). Put the BPE file in TIKTOKEN_CACHE_DIR to count exactly.",
            RuntimeWarning,
            stacklevel=2,
        )
        return estimate_tokens

    def count(text: str) -> int:
        return len(encoding.encode(text, disallowed_special=()))

    return count
