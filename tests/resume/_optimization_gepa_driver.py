"""``optimization_command.main`` with ``--optimizer gepa`` and the scripted reflection model, for the resume tests.

Usage: ``python -m tests.resume._optimization_gepa_driver ARGS``; ``MEMTRACE_TEST_KILL`` (see
``_kill``) says where the process kills itself.
"""

from __future__ import annotations

import signal
import sys

from tests.resume import _kill

if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a test runner's worker may pass SIG_IGN down
    _kill.install()
    from tests.resume._optimization_scripted import reflect
    from toolkits._console import run_console
    from toolkits.optimization import command as optimization_command
    from toolkits.optimization import gepa_backend

    gepa_backend.reflection_model = lambda _spec, **_kw: reflect
    run_console(lambda: optimization_command.main(sys.argv[1:]))
