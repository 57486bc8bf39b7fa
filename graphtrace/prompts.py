"""Prompts of the attribution agents, written for this project.

Glossary of the template fields (``str.format`` placeholders):

* ``{instructions}`` — :data:`GRAPH_ATTRIBUTION_INSTRUCTIONS` (plus a system prior) for the graph
  templates, :data:`TRACE_ATTRIBUTION_INSTRUCTIONS` for the flat-log and long-context ones;
* ``{question}``, ``{golden_answer}``, ``{prediction}`` — the failed QA case;
* ``{query_node}`` — :func:`format_query_node`; ``{source_evidence}`` — :func:`format_source_evidence`;
* ``{execution_trace}`` — the flattened trace (long-context baseline only).

The graph-search, operation-block-search (``obstrace``) and long-context agents all take their
task text from :data:`TASK_PROMPT_TEMPLATES` through :func:`build_task_prompt`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

__all__ = [
    "GRAPH_ATTRIBUTION_INSTRUCTIONS",
    "GRAPH_SEARCH_SYSTEM_PROMPT",
    "LONG_CONTEXT_SYSTEM_PROMPT",
    "NO_SOURCE_EVIDENCE",
    "SYSTEM_PRIOR_INSTRUCTIONS",
    "TASK_PROMPT_TEMPLATES",
    "TRACE_ATTRIBUTION_INSTRUCTIONS",
    "TRACE_SEARCH_SYSTEM_PROMPT",
    "TemplateKey",
    "build_instructions",
    "build_task_prompt",
    "choose_template",
    "format_query_node",
    "format_source_evidence",
]

GRAPH_SEARCH_SYSTEM_PROMPT = (
    "You are a meticulous failure-attribution agent for LLM memory systems. You work on an execution "
    "graph of operations and variables. Use the graph-trace tools to look at the actual evidence before "
    "you conclude anything, and base every claim on what the graph shows."
)
TRACE_SEARCH_SYSTEM_PROMPT = (
    "You are a meticulous failure-attribution agent for LLM memory systems. You work on a flattened "
    "execution trace. Use the trace tools to look at the actual evidence before you conclude anything, "
    "and base every claim on what the trace shows."
)
LONG_CONTEXT_SYSTEM_PROMPT = (
    "You are a meticulous failure-attribution agent for LLM memory systems. The whole execution trace is "
    "in the task message: read all of it before answering, and base every claim on what it shows."
)

_GOAL = """\
## Goal
Find the earliest decisive faulty operation behind the wrong answer: the first operation, in execution \
order, whose own output was wrong for its role and without which the answer would have been right."""

_READING_THE_GRAPH = """\
## Reading the execution graph
- An operation is a small subgraph of one or more hops. Inside it, variables with no incoming edge are \
its inputs, variables with incoming edges were produced by it, and variables with no outgoing edge are \
its final outputs.
- Judge an operation by everything it shows: name, category and comment; inputs, produced and output \
variables with their values and comments; how they connect; and their timestamps.
- An operation that did its own job correctly is not the error, even if the answer failed later. Move \
downstream instead: add its final outputs to the to-explore frontier and follow them.
- "Earliest" means earliest in execution (creation time of the operation), not "touching the oldest \
source message"."""

_IDEAL_PIPELINE = """\
## What a correct run looks like
Compare the run against this ideal and look for the first point where it breaks decisively:
1. Construction writes the critical information into one or more memory units.
2. Every later operation on such a unit keeps that information (no dropping, overwriting, \
over-summarising or degrading it).
3. Retrieval returns units that hold the information.
4. The answering model uses the retrieved information correctly."""

_DEFINITIONS = """\
## Definitions
- Faulty: given its inputs and the evidence available to it, the operation's outputs are wrong or \
insufficient for its own role. Being early, or being upstream of the failure, does not make an operation \
faulty.
- Decisive: correcting only this operation's output (earlier operations unchanged, later ones assumed to \
behave ideally) would have produced the right answer.
- Earliest: among decisive faulty operations, the first one in execution order."""

_CHECKLIST_GRAPH = """\
## Checklist before you answer
1. Work out the critical information the question needs (from the question, the golden answer and the \
source evidence).
2. Examine the candidate operations in execution order and decide, for each, whether it did its own job.
3. After an operation that did its job, continue with its final outputs downstream.
4. Once the information is inside a memory unit, follow every later operation that touches that unit for \
as long as it exists. If the information moves to another unit or an intermediate variable and leaves the \
original one, follow the new holder and make sure some unit still keeps it.
5. If the information never made it into any unit, the error is an ExtractionError of the construction \
operation responsible for capturing it.
6. If a unit held it and a later operation removed or degraded it, the error is an UpdateError (the unit \
was rewritten) or a DeletionError (the unit was explicitly removed) of that later operation.
7. Claim a RetrievalError only if the store held the information before retrieval and the final retrieved \
context lacks it.
8. Claim a ResponseError only if the final context held all the needed evidence and the answer is still \
wrong."""

_CHECKLIST_TRACE = _CHECKLIST_GRAPH.replace(
    "3. After an operation that did its job, continue with its final outputs downstream.",
    "3. After an operation that did its job, continue downstream.",
)

_ERROR_TYPES = """\
## Error types
- ExtractionError: the critical information was never captured into any memory unit.
- UpdateError: a unit held the information and a later update removed or degraded it.
- DeletionError: a unit holding the information was explicitly deleted.
- RetrievalError: the store held the information, but the final retrieved context does not.
- ResponseError: the final context held all the evidence, yet the answering model was wrong."""

_OUTPUT = """\
## Your answer
Give exactly one attribution:
- `error_type`: one of the five error types above;
- `op_id`: the id of the earliest decisive faulty operation, exactly as shown in the {medium};
- `reason`: grounded in {medium} evidence — what the operation got wrong in its own role, why correcting \
it would rescue the answer, and why earlier candidate operations are not decisive."""

GRAPH_ATTRIBUTION_INSTRUCTIONS = "\n\n".join(
    [
        _GOAL,
        _READING_THE_GRAPH,
        _IDEAL_PIPELINE,
        _DEFINITIONS,
        _CHECKLIST_GRAPH,
        _ERROR_TYPES,
        _OUTPUT.format(medium="graph"),
    ]
)
"""Attribution instructions for the graph-search agent."""

TRACE_ATTRIBUTION_INSTRUCTIONS = "\n\n".join(
    [_GOAL, _IDEAL_PIPELINE, _DEFINITIONS, _CHECKLIST_TRACE, _ERROR_TYPES, _OUTPUT.format(medium="trace")]
)
"""Attribution instructions for the flat-log and long-context agents (no graph-reading part)."""

_PRIOR_TAIL = (
    "- Whatever the priorities above suggest, the answer is still the globally earliest decisive fault."
)

SYSTEM_PRIOR_INSTRUCTIONS: dict[str, str] = {
    "rag": f"""\
## Prior knowledge: the RAG memory system
How it works:
- Construction buffers incoming turns and counts their tokens. When the next turn would overflow the \
token budget and the buffer is not empty, the buffer as it was before that turn becomes one document, \
which is stored as a memory unit.
- Retrieval takes the top-k units for the user's question; the answering model answers from them.
Where to look first:
- Check retrieval first: does the retrieved context already contain all the required evidence? If it \
does, go straight to diagnosing the response.
{_PRIOR_TAIL}""",
    "mem0": f"""\
## Prior knowledge: the Mem0 memory system
How it works:
- For each message an LLM extracts key facts. Each fact is used to search the store for similar units, \
and an LLM decides to add, update or delete units.
- Retrieval searches with the raw user question; a QA model answers from the retrieved units.
Where to look first:
- Confirm extraction first. If the information reached some units, follow those same unit ids through \
every later update or deletion before blaming retrieval; then check that retrieval was complete; only \
then consider the response.
{_PRIOR_TAIL}""",
    "evermemos": f"""\
## Prior knowledge: the EverMemOS memory system
How it works:
- Messages go into a running buffer with boundary detection. A closed segment is finalised into an event \
memory unit (with an event id), enriched (episode memory, optionally an event log and foresight), \
indexed, its raw fields cleaned, and the buffer reset.
- Retrieval round 1: hybrid retrieval builds a candidate pool, an evidence set is chosen for the \
sufficiency check (a reranked subset when the reranker is on), and an LLM judges sufficiency. If \
sufficient, the top-k of round 1 is used. Otherwise round 2 writes follow-up queries from the missing \
information, retrieves for each, and fuses the results (reciprocal-rank fusion over the queries).
- Finally the rounds are merged, deduplicated by event identity, bounded, reranked or truncated, and the \
top-k context goes to the answering model.
Where to look first:
- Validate segmentation and memory formation first. For retrieval, follow the branch that actually ran, \
end to end: candidates, fusion, round 2 if any, merge and dedup, final selection. Consider the response \
only after confirming the final context is good.
{_PRIOR_TAIL}""",
    "long_context": f"""\
## Prior knowledge: the long-context memory system
How it works:
- Every turn is merged into one persistent long-context memory unit; when it overflows, the oldest \
content is trimmed in the same update.
- Retrieval simply returns that unit; the answering model answers from it.
Where to look first:
- First check whether the required evidence was trimmed away. Prefer blaming the update stage over \
retrieval (retrieval only passes the unit through). With no update fault, diagnose the response.
{_PRIOR_TAIL}""",
}
"""Per-memory-system priors, appended to the graph instructions when requested."""

NO_SOURCE_EVIDENCE = "There are no relevant source-evidence nodes for this case."

_ROLE = "You are attributing the failure of a memory-based question-answering system."
_ANSWERS = "Question:\n{question}\n\nGolden answer:\n{golden_answer}\n\nModel's wrong answer:\n{prediction}"

TemplateKey = Literal[
    "with_source_evidence_initial_nodes",
    "with_pseudo_source_evidence_initial_nodes",
    "without_initial_nodes",
    "operation_block_search",
    "long_context",
]

TASK_PROMPT_TEMPLATES: dict[str, str] = {
    "with_source_evidence_initial_nodes": (
        f"{_ROLE} The execution graph is already loaded: the to-explore frontier holds the query node and the "
        "source-evidence message nodes that contain the information needed to answer.\n\n{instructions}\n\n"
        f"{_ANSWERS}\n\nQuery node:\n{{query_node}}\n\nSource evidence:\n{{source_evidence}}"
    ),
    "with_pseudo_source_evidence_initial_nodes": (
        f"{_ROLE} The execution graph is already loaded: the to-explore frontier holds the query node and "
        "message nodes found by a retriever. They are only candidates and may not be the true evidence: check "
        "them, and find the real evidence by inspecting the graph.\n\n{instructions}\n\n"
        f"{_ANSWERS}\n\nQuery node:\n{{query_node}}\n\nSource evidence:\n{{source_evidence}}"
    ),
    "without_initial_nodes": (
        f"{_ROLE} The execution graph is reachable through your tools, but no starting nodes are given: "
        "load the graph and explore it first.\n\n{instructions}\n\n"
        f"{_ANSWERS}\n\nQuery node:\n{{query_node}}"
    ),
    "operation_block_search": (
        f"{_ROLE} The execution trace is reachable through your trace-inspection tools: inspect the evidence "
        f"before you decide.\n\n{{instructions}}\n\n{_ANSWERS}"
    ),
    "long_context": (
        f"{_ROLE} The whole execution trace is given below. The source-evidence list may contain irrelevant "
        "items: judge each one.\n\n{instructions}\n\n"
        f"{_ANSWERS}\n\nSource evidence:\n{{source_evidence}}\n\nExecution trace:\n{{execution_trace}}"
    ),
}
"""Task templates by key (see the module docstring for the fields)."""


def _value_of(variable: Any) -> str:
    raw = getattr(variable, "raw_value", None)
    return str(variable.value) if raw is None else str(raw)


def format_query_node(query_variable: Any) -> str:
    """Render the query node for a task prompt (id and value)."""
    return f"Full Node Identifier: {query_variable.full_node_id}\nValue: {_value_of(query_variable)}"


def format_source_evidence(variables: Sequence[Any]) -> str:
    """Render evidence variables (id, creation time, value), or the no-evidence sentence."""
    if not variables:
        return NO_SOURCE_EVIDENCE
    blocks = [
        f"### Source Evidence {i}\n"
        f"Full Node Identifier: {v.full_node_id}\n"
        f"Creation Timestamp In Execution Graph: {v.created_at}\n"
        f"Value: {_value_of(v)}"
        for i, v in enumerate(variables, start=1)
    ]
    return "\n\n".join(blocks)


def build_instructions(
    *, graph: bool = True, memory_system: str | None = None, custom_prior: str | None = None
) -> str:
    """Attribution instructions, with a system prior for the graph variant.

    Args:
        graph: Graph-search instructions (True) or trace instructions (False; never a prior).
        memory_system: Key of :data:`SYSTEM_PRIOR_INSTRUCTIONS`; unknown keys warn and add nothing.
        custom_prior: Prior text that replaces the built-in one.

    Returns:
        The instructions text.
    """
    if not graph:
        return TRACE_ATTRIBUTION_INSTRUCTIONS
    prior = custom_prior
    if prior is None and memory_system is not None:
        prior = SYSTEM_PRIOR_INSTRUCTIONS.get(memory_system)
        if prior is None:
            warnings.warn(
                f"no built-in system prior for memory system {memory_system!r} "
                f"(known: {', '.join(SYSTEM_PRIOR_INSTRUCTIONS)}); continuing without one",
                stacklevel=2,
            )
    return GRAPH_ATTRIBUTION_INSTRUCTIONS if not prior else f"{GRAPH_ATTRIBUTION_INSTRUCTIONS}\n\n{prior}"


def choose_template(
    *, exploration_strategy: str = "graph_search", evidence_kind: Literal["real", "pseudo"] | None = None
) -> TemplateKey:
    """Pick the task template for a strategy and the kind of starting evidence.

    Raises:
        ValueError: unknown strategy or evidence kind.
    """
    if exploration_strategy == "operation_block_search":
        return "operation_block_search"
    if exploration_strategy == "long_context":
        return "long_context"
    if exploration_strategy != "graph_search":
        raise ValueError(
            f"unknown exploration_strategy {exploration_strategy!r}; use 'graph_search', "
            "'operation_block_search' or 'long_context'"
        )
    if evidence_kind is None:
        return "without_initial_nodes"
    if evidence_kind == "pseudo":
        return "with_pseudo_source_evidence_initial_nodes"
    if evidence_kind == "real":
        return "with_source_evidence_initial_nodes"
    raise ValueError(f"unknown evidence_kind {evidence_kind!r}; use 'real', 'pseudo' or None")


def build_task_prompt(
    template: TemplateKey,
    *,
    instructions: str,
    question: str,
    golden_answer: str,
    prediction: str,
    query_node: str = "",
    source_evidence: str = NO_SOURCE_EVIDENCE,
    execution_trace: str = "",
) -> str:
    """Fill a task template (extra fields a template does not use are ignored)."""
    try:
        text = TASK_PROMPT_TEMPLATES[template]
    except KeyError:
        raise ValueError(
            f"unknown task template {template!r}; choose one of {', '.join(TASK_PROMPT_TEMPLATES)}"
        ) from None
    return text.format(
        instructions=instructions,
        question=question,
        golden_answer=golden_answer,
        prediction=prediction,
        query_node=query_node,
        source_evidence=source_evidence,
        execution_trace=execution_trace,
    )
