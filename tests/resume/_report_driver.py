"""``report_cli.main`` with a scripted model per batch, for the resume tests (see ``_kill``).

Batch k answers ``report after batch k (<its first query id>)``; batch ``$MEMTRACE_TEST_HANG``
(1-based) never answers. Every model built is logged as ``batch k``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tests.resume import _kill


def factory(batch_index: int):  # noqa: ANN201
    from membase.clients import STRUCTURED_OUTPUT_TOOL, FunctionChatModel, ScriptedChatModel, ToolCall

    batch = batch_index + 1
    _kill.log_call(f"batch {batch}")
    if str(batch) == os.environ.get("MEMTRACE_TEST_HANG"):
        async def hang(messages, tools, choice):  # noqa: ANN001, ANN202
            _kill.mark_hanging()
            await asyncio.sleep(3600)

        return FunctionChatModel(hang)
    return ScriptedChatModel([ToolCall(name=STRUCTURED_OUTPUT_TOOL,
                                       args={"rationale": f"batch {batch}", "report": f"report after batch {batch}"})])


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a test runner's worker may pass SIG_IGN down
    _kill.install()
    from toolkits._console import run_console
    from toolkits.report import cli as report_cli

    run_console(lambda: report_cli.main(sys.argv[1:], model_factory=factory))
