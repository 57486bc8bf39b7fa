"""``attribution_cli.main`` with a scripted strategy, for the resume tests (see ``_kill``).

The strategy ``resume_scripted`` needs no model (so no agent framework is imported and a driver
starts fast): it logs each case it attributes and answers the case's own annotated type and op
(these tests compare outputs, not accuracy); the case whose ``final_error_type`` is
``$MEMTRACE_TEST_HANG`` never finishes.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from types import SimpleNamespace

from tests.resume import _kill

STRATEGY = "resume_scripted"
REASON = ("The trace shows the fact reaching this operation and leaving it changed, and every later step only "
          "carried the changed fact forward, so this is where the answer was lost.")


async def scripted(ctx):  # noqa: ANN001, ANN201
    annotation = ctx.case.metadata["annotation"]
    _kill.log_call(f"{ctx.graph.graph_id} {annotation['final_error_type']}")
    if annotation["final_error_type"] == os.environ.get("MEMTRACE_TEST_HANG"):
        _kill.mark_hanging()
        await asyncio.sleep(3600)
    prediction = {"error_type": annotation["final_error_type"], "op_id": annotation["final_op_id"], "reason": REASON}
    return SimpleNamespace(prediction=prediction, failure=None,
                           usage={"input_tokens": 100, "output_tokens": 10, "num_calls": 1})


def register() -> None:
    """Register the scripted strategy (tests unregister it afterwards)."""
    from toolkits.strategies import register_strategy

    register_strategy(STRATEGY, scripted, needs_model=False, replace=True)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a test runner's worker may pass SIG_IGN down
    _kill.install()
    register()
    from toolkits._console import run_console
    from toolkits.attribution import cli as attribution_cli

    run_console(lambda: attribution_cli.main(sys.argv[1:]))  # warnings print as the console script's
