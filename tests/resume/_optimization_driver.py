"""``optimization_command.main`` with a logged fake optimizer, for the resume tests (see ``_kill``).

Usage: ``python -m tests.resume._optimization_driver ARGS`` (ARGS include ``--optimization-dir``
and ``--optimizer-model fake:<reply>``). Each optimizer model built is logged as ``round k`` (k:
the newest ``iteration_<k>`` folder); in round ``$MEMTRACE_TEST_HANG`` the model never answers.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from tests.resume import _kill


def _arg(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def make_factory(argv: list[str]):  # noqa: ANN201
    """The optimizer model factory of a run with these arguments."""
    root = Path(_arg(argv, "--optimization-dir"))
    reply = _arg(argv, "--optimizer-model").removeprefix("fake:")

    def factory(call_index: int):  # noqa: ANN202
        from membase.clients import FunctionChatModel
        from toolkits.optimization.optimizer import fake_optimizer_model

        k = max(int(p.name.rpartition("_")[2]) for p in root.glob("iteration_*") if p.name[10:].isdigit())
        _kill.log_call(f"round {k}")
        if str(k) == os.environ.get("MEMTRACE_TEST_HANG"):
            async def hang(messages, tools, choice):  # noqa: ANN001, ANN202
                _kill.mark_hanging()
                await asyncio.sleep(3600)

            return FunctionChatModel(hang)
        return fake_optimizer_model(reply)

    return factory


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a test runner's worker may pass SIG_IGN down
    _kill.install()
    from toolkits._console import run_console
    from toolkits.optimization import command as optimization_command

    argv = sys.argv[1:]
    run_console(lambda: optimization_command.main(argv, optimizer_model_factory=make_factory(argv)))
