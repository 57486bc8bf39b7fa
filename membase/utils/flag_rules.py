"""Flags the user gave that the chosen mode ignores: a usage error (or a one-line warning).

A run that silently does something other than asked is worse than one that stops: with
``generate_report.py --no-llm --model X`` the model is never called, and the user believes it was.
Each command keeps a declarative table of :class:`IgnoredFlag` rules (which flags, in which mode
they do nothing, and what to say) and calls :func:`check_ignored_flags` right after parsing.

"Given" means typed on the command line, not "different from the default": a second parse of the
same arguments with every default replaced by ``argparse.SUPPRESS`` leaves in the namespace only
the destinations the user set, so ``--temperature 1.0`` (the default value) still counts as given,
and abbreviations (``--temp``), ``--flag=value`` and ``--no-flag`` are all seen as argparse sees them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

__all__ = ["IgnoredFlag", "check_ignored_flags", "given_destinations", "ignored_flag_problems"]


@dataclass(frozen=True, kw_only=True)
class IgnoredFlag:
    """One row of a command's table: ``flags`` do nothing when ``ignored_when(args)`` holds."""

    flags: tuple[str, ...]
    """Option strings as in ``add_argument`` (the long form), e.g. ``("--model", "--temperature")``."""
    ignored_when: Callable[[argparse.Namespace], bool]
    """The mode in which the flags are ignored, read from the parsed arguments."""
    mode: str | Callable[[argparse.Namespace], str]
    """The chosen mode as the message names it, e.g. ``"with --no-llm"`` (or built from the arguments)."""
    reason: str = ""
    """Why the mode ignores them, or what to do instead (appended after a colon)."""
    warn_only: bool = False
    """Print one ``warning:`` line and go on, for a combination a documented command or CI already uses."""


def _all_actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """Every action of ``parser`` and of its subcommands' parsers."""
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                yield from _all_actions(sub)


def given_destinations(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> frozenset[str]:
    """The ``dest`` of every argument typed in ``argv`` (``None``: ``sys.argv[1:]``).

    Call it only after ``parser.parse_args(argv)`` succeeded: the second parse then cannot fail.
    Destinations of positionals and of ``parser.set_defaults`` are always reported: rules name options only.
    """
    # positionals keep their defaults: an absent ``nargs="?"`` one is checked against its choices
    actions = [a for a in _all_actions(parser) if a.option_strings
               and not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]
    saved = [(action, action.default) for action in actions]
    try:
        for action in actions:
            action.default = argparse.SUPPRESS
        namespace, _ = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    finally:
        for action, default in saved:
            action.default = default
    return frozenset(vars(namespace))


def _spelling(parser: argparse.ArgumentParser, flag: str, args: argparse.Namespace) -> tuple[str, str]:
    """The ``dest`` of ``flag`` and how the message names it (``--no-stream`` for a negated boolean)."""
    for action in _all_actions(parser):
        if flag in action.option_strings:
            if isinstance(action, argparse.BooleanOptionalAction) and getattr(args, action.dest, True) is False:
                return action.dest, "--no-" + flag.removeprefix("--")
            return action.dest, flag
    raise ValueError(f"rule names {flag!r}, which {parser.prog!r} does not define")


def ignored_flag_problems(parser: argparse.ArgumentParser, argv: Sequence[str] | None, args: argparse.Namespace,
                          rules: Sequence[IgnoredFlag]) -> list[tuple[IgnoredFlag, str]]:
    """Each violated rule with its message, in table order (empty: every given flag is used)."""
    given: frozenset[str] | None = None
    problems = []
    for rule in rules:
        if not rule.ignored_when(args):
            continue
        if given is None:  # the second parse runs only when some mode ignores something
            given = given_destinations(parser, argv)
        named = [shown for dest, shown in (_spelling(parser, flag, args) for flag in rule.flags) if dest in given]
        if named:
            verb = "has" if len(named) == 1 else "have"
            mode = rule.mode if isinstance(rule.mode, str) else rule.mode(args)
            text = f"{', '.join(named)} {verb} no effect {mode}"
            problems.append((rule, f"{text}: {rule.reason}" if rule.reason else text))
    return problems


def check_ignored_flags(parser: argparse.ArgumentParser, argv: Sequence[str] | None, args: argparse.Namespace,
                        rules: Sequence[IgnoredFlag]) -> None:
    """Stop with ``parser.error`` (one ``error:`` line, exit 2) at the first violated rule.

    Rules marked ``warn_only`` print a ``warning:`` line to stderr instead and the run goes on.
    """
    problems = ignored_flag_problems(parser, argv, args, rules)
    for rule, message in problems:
        if not rule.warn_only:
            parser.error(message)
    for _rule, message in problems:
        print(f"warning: {message}", file=sys.stderr)
