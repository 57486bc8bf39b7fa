r"""What an optimized prompt must keep so that the program reading it still works.

A contract is ``fn(value) -> list[str]``: the problems of a proposed value (empty = accepted).
The optimizer shows the problems to the model and asks again; a value that still breaks its
contract is dropped and the target keeps its current value.

The Mem0 contracts come from reading mem0ai 1.0.5 (``mem0/memory/main.py``,
``mem0/configs/prompts.py``):

* ``custom_fact_extraction_prompt`` becomes the *system* message of the extraction call; the
  user message is only ``"Input:\n<messages>"``. The call uses
  ``response_format={"type": "json_object"}``, which OpenAI refuses unless the word "json"
  appears in the messages, so the prompt itself must say "json". mem0 reads
  ``json.loads(reply)["facts"]`` (a list of strings), so the prompt must ask for a ``"facts"``
  key. An empty prompt is silently replaced by mem0's default.
* ``custom_update_memory_prompt`` is the head of the decision prompt; mem0 appends the memories,
  the facts and the JSON shape (``{"memory": [{"id", "text", "event", "old_memory"}]}``) itself,
  then acts only on ``event`` values ``ADD``, ``UPDATE``, ``DELETE`` and ``NONE`` (exact upper
  case). The head must therefore keep naming those four events and must not be empty.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from string import Template

__all__ = [
    "Contract",
    "MEM0_EVENTS",
    "check",
    "mem0_fact_extraction_contract",
    "mem0_update_decision_contract",
    "qa_template_contract",
    "requirements_of",
    "template_contract",
]

Contract = Callable[[object], list[str]]

MEM0_EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")
_JSON_KEY = re.compile(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:')


def _text_problems(value: object) -> tuple[str, list[str]]:
    if not isinstance(value, str):
        return "", [f"the value must be text, got {type(value).__name__}"]
    if not value.strip():
        return value, ["the value is empty"]
    return value, []


def mem0_fact_extraction_contract(value: object) -> list[str]:
    """Problems of a Mem0 fact-extraction system prompt (see the module docstring)."""
    text, problems = _text_problems(value)
    if problems:
        return problems
    if "json" not in text.lower():
        problems.append(
            'it must contain the word "json": mem0 calls the model in JSON mode and the user message does not say it'
        )
    if '"facts"' not in text:
        problems.append('it must ask for a JSON object with a "facts" key (a list of strings): mem0 reads reply["facts"]')
    return problems


def mem0_update_decision_contract(value: object) -> list[str]:
    """Problems of a Mem0 update-decision prompt head (see the module docstring)."""
    text, problems = _text_problems(value)
    if problems:
        return problems
    missing = [event for event in MEM0_EVENTS if not re.search(rf"\b{event}\b", text)]
    if missing:
        problems.append(
            f"it must keep naming the memory events {', '.join(MEM0_EVENTS)} in upper case "
            f"(missing: {', '.join(missing)}): mem0 only acts on those exact event names"
        )
    return problems


def _identifiers(template: Template) -> list[str]:
    return list(dict.fromkeys(template.get_identifiers()))


def qa_template_contract(value: object) -> list[str]:
    """Problems of the question-answering ``string.Template``: it needs ``$question`` and
    ``$context`` and no other placeholder (an unknown one would reach the model verbatim)."""
    text, problems = _text_problems(value)
    if problems:
        return problems
    names = _identifiers(Template(text))
    for required in ("question", "context"):
        if required not in names:
            problems.append(f"the placeholder ${required} is missing; the template must keep $question and $context")
    extra = [n for n in names if n not in ("question", "context")]
    if extra:
        problems.append(f"unknown placeholder(s) {', '.join('$' + n for n in extra)}: only $question and $context are filled")
    return problems


def template_contract(default: str, *, first_line: bool = True) -> Contract:
    """The contract of a ``string.Template`` prompt whose program fills a fixed set of placeholders
    and parses a JSON reply (EverMemOS): the placeholders stay exactly those of ``default``, the
    template stays valid (a stray ``$`` makes ``substitute`` raise), every JSON key that ``default``
    asks for is still asked for, and (``first_line``) its first line, a task tag, is kept.
    """
    default_template = Template(default)
    wanted = _identifiers(default_template)
    keys = list(dict.fromkeys(_JSON_KEY.findall(default)))
    tag = default.splitlines()[0].strip() if default.strip() else ""

    def contract(value: object) -> list[str]:
        text, problems = _text_problems(value)
        if problems:
            return problems
        template = Template(text)
        if not template.is_valid():
            problems.append("a '$' that is not a placeholder must be written '$$'")
        names = _identifiers(template)
        missing = [n for n in wanted if n not in names]
        extra = [n for n in names if n not in wanted]
        if missing:
            problems.append(f"the placeholder(s) {', '.join('$' + n for n in missing)} must be kept")
        if extra:
            problems.append(f"unknown placeholder(s) {', '.join('$' + n for n in extra)}: only {', '.join('$' + n for n in wanted)} are filled")
        lost = [k for k in keys if f'"{k}"' not in text]
        if lost:
            problems.append(f"the reply format must keep the JSON key(s) {', '.join(repr(k) for k in lost)}: the parser reads them")
        if first_line and tag and text.splitlines()[0].strip() != tag:
            problems.append(f"the first line must stay the task tag {tag!r}")
        return problems

    rules = [f"a string.Template using exactly the placeholders {', '.join('$' + n for n in wanted) or '(none)'}"
             " (a literal dollar sign is written $$)"]
    if keys:
        rules.append(f"the reply format keeps the JSON keys {', '.join(keys)}")
    if first_line and tag:
        rules.append(f"the first line stays {tag!r}")
    contract.requirements = "; ".join(rules)  # type: ignore[attr-defined]
    return contract


mem0_fact_extraction_contract.requirements = (  # type: ignore[attr-defined]
    'non-empty; contains the word "json"; asks for a JSON object with a "facts" key holding a list of strings'
)
mem0_update_decision_contract.requirements = (  # type: ignore[attr-defined]
    "non-empty; keeps naming the four memory events ADD, UPDATE, DELETE and NONE in upper case "
    "(mem0 appends the memories, the facts and the JSON reply shape itself)"
)
qa_template_contract.requirements = (  # type: ignore[attr-defined]
    "a string.Template that keeps the placeholders $question and $context and uses no other placeholder "
    "(write a literal dollar sign as $$)"
)


def requirements_of(contract: Contract | None) -> str:
    """The human-readable rules of a contract (shown to the optimizer)."""
    return str(getattr(contract, "requirements", "") or "none beyond the role")


def check(contract: Contract | None, value: object) -> list[str]:
    """The problems of ``value`` under ``contract`` (none when there is no contract)."""
    return [] if contract is None else list(contract(value))


def describe(problems: Iterable[str]) -> str:
    """One line listing the problems."""
    return "; ".join(problems)
