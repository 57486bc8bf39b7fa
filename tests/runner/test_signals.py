"""Real signals and real I/O failures against the attribution CLI in a subprocess.

* Ctrl-C (SIGINT) while a case is still running: exit 130, one line, every finished case kept.
* The disk fills up while the output is written: the previous output stays whole (the write is
  atomic), the error is one line, the finished cases stay in the journal.
"""

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import OP_EXTRACT_5, child_env
from .test_cli_attribution import REASON

REPO = Path(__file__).resolve().parents[2]

DRIVER = textwrap.dedent(
    """
    import asyncio, signal, sys
    # an interactive terminal's default; a parent that ignores SIGINT (a test runner's worker) would
    # otherwise pass SIG_IGN down to this process
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {repo!r})
    from toolkits.attribution import cli as attribution_cli
    from graphtrace import answer
    from membase.clients import FunctionChatModel, ScriptedChatModel

    def factory(ctx):
        if ctx.case.metadata["annotation"]["final_error_type"] in ("UpdateError", "ResponseError"):
            async def hang(messages, tools, choice):
                await asyncio.sleep(3600)
            return FunctionChatModel(hang)
        return ScriptedChatModel([answer("ExtractionError", {op!r}, {reason!r})])

    sys.exit(attribution_cli.main(sys.argv[1:], model_factory=factory))
    """
)


def _args(bench_dir, out, *extra):
    return [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "long_context",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--max-iters", "3", "--bootstrap-samples", "0",
            *extra]


def _start(tmp_path, args):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(repo=str(REPO), op=OP_EXTRACT_5, reason=REASON))
    env = child_env(REPO)
    return subprocess.Popen([sys.executable, str(driver), *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_lines(proc, journal, count, timeout=120):
    deadline = time.monotonic() + timeout
    while not journal.exists() or len(journal.read_text().splitlines()) < count + 1:
        assert proc.poll() is None, f"the driver exited early: {proc.communicate()}"
        assert time.monotonic() < deadline, "no journal lines appeared"
        time.sleep(0.05)


@pytest.mark.slow
def test_ctrl_c_while_cases_run_exits_130_with_one_line_and_loses_nothing(bench_dir, tmp_path):
    from toolkits._journal import journal_path

    out = tmp_path / "out.json"
    journal = journal_path(out)
    proc = _start(tmp_path, _args(bench_dir, out, "--batch-size", "1"))
    try:
        _wait_for_lines(proc, journal, 2)  # cases 1 and 2 finished; case 3 is waiting on its model
        time.sleep(0.3)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("warning:")
             and "Warning" not in line and not line.startswith("  ")]
    assert len(lines) == 1 and lines[0].startswith("interrupted: 2 of 4 case(s) finished"), stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    data = json.loads(out.read_text())
    assert data["complete"] is False
    assert [r["final_error_type"] for r in data["results"]] == ["ExtractionError", "RetrievalError"]
    assert all(r["attribution_failure"] is None for r in data["results"])  # the interrupted case is not a failure
    assert len(journal.read_text().splitlines()) == 3  # header + the two finished cases, kept for the rerun


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.slow
def test_a_disk_full_while_writing_leaves_the_previous_output_whole(bench_dir, tmp_path):
    out = tmp_path / "out.json"
    args = [str(bench_dir), "mem0", "--output-path", str(out), "--exploration-strategy", "evidence_flow",
            "--starting-nodes-type", "source_evidence", "--no-progress", "--bootstrap-samples", "0"]
    env = child_env(REPO)
    code = "import sys; from toolkits.attribution.cli import main; sys.exit(main(sys.argv[1:]))"
    first = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert first.returncode == 0, first.stderr
    before = out.read_bytes()
    assert len(before) > 8192
    # the second run may write files of at most 4 KiB: the journal lines fit, the output does not
    limited = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from toolkits.attribution.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    second = subprocess.run([sys.executable, "-c", limited, *args, "--no-resume"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert second.returncode == 1, second.stderr
    errors = [line for line in second.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot write" in errors[0] and "Traceback" not in second.stderr
    assert out.read_bytes() == before  # never truncated or half-written
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.json.")]  # no temp file left behind
