"""Shell blocks of the user documentation and the markers that say how the docs test treats them.

A fenced block whose info string is ``bash``, ``sh`` or ``shell`` is a *command block*. The HTML
comments on the lines right above it (invisible when the Markdown is rendered) steer the test:

* ``<!-- docs-test: skip (REASON) -->`` — not run; REASON names what it needs (an API key, a GPU,
  a server that never exits, a run of tens of minutes). A skip without a reason is an error.
* ``<!-- docs-test: slow -->`` — run only by the slow test (``pytest -m slow``).
* ``<!-- docs-test: continues -->`` — runs in the folder of the page's previous command block,
  after it (for a page that builds on an earlier block's files).
* ``<!-- docs-test: before "SHELL" -->`` — SHELL runs first, in the block's folder (for a block
  that needs a file an earlier, skipped block would have written).
* ``<!-- docs-test: expect "TEXT" -->`` — the block's output (stdout and stderr) contains TEXT.
* ``<!-- docs-test: expect-file PATH "TEXT" -->`` — after the block, the file PATH (relative to
  the block's folder) contains TEXT.

Every other command block is run as it stands; one that names an API key, an endpoint, a
placeholder or the whole test suite without a marker is reported instead of run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ROOT",
    "Block",
    "Chain",
    "DocsMarkerError",
    "chains_of",
    "command_blocks",
    "doc_files",
    "install_extras",
    "offline_problem",
    "runnable_script",
]

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^`\n]*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<body>.*?)\s*-->\s*$")
_SHELL_INFOS = {"bash", "sh", "shell"}
_INSTALL_PREFIX = re.compile(
    r"^python3? -m venv (?P<venv>\S+) && \. (?P=venv)/bin/activate && pip install (?P<spec>[^&]+?) && "
)
_PIP_LINE = re.compile(r"^\s*pip install (?P<spec>.+?)\s*$")
_ACTIVATE_LINE = re.compile(r"^\s*\. \S+/bin/activate\s*$")
_COMMENT = re.compile(r"(^|\s+)#(\s.*)?$")
# What an unmarked block may not contain: each needs something the test machine lacks.
_NEEDS = (
    (re.compile(r"api[_-]config|OPENAI_API_KEY|\bsk-[A-Za-z0-9]"), "an API key"),
    (re.compile(r"https?://"), "a network endpoint"),
    (re.compile(r"--ray-address|--executor ray"), "a Ray cluster"),
    (re.compile(r"\.\.\.|\[--|<[a-z_]+>|\bDIR\b|\bRUN\b"), "a placeholder to fill in"),
    (re.compile(r"\bpytest\b|\bmutmut\b"), "the test suite itself"),
    (
        re.compile(r"streamlit run|python -m annotation_interface(?! *\.)(?!.*--help)"),
        "a server that never exits",
    ),
    (re.compile(r"\.venv-\w+/bin/"), "a second virtual environment"),
    (re.compile(r"\bnvidia-smi\b|\bvllm\b|serve_embeddings"), "a GPU"),
)


class DocsMarkerError(ValueError):
    """A ``docs-test`` marker that the test cannot read."""


@dataclass(frozen=True, kw_only=True)
class Block:
    """One command block of a Markdown file."""

    path: Path
    """The Markdown file."""
    line: int
    """1-based line of the opening fence."""
    text: str
    """The block's content, as written."""
    skip: str | None = None
    """Why the block is not run (``skip`` marker), else None."""
    slow: bool = False
    """Run only by the slow test."""
    continues: bool = False
    """Runs after the previous command block of the same file, in its folder."""
    before: tuple[str, ...] = ()
    """Shell commands run first, in the block's folder."""
    expect: tuple[str, ...] = ()
    """Texts the block's output must contain."""
    expect_files: tuple[tuple[str, str], ...] = ()
    """(path, text) pairs: files the block must leave, with a text each must contain."""

    @property
    def where(self) -> str:
        """``file:line`` relative to the repository, for messages and test ids."""
        try:
            name = self.path.relative_to(ROOT)
        except ValueError:
            name = self.path
        return f"{name}:{self.line}"


@dataclass(frozen=True, kw_only=True)
class Chain:
    """Blocks that run one after the other in one folder."""

    blocks: tuple[Block, ...] = field(default_factory=tuple)

    @property
    def slow(self) -> bool:
        """A chain is slow when any of its blocks is."""
        return any(block.slow for block in self.blocks)

    @property
    def where(self) -> str:
        """Where the chain starts."""
        return self.blocks[0].where


def doc_files(root: Path = ROOT) -> list[Path]:
    """README.md and every page of docs/, in a stable order."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _apply_marker(body: str, fields: dict, where: str) -> None:
    if body == "slow":
        fields["slow"] = True
    elif body == "continues":
        fields["continues"] = True
    elif body.startswith("skip"):
        reason = re.fullmatch(r"skip\s*\((?P<reason>.+)\)", body)
        if not reason:
            raise DocsMarkerError(f"{where}: a skip marker needs a reason: <!-- docs-test: skip (why) -->")
        fields["skip"] = reason["reason"].strip()
    elif body.startswith("expect-file "):
        parts = shlex.split(body[len("expect-file ") :])
        if len(parts) != 2:
            raise DocsMarkerError(f'{where}: write <!-- docs-test: expect-file PATH "TEXT" -->, got {body!r}')
        fields["expect_files"] = (*fields.get("expect_files", ()), (parts[0], parts[1]))
    elif body.startswith("before "):
        parts = shlex.split(body[len("before ") :])
        if len(parts) != 1:
            raise DocsMarkerError(f'{where}: write <!-- docs-test: before "SHELL" -->, got {body!r}')
        fields["before"] = (*fields.get("before", ()), parts[0])
    elif body.startswith("expect "):
        parts = shlex.split(body[len("expect ") :])
        if len(parts) != 1:
            raise DocsMarkerError(f'{where}: write <!-- docs-test: expect "TEXT" -->, got {body!r}')
        fields["expect"] = (*fields.get("expect", ()), parts[0])
    else:
        raise DocsMarkerError(
            f"{where}: unknown docs-test marker {body!r} (skip (why), slow, continues, before, expect, expect-file)"
        )


def _markers_above(lines: list[str], index: int, where: str) -> dict:
    fields: dict = {}
    above = index - 1
    while above >= 0 and (match := _MARKER.match(lines[above])):
        _apply_marker(match["body"], fields, where)
        above -= 1
    return fields


def command_blocks(path: Path) -> list[Block]:
    """The command blocks of one Markdown file, with their markers.

    Raises:
        DocsMarkerError: a marker that cannot be read, or a fence that is never closed.
    """
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(opening["fence"]):
            end += 1
        if end == len(lines):
            raise DocsMarkerError(f"{path}:{index + 1}: the code fence is never closed")
        if opening["info"].strip().split(" ")[0] in _SHELL_INFOS:
            indent = len(opening["indent"])
            text = "\n".join(line[indent:] for line in lines[index + 1 : end])
            where = f"{path}:{index + 1}"
            blocks.append(Block(path=path, line=index + 1, text=text, **_markers_above(lines, index, where)))
        index = end + 1
    return blocks


def chains_of(blocks: list[Block]) -> list[Chain]:
    """Group a file's runnable blocks: a ``continues`` block joins the chain before it.

    Raises:
        DocsMarkerError: a ``continues`` block with no runnable block before it.
    """
    chains: list[list[Block]] = []
    for block in blocks:
        if block.skip is not None:
            continue
        if block.continues:
            if not chains:
                raise DocsMarkerError(f"{block.where}: 'continues' but no runnable block comes before it")
            chains[-1].append(block)
        else:
            chains.append([block])
    return [Chain(blocks=tuple(chain)) for chain in chains]


def install_extras(text: str) -> list[str]:
    """The optional extras that a block's ``pip install -e ".[a,b]"`` commands name."""
    extras: list[str] = []
    for spec in re.findall(r"""pip install -e ["']?\.\[([^\]]+)\]""", text):
        extras.extend(name.strip() for name in spec.split(","))
    return extras


def runnable_script(text: str) -> str:
    """The block as the test runs it: the install steps dropped (the test's environment has them)."""
    kept: list[str] = []
    for line in text.splitlines():
        line = _INSTALL_PREFIX.sub("", line)
        if _PIP_LINE.match(line) or _ACTIVATE_LINE.match(line):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def offline_problem(block: Block) -> str | None:
    """What an unmarked block needs that an offline run lacks, or None when it can run as it stands."""
    script = "\n".join(_COMMENT.sub("", line) for line in runnable_script(block.text).splitlines())
    for pattern, need in _NEEDS:
        if pattern.search(script):
            return need
    return None
