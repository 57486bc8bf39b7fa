"""Parse a flat operation log back into blocks and search it (spec-attribution §4.2).

The parser only trusts column-0 lines: block markers (``### Operation <id>``), header fields
(``created_at: …``) and section labels (``Input variables:`` …). The flattener indents every
line that a value or comment contributes, so text inside a variable can never start a block or a
section, whatever it contains (reference bug 12).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import regex

from obstrace._search import DEFAULT_TIMEOUT_S, Deadline, compile_pattern, iter_spans
from obstrace.exceptions import PatternError

__all__ = ["GrepMatch", "OperationBlock", "SectionName", "TraceIndex", "block_preview"]

SectionName = Literal["input", "intermediate", "output", "full"]
SECTIONS: tuple[SectionName, ...] = ("input", "intermediate", "output", "full")

_MARKER = regex.compile(r"^### Operation[ \t]+", regex.MULTILINE)
_MARKER_ID = regex.compile(r"\A### Operation[ \t]+(\S+)")
_OP_TOKEN = regex.compile(r"\bop-[\w-]+")
_LABEL = regex.compile(
    r"^(Inputs|Input variables|Intermediate|Intermediate variables|Outputs|Output variables):[ \t]*$",
    regex.MULTILINE,
)
_LABEL_SECTION = {
    "Inputs": "input",
    "Input variables": "input",
    "Intermediate": "intermediate",
    "Intermediate variables": "intermediate",
    "Outputs": "output",
    "Output variables": "output",
}


@dataclass(frozen=True, kw_only=True)
class OperationBlock:
    """One operation block of the log, with its position and parsed fields."""

    op_id: str
    """Operation id from the marker line (else the first ``op-…`` token, else ``UNKNOWN_OP_<order>``)."""
    order: int
    """0-based position in the log."""
    char_start: int
    """1-based offset of the block's first character in the (stripped) log."""
    char_end: int
    """1-based offset of the block's last character (inclusive)."""
    created_at: str = ""
    op_name: str = ""
    category: str = ""
    comment: str = ""
    input_text: str = ""
    intermediate_text: str = ""
    output_text: str = ""
    full_text: str = ""
    section_offsets: dict[str, int] = field(default_factory=dict, repr=False)
    """0-based offset of each non-empty section's text inside ``full_text``."""

    def section_text(self, section: SectionName) -> str:
        """Return the text of ``section`` ('full' is the whole block)."""
        return self.full_text if section == "full" else getattr(self, f"{section}_text")


@dataclass(frozen=True, kw_only=True)
class GrepMatch:
    """One match of ``TraceIndex.grep``."""

    op_id: str
    order: int
    created_at: str
    section: str
    match_text: str
    snippet: str
    """Surrounding text, with ``...`` where it was clipped."""
    start: int
    """0-based start in the section text."""
    end: int
    """0-based exclusive end in the section text."""
    global_start: int
    """1-based offset of the first matched character in the log."""
    global_end: int
    """1-based offset of the last matched character in the log (inclusive)."""

    def to_dict(self) -> dict[str, Any]:
        """Return the match as a JSON-ready dict."""
        return asdict(self)


def block_preview(block: OperationBlock) -> dict[str, Any]:
    """Return the short description of a block used by the notebook tools."""
    return {
        "op_id": block.op_id,
        "order": block.order,
        "char_start": block.char_start,
        "char_end": block.char_end,
        "created_at": block.created_at,
        "op_name": block.op_name,
        "category": block.category,
        "comment": block.comment,
    }


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _header_field(header: str, name: str) -> str:
    match = regex.search(rf"^{name}[ \t]*:[ \t]*(.*)$", header, regex.MULTILINE)
    if match:
        return match.group(1).strip()
    match = regex.search(rf"<{name}>(.*?)</{name}>", header, regex.DOTALL)
    return _unescape(match.group(1)).strip() if match else ""


def _header_comment(header: str) -> str:
    match = regex.search(r"^<comment>(.*?)</comment>$", header, regex.MULTILINE | regex.DOTALL)
    if not match:
        return ""
    inner = match.group(1)
    if inner.startswith("\n"):
        lines = inner[1:].split("\n")
        inner = "\n".join(line[2:] if line.startswith("  ") else line for line in lines)
    return _unescape(inner).strip()


def _parse_block(text: str, order: int, char_start: int) -> OperationBlock:
    marker = _MARKER_ID.match(text)
    if marker:
        op_id = marker.group(1)
    else:
        token = _OP_TOKEN.search(text)
        op_id = token.group(0) if token else f"UNKNOWN_OP_{order}"
    labels = list(_LABEL.finditer(text))
    header = text[: labels[0].start()] if labels else text
    sections: dict[str, str] = {}
    offsets: dict[str, int] = {}
    for i, label in enumerate(labels):
        name = _LABEL_SECTION[label.group(1)]
        if name in sections:
            continue  # the earliest label of a section wins
        body_end = labels[i + 1].start() if i + 1 < len(labels) else len(text)
        raw = text[label.end() : body_end]
        stripped = raw.strip()
        sections[name] = stripped
        offsets[name] = label.end() + (len(raw) - len(raw.lstrip())) if stripped else label.end()
    return OperationBlock(
        op_id=op_id,
        order=order,
        char_start=char_start,
        char_end=char_start + len(text) - 1,
        created_at=_header_field(header, "created_at"),
        op_name=_header_field(header, "op_name"),
        category=_header_field(header, "category"),
        comment=_header_comment(header),
        input_text=sections.get("input", ""),
        intermediate_text=sections.get("intermediate", ""),
        output_text=sections.get("output", ""),
        full_text=text,
        section_offsets=offsets,
    )


class TraceIndex:
    """Operation blocks of a flat log, addressable by id and order, and searchable.

    Args:
        text: The log produced by ``flatten_execution_graph`` (or any text; without markers the
            whole text is one block).
    """

    def __init__(self, text: str) -> None:
        self.text = text.strip()
        self.blocks: list[OperationBlock] = []
        self._by_id: dict[str, OperationBlock] = {}
        starts = [m.start() for m in _MARKER.finditer(self.text)]
        if not starts or starts[0] > 0:
            starts.insert(0, 0)
        bounds = list(zip(starts, starts[1:] + [len(self.text)], strict=True))
        for begin, end in bounds:
            raw = self.text[begin:end]
            trimmed = raw.strip()
            if not trimmed:
                continue
            offset = begin + (len(raw) - len(raw.lstrip()))
            block = _parse_block(trimmed, len(self.blocks), offset + 1)
            self.blocks.append(block)
            self._by_id.setdefault(block.op_id, block)

    def __len__(self) -> int:
        return len(self.blocks)

    @property
    def op_ids(self) -> list[str]:
        """Operation ids in log order."""
        return [block.op_id for block in self.blocks]

    def has_op(self, op_id: str) -> bool:
        """Whether an operation with this id has a block in the log."""
        return op_id in self._by_id

    def get(self, op_id: str) -> OperationBlock | None:
        """Return the (first) block of ``op_id``, or None."""
        return self._by_id.get(op_id)

    def grep(
        self,
        pattern: str,
        fields: tuple[SectionName, ...] | list[SectionName] = SECTIONS,
        regex: bool = False,
        case_sensitive: bool = False,
        max_matches: int = 50,
        surrounding_chars: int = 120,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> list[GrepMatch]:
        """Find a pattern in the blocks' sections, in log order.

        Args:
            pattern: Literal text, or a regular expression when ``regex`` is true.
            fields: Sections to search: any of 'input', 'intermediate', 'output', 'full'.
            regex: Interpret ``pattern`` as a regular expression.
            case_sensitive: Match case exactly.
            max_matches: Stop after this many matches.
            surrounding_chars: Characters of context on each side of a match in ``snippet``.
            timeout_s: Time budget for the whole search.

        Returns:
            The matches (empty for an empty pattern). Zero-length regex matches are skipped.

        Raises:
            PatternError: For an invalid or oversized pattern, or an unknown field.
            PatternTimeoutError: When the search runs past ``timeout_s``.
        """
        if not pattern:
            return []
        unknown = [f for f in fields if f not in SECTIONS]
        if unknown:
            raise PatternError(f"unknown grep field(s) {unknown}; use any of {list(SECTIONS)}")
        compiled = compile_pattern(pattern, is_regex=regex, case_sensitive=case_sensitive)
        deadline = Deadline(timeout_s)
        matches: list[GrepMatch] = []
        for block in self.blocks:
            for section in fields:
                text = block.section_text(section)
                if not text:
                    continue
                section_offset = 0 if section == "full" else block.section_offsets.get(section, 0)
                for start, end in iter_spans(compiled, text, deadline):
                    lo, hi = max(0, start - surrounding_chars), min(len(text), end + surrounding_chars)
                    snippet = text[lo:hi].replace("\x00", "")
                    snippet = ("..." if lo > 0 else "") + snippet + ("..." if hi < len(text) else "")
                    matches.append(
                        GrepMatch(
                            op_id=block.op_id,
                            order=block.order,
                            created_at=block.created_at,
                            section=section,
                            match_text=text[start:end],
                            snippet=snippet,
                            start=start,
                            end=end,
                            global_start=block.char_start + section_offset + start,
                            global_end=block.char_start + section_offset + end - 1,
                        )
                    )
                    if len(matches) >= max_matches:
                        return matches
        return matches
