"""The project's packages form layers: each imports only its own layer or the ones below.

    smartcomment  <  membase  <  graphtrace, obstrace  <  toolkits  <  annotation_interface,
                                                                     benchmarks, the scripts

Imports are read from the source with :mod:`ast` (function-level imports included, since a
lazy import is still a dependency), so the check costs no import and sees every module.
Besides the order, no two packages may import each other (also within a layer), no module
imports one of the top-level scripts, tests included (``run_error_attribution.py`` …: scripts are
entry points, their logic lives in ``toolkits``), and no module outside ``graphtrace`` takes a chat model
from ``graphtrace`` (models come from the model layer, ``membase.clients``). Code outside
``toolkits/faultbench`` (and its own tests) uses only faultbench's public names, never a ``_private`` module.
No benchmark edits ``sys.path``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS: dict[str, int] = {
    "smartcomment": 0,
    "membase": 1,
    "graphtrace": 2,
    "obstrace": 2,
    "toolkits": 3,
    "annotation_interface": 4,
    "benchmarks": 4,
    "scripts": 4,
}
"""Layer of each package; ``scripts`` stands for the top-level ``*.py`` files."""

SCRIPTS = frozenset(path.stem for path in ROOT.glob("*.py"))
"""Module names of the top-level scripts (``run_error_attribution``, ``generate_report`` …)."""

MODEL_NAMES = frozenset({
    "FunctionChatModel", "ScriptedChatModel", "ToolCall", "ModelCall", "Turn", "STRUCTURED_OUTPUT_TOOL",
    "FlatTextFormatter", "StructuredReply", "build_openai_chat_model",
})
"""What the model layer (``membase.clients``) owns: never imported from ``graphtrace``."""


def _package_of(path: Path) -> str | None:
    rel = path.relative_to(ROOT)
    if len(rel.parts) == 1:
        return "scripts"
    return rel.parts[0] if rel.parts[0] in LAYERS else None


def _python_files(top: Path) -> Iterator[Path]:
    for path in sorted(top.rglob("*.py")):
        if not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(ROOT).parts):
            yield path


@cache
def _imports(path: Path) -> tuple[tuple[int, str, tuple[str, ...]], ...]:
    """``(line, module, names)`` of every absolute import in ``path`` (names empty for ``import x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, tuple(alias.name for alias in node.names)))
    return tuple(found)


def _project_modules() -> list[tuple[str, Path]]:
    files = [p for p in ROOT.glob("*.py")]
    for package in LAYERS:
        if package != "scripts" and (ROOT / package).is_dir():
            files += _python_files(ROOT / package)
    return [(pkg, path) for path in files if (pkg := _package_of(path)) is not None]


def _dependencies() -> dict[tuple[str, str], list[str]]:
    """``(importer package, imported package) -> ["file:line module", ...]`` across packages."""
    edges: dict[tuple[str, str], list[str]] = {}
    for package, path in _project_modules():
        for line, module, _ in _imports(path):
            top = module.split(".")[0]
            target = "scripts" if top in SCRIPTS else top
            if target in LAYERS and target != package:
                where = f"{path.relative_to(ROOT)}:{line} {module}"
                edges.setdefault((package, target), []).append(where)
    return edges


def test_every_import_points_to_the_same_layer_or_below():
    upward = [
        f"{importer} (layer {LAYERS[importer]}) imports {imported} (layer {LAYERS[imported]}): {where}"
        for (importer, imported), places in sorted(_dependencies().items())
        if imported != "scripts" and LAYERS[imported] > LAYERS[importer]
        for where in places
    ]
    assert upward == []


def test_no_two_packages_depend_on_each_other():
    graph: dict[str, set[str]] = {}
    for importer, imported in _dependencies():
        if imported != "scripts":
            graph.setdefault(importer, set()).add(imported)
    cycles: list[str] = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt in path:
                cycles.append(" -> ".join(path[path.index(nxt):] + [nxt]))
            elif len(path) < len(LAYERS):
                visit(nxt, path + [nxt])

    for start in sorted(graph):
        visit(start, [start])
    assert cycles == []


def _script_imports() -> list[str]:
    return sorted(where for (_, imported), places in _dependencies().items() if imported == "scripts"
                  for where in places)


def test_nothing_imports_a_script():
    """Scripts are entry points: packages, benchmarks and tests reach a command through toolkits."""
    from_tests = [f"{path.relative_to(ROOT)}:{line} {module}" for path in _python_files(ROOT / "tests")
                  for line, module, _ in _imports(path) if module.split(".")[0] in SCRIPTS]
    assert _script_imports() + from_tests == []


def test_no_model_is_imported_from_graphtrace():
    # graphtrace's agent_models module re-exports the model layer's names for graphtrace itself;
    # everyone else imports neither that module nor a model name from graphtrace
    offenders = []
    for path in [*_python_files(ROOT / "tests"), *(p for _, p in _project_modules())]:
        if path.is_relative_to(ROOT / "graphtrace"):
            continue
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[0] != "graphtrace":
                continue
            if "agent_models" in parts or "agent_models" in names or MODEL_NAMES.intersection(names):
                offenders.append(f"{path.relative_to(ROOT)}:{line} {module} {sorted(names)}")
    assert offenders == []


FAULTBENCH = "toolkits.faultbench"
FAULTBENCH_INSIDE = (ROOT / "toolkits" / "faultbench", ROOT / "tests" / "faultbench")
"""The package and its own white-box tests (they test private helpers such as ``merge_texts``)."""


def _private_faultbench_imports(paths: list[Path], base: Path = ROOT) -> list[str]:
    """``file:line module`` of each import of a ``toolkits.faultbench._private`` module in ``paths``."""
    offenders = []
    for path in paths:
        for line, module, names in _imports(path):
            parts = module.split(".")
            if parts[:2] != FAULTBENCH.split("."):
                continue
            private = [p for p in [*parts[2:3], *(names if len(parts) == 2 else ())] if _is_private(p)]
            if private:
                offenders.append(f"{path.relative_to(base)}:{line} {module} {private}")
    return offenders


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_nothing_outside_faultbench_imports_its_private_modules():
    """The benchmark harness and everyone else reach faultbench through ``toolkits.faultbench.__all__``."""
    paths = [path for path in [*_python_files(ROOT / "tests"), *(p for _, p in _project_modules())]
             if not any(path.is_relative_to(inside) for inside in FAULTBENCH_INSIDE)]
    assert _private_faultbench_imports(paths) == []


def _path_edits(path: Path) -> list[int]:
    """Lines of ``path`` that change ``sys.path`` (``insert``, ``append``, ``extend``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return sorted(node.lineno for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in ("insert", "append", "extend") and ast.unparse(node.func.value) == "sys.path")


def test_no_benchmark_edits_sys_path():
    """Benchmarks import the installed packages; one that needs ``benchmarks.*`` runs as ``python -m``."""
    edits = [f"{path.relative_to(ROOT)}:{line}" for path in _python_files(ROOT / "benchmarks")
             for line in _path_edits(path)]
    assert edits == []


def test_the_checks_see_a_violation(tmp_path):
    # the parser must find lazy imports inside functions, or the rules above would pass vacuously
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from toolkits._base import ApiPool\n    import run_error_attribution\n")
    assert [m for _, m, _ in _imports(probe)] == ["toolkits._base", "run_error_attribution"]
    assert ("membase", "toolkits") not in _dependencies()
    assert {"run_error_attribution", "generate_report"} <= SCRIPTS
    private = tmp_path / "private.py"
    private.write_text("from toolkits.faultbench._build import case_nodes\nfrom toolkits.faultbench import _catalog\n"
                       "import toolkits.faultbench._labels\nfrom toolkits.faultbench import Fault\n"
                       "from toolkits.faultbench.__main__ import main\n")
    assert _private_faultbench_imports([private], base=tmp_path) == [
        "private.py:1 toolkits.faultbench._build ['_build']", "private.py:2 toolkits.faultbench ['_catalog']",
        "private.py:3 toolkits.faultbench._labels ['_labels']"]
    private.write_text("import sys\nsys.path.insert(0, 'x')\n# sys.path.append('y')\nsys.path.append('z')\n")
    assert _path_edits(private) == [2, 4]
