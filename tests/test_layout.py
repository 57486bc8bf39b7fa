"""Every folder of tests is a package: two ``test_build.py`` in folders without ``__init__.py``
share one module name, and pytest stops the whole run at collection."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_folder_with_tests_is_a_package():
    folders = {p.parent for p in TESTS.rglob("test_*.py")}
    assert folders
    assert sorted(str(f.relative_to(TESTS)) for f in folders if not (f / "__init__.py").exists()) == []
