"""Count the hand-written words the rules judge of ``evidence_flow`` depends on.

A hand-written word is a run of letters in a string constant assigned at module level (word
lists, lexicons, regexes, key sets; ``__all__`` aside) of ``toolkits/evidence_flow`` — the llm judge's prompt text
(``judges/prompts.py``) aside, it is no rule — or of the project's shared text module it reads its
stop words and stemmer from (``membase/utils/text.py``), plus every word of the non-comment lines
of their word-list data files (``wordlists/*.txt``). Library data (``lemminflect``, ``dateparser``)
does not count: nobody here wrote it.

    python benchmarks/evidence_flow_words.py            # this checkout
    python benchmarks/evidence_flow_words.py OLD_TREE   # e.g. a `git archive` of an older commit
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

__all__ = ["count_words", "main"]

_SOURCES = ("toolkits/evidence_flow", "membase/utils/text.py", "membase/utils/wordlists")
_NOT_RULES = ("judges/prompts.py",)
_WORD = re.compile(r"[A-Za-z]+")


def _module_words(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    count = 0
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue  # the names a module exports are no vocabulary
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                    count += len(_WORD.findall(sub.value))
    return count


def _data_words(path: Path) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(len(_WORD.findall(line)) for line in lines if line.strip() and not line.lstrip().startswith("#"))


def count_words(root: Path) -> dict[str, int]:
    """Hand-written words per file under ``root`` (a checkout); files without any are left out."""
    counts: dict[str, int] = {}
    for source in _SOURCES:
        base = root / source
        files = [base] if base.is_file() else sorted(base.rglob("*")) if base.is_dir() else []
        for path in files:
            name = path.relative_to(root).as_posix()
            if path.suffix == ".py" and not name.endswith(_NOT_RULES):
                found = _module_words(path)
            elif path.suffix == ".txt" and "wordlists" in path.parts:
                found = _data_words(path)
            else:
                continue
            if found:
                counts[name] = found
    return counts


def main(argv: list[str] | None = None) -> int:
    """Print the count per file and the total."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=Path("."), help="checkout to count in (default: .)")
    args = parser.parse_args(argv)
    if not (args.root / "toolkits" / "evidence_flow").is_dir():
        print(f"error: {args.root}: no toolkits/evidence_flow here (give a checkout's root)", file=sys.stderr)
        return 2
    counts = count_words(args.root)
    for name, found in sorted(counts.items()):
        print(f"{found:6d}  {name}")
    print(f"{sum(counts.values()):6d}  total")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
