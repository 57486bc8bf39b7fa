"""Prompts of the report writer (written for this project; spec §8.1 describes their content).

Glossary of the placeholders:

* ``{overview}`` — the target-system overview (:mod:`toolkits.report.overviews`);
* ``{current_report}`` — the report so far, or :data:`NO_REPORT_YET` for the first batch;
* ``{statistics}`` — the one-paragraph summary of the statistical report (counts over *all*
  cases, so proportion claims in the prose are grounded);
* ``{cases}`` — this batch's case chunks (:func:`toolkits.report.rendering.number_case`);
* ``{final_note}`` — :data:`FINAL_BATCH_NOTE` on the last batch, empty otherwise.

Bump :data:`PROMPT_VERSION` whenever a text here changes: saved report versions made with other
prompts are then not resumed.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

__all__ = [
    "FINAL_BATCH_NOTE",
    "NO_REPORT_YET",
    "PROMPT_VERSION",
    "REPORT_AGENT_NAME",
    "ReportVersion",
    "build_system_prompt",
    "build_task_prompt",
]

PROMPT_VERSION = "report-prompts/1"
REPORT_AGENT_NAME = "error_analysis_report"


class ReportVersion(BaseModel):
    """The structured answer of one batch: a new full version of the report."""

    rationale: str = Field(
        description="Short notes on what this version changes and why (kept in the saved version, not in the report).",
    )
    report: str = Field(
        description="The complete, standalone diagnostic report, rewritten in full (it replaces the previous version).",
    )


_SYSTEM = """\
You are a senior failure analyst for LLM memory systems. Over several rounds you are shown failed \
question-answering cases of one target system, each already attributed to the operation that broke \
(with an error type and a reason), and you maintain one diagnostic report about them. The report is \
written for the engineers who build the target system: after reading it they should know which \
failure patterns matter most, where in the pipeline each one arises, why it happens, and what they \
could change to prevent it.

## Target System Overview
{overview}"""

NO_REPORT_YET = (
    "(There is no report yet: these are the first cases you see. Write the initial version of the report.)"
)

FINAL_BATCH_NOTE = (
    "These are the last cases. After this round the report is final and goes to the engineers as it is: "
    "make it complete, coherent and polished."
)

_EXAMPLE_REPORT = """\
Failures of the table question-answering assistant fall into three broad groups: the question is \
linked to the wrong part of the table, the right cells are found but combined wrongly, or a correct \
value is reported in a form the user did not ask for. Linking failures are the most frequent and the \
most damaging, because every later step works faithfully on the wrong data.

Schema-linking errors arise when the assistant maps a phrase of the question to a column or row that \
only resembles the intended one. They cluster around tables with near-synonymous headers ("revenue" \
and "net revenue") and around questions that name an entity by an alias the table does not use. A \
recurring subtype is the silent fallback: when no header matches well, the linker picks the closest \
string instead of asking or abstaining, which turns an answerable ambiguity into a confident wrong \
answer. Matching headers by meaning, and refusing low-confidence links, would remove most of them.

Aggregation errors occur after correct linking: the assistant sums where it should average, counts \
duplicates twice, or ignores a filter stated early in a long question. They are concentrated in \
multi-step questions, where intermediate results are kept only in free text and a condition is lost \
between steps; carrying the filter conditions forward explicitly addresses the pattern.

Presentation errors are the rarest: the computed value is right but is rounded, converted or labelled \
differently from the question's request. They matter mostly for evaluation, since users often accept \
the answer, but they reveal that the final step does not re-read the question.

Overall, the weakest stage is the first one, and improvements there pay off across all question \
types; the aggregation and presentation failures point to a single remedy, carrying the question's \
constraints through every step instead of re-deriving them from intermediate text."""

_INSTRUCTIONS = """\
## Your task in this round
Below are the current version of the report and a new batch of failed cases. Produce the next full \
version of the report: it should summarise, categorise and explain the failure patterns better than \
the current one.
- Let the report evolve: keep what the new cases confirm, refine or split categories they sharpen, add \
patterns they reveal, reorganise when a better structure appears, and correct earlier claims they \
contradict.
- Use each case's error type and reason to find recurring patterns, and read its question, answers, \
evidence and operation subgraph to understand the mechanism behind the failure. Where a category holds \
distinct mechanisms, describe them as subtypes.
- Be concrete about causes and remedies: name the operation (by its operation name, not its id) and \
the stage where a pattern arises, and say what its developers could change (a prompt, a threshold, a \
retrieval setting, a merge or deletion rule) to prevent it.
- Use the overall statistics below for claims about how common a pattern is; do not invent numbers.

## How to read a case's operation subgraph (XML)
- `<variable>` elements are data: their `full_node_id`, `category`, `class`, `<value>`, `<comment>` \
and creation time. `<operation>` elements are steps of the system, with a name, a category and a \
comment. `<edge>` elements connect a source variable to a target variable through an operation.
- Within the subgraph of one operation, variables without incoming edges are its inputs, variables \
with incoming edges were produced by it, and produced variables without outgoing edges are its final \
outputs. Compare the outputs with the inputs to see what the operation kept, changed or dropped.
- Creation times give the execution order.

## How to write the report
- Style: a research or technical report in prose paragraphs, not bullet lists.
- Structure: one opening paragraph giving an overview of the failure landscape; then one paragraph per \
major error category (its defining traits, representative patterns, likely causes, recurring \
behaviours or trade-offs, and the remedies; subcategories folded into the same paragraph); then one \
concluding paragraph on the main findings and what they imply for the system's developers.
- The report must stand on its own as a final document: never mention batches, rounds, iterations, \
versions or case numbers.
- Stay concise. When the report grows, condense by abstracting over similar patterns rather than by \
listing more examples. Aim for the length and level of detail of this example, which analyses a \
different kind of system:

<example_report>
{example}
</example_report>

## Overall statistics of all cases
{statistics}

## Current report
{current_report}

## New failed cases
{cases}
{final_note}"""


def build_system_prompt(overview: str) -> str:
    """The system prompt with the target-system overview."""
    return _SYSTEM.format(overview=overview.strip())


def build_task_prompt(*, current_report: str | None, cases: list[str], statistics: str, final: bool) -> str:
    """The user message of one batch.

    Args:
        current_report: The report so far (None for the first batch).
        cases: The batch's numbered case chunks.
        statistics: The statistical summary shown to the model.
        final: True for the last batch.
    """
    return _INSTRUCTIONS.format(
        example=_EXAMPLE_REPORT,
        statistics=statistics.strip() or "(none)",
        current_report=current_report.strip() if current_report else NO_REPORT_YET,
        cases="\n\n".join(cases),
        final_note=f"\n## Note\n{FINAL_BATCH_NOTE}" if final else "",
    )
