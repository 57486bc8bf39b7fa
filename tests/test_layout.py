"""Test modules in folders that are not packages are imported by their bare file name: two such
``test_build.py`` share one module name, and pytest stops the whole run at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_bare_test_module_names_are_unique():
    bare = [p.name for p in TESTS.rglob("test_*.py") if not (p.parent / "__init__.py").exists()]
    assert bare
    assert [name for name, n in Counter(bare).items() if n > 1] == []
