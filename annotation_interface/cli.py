"""Command line of the viewer: the app's own flags and the ``python -m annotation_interface`` launcher.

The app is a Streamlit script, started as::

    streamlit run annotation_interface/app.py -- --data <graph file or folder> [--output-path …]
        [--api-config …] [--judge-model …] [--index-dir …]

Streamlit hands everything after ``--`` to the script, which parses it with :func:`parse_app_args`
(errors are shown in the page, not as a traceback). ``python -m annotation_interface …`` takes the
same flags (plus ``--port``/``--address``), checks them, and starts Streamlit headless on
127.0.0.1 with usage statistics off.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from smartcomment.runtime.errors import MemTraceError

__all__ = ["APP_PATH", "AppArgsError", "build_parser", "main", "parse_app_args"]

APP_PATH = Path(__file__).resolve().with_name("app.py")

_DESCRIPTION = """\
MemTrace annotation interface: browse execution graphs (smartcomment / MemTraceBench format),
follow each message through the operations that processed it, inspect wrongly answered
questions with the three candidate subgraphs (construction, retrieval, response), run the
automatic attribution (evidence_flow offline, an LLM strategy with credentials) and save manual
error attributions to a JSON array."""

_EPILOG = """\
--data accepts a single graph file, a MemTraceBench folder (<split>/*.json), or a `python -m
membase` output folder (traced_data/<user>/graph_evaluation.json is preferred over the
search/construction stages). Example:
  streamlit run annotation_interface/app.py -- --data examples/faultbench --output-path runs/annotations.json
A deep link opens one case: http://127.0.0.1:8501/?folder=<data folder>&graph=<graph file stem>&case=<question id>"""


class AppArgsError(MemTraceError, ValueError):
    """Bad command-line flags (the message is the argparse error)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # type: ignore[override]
        raise AppArgsError(message)


def build_parser(prog: str = "streamlit run annotation_interface/app.py --") -> argparse.ArgumentParser:
    """The app's flags."""
    p = _Parser(prog=prog, description=_DESCRIPTION, epilog=_EPILOG, add_help=False,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-h", "--help", action="store_true", help="show this help and exit")
    p.add_argument("--data", required=True, metavar="PATH", help="a graph JSON file or a folder of them")
    p.add_argument("--output-path", default="error_annotation.json", metavar="FILE",
                   help="JSON array that manual attributions are appended to (default: %(default)s)")
    p.add_argument("--api-config", metavar="FILE",
                   help='credentials for the LLM strategy: {"api_keys": [...], "base_urls": [...]} '
                        "(else OPENAI_BASE_URL / OPENAI_API_KEY; without any, only evidence_flow runs)")
    p.add_argument("--judge-model", default="gpt-4.1-mini", metavar="NAME",
                   help="chat model of the LLM attribution (default: %(default)s)")
    p.add_argument("--llm-strategy", default="graph_search",
                   choices=("graph_search", "operation_block_search", "long_context"),
                   help="LLM attribution strategy (default: %(default)s)")
    p.add_argument("--attributions", nargs="+", default=[], metavar="FILE",
                   help="outputs of run_error_attribution.py to show beside the human labels and to score in the "
                        "Agreement view (one strategy per file, named by the file's stem)")
    p.add_argument("--annotator", metavar="NAME",
                   help="the annotator's name (else asked once per browser session; a URL's annotator= wins)")
    p.add_argument("--evidence-mode", default="retrieved", choices=("retrieved", "annotated"),
                   help="starting evidence of evidence_flow in the page: retrieved (run_error_attribution.py's "
                        "default, pseudo source evidence) or annotated (default: %(default)s; the page can switch)")
    p.add_argument("--index-dir", metavar="DIR",
                   help="folder of the cached dataset index (default: $MEMTRACE_CACHE_DIR/annotation_interface, "
                        "else $XDG_CACHE_HOME or ~/.cache /memtrace/annotation_interface)")
    return p


def help_text() -> str:
    """The ``--help`` text."""
    return build_parser().format_help()


def parse_app_args(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the app's flags.

    Raises:
        AppArgsError: unknown or missing flags (``--help`` alone is not an error: ``help`` is set).
    """
    args = list(argv)
    if "-h" in args or "--help" in args:
        return argparse.Namespace(help=True)
    return build_parser().parse_args(args)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number in 1..65535, got {value}")
    return value


def _launch_problem(parsed: argparse.Namespace) -> str | None:
    """What would make the page useless or a save fail, checked before Streamlit starts (None: none)."""
    from annotation_interface.annotations import check_output

    data = Path(parsed.data)
    if not data.exists():
        return f"--data {parsed.data}: no such file or folder"
    if data.is_dir() and next(data.rglob("*.json"), None) is None:
        return f"--data {parsed.data}: the folder holds no graph JSON file"
    _, problem = check_output(parsed.output_path)
    if problem:
        return f"--output-path: {problem}"
    if parsed.api_config and not Path(parsed.api_config).is_file():
        return f"--api-config {parsed.api_config}: no such file"
    if parsed.index_dir and Path(parsed.index_dir).exists() and not Path(parsed.index_dir).is_dir():
        return f"--index-dir {parsed.index_dir}: is a file, not a folder"
    missing = next((f for f in parsed.attributions if not Path(f).is_file()), None)
    if missing:
        return f"--attributions {missing}: no such file"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m annotation_interface``: check the flags, then run the app with Streamlit."""
    args = list(sys.argv[1:] if argv is None else argv)
    launcher = argparse.ArgumentParser(prog="python -m annotation_interface", add_help=False)
    launcher.add_argument("--port", type=_port, default=8501)
    launcher.add_argument("--address", default="127.0.0.1")
    known, app_args = launcher.parse_known_args(args)
    prog = "python -m annotation_interface"
    try:
        parsed = parse_app_args(app_args)
    except AppArgsError as exc:
        print(f"{prog}: error: {exc} (see --help)", file=sys.stderr)
        return 2
    if parsed.help:
        print(build_parser(prog).format_help().rstrip())
        print("  --port N              Streamlit server port (launcher only; default 8501)")
        print("  --address HOST        Streamlit server address (launcher only; default 127.0.0.1)")
        return 0
    problem = _launch_problem(parsed)
    if problem:
        print(f"{prog}: error: {problem}", file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", "streamlit", "run", str(APP_PATH), "--server.headless", "true",
           "--server.address", known.address, "--server.port", str(known.port),
           "--browser.gatherUsageStats", "false", "--", *app_args]
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130
