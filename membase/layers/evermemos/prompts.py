"""Prompts of our EverMemOS implementation, written for this project.

Every template is a `string.Template` (`$name` placeholders, so JSON braces need no escaping).
The first line of each prompt is a fixed task tag (`[task: ...]`); the in-library fake model
(`membase.layers.evermemos.fake`) dispatches on it, and logs stay greppable.

Glossary of placeholders:
    $history        rendered history lines `[YYYY-MM-DD HH:MM:SS] speaker: text`
    $new_messages   rendered new message lines, same shape
    $time_gap       one sentence describing the pause before the new messages
    $time           the segment's reference time (human readable)
    $conversation   the segment's messages
    $instructions   fixed style instructions for episodes
    $query          the user's question
    $documents      retrieved documents rendered as `Document i:` blocks
    $key_info       key facts already found (comma separated, or N/A)
    $missing_info   information still missing (comma separated, or N/A)
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator, Mapping
from string import Template
from typing import Any, TypeVar

__all__ = [
    "BOUNDARY_DETECTION_PROMPT",
    "EPISODE_CUSTOM_INSTRUCTIONS",
    "EPISODE_EXTRACTION_PROMPT",
    "EVENT_LOG_PROMPT",
    "FORESIGHT_PROMPT",
    "MULTI_QUERY_PROMPT",
    "REFINED_QUERY_PROMPT",
    "SUFFICIENCY_CHECK_PROMPT",
    "PROMPT_TEMPLATES",
    "TASK_TAGS",
    "OverridableTemplate",
    "check_prompt_overrides",
    "prompt_overrides",
    "uses_prompt_overrides",
]

TASK_TAGS = {
    "boundary": "[task: episode-boundary]",
    "episode": "[task: episode-memory]",
    "event_log": "[task: event-log]",
    "foresight": "[task: foresight]",
    "sufficiency": "[task: sufficiency-check]",
    "multi_query": "[task: multi-query]",
    "refined_query": "[task: refined-query]",
}

BOUNDARY_DETECTION_PROMPT = Template(
    TASK_TAGS["boundary"]
    + """
You segment a running conversation into episodes for a long-term memory. An episode is a stretch
of conversation about one coherent subject that is worth remembering as a unit.

Earlier messages of the current (still open) episode:
$history

$time_gap

Newly arrived messages:
$new_messages

Decide whether the newly arrived messages close the current episode, i.e. whether they begin
something new. Consider, in this order:
1. Has the substantive subject changed, or only the wording?
2. Has the speakers' purpose changed (planning -> reminiscing, asking -> deciding ...)?
3. Count only memorable content: greetings, small talk and filler never start an episode.
4. Structure and time: a long pause usually starts a new episode, a quick reply rarely does.
5. Can the new messages be understood without the earlier ones?
Rules of thumb: a greeting followed by a subject is one episode; "by the way" style asides
usually continue; thanks, farewells and short encouragement stay with the current episode;
keep related content together and aim for roughly 3 to 20 meaningful exchanges per episode;
with no earlier messages the answer is always false.

Reply with exactly one JSON object and nothing else:
{"reasoning": "<one or two sentences>", "should_end": true or false, "confidence": <0.0-1.0>,
 "topic_summary": "<short summary of the closed episode, only when should_end is true>"}
"""
)

EPISODE_CUSTOM_INSTRUCTIONS = (
    "Write each episode as a complete story that can be read on its own. Keep every name, time, "
    "place and feeling. Use declarative prose, never dialogue. Bring out the key information and "
    "any change of mood, and phrase it so that it is easy to find again later."
)

EPISODE_EXTRACTION_PROMPT = Template(
    TASK_TAGS["episode"]
    + """
Turn the conversation below into one episodic memory.

Episode time (treat it as when the episode happened): $time

Conversation:
$conversation

Guidelines:
- $instructions
- Keep relative time expressions and add the absolute date in parentheses, computed from the
  episode time (e.g. "yesterday (May 7, 2023)").
- Third person, chronological, concise; keep every fact, entity, number, activity, time point
  and frequency that is mentioned. Use names, never pronouns.
- The content should be no longer than the conversation itself.
- The title is a searchable headline of 10 to 20 words.

Reply with JSON only: {"title": "<title>", "content": "<episode text>"}
"""
)

EVENT_LOG_PROMPT = Template(
    TASK_TAGS["event_log"]
    + """
Write a retrieval-oriented event log of the conversation below.

TIME: $time

Conversation:
$conversation

Rules:
- One atomic fact per item: a single meaning unit that stands on its own.
- Third person, with explicit attribution of who said or did what; resolve every pronoun.
- Keep explicit dates verbatim; resolve relative dates against TIME and append the absolute date.
- Drop greetings and filler; never infer beyond the text.

Reply with JSON only: {"event_log": {"time": "<TIME>", "atomic_fact": ["<fact>", ...]}}
"""
)

FORESIGHT_PROMPT = Template(
    TASK_TAGS["foresight"]
    + """
From the conversation below, predict 4 to 8 concrete, personal changes in future behaviour that
the events imply (at most 10). Each prediction has at most 40 words, one grounded evidence
sentence from the conversation and a time window. Do not summarise the conversation.

Reference time: $time

Conversation:
$conversation

Reply with a JSON array only:
[{"content": "...", "evidence": "...", "start_time": "YYYY-MM-DD", "end_time": "YYYY-MM-DD",
  "duration_days": <int>}]
"""
)

SUFFICIENCY_CHECK_PROMPT = Template(
    TASK_TAGS["sufficiency"]
    + """
Judge whether the documents below are enough to answer the question completely.

Question: $query

Documents:
$documents

Be careful with time: split a temporal question into what it needs (a start, an end, an order
or a duration) and check that each part is stated explicitly. List the key facts you found
(resolved names and dates) and the specific pieces that are still missing. The documents are
sufficient only when every part of the question is covered explicitly.

Reply with strict JSON only:
{"is_sufficient": true or false, "reasoning": "...", "key_information_found": ["..."],
 "missing_information": ["..."]}
"""
)

MULTI_QUERY_PROMPT = Template(
    TASK_TAGS["multi_query"]
    + """
The documents retrieved for a question about a long conversation were not enough. Write 2 or 3
new search queries that will find the missing pieces.

Original question: $query
Key information already found: $key_info
Missing information: $missing_info

Retrieved documents:
$documents

Guidelines: the first query is a question, the second a declarative sentence that sounds like
the answer; recover interval starts, ends and what happened in between; expand relative time
phrases into alternatives (absolute dates, before/after, durations); use the key information to
resolve pronouns; never invent facts; fewer than 25 words each; same language as the question.

Reply with JSON only: {"queries": ["...", "..."], "reasoning": "..."}
"""
)

REFINED_QUERY_PROMPT = Template(
    TASK_TAGS["refined_query"]
    + """
Rewrite the question into one sharper search query that targets the missing information without
changing what is asked.

Question: $query
Missing information: $missing_info

Retrieved documents:
$documents

Examples:
- "When did she move?" with "missing: the year Anna moved" -> "In which year did Anna move to Berlin?"
- "What did they cook?" with "missing: the dish" -> "Which dish did Tom and Ria cook at the party?"
- "How long was the trip?" with "missing: return date" -> "When did Leo return from his trip to Peru?"

Reply with the query only.
"""
)


# -- overrides (the optimization loop rewrites these templates) -----------------------------------

_OVERRIDES: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar(
    "evermemos_prompt_overrides", default=None
)


class OverridableTemplate(Template):
    """A `string.Template` whose text can be replaced for the current context.

    `name` is the graph variable the template is traced as (the key of `prompt_overrides`);
    `class_name`, when set, is the class the tracer records it under, which prefixes its full
    name in the graph (spec-evermemos: the retrieval templates). `template` (read by
    `substitute` and by the tracer) is the override active in this context, else the default.
    """

    def __init__(self, name: str, default: str, class_name: str | None = None) -> None:
        # no super().__init__: `template` is a property
        self.name = name
        self.default = default
        self.class_name = class_name

    @property
    def traced_name(self) -> str:
        """The template's full variable name in a traced graph."""
        return f"{self.class_name}:{self.name}" if self.class_name else self.name

    @property
    def template(self) -> str:  # type: ignore[override]
        """The active text of the template."""
        return (_OVERRIDES.get() or {}).get(self.name, self.default)


BOUNDARY_DETECTION_PROMPT = OverridableTemplate("boundary-detection-prompt-template", BOUNDARY_DETECTION_PROMPT.template)
EPISODE_EXTRACTION_PROMPT = OverridableTemplate("episode-extraction-prompt-template", EPISODE_EXTRACTION_PROMPT.template)
EVENT_LOG_PROMPT = OverridableTemplate("event-log-prompt-template", EVENT_LOG_PROMPT.template)
FORESIGHT_PROMPT = OverridableTemplate("foresight-generation-prompt-template", FORESIGHT_PROMPT.template)
SUFFICIENCY_CHECK_PROMPT = OverridableTemplate(
    "sufficiency-check-prompt-template", SUFFICIENCY_CHECK_PROMPT.template, class_name="sufficiency_check_prompt_template"
)
MULTI_QUERY_PROMPT = OverridableTemplate(
    "multi-query-generation-prompt-template", MULTI_QUERY_PROMPT.template, class_name="multi_query_generation_prompt_template"
)
REFINED_QUERY_PROMPT = OverridableTemplate(
    "refined-query-prompt-template", REFINED_QUERY_PROMPT.template, class_name="refined_query_prompt_template"
)

PROMPT_TEMPLATES: dict[str, OverridableTemplate] = {
    t.name: t
    for t in (
        BOUNDARY_DETECTION_PROMPT,
        EPISODE_EXTRACTION_PROMPT,
        EVENT_LOG_PROMPT,
        FORESIGHT_PROMPT,
        SUFFICIENCY_CHECK_PROMPT,
        MULTI_QUERY_PROMPT,
        REFINED_QUERY_PROMPT,
    )
}
"""Overridable templates by graph variable name (the keys of `EverMemOSConfig.prompt_overrides`)."""


def check_prompt_overrides(overrides: Mapping[str, str]) -> None:
    """Raise ValueError unless every key names a template and every text fills the same placeholders."""
    for name, text in overrides.items():
        if name not in PROMPT_TEMPLATES:
            raise ValueError(f"unknown EverMemOS prompt {name!r}; choose from {sorted(PROMPT_TEMPLATES)}")
        if not isinstance(text, str):
            raise ValueError(f"EverMemOS prompt {name!r} must be text")
        new, default = Template(text), Template(PROMPT_TEMPLATES[name].default)
        if not new.is_valid():
            raise ValueError(f"EverMemOS prompt {name!r}: a '$' that is not a placeholder must be written '$$'")
        if set(new.get_identifiers()) != set(default.get_identifiers()):
            raise ValueError(
                f"EverMemOS prompt {name!r} must use exactly the placeholders "
                f"{sorted('$' + i for i in default.get_identifiers())}"
            )


@contextlib.contextmanager
def prompt_overrides(overrides: Mapping[str, str] | None) -> Iterator[None]:
    """Use `overrides` (graph variable name -> template text) in this context, then restore."""
    token = _OVERRIDES.set(dict(overrides or {}))
    try:
        yield
    finally:
        _OVERRIDES.reset(token)


_F = TypeVar("_F", bound=Callable[..., Any])


def uses_prompt_overrides(method: _F) -> _F:
    """Run a layer method with the layer config's `prompt_overrides` active."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with prompt_overrides(getattr(self.config, "prompt_overrides", None)):
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]
