"""``run_error_attribution.main`` with scripted models, for the resume tests (see ``_kill``).

Each case's model is logged and answers the case's own annotated type and op (the tests compare
outputs, not accuracy); the case whose ``final_error_type`` is ``$MEMTRACE_TEST_HANG`` blocks.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from tests.resume import _kill

REASON = ("The trace shows the fact reaching this operation and leaving it changed, and every later step only "
          "carried the changed fact forward, so this is where the answer was lost.")


def factory(ctx):  # noqa: ANN001, ANN201
    from graphtrace.agent_models import FunctionChatModel, ScriptedChatModel, answer

    annotation = ctx.case.metadata["annotation"]
    _kill.log_call(f"{ctx.graph.graph_id} {annotation['final_error_type']}")
    if annotation["final_error_type"] == os.environ.get("MEMTRACE_TEST_HANG"):
        async def hang(messages, tools, choice):  # noqa: ANN001, ANN202
            _kill.mark_hanging()
            await asyncio.sleep(3600)

        return FunctionChatModel(hang)
    return ScriptedChatModel([answer(annotation["final_error_type"], annotation["final_op_id"], REASON)])


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a test runner's worker may pass SIG_IGN down
    _kill.install()
    import run_error_attribution

    sys.exit(run_error_attribution.main(sys.argv[1:], model_factory=factory))
