"""One exception root: every user-facing error class of the packages derives from MemTraceError.

The walk imports every module of the six packages (``__main__`` modules excepted: importing one
runs its CLI) and collects each exception class defined there. A new error class that forgets
the root fails ``test_every_user_facing_error_derives_from_the_root``; an internal one must be
listed in ``EXEMPT`` with the reason it never reaches a user.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from membase.exceptions import ConfigError, MemoryNotFoundError
from membase.exceptions import MemTraceError as ReexportedRoot
from smartcomment import GraphFormatError
from smartcomment.runtime.errors import ExecNetworkKeyError, MemTraceError

PACKAGES = ("smartcomment", "membase", "graphtrace", "obstrace", "toolkits", "annotation_interface")

EXEMPT = {
    "graphtrace.agent_models._InnerTimeoutError": "tags a TimeoutError raised inside the agent's reply (an HTTP "
    "read timeout) apart from the reply's own time limit; caught in the same function, never escapes",
    "toolkits.runner._InnerTimeoutError": "tags a strategy's own TimeoutError apart from the case time limit; "
    "caught by the runner, which records the case's failure; never escapes",
}


def _import(module_name: str) -> object | None:
    """The module, or None when it needs an optional extra that is not installed (CI installs them all)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] in PACKAGES:
            raise  # one of ours is missing: a real error
        return None


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        names = [package_name] + [info.name for info in pkgutil.walk_packages(package.__path__, f"{package_name}.")]
        for module_name in names:
            if module_name.rsplit(".", 1)[-1] == "__main__":
                continue
            module = _import(module_name)
            if module is None:
                continue
            for obj in vars(module).values():
                if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module_name:
                    found[f"{module_name}.{obj.__qualname__}"] = obj
    return found


@pytest.fixture(scope="module")
def exception_classes() -> dict[str, type[BaseException]]:
    return _exception_classes()


def test_the_walk_finds_the_known_error_families(exception_classes: dict[str, type[BaseException]]) -> None:
    # guards the walk itself: an empty or partial walk would make the next test pass vacuously
    for name in ("smartcomment.runtime.errors.GraphFormatError", "membase.exceptions.ConfigError",
                 "obstrace.exceptions.PatternError", "toolkits.bench_utils.BenchmarkDataMissingError",
                 "toolkits.report.inputs.ReportInputError", "annotation_interface.loader.GraphFileError",
                 "graphtrace.rendering.RegexSearchError"):
        assert name in exception_classes
    assert len(exception_classes) >= 40


def test_every_user_facing_error_derives_from_the_root(exception_classes: dict[str, type[BaseException]]) -> None:
    outside = sorted(name for name, cls in exception_classes.items()
                     if name not in EXEMPT and cls is not MemTraceError and not issubclass(cls, MemTraceError))
    assert outside == [], f"derive these from smartcomment.runtime.errors.MemTraceError (or list them in EXEMPT): {outside}"


def test_exempt_entries_name_existing_classes_outside_the_root(
        exception_classes: dict[str, type[BaseException]]) -> None:
    for name in EXEMPT:
        assert name in exception_classes, f"stale EXEMPT entry {name}"
        assert not issubclass(exception_classes[name], MemTraceError), f"{name} derives from the root: unlist it"


def test_the_root_is_one_class_reexported_by_membase() -> None:
    assert ReexportedRoot is MemTraceError
    assert MemTraceError.__bases__ == (Exception,)


@pytest.mark.parametrize(("error", "builtin"), [
    (GraphFormatError("bad graph"), ValueError),
    (ExecNetworkKeyError("n1"), KeyError),
    (ConfigError("bad key"), ValueError),
    (MemoryNotFoundError("no memory"), FileNotFoundError),
])
def test_errors_keep_their_builtin_base(error: Exception, builtin: type[Exception]) -> None:
    # callers written before the root existed catch the built-in base
    with pytest.raises(builtin):
        raise error
    with pytest.raises(MemTraceError):
        raise error
