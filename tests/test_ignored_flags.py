"""Flags given on the command line that the chosen mode ignores: exit 2 with one ``error:`` line naming the flag
and the mode (or, for the combinations that loops over modes share, one ``warning:`` line and the run goes on).

Each case runs the command's ``main(argv)`` in-process; the check comes right after parsing, so a refused case
stops before any file is read. The accepted cases replace the command's work by a stub that records the call:
they show that the same flag passes in a mode that reads it, without running a job.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from benchmarks.attribution import __main__ as benchmark_cli
from membase import cli as membase_cli
from membase.utils.flag_rules import IgnoredFlag, check_ignored_flags, given_destinations
from toolkits import retrieval_cli
from toolkits.attribution import cli as attribution_cli
from toolkits.optimization import command as optimization_command
from toolkits.report import cli as report_cli

Main = Callable[[Sequence[str]], int]


def _exit_code(main: Main, argv: Sequence[str]) -> int:
    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        return int(exc.code)


def _error_line(capsys, main: Main, argv: Sequence[str]) -> str:
    code = _exit_code(main, argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:") or ": error:" in line]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0].split("error: ", 1)[1]


# -- the commands, each cut short after its flag check ---------------------------------------------------------


def _report(*flags: str) -> tuple[Main, list[str]]:
    return report_cli.main, ["--data-path", "missing.json", "--save-folder", "unused", *flags]


def _attribute(tmp_path: Path, *flags: str) -> tuple[Main, list[str]]:
    return attribution_cli.main, ["no-such-folder", "rag", "--output-path", str(tmp_path / "attr.json"), *flags]


def _retrieval(*flags: str) -> tuple[Main, list[str]]:
    return retrieval_cli.main, ["no-such-folder", "rag", *flags]


def _optimize(tmp_path: Path, *flags: str) -> tuple[Main, list[str]]:
    return optimization_command.main, ["--config-path", "missing.json", "--dataset-path", "missing.json",
                                       "--optimization-dir", str(tmp_path / "opt"), *flags]


def _membase(tmp_path: Path, command: str, *flags: str) -> tuple[Main, list[str]]:
    return membase_cli.main, [command, "--layer-config", "missing.json", "--output-dir", str(tmp_path / "run"), *flags]


def _benchmark(*flags: str) -> tuple[Main, list[str]]:
    return benchmark_cli.main, ["score", "no-such-build", *flags]


REFUSED = {
    "report-model-with-no-llm": (lambda t: _report("--no-llm", "--model", "gpt-x"),
                                 "--model has no effect with --no-llm: no model is called"),
    "report-default-temperature-with-no-llm": (lambda t: _report("--no-llm", "--temperature", "1.0"),
                                               "--temperature has no effect with --no-llm"),
    "report-no-stream-with-no-llm": (lambda t: _report("--no-llm", "--no-stream", "--restart"),
                                     "--no-stream, --restart have no effect with --no-llm"),
    "report-otel-content-without-export": (lambda t: _report("--no-llm", "--otel-capture-content"),
                                           "--otel-capture-content has no effect without --otel-jsonl or --otel-endpoint"),
    "benchmark-annotated-without-attribute": (lambda t: _benchmark("out.json", "--annotated"),
                                              "--annotated has no effect without --attribute"),
    "attribution-seed-flag-with-evidence-flow": (
        lambda t: _attribute(t, "--exploration-strategy", "evidence_flow", "--evidence-flow-seed"),
        "--evidence-flow-seed has no effect with --exploration-strategy evidence_flow: it seeds the graph_search agent"),
    "attribution-obs-identities-with-graph-search": (
        lambda t: _attribute(t, "--obs-identities"), "--obs-identities has no effect with --exploration-strategy "
        "graph_search"),
    "attribution-full-log-limit-with-graph-search": (
        lambda t: _attribute(t, "--full-log-token-limit", "1000"),
        "--full-log-token-limit has no effect with --exploration-strategy graph_search"),
    "attribution-judge-with-long-context": (
        lambda t: _attribute(t, "--exploration-strategy", "long_context", "--evidence-flow-judge", "llm"),
        "--evidence-flow-judge has no effect with --exploration-strategy long_context"),
    "attribution-triage-off-with-graph-search-unseeded": (
        lambda t: _attribute(t, "--no-evidence-flow-triage"),
        "--no-evidence-flow-triage has no effect with --exploration-strategy graph_search"),
    "attribution-judge-model-with-rules-judge": (
        lambda t: _attribute(t, "--exploration-strategy", "evidence_flow", "--evidence-flow-judge-model", "m"),
        "--evidence-flow-judge-model has no effect with --evidence-flow-judge rules: only the llm judge calls a model"),
    "attribution-nodes-type-without-nodes": (
        lambda t: _attribute(t, "--no-provide-starting-nodes", "--starting-nodes-type", "source_evidence"),
        "--starting-nodes-type has no effect with --no-provide-starting-nodes"),
    "attribution-embeddings-with-sparse": (
        lambda t: _attribute(t, "--retrieval-type", "sparse", "--embedding-cache-dir", str(t / "emb")),
        "--embedding-cache-dir has no effect with --retrieval-type sparse: BM25 embeds nothing"),
    "attribution-multiplier-with-dense": (
        lambda t: _attribute(t, "--retrieval-type", "dense", "--candidate-multiplier", "3"),
        "--candidate-multiplier has no effect with --retrieval-type dense"),
    "attribution-seed-without-sample": (lambda t: _attribute(t, "--seed", "42"),
                                        "--seed has no effect without --sample-size"),
    "attribution-ray-address-local": (lambda t: _attribute(t, "--ray-address", "auto"),
                                      "--ray-address has no effect without --executor ray"),
    "attribution-replay-offline-without-verify": (lambda t: _attribute(t, "--replay-offline"),
                                                  "--replay-offline has no effect without --verify replay"),
    "attribution-candidates-without-search": (
        lambda t: _attribute(t, "--verify", "replay", "--replay-max-candidates", "3"),
        "--replay-max-candidates has no effect without --replay-search earliest"),
    "retrieval-embeddings-with-sparse": (lambda t: _retrieval("--retrieval-type", "sparse", "--embedding-provider",
                                                              "hashing"),
                                         "--embedding-provider has no effect with --retrieval-type sparse"),
    "retrieval-multiplier-with-dense": (lambda t: _retrieval("--retrieval-type", "dense", "--candidate-multiplier", "4"),
                                        "--candidate-multiplier has no effect with --retrieval-type dense"),
    "optimization-parameter-flag-with-judge": (
        lambda t: _optimize(t, "--rounds", "3"), "--rounds has no effect with --objective judge (the default)"),
    "optimization-model-flag-with-context-recall": (
        lambda t: _optimize(t, "--objective", "context_recall", "--qa-model", "gpt-x"),
        "--qa-model has no effect with --objective context_recall"),
    "optimization-sample-with-train-trajectories": (
        lambda t: _optimize(t, "--objective", "context_recall", "--train-trajectories", "0,1", "--sample-size", "2"),
        "--sample-size has no effect with --train-trajectories"),
    "optimization-agent-flag-with-evidence-flow": (
        lambda t: _optimize(t, "--attribution-strategy", "evidence_flow", "--max-iters", "5"),
        "--max-iters has no effect with --attribution-strategy evidence_flow"),
    "optimization-gate-flags-without-gate": (
        lambda t: _optimize(t, "--min-improvement", "0.1"), "--min-improvement has no effect without --validation-gate"),
    "optimization-gepa-budget-with-textgrad": (
        lambda t: _optimize(t, "--gepa-max-metric-calls", "8"),
        "--gepa-max-metric-calls has no effect with --optimizer textgrad: it is GEPA's budget"),
    "optimization-seeds-with-estimate": (lambda t: _optimize(t, "--estimate-cost", "--seeds", "1,2"),
                                         "--seeds has no effect with --estimate-cost"),
    "optimization-seed-with-seeds": (lambda t: _optimize(t, "--seeds", "1,2", "--seed", "3"),
                                     "--seed has no effect with --seeds"),
    "membase-seed-without-sample": (lambda t: _membase(t, "run", "--seed", "7"),
                                    "--seed has no effect without --sample-size"),
    "membase-ray-address-local": (lambda t: _membase(t, "construct", "--ray-address", "auto"),
                                  "--ray-address has no effect without --executor ray"),
    "membase-top-k-with-search-results": (lambda t: _membase(t, "evaluate", "--search-results", "r.json", "--top-k", "5"),
                                          "--top-k has no effect with --search-results"),
}


@pytest.mark.parametrize("case", REFUSED.values(), ids=REFUSED.keys())
def test_a_flag_the_mode_ignores_is_a_usage_error(tmp_path, capsys, case):
    build, fragment = case
    main, argv = build(tmp_path)
    line = _error_line(capsys, main, argv)
    assert line.startswith(fragment), line
    assert not any(tmp_path.iterdir())  # stopped before any output was made


WARNED = {
    "attribution-agent-setting-with-evidence-flow": (
        lambda t: _attribute(t, "--exploration-strategy", "evidence_flow", "--max-iters", "3"),
        "--max-iters has no effect with --exploration-strategy evidence_flow: no agent model runs"),
    "attribution-retrieval-without-retrieval": (
        lambda t: _attribute(t, "--starting-nodes-type", "source_evidence", "--retrieval-type", "sparse"),
        "--retrieval-type has no effect without retrieved starting nodes"),
    "attribution-strategy-with-from": (
        lambda t: _attribute(t, "--exploration-strategy", "graph_search", "--verify", "replay", "--from", "old.json"),
        "--exploration-strategy has no effect with --from: the given output's records are verified as they are"),
    "optimization-agent-flags-with-disable-memtrace": (
        lambda t: _optimize(t, "--disable-memtrace", "--attribution-strategy", "evidence_flow"),
        "--attribution-strategy has no effect with --disable-memtrace"),
    "membase-judge-model-without-llm-judge": (
        lambda t: _membase(t, "run", "--metrics", "f1", "--judge-model", "fake:x"),
        "--judge-model has no effect with --metrics f1"),
}


@pytest.fixture()
def stubbed(monkeypatch) -> list[str]:
    """Every command's work replaced by a stub that records which command got past its checks."""
    import toolkits.optimization.cli as optimization_runner
    import toolkits.optimization.param_cli as parameter_runner

    reached: list[str] = []

    def stub(name: str) -> Callable[..., int]:
        def record(*args: object, **kwargs: object) -> int:
            reached.append(name)
            return 0
        return record

    monkeypatch.setattr(report_cli, "_generate", stub("report"))
    monkeypatch.setattr(attribution_cli, "run_attribution", stub("attribution"))
    monkeypatch.setattr(retrieval_cli, "_path_problem", lambda args: reached.append("retrieval") or "stubbed")
    monkeypatch.setattr(optimization_runner, "run_from_args", stub("optimization"))
    monkeypatch.setattr(parameter_runner, "run_context_recall", stub("parameter loop"))
    monkeypatch.setattr(benchmark_cli, "_score", stub("benchmark"))
    for name in ("construct", "evaluate", "run"):
        monkeypatch.setitem(membase_cli._COMMANDS, name, lambda args, name=name: reached.append(name) or {})
    return reached


@pytest.mark.parametrize("case", WARNED.values(), ids=WARNED.keys())
def test_a_setting_that_loops_over_modes_share_only_warns(tmp_path, capsys, stubbed, case):
    build, fragment = case
    main, argv = build(tmp_path)
    _exit_code(main, argv)
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and fragment in warnings[0], err
    assert "error:" not in err and stubbed, err  # the run went on


ACCEPTED = {
    "report-model-with-llm": (lambda t: _report("--model", "fake:a report"), "report"),
    "benchmark-annotated-with-attribute": (lambda t: _benchmark("--attribute", str(t / "a"), "--annotated"),
                                           "benchmark"),
    "attribution-seed-flag-with-graph-search": (lambda t: _attribute(t, "--evidence-flow-seed", "--temperature", "1.0",
                                                                     "--no-evidence-flow-triage"), "attribution"),
    "attribution-judge-model-with-llm-judge": (
        lambda t: _attribute(t, "--exploration-strategy", "evidence_flow", "--evidence-flow-judge", "llm",
                             "--evidence-flow-judge-model", "m"), "attribution"),
    "attribution-embeddings-with-dense": (
        lambda t: _attribute(t, "--retrieval-type", "dense", "--embedding-provider", "hashing", "--seed", "1",
                             "--sample-size", "2"), "attribution"),
    "attribution-registered-strategy-reads-any-flag": (
        lambda t: _attribute(t, "--exploration-strategy", "my_registered", "--obs-identities", "--evidence-flow-seed"),
        "attribution"),
    "retrieval-multiplier-with-hybrid": (lambda t: _retrieval("--candidate-multiplier", "4"), "retrieval"),
    "optimization-parameter-flag-with-context-recall": (
        lambda t: _optimize(t, "--objective", "context_recall", "--rounds", "3", "--sample-size", "2"), "parameter loop"),
    "optimization-gepa-budget-with-gepa": (lambda t: _optimize(t, "--optimizer", "gepa", "--gepa-max-metric-calls", "8"),
                                           "optimization"),
    "membase-seed-with-sample": (lambda t: _membase(t, "run", "--sample-size", "1", "--seed", "7"), "run"),
}


@pytest.mark.parametrize("case", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_the_same_flag_in_a_mode_that_reads_it_is_accepted(tmp_path, capsys, stubbed, case):
    build, reached = case
    main, argv = build(tmp_path)
    _exit_code(main, argv)
    err = capsys.readouterr().err
    assert "no effect" not in err and stubbed == [reached], err


# -- the helper ---------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="demo")
    parser.add_argument("--offline", action="store_true")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("go").add_argument("--tag", action="append", default=[])
    return parser


@pytest.mark.parametrize(
    ("argv", "given"),
    [
        ([], set()),
        (["--temperature", "1.0"], {"temperature"}),  # the default value, typed: still given
        (["--temp=0.5"], {"temperature"}),  # an abbreviation in the --flag=value form
        (["--no-stream"], {"stream"}),
        (["--offline", "go", "--tag", "x"], {"offline", "tag"}),
    ],
    ids=["nothing", "default-value-typed", "abbreviation", "negated-boolean", "subcommand"],
)
def test_given_means_typed_not_different_from_the_default(argv, given):
    parser = _parser()
    parser.parse_args(argv)
    options = {"offline", "temperature", "stream", "tag"}
    assert given_destinations(parser, argv) & options == given
    assert parser.get_default("temperature") == 1.0  # the defaults are restored


def test_an_absent_optional_positional_with_choices_does_not_break_the_second_parse():
    """Its default is kept (``SUPPRESS`` would be checked against the choices); positionals are never rules."""
    parser = argparse.ArgumentParser(prog="demo")
    parser.add_argument("split", nargs="?", choices=("a", "b"), default=None)
    parser.add_argument("--offline", action="store_true")
    assert given_destinations(parser, ["--offline"]) == {"split", "offline"}


def test_the_message_names_the_flag_as_typed_and_a_rule_on_an_unknown_flag_fails_loudly(capsys):
    parser = _parser()
    rules = (IgnoredFlag(flags=("--stream", "--temperature"), ignored_when=lambda args: args.offline,
                         mode="with --offline", reason="nothing is called"),)
    argv = ["--offline", "--no-stream"]
    with pytest.raises(SystemExit) as stop:
        check_ignored_flags(parser, argv, parser.parse_args(argv), rules)
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == "demo: error: --no-stream has no effect with --offline: " \
                                                       "nothing is called"
    check_ignored_flags(parser, ["--no-stream"], parser.parse_args(["--no-stream"]), rules)  # not offline: fine
    typo = (IgnoredFlag(flags=("--steam",), ignored_when=lambda args: True, mode="always"),)
    with pytest.raises(ValueError, match="'--steam'"):
        check_ignored_flags(parser, [], parser.parse_args([]), typo)
