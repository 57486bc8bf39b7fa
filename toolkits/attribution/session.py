"""One attribution run from parsed arguments: check, load, attribute, journal, write, verify.

Every finished case is journalled at once beside the output (``<output>.journal.jsonl``); the
output is written atomically at the end, or with the finished cases (``"complete": false``) on
Ctrl-C; the journal is removed only after the output (and, with ``--verify replay``, its
verdicts) is written. A rerun resumes from the journal.

Exit codes: :data:`EXIT_OK`; :data:`EXIT_WRITE_FAILED` (the output could not be written, the
journal keeps the cases); :data:`EXIT_USAGE` (raised as :class:`AttributionInputError` and
printed by the CLI); :data:`EXIT_INTERRUPTED`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolkits.attribution.inputs import (
    AttributionInputError,
    LoadedCases,
    check_judge_credentials,
    check_output,
    config_from_args,
    load_cases,
    plan_fan_out,
    read_prior,
    sample_graphs,
)
from toolkits.attribution.output import OutputSettings, assemble_output, build_record, run_costs, write_output
from toolkits.bench_utils import MEMTRACEBENCH_SPLITS

if TYPE_CHECKING:
    from toolkits._journal import ResultJournal
    from toolkits.runner import CaseResult, MemTraceConfig, MemTraceRunner

__all__ = ["EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "EXIT_WRITE_FAILED", "run_attribution", "verify_existing"]

EXIT_OK, EXIT_WRITE_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ModelFactory = Callable[[Any], Any]


def _checked_config(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[MemTraceConfig, Any]:
    """The runner's config and the fan-out plan; strategy, settings, judge credentials, fan-out and replay
    flags are all checked before anything is read."""
    from pydantic import ValidationError

    from toolkits.replay_verify import check_replay_arguments
    from toolkits.strategies import available_strategies

    if args.studio_url:
        warnings.warn("--studio-url is accepted for compatibility but Studio forwarding is not implemented", stacklevel=1)
    if args.exploration_strategy not in available_strategies():
        parser.error(
            f"unknown --exploration-strategy {args.exploration_strategy!r}: use one of {', '.join(available_strategies())}"
        )
    try:
        config = config_from_args(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise AttributionInputError(f"invalid settings: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    if config.exploration_strategy == "evidence_flow" and config.evidence_flow_judge == "llm":
        check_judge_credentials(config)
    plan = plan_fan_out(args)
    problem = check_replay_arguments(args)
    if problem is not None:
        raise AttributionInputError(problem)
    return config, plan


def _loaded(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[LoadedCases, str | None]:
    """The sampled cases and the custom prior; the output must lie outside the input graphs."""
    loaded = load_cases(args.dataset_dir, args.split, parser)
    graphs, cases = sample_graphs(loaded.graphs, loaded.cases, args.sample_size, args.seed)
    loaded = LoadedCases(graphs=graphs, cases=cases, run_mode=loaded.run_mode, split=loaded.split,
                         extra_metrics=loaded.extra_metrics)
    custom_prior = read_prior(args.custom_prior)
    output = Path(args.output_path)
    inputs = Path(args.dataset_dir) / ("traced_data" if loaded.run_mode else str(loaded.split))
    if output.resolve().is_relative_to(inputs.resolve()):  # it would overwrite a graph, or be read as one
        raise AttributionInputError(f"--output-path {str(output)!r} is inside the input graphs' folder {str(inputs)!r}; "
                                    "write the output elsewhere")
    check_output(output, args.cache_dir)
    return loaded, custom_prior


def _open_journal(output: Path, resume: bool) -> tuple[ResultJournal, dict[str, Any]]:
    """The journal, open for appending, and the finished entries it holds (when resuming)."""
    from toolkits._journal import ResultJournal, journal_path

    journal = ResultJournal(journal_path(output))
    entries = {}
    if resume:
        entries = {item["key"]: item["entry"] for item in journal.read() if isinstance(item.get("entry"), dict)}
    try:
        journal.open(keep_existing=resume)
    except OSError as exc:
        raise AttributionInputError(f"cannot write the journal {str(journal.path)!r}: {exc}") from None
    return journal, entries


class _FinishedCases:
    """Collects each finished case: its record, its journal line, and a tick of the progress bar."""

    def __init__(self, *, settings: OutputSettings, loaded: LoadedCases, journal: ResultJournal,
                 secrets: Callable[[], list[str]], bar: Any) -> None:
        self.settings, self.loaded, self.journal, self.secrets, self.bar = settings, loaded, journal, secrets, bar
        self.by_index: dict[int, tuple[CaseResult, dict[str, Any]]] = {}
        self.failures = 0
        self.journal_warned = False

    def __call__(self, result: CaseResult) -> None:
        record = build_record(self.settings, self.loaded.cases[result.index], result, secrets=self.secrets(),
                              graph=self.loaded.graphs[result.index])
        self.by_index[result.index] = (result, record)
        if result.reused_from != "resume":  # a resumed case's line is already in the journal
            self._journal(result, record)
        if self.bar is not None:
            self.failures += 0 if result.ok else 1
            self.bar.update(1)
            self.bar.set_postfix(failed=self.failures, refresh=False)

    def _journal(self, result: CaseResult, record: dict[str, Any]) -> None:
        try:
            self.journal.append({"key": result.cache_key, "index": result.index, "entry": result.cache_entry(),
                                 "record": record})
        except OSError as exc:
            if not self.journal_warned:
                self.journal_warned = True
                warnings.warn(f"could not journal finished cases to {self.journal.path}: {exc}", stacklevel=1)

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def partial_output(self) -> dict[str, Any]:
        """The output of the cases finished so far (no bootstrap: an interruption should be quick)."""
        order = sorted(self.by_index)
        return assemble_output(
            self.settings,
            [self.loaded.cases[i] for i in order],
            [self.by_index[i][1] for i in order],
            run_costs([self.by_index[i][0] for i in order]),
            complete=False,
            bootstrap_samples=0,
            extra_metrics=self.loaded.extra_metrics,
        )


def _progress_bar(args: argparse.Namespace, total: int, split: str | None) -> Any:
    if not args.progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=f"attributing {split or 'run'}", unit="case", file=sys.stderr)


def _attribute(runner: MemTraceRunner, plan: Any, args: argparse.Namespace, loaded: LoadedCases,
               custom_prior: str | None, sink: _FinishedCases, resume: dict[str, Any]) -> Any:
    """All cases in this process (asyncio), or in tasks of ``--batch-size`` cases on workers or Ray."""
    provide = args.provide_starting_nodes
    kwargs = {
        "use_source_evidence_nodes": provide and args.starting_nodes_type == "source_evidence",
        "use_pseudo_source_evidence": provide and args.starting_nodes_type == "pseudo_source_evidence",
        "memory_system": loaded.split if args.use_system_prior and loaded.split in MEMTRACEBENCH_SPLITS else None,
        "custom_prior_knowledge": custom_prior,
        "on_result": sink,
        "resume": resume,
    }
    if plan.inline:
        return asyncio.run(runner.arun(loaded.cases, loaded.graphs, batch_size=args.batch_size, **kwargs))
    from toolkits._fanout import attribute_fanned_out

    return attribute_fanned_out(runner, loaded.cases, loaded.graphs, plan=plan, chunk_size=args.batch_size, **kwargs)


def _interrupted(args: argparse.Namespace, sink: _FinishedCases, write: Callable[[dict[str, Any]], str | None]) -> int:
    """Ctrl-C during the cases: the finished ones go to the output (``"complete": false``), or stay in the journal."""
    sink.close_bar()
    sink.journal.close()
    problem = write(sink.partial_output())
    where = str(sink.journal.path) if problem else f"{args.output_path} (\"complete\": false)"
    print(
        f"interrupted: {len(sink.by_index)} of {len(sink.loaded.cases)} case(s) finished and are kept in {where}; "
        "rerun the same command to attribute the rest",
        file=sys.stderr,
    )
    return EXIT_INTERRUPTED


def _summary(args: argparse.Namespace, output_json: dict[str, Any], run_mode: bool) -> None:
    """The closing lines: non-memory failures, then the totals (and ETA/OIA for a benchmark)."""
    m = output_json["metrics"]
    non_memory = ", ".join(f"{k}={n}" for k, n in (m.get("non_memory_errors") or {}).items() if n)
    if non_memory:  # failures that are not memory errors: never blamed on an op, named here
        print(f"not memory errors (candidates, see each record's evidence_flow.triage): {non_memory}")
    if run_mode:
        top = ", ".join(f"{t}={n}" for t, n in m["prediction_distribution"]["by_error_type"].items() if n)
        print(f"{m['total_cases']} failed questions ({m['failed_cases']} not attributed): {top or 'none'} -> {args.output_path}")
    else:
        print(
            f"{m['total_cases']} cases ({m['failed_cases']} failed): "
            f"ETA={m['error_type_prediction_accuracy']:.4f} OIA={m['operation_identifier_prediction_accuracy']:.4f} "
            f"joint={m['joint_accuracy']:.4f} -> {args.output_path}"
        )


def run_attribution(
    parser: argparse.ArgumentParser, args: argparse.Namespace, model_factory: ModelFactory | None = None
) -> int:
    """Run the attribution command on parsed arguments (see :func:`toolkits.attribution.cli.build_parser`).

    Args:
        parser: The parser ``args`` came from (usage errors exit through ``parser.error``).
        args: The parsed arguments.
        model_factory: Builds each case's chat model (tests pass scripted models); default: an
            OpenAI-compatible model from the credential pool.

    Returns:
        The exit code (:data:`EXIT_OK`, :data:`EXIT_WRITE_FAILED` or :data:`EXIT_INTERRUPTED`).

    Raises:
        AttributionInputError: Bad input found before any case runs (exit :data:`EXIT_USAGE`).
    """
    from toolkits._base import CredentialError
    from toolkits.runner import MemTraceRunner

    config, plan = _checked_config(parser, args)
    if args.from_output:
        return verify_existing(args)
    loaded, custom_prior = _loaded(parser, args)
    settings = OutputSettings.from_args(args, split=loaded.split, run_mode=loaded.run_mode)
    output = Path(args.output_path)
    journal, resume = _open_journal(output, args.resume)
    runner = MemTraceRunner(config, model_factory=model_factory)

    def secrets() -> list[str]:
        found = list(runner.api_pool.secrets) if runner.api_pool else []
        return [*found, args.embedding_api_key] if args.embedding_api_key else found

    sink = _FinishedCases(settings=settings, loaded=loaded, journal=journal, secrets=secrets,
                          bar=_progress_bar(args, len(loaded.cases), loaded.split))
    write = functools.partial(write_output, output)
    try:
        report = _attribute(runner, plan, args, loaded, custom_prior, sink, resume)
    except CredentialError as exc:
        raise AttributionInputError(str(exc)) from None
    except KeyboardInterrupt:
        return _interrupted(args, sink, write)
    finally:
        sink.close_bar()
        journal.close()
    return _finish(args, sink, report.costs, write)


def _finish(args: argparse.Namespace, sink: _FinishedCases, costs: Any, write: Callable[[dict[str, Any]], str | None]) -> int:
    """Write the whole output, verify it when asked, then drop the journal and print the summary."""
    cases = sink.loaded.cases
    try:
        records = [sink.by_index[i][1] for i in range(len(cases))]
        output_json = assemble_output(sink.settings, cases, records, costs, complete=True,
                                      extra_metrics=sink.loaded.extra_metrics)
        problem = write(output_json)
    except KeyboardInterrupt:
        print(f"interrupted while writing the output: all {len(cases)} case(s) are kept in {sink.journal.path}; "
              "rerun the same command to write it", file=sys.stderr)
        return EXIT_INTERRUPTED
    if problem is not None:
        print(f"error: {problem}; the finished cases are kept in {sink.journal.path}: rerun to write it",
              file=sys.stderr)
        return EXIT_WRITE_FAILED
    if args.verify == "replay":  # the journal stays until the verified output is written
        code = _verify(args, output_json, write)
        if code != EXIT_OK:
            return code
    sink.journal.remove()
    _summary(args, output_json, sink.settings.run_mode)
    return EXIT_OK


def _verify(args: argparse.Namespace, output_json: dict[str, Any], write: Callable[[dict[str, Any]], str | None]) -> int:
    """Replay every attributed case with its blamed op repaired; the output gains the verdicts."""
    from membase.replay import ReplayDataMissing
    from toolkits.replay_verify import replay_line, verify_output

    output = Path(args.output_path)
    progress = (lambda line: print(line, file=sys.stderr)) if args.progress else None
    try:
        verify_output(args, output_json, output.with_name(output.name + ".replay.jsonl"), progress)
    except ReplayDataMissing as exc:  # e.g. --from records attributed on another run than dataset_dir
        hint = (f"were the records of --from {args.from_output!r} attributed on the run folder {args.dataset_dir!r}?"
                if args.from_output else f"the attribution without replay verdicts is in {args.output_path}")
        print(f"error: --verify replay: {exc}; {hint}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"interrupted: the attribution is in {args.output_path}; finished replays are kept beside it — "
              "rerun the same command to replay the rest", file=sys.stderr)
        return EXIT_INTERRUPTED
    problem = write(output_json)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    print(replay_line(output_json["metrics"]["replay"]))
    return EXIT_OK


def verify_existing(args: argparse.Namespace) -> int:
    """``--verify replay --from OUTPUT.json``: verify an existing output, attribute nothing.

    Raises:
        AttributionInputError: When ``--from`` is not an attribution output.
    """
    from toolkits.replay_verify import read_output

    try:
        output_json = read_output(args.from_output)
    except ValueError as exc:
        raise AttributionInputError(str(exc)) from None
    return _verify(args, output_json, functools.partial(write_output, Path(args.output_path)))
