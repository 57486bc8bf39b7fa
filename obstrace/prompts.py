"""Prompt texts of the flat-log agent and the long-context baseline, written for this project.

Glossary of the placeholders (``str.format`` fields):

* ``{instructions}`` — the attribution instructions (``OBS_INSTRUCTIONS``);
* ``{question}``, ``{golden_answer}``, ``{prediction}`` — the failed case;
* ``{source_evidence}`` — rendered source-evidence list (``render_source_evidence``);
* ``{execution_trace}`` — the flattened (possibly budgeted) trace.

Hints are wrapped in ``<system-hint>`` tags and shown as the last user message of a model call.
"""

from __future__ import annotations

__all__ = [
    "LONG_CONTEXT_SYSTEM_PROMPT",
    "LONG_CONTEXT_TASK_TEMPLATE",
    "NO_SOURCE_EVIDENCE",
    "OBS_HINT_ACTIVE",
    "OBS_HINT_START",
    "OBS_INSTRUCTIONS",
    "OBS_SYSTEM_PROMPT",
    "OBS_TASK_TEMPLATE",
    "REASON_REQUIREMENT",
]

OBS_SYSTEM_PROMPT = (
    "You attribute failures of LLM memory systems by reading their execution traces. "
    "Work carefully: look at the evidence in the trace with the trace tools before you decide, "
    "and ground every claim in what the trace shows."
)

LONG_CONTEXT_SYSTEM_PROMPT = (
    "You attribute failures of LLM memory systems by reading their execution traces. "
    "The whole trace is in the task message: read it end to end before you decide, and ground "
    "every claim in what the trace shows."
)

OBS_INSTRUCTIONS = """\
## Goal
Find the earliest decisive faulty operation of this failed question: the first operation, in
execution order, whose own mistake made the final answer wrong.

## What a healthy run looks like
1. Construction stores the information the question needs in some memory unit.
2. Every later operation on that unit keeps the information: nothing removes, overwrites,
   over-summarises or blurs it.
3. Retrieval brings back units that hold the information.
4. The answering model uses the retrieved information correctly.
Compare the trace with this picture and find where it first breaks in a way that matters.

## Words used below
- Faulty: the operation's outputs are wrong or insufficient for its own job, given its inputs and
  the evidence it could see. Being early, or being upstream of the failure, is not a fault.
- Decisive: if only this operation's output were corrected (earlier operations unchanged, later
  ones behaving ideally), the question would have been answered correctly.
- Earliest: the first faulty and decisive operation by execution (creation) time, which is not
  necessarily the one that handled the oldest message.

## Checklist before answering
1. Work out which information the question needs (compare the golden answer and the evidence).
2. Go through candidate operations in execution order and judge whether each did its own job.
3. When an operation did its job, follow its outputs to the operations that consume them.
4. Once the information is in a memory unit, follow every later operation that touches that unit
   for the unit's whole life. If the information moves to another unit or an intermediate value
   and leaves the original one, follow the new holder so that you know some unit still has it.
5. If the information never got into any unit, the fault is an ExtractionError of the
   construction operation responsible for capturing it.
6. If a unit held it and a later operation removed or degraded it, the fault is an UpdateError
   (rewritten or merged away) or a DeletionError (the unit was explicitly deleted) of that operation.
7. Blame retrieval (RetrievalError) only when the store held the information before retrieval
   and the final retrieved context lacks it.
8. Blame the response (ResponseError) only when the final context held all the evidence and the
   answer is still wrong.

## Error types
- ExtractionError: the critical information was never captured into any memory unit.
- UpdateError: a unit held it, then a later update removed or degraded it.
- DeletionError: a unit that held it was explicitly deleted.
- RetrievalError: the store held it, but the final retrieved context does not.
- ResponseError: the context held all the evidence, yet the final model answered wrongly.

## Your answer
Give exactly one attribution: the error type, the operation id of the earliest decisive faulty
operation (exactly as the trace writes it), and a reason grounded in the trace that explains the
operation's local fault, why correcting it would rescue the answer, and why earlier candidates
are not decisive."""

REASON_REQUIREMENT = (
    "the reason must explain, from the trace, what this operation got wrong locally, why fixing it "
    "would have rescued the answer, and why earlier candidate operations are not decisive"
)

_ROLE_LINE = "You are diagnosing a failed question of a question-answering system that relies on a memory system."

OBS_TASK_TEMPLATE = (
    _ROLE_LINE
    + " Its execution trace is a chronological log of operation blocks that you can inspect with the "
    "trace tools (inspect_trace, grep_log, view_log_window, view_operation); inspect the evidence "
    "before you decide.\n\n"
    "{instructions}\n\n"
    "Question:\n{question}\n\n"
    "Golden answer:\n{golden_answer}\n\n"
    "Model's wrong answer:\n{prediction}"
)

LONG_CONTEXT_TASK_TEMPLATE = (
    _ROLE_LINE
    + " Its execution trace, a chronological log of operation blocks, is given in full at the end of "
    "this message. The source evidence listed below may include items that do not matter for the "
    "question: judge each one.\n\n"
    "{instructions}\n\n"
    "Question:\n{question}\n\n"
    "Golden answer:\n{golden_answer}\n\n"
    "Model's wrong answer:\n{prediction}\n\n"
    "Source evidence:\n{source_evidence}\n\n"
    "Execution trace:\n{execution_trace}"
)

NO_SOURCE_EVIDENCE = "No relevant source-evidence nodes were identified for this question."

OBS_HINT_START = (
    "A flattened execution trace of the memory system is available. Before any work that depends "
    "on it, call inspect_trace to see its size and its first and last operations."
)

OBS_HINT_ACTIVE = (
    "The trace is loaded. Keep using only the four trace tools (inspect_trace, grep_log, "
    "view_log_window, view_operation), decide from what you have already seen, and do not repeat "
    "searches you have already made. When you are sure, give the structured attribution."
)
