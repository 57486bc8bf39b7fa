"""Prompts of the textual-gradient optimizer (written for this project).

Three stages, three system prompts, three task templates (``string.Template``):

* feedback — one call per (target, attributed failure): what should change in the target's
  value so that this failure would not happen;
* aggregation — merge a target's feedback items into one concise, non-redundant feedback;
* update — rewrite the target's value according to the aggregated feedback.

Glossary of placeholders:
    $target_xml      the target variable rendered as graph XML (value included)
    $role            what the target is for, in one or two sentences
    $requirements    what any new value must keep so that the program can still use it
    $failed_case     one attributed failure (``format_failed_case``)
    $history         earlier values of the target and the feedback they got (may be empty)
    $feedbacks       numbered feedback items (``format_feedback_list``)
    $feedback        the aggregated feedback
    $rejection       why the previous proposal was refused (empty on the first attempt)
"""

from __future__ import annotations

from collections.abc import Sequence
from string import Template

__all__ = [
    "AGGREGATION_SYSTEM_PROMPT",
    "AGGREGATION_TASK",
    "FEEDBACK_SYSTEM_PROMPT",
    "FEEDBACK_TASK",
    "GRAPH_GUIDE",
    "UPDATE_SYSTEM_PROMPT",
    "UPDATE_TASK",
    "format_failed_case",
    "format_feedback_list",
    "format_history",
    "format_rejection",
]

FEEDBACK_SYSTEM_PROMPT = (
    "You review one configurable value of an LLM memory system (usually a prompt) in the light of one "
    "failure that was traced back to an operation depending on it. You write feedback that an engineer "
    "could apply directly: specific, grounded in the trace, and about the value only."
)

AGGREGATION_SYSTEM_PROMPT = (
    "You consolidate review notes. Given several feedback items about the same configurable value, you "
    "write one feedback that keeps every distinct, useful suggestion, drops repetitions, resolves "
    "conflicts in favour of the better-supported suggestion, and stays specific."
)

UPDATE_SYSTEM_PROMPT = (
    "You edit one configurable value of an LLM memory system. You apply the given feedback with the "
    "smallest change that achieves it, keep everything the feedback does not ask to change, and never "
    "break the format the surrounding program relies on."
)

GRAPH_GUIDE = """How to read the execution graph XML:
- <variable> elements are values that existed during the run (messages, prompts, model replies, memory
  units, retrieved context); full_node_id is name@version, and a new version means the value changed.
- <operation> elements are steps of the program (an LLM call, a search, a memory write); their comment
  says what the step does.
- <edge> elements connect an input variable to an output variable through an operation. A variable that
  only feeds edges of an operation is one of its inputs; a variable the operation's edges point to is one
  of its outputs.
- Comments on every element explain its role; read them."""

FEEDBACK_TASK = Template(
    """Write feedback on the target value below so that the failure described afterwards would not happen
again.

## Target
Role: $role
Requirements any new value must meet: $requirements
$target_xml

## Failure attributed to an operation that uses the target
$failed_case
$history
$graph_guide

## Rules
- The program and its data flow are fixed; only the target's value can change.
- Every point must be a concrete change to the value (wording to add, remove or sharpen), tied to what
  the trace shows went wrong.
- Suggest edits, not a full rewrite; keep what already works.
- Respect the target's role and requirements; do not suggest anything that would break them.
- If the failure cannot be prevented by changing this value, say so briefly and suggest nothing risky.

Give a short rationale and the feedback."""
)

AGGREGATION_TASK = Template(
    """Merge the feedback items below, all about the same target value, into one feedback.

## Target
Role: $role

## Feedback items
$feedbacks

## Rules
- Keep each distinct suggestion once; merge overlapping ones.
- Keep concrete details, examples and constraints that matter.
- Drop suggestions that contradict the target's role; when items conflict, keep the one supported by
  more failures.
- Stay focused: the result is feedback for this value, not general advice.

Give a short rationale and the merged feedback."""
)

UPDATE_TASK = Template(
    """Rewrite the target value according to the feedback.

## Target
Role: $role
Requirements the new value must meet: $requirements
$target_xml

## Feedback
$feedback
$rejection
## Rules
- Apply the feedback; leave unrelated parts of the value as they are.
- Keep the value's format: placeholders, output formats, key names and fixed markers must survive.
- Return the complete new value, not a diff or a description of it.

Give a short rationale and the improved value."""
)


def format_failed_case(
    *,
    error_type: str,
    op_id: str,
    reason: str,
    op_graph_xml: str,
    question: str | None = None,
    golden_answer: str | None = None,
    prediction: str | None = None,
) -> str:
    """The failure block of the feedback task."""
    lines = [f"Error type: {error_type}", f"Attributed operation id: {op_id}", f"Reason: {reason}"]
    if question is not None:
        lines.append(f"Question: {question}")
    if golden_answer is not None:
        lines.append(f"Expected answer: {golden_answer}")
    if prediction is not None:
        lines.append(f"Answer given: {prediction}")
    lines += ["", "Subgraph of the attributed operation:", op_graph_xml or "<graph />"]
    return "\n".join(lines)


def format_history(records: Sequence[tuple[str, str]]) -> str:
    """The optimization history block (empty string when there is none)."""
    if not records:
        return ""
    parts = ["", "### Optimization History"]
    for i, (value, feedback) in enumerate(records, start=1):
        parts += [f"#### History Record {i}", "Previous Target Value:", value, "Feedback Suggestion:", feedback]
    return "\n".join(parts) + "\n"


def format_feedback_list(feedbacks: Sequence[str]) -> str:
    """Numbered feedback items of the aggregation task."""
    return "\n\n".join(f"#### Feedback {i}\nFeedback content:\n{text}" for i, text in enumerate(feedbacks, start=1))


def format_rejection(value: str, problems: Sequence[str]) -> str:
    """Why the previous proposal was refused (shown on a retry of the update)."""
    listed = "\n".join(f"- {p}" for p in problems)
    return (
        "\n## Your previous proposal was rejected\n"
        f"It broke these requirements:\n{listed}\n"
        "Fix them while still applying the feedback. The rejected proposal was:\n"
        f"{value}\n"
    )
