"""The ``generate_report.py`` command: its flags, and ``main(argv) -> int``.

Statistics, charts and an LLM-written analysis of attribution outputs (spec §8); the work is in
:mod:`toolkits.report.pipeline` and :mod:`toolkits.report.runner`. The script at the repository
root and the ``memtrace-report`` console script run :func:`main`; tests call it in-process
(``model_factory`` scripts the models). Usage and files: the script's docstring and docs/reports.md.

Exit codes: 0 written; 1 the LLM report stopped at a failing batch (the last good version and the
statistics are written) or no case could be sent to the model; 2 bad arguments, input or
credentials, or an unwritable save folder; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from membase.utils.flag_rules import IgnoredFlag, check_ignored_flags

__all__ = ["build_parser", "cli", "main"]

_RULE = "=" * 80


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (reference flags of spec §8.2 plus new ones)."""
    from toolkits._cli import positive_int
    from toolkits.report.overviews import BUILTIN_OVERVIEWS

    p = argparse.ArgumentParser(
        prog="generate_report.py",
        description="Write a diagnostic report (statistics, charts, and an LLM analysis) from attribution outputs.",
    )
    p.add_argument(
        "--data-path", required=True, nargs="+",
        help="output JSON of run_error_attribution.py, or its 'results' list; several files are combined",
    )
    p.add_argument("--save-folder", required=True, help="folder for the report files (created if needed)")
    p.add_argument(
        "--target-system-overview", default="auto",
        help=f"built-in name ({', '.join(BUILTIN_OVERVIEWS)}), a path to a text file, or the overview text; "
        "auto (default): the input's memory system when there is one, else generic",
    )
    p.add_argument("--no-llm", action="store_true", help="statistics and charts only: no model, no key")
    p.add_argument("--model", default="gpt-5.4", help="chat model name, or fake:<report text> for an offline fake")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (default: %(default)s)")
    p.add_argument("--stream", action=argparse.BooleanOptionalAction, default=True,
                   help="stream the model's replies (default: on)")
    p.add_argument("--batch-size", type=positive_int, default=4, help="cases per model call")
    p.add_argument("--max-op-xml-tokens", type=positive_int, default=600000,
                   help="each case's operation XML keeps its last this many tokens")
    p.add_argument("--max-tokens", type=positive_int, default=None, help="output-token cap per model call")
    p.add_argument("--llama-cpp-compat", action="store_true", help="workarounds for a llama.cpp server endpoint")
    p.add_argument("--max-retries", type=int, default=2, help="retries of a failing batch before the run stops")
    p.add_argument("--retry-backoff", type=float, default=2.0, help="first retry delay in seconds (doubles)")
    p.add_argument("--batch-timeout", type=float, default=None, help="seconds allowed per batch attempt")
    p.add_argument("--restart", action="store_true", help="discard saved report versions instead of resuming")
    p.add_argument("--png", action=argparse.BooleanOptionalAction, default=True,
                   help="write PNG copies of the charts when kaleido and Chrome/Chromium are available")
    p.add_argument("--top-operations", type=positive_int, default=15, help="operations listed in the rankings")
    p.add_argument("--examples-per-op", type=int, default=3,
                   help="example cases (question, gold, prediction, reason, trail, viewer link) per blamed operation")
    p.add_argument("--viewer-url", default="http://localhost:8501",
                   help="base URL of the annotation viewer (python -m annotation_interface) for each case's deep link")
    p.add_argument("--otel-jsonl", default=None, metavar="PATH",
                   help="also export the cases and their attributions as OpenTelemetry spans, one JSON span per line "
                        "(a lossy view; needs the 'otel' extra)")
    p.add_argument("--otel-endpoint", default=None, metavar="URL",
                   help="also send the spans to an OTLP/HTTP collector, e.g. http://localhost:4318/v1/traces (Phoenix, "
                        "Langfuse); needs opentelemetry-exporter-otlp-proto-http")
    p.add_argument("--otel-capture-content", action="store_true",
                   help="put message and memory texts into the spans (off: ids, names and sizes only)")
    p.add_argument("--api-config-path", default=None, help='JSON {"api_keys": [...], "base_urls": [...]}')
    p.add_argument("--studio-url", default=None, help="accepted for compatibility; Studio forwarding is not implemented")
    p.add_argument("--project", default="error_analysis_report",
                   help="project name recorded with the report (default: %(default)s)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=True, help="show a progress bar")
    return p


_IGNORED_FLAGS: tuple[IgnoredFlag, ...] = (
    IgnoredFlag(
        flags=("--model", "--temperature", "--stream", "--batch-size", "--max-op-xml-tokens", "--max-tokens",
               "--llama-cpp-compat", "--max-retries", "--retry-backoff", "--batch-timeout", "--restart",
               "--target-system-overview", "--api-config-path", "--project"),
        ignored_when=lambda args: args.no_llm, mode="with --no-llm",
        reason="no model is called (drop --no-llm for the written analysis)"),
    IgnoredFlag(flags=("--otel-capture-content",), ignored_when=lambda args: not (args.otel_jsonl or args.otel_endpoint),
                mode="without --otel-jsonl or --otel-endpoint", reason="no span is exported"),
)
"""Flags that do nothing in the chosen mode (:mod:`membase.utils.flag_rules`)."""


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _print_written(written: Any) -> None:
    for kind in ("json", "markdown", "html"):
        print(f"{kind}: {written.paths[kind]}")
    if written.pngs:
        print(f"png: {len(written.pngs)} chart(s) in {os.path.dirname(next(iter(written.pngs.values())))}")
    for notice in written.notices:
        print(f"note: {notice}", file=sys.stderr)


def main(argv: Sequence[str] | None = None, *, model_factory: Callable[[int], Any] | None = None) -> int:
    """Run the CLI.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).
        model_factory: Builds each batch's chat model (tests pass scripted models); default: the
            ``fake:`` model or an OpenAI-compatible model from the credential pool.

    Returns:
        The exit code.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    check_ignored_flags(parser, argv, args, _IGNORED_FLAGS)
    if args.max_retries < 0:
        parser.error(f"--max-retries must be >= 0, got {args.max_retries}")
    if args.examples_per_op < 0:
        parser.error(f"--examples-per-op must be >= 0, got {args.examples_per_op}")
    if not args.viewer_url.startswith(("http://", "https://")):
        parser.error(f"--viewer-url must start with http:// or https://, got {args.viewer_url!r}")
    if args.otel_endpoint is not None and not args.otel_endpoint.startswith(("http://", "https://")):
        parser.error(f"--otel-endpoint must be an http:// or https:// URL (OTLP/HTTP), got {args.otel_endpoint!r}")
    if args.studio_url:
        warnings.warn("--studio-url is accepted for compatibility but Studio forwarding is not implemented", stacklevel=1)
    try:
        return _generate(args, model_factory)
    except OSError as exc:  # e.g. the disk filled up, or a report file was replaced by a folder mid-run
        where = f" {exc.filename!r}" if exc.filename else ""
        return _error(f"cannot write the report in --save-folder {args.save_folder!r}:{where} "
                      f"{exc.strerror or exc}; rerun the same command to resume")


def _generate(args: argparse.Namespace, model_factory: Callable[[int], Any] | None) -> int:
    from toolkits.report import ReportInputError
    from toolkits.report.pipeline import analyse, probe_save_folder

    try:
        probe_save_folder(args.save_folder)
    except OSError as exc:
        return _error(f"cannot write --save-folder {args.save_folder!r}: {exc}")
    try:
        analysis = analyse(args.data_path, top_operations=args.top_operations, examples_per_op=args.examples_per_op,
                           viewer_url=args.viewer_url)
    except ReportInputError as exc:
        return _error(str(exc))
    if args.otel_jsonl or args.otel_endpoint:
        code = _export_otel(args, analysis)
        if code:
            return code
    if args.no_llm:
        return _statistics_only(args, analysis)
    return _llm_report(args, analysis, model_factory)


def _statistics_only(args: argparse.Namespace, analysis: Any) -> int:
    from toolkits.report.pipeline import unavailable_cases, write_report

    stats = analysis.statistics
    unavailable = unavailable_cases(analysis)
    for case in unavailable:
        print(f"warning: case {case.query_id or case.index} has no readable graph: {case.reason}", file=sys.stderr)
    written = write_report(args.save_folder, analysis, llm=None, report=None, png=args.png, unrenderable=unavailable)
    print(f"{stats['records']} record(s), {stats['attributed']} attributed, {stats['failed']} failed attribution(s)"
          + (f", {stats['non_memory_verdicts']} non-memory verdict(s)" if stats["non_memory_verdicts"] else ""))
    _print_written(written)
    return 0


def _prepare_runner(args: argparse.Namespace, stats: dict[str, Any],
                    model_factory: Callable[[int], Any] | None) -> tuple[Any, Any] | int:
    """The overview and a credential-checked report runner, or the exit code of a one-line error."""
    from pydantic import ValidationError

    from toolkits._base import CredentialError
    from toolkits.report import (
        OverviewError,
        ReportConfig,
        ReportRunner,
        fake_model_factory,
        is_fake_model,
        resolve_overview,
    )

    try:
        overview = resolve_overview(args.target_system_overview, memory_systems=stats["memory_systems"])
        config = ReportConfig(
            model=args.model, temperature=args.temperature, stream=args.stream, studio_url=args.studio_url,
            project=args.project, api_config_path=args.api_config_path, batch_size=args.batch_size,
            max_op_xml_tokens=args.max_op_xml_tokens, max_retries=args.max_retries,
            retry_backoff_s=args.retry_backoff, batch_timeout_s=args.batch_timeout, max_tokens=args.max_tokens,
            llama_cpp_compat=args.llama_cpp_compat,
        )
    except OverviewError as exc:
        return _error(str(exc))
    except ValidationError as exc:
        first = exc.errors()[0]
        return _error(f"invalid settings: {first['loc'][0]}: {first['msg']}")
    if model_factory is None and is_fake_model(args.model):
        model_factory = fake_model_factory(args.model)
    runner = ReportRunner(config, model_factory=model_factory)
    try:
        runner.check_credentials()
    except CredentialError as exc:
        return _error(str(exc))
    return overview, runner


def _llm_report(args: argparse.Namespace, analysis: Any, model_factory: Callable[[int], Any] | None) -> int:
    from toolkits._base import CredentialError
    from toolkits.report import render_cases, summary_for_prompt
    from toolkits.report.pipeline import write_report
    from toolkits.report.runner import VERSIONS_FOLDER
    from toolkits.report.versions import VersionStore

    stats = analysis.statistics
    prepared = _prepare_runner(args, stats, model_factory)
    if isinstance(prepared, int):
        return prepared
    overview, runner = prepared

    rendered, unrenderable = render_cases(analysis.inputs.records, analysis.graphs, max_op_xml_tokens=args.max_op_xml_tokens)
    for case in unrenderable:
        print(f"warning: case {case.query_id or case.index} is unrenderable: {case.reason}", file=sys.stderr)
    statistics_text = summary_for_prompt(stats)
    llm: dict[str, Any] = {
        "model": args.model, "overview": overview.source, "cases_sent": len(rendered), "batches_total": 0,
        "batches_done": 0, "resumed_batches": 0, "versions": [], "failure": None, "costs": {},
    }
    if not rendered:
        llm["failure"] = "no attributed case could be rendered for the model"
        written = write_report(args.save_folder, analysis, llm=llm, report=None, unrenderable=unrenderable,
                               png=args.png, complete=False)
        _print_written(written)
        print("error: no attributed case could be sent to the model (see the failed and unrenderable cases); "
              "the statistical report is written", file=sys.stderr)
        return 1

    batches_total = len(runner.batches(rendered))
    bar = None
    if args.progress:
        from tqdm import tqdm

        bar = tqdm(total=batches_total, desc="report batches", unit="batch", file=sys.stderr)

    def on_batch(done: int, _payload: dict[str, Any]) -> None:
        if bar is not None:
            bar.n = done
            bar.refresh()

    store = VersionStore(
        f"{args.save_folder}/{VERSIONS_FOLDER}",
        runner.fingerprint(rendered, overview=overview.text, statistics=statistics_text),
    )
    if bar is not None and not args.restart:
        bar.n = min(len(store.resumable()), batches_total)
        bar.refresh()
    try:
        outcome = asyncio.run(
            runner.arun(rendered, overview=overview.text, statistics=statistics_text, save_folder=args.save_folder,
                        restart=args.restart, on_batch=on_batch)
        )
    except ValueError as exc:
        return _error(str(exc))
    except CredentialError as exc:
        return _error(str(exc))
    except KeyboardInterrupt:
        saved = store.resumable()
        llm.update(batches_total=batches_total, batches_done=len(saved), failure="interrupted")
        write_report(args.save_folder, analysis, llm=llm, report=saved[-1]["report"] if saved else None,
                     unrenderable=unrenderable, png=False, complete=False)
        print(f"interrupted: {len(saved)} of {batches_total} batch(es) are saved in {store.folder}; "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()

    llm.update(
        batches_total=outcome.batches_total, batches_done=outcome.batches_done, resumed_batches=outcome.resumed_batches,
        versions=outcome.version_paths, failure=outcome.failure, costs=outcome.costs,
    )
    written = write_report(args.save_folder, analysis, llm=llm, report=outcome.report, unrenderable=unrenderable,
                           png=args.png, complete=outcome.complete)
    if outcome.report:
        print(_RULE)
        print(outcome.report)
        print(_RULE)
    costs = outcome.costs
    print(f"input tokens: {costs['input_tokens']}")
    print(f"output tokens: {costs['output_tokens']}")
    print(f"minutes: {costs['minutes']:.2f}")
    print(_RULE)
    _print_written(written)
    if outcome.failure:
        kept = (f"the report after batch {outcome.batches_done} is in {written.paths['json']}"
                if outcome.batches_done else "no batch finished")
        print(f"error: {outcome.failure}; {kept}; rerun the same command to resume", file=sys.stderr)
        return 1
    return 0


def _export_otel(args: argparse.Namespace, analysis: Any) -> int:
    """Export the spans (``--otel-jsonl``/``--otel-endpoint``); 0 on success, else the exit code."""
    from toolkits.report.otel import OtelUnavailable, export_analysis

    try:
        summary = export_analysis(analysis, jsonl_path=args.otel_jsonl, endpoint=args.otel_endpoint,
                                  capture_content=args.otel_capture_content)
    except OtelUnavailable as exc:
        return _error(str(exc))
    except OSError as exc:
        return _error(f"cannot write --otel-jsonl {args.otel_jsonl!r}: {exc.strerror or exc}")
    print(f"otel: {summary.spans} span(s) for {summary.cases} case(s) in {summary.traces} trace(s)"
          + (f" -> {args.otel_jsonl}" if args.otel_jsonl else "") + (f" -> {args.otel_endpoint}" if args.otel_endpoint else ""))
    return 0


def cli() -> None:
    """Console-script entry point (warnings print as one line each)."""
    from toolkits._console import run_console

    run_console(main)
