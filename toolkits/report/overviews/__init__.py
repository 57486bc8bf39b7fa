"""Target-system overviews for the report writer: built-in ones by short name, or the user's own.

``--target-system-overview`` accepts a short name (``generic``, ``long_context``, ``rag``,
``mem0``, ``evermemos``; ``auto`` is the default), a path to a text or Markdown file, or the
overview text itself. ``auto`` picks the built-in overview of the input's memory system when all
records come from one known system, else the generic one — so the report never runs without an
overview (the reference crashed when none was given, spec §12.14).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from smartcomment.runtime.errors import MemTraceError

__all__ = ["BUILTIN_OVERVIEWS", "Overview", "OverviewError", "builtin_overview", "resolve_overview"]

BUILTIN_OVERVIEWS: tuple[str, ...] = ("generic", "long_context", "rag", "mem0", "evermemos")
_ALIASES = {
    "long-context": "long_context",
    "longcontext": "long_context",
    "naiverag": "rag",
    "naive_rag": "rag",
    "everos": "evermemos",
}


class OverviewError(MemTraceError, ValueError):
    """The overview names a file that cannot be read, or is empty."""


@dataclass(frozen=True, kw_only=True)
class Overview:
    """An overview's text and where it came from (for the log line and the JSON output)."""

    text: str
    source: str
    """``builtin:<name>``, ``file:<path>`` or ``inline``."""


def _canonical(name: str) -> str | None:
    key = name.strip().lower()
    key = _ALIASES.get(key, key)
    return key if key in BUILTIN_OVERVIEWS else None


def builtin_overview(name: str) -> str:
    """The text of a built-in overview (see :data:`BUILTIN_OVERVIEWS`).

    Raises:
        KeyError: For an unknown name.
    """
    key = _canonical(name)
    if key is None:
        raise KeyError(f"no built-in overview {name!r}; choose from {', '.join(BUILTIN_OVERVIEWS)}")
    return resources.files(__package__).joinpath(f"{key}.md").read_text(encoding="utf-8").strip()


def resolve_overview(value: str | None, *, memory_systems: Sequence[str] = ()) -> Overview:
    """Turn the ``--target-system-overview`` value into overview text.

    Args:
        value: None/``auto``, a built-in name, a file path, or the text itself.
        memory_systems: The memory systems of the input's records (for ``auto``).

    Raises:
        OverviewError: A path that does not exist or cannot be read, or an empty overview.
    """
    if value is None or value.strip().lower() == "auto":
        systems = {_canonical(s) for s in memory_systems}
        if len(systems) == 1 and None not in systems:
            name = systems.pop()
            assert name is not None
            return Overview(text=builtin_overview(name), source=f"builtin:{name}")
        return Overview(text=builtin_overview("generic"), source="builtin:generic")
    name = _canonical(value)
    if name is not None:
        return Overview(text=builtin_overview(name), source=f"builtin:{name}")
    stripped = value.strip()
    single_line = "\n" not in stripped
    # a text file name, or one word with a folder separator; a sentence with a slash
    # ("ADD/UPDATE/DELETE") is overview text
    looks_like_path = single_line and (
        stripped.lower().endswith((".md", ".txt"))
        or (not any(ch.isspace() for ch in stripped) and any(sep in stripped for sep in {"/", "\\", os.sep}))
    )
    path = Path(value.strip())
    if looks_like_path and path.is_dir():
        raise OverviewError(f"--target-system-overview {value!r} is a folder; give a text file, a built-in name "
                            f"({', '.join(BUILTIN_OVERVIEWS)}) or the overview text")
    if single_line and path.is_file():
        try:
            text = path.read_text(encoding="utf-8").strip()
        except UnicodeDecodeError as exc:
            raise OverviewError(f"--target-system-overview file {value!r} is not UTF-8 text "
                                f"(byte {exc.start}: {exc.reason})") from None
        except OSError as exc:
            raise OverviewError(f"--target-system-overview file {value!r} cannot be read: {exc.strerror or exc}") from None
        if not text:
            raise OverviewError(f"--target-system-overview file {value!r} is empty")
        return Overview(text=text, source=f"file:{path}")
    if looks_like_path:
        raise OverviewError(
            f"--target-system-overview {value!r} looks like a path but no such file exists "
            f"(built-in names: {', '.join(BUILTIN_OVERVIEWS)})"
        )
    if not value.strip():
        raise OverviewError("--target-system-overview is empty")
    return Overview(text=value.strip(), source="inline")
