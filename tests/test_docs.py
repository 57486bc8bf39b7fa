"""The docs test: every shell command of README.md and docs/*.md runs offline, or says why not.

The markers are described in ``tests/_docs_blocks.py``. Each chain of blocks runs with bash in a
fresh folder that mirrors the repository (symbolic links to its files, its own ``runs/``, and
``../shared`` beside it), with the test's Python first on PATH, a home folder of its own, and a
``sitecustomize`` that refuses connections leaving the machine, so the documented commands write
nothing into the repository and cannot reach the network. The install steps of a block are
dropped (the test's environment is the installed one); the extras they name must exist.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests._docs_blocks import (
    ROOT,
    Chain,
    DocsMarkerError,
    chains_of,
    command_blocks,
    doc_files,
    install_extras,
    offline_problem,
    runnable_script,
)
from tests.conftest import SHARED, require_shared

_FAST_TIMEOUT_S = 120
_SLOW_TIMEOUT_S = 1200
_NOT_MIRRORED = {"runs", "mutants"}
_GUARD = """\
import ipaddress, socket

def _local(address):
    if not isinstance(address, tuple):
        return True
    if address[0] in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(address[0]).is_loopback
    except ValueError:
        return False

_connect = socket.socket.connect

def _guarded(self, address):
    if not _local(address):
        raise OSError(f"the docs test allows no network connection (tried {address!r})")
    return _connect(self, address)

socket.socket.connect = _guarded
"""


def _all_chains() -> list[Chain]:
    chains: list[Chain] = []
    for path in doc_files():
        try:
            chains.extend(chains_of(command_blocks(path)))
        except DocsMarkerError:
            continue  # reported by test_every_command_block_is_runnable_or_marked
    return chains


def _chain_params(slow: bool) -> list:
    return [pytest.param(chain, id=chain.where) for chain in _all_chains() if chain.slow == slow]


def _sandbox(tmp_path: Path) -> Path:
    """A folder that looks like the repository checkout with ``../shared`` beside it."""
    work = tmp_path / "checkout"
    work.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name in _NOT_MIRRORED or entry.name.startswith("."):
            continue
        (work / entry.name).symlink_to(entry)
    if SHARED.exists():
        (tmp_path / "shared").symlink_to(SHARED)
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(_GUARD)
    return work


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "PYTEST_"))}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        XDG_CACHE_HOME=str(home / ".cache"),
        MEMTRACE_CACHE_DIR=str(home / "memtrace-cache"),
        PYTHONPATH=str(tmp_path / "guard"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MEM0_TELEMETRY="False",
        PYTHONUNBUFFERED="1",
    )
    return env


def _run_chain(chain: Chain, tmp_path: Path, timeout_s: int) -> None:
    for block in chain.blocks:
        if need := offline_problem(block):
            pytest.fail(f"{block.where}: not run, it needs {need} (mark it <!-- docs-test: skip (why) -->)")
    if any("../shared" in block.text for block in chain.blocks):
        require_shared(SHARED, "the ../shared folder the documented command reads")
    work = _sandbox(tmp_path)
    env = _environment(tmp_path)
    for block in chain.blocks:
        script = "\n".join(("set -eo pipefail", *block.before, runnable_script(block.text)))
        try:
            done = subprocess.run(
                ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{block.where}: still running after {timeout_s} s; mark it <!-- docs-test: slow -->")
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{output[-4000:]}"
        for text in block.expect:
            assert text in output, f"{block.where}: output lacks {text!r}\n{output[-4000:]}"
        for name, text in block.expect_files:
            written = work / name
            assert written.is_file(), f"{block.where}: {name} was not written"
            assert text in written.read_text(encoding="utf-8"), f"{block.where}: {name} lacks {text!r}"


def test_every_command_block_is_runnable_or_marked() -> None:
    problems: list[str] = []
    blocks = 0
    for path in doc_files():
        try:
            found = command_blocks(path)
            chains_of(found)
        except DocsMarkerError as error:
            problems.append(str(error))
            continue
        blocks += len(found)
        for block in found:
            if block.skip is None and (need := offline_problem(block)):
                problems.append(
                    f"{block.where}: needs {need}; make it offline or mark it <!-- docs-test: skip (why) -->"
                )
    assert blocks > 0, "no ```bash block found in README.md and docs/"
    assert not problems, "\n".join(problems)


def test_installed_extras_exist() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    unknown = [
        f"{block.where}: extra {extra!r}"
        for path in doc_files()
        for block in command_blocks(path)
        for extra in install_extras(block.text)
        if extra not in declared
    ]
    assert not unknown, "pyproject.toml declares no such extra:\n" + "\n".join(unknown)


_IMAGE = re.compile(r"!\[[^\]]*\]\((?P<target>[^)\s]+)")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", path.read_text(encoding="utf-8"))
    return {_slug(match[1]) for match in re.finditer(r"(?m)^#{1,6} (.+)$", text)}


def test_pictures_and_links_resolve() -> None:
    broken: list[str] = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for match in _IMAGE.finditer(text):
            if not (path.parent / match["target"]).is_file():
                broken.append(f"{path.relative_to(ROOT)}: picture {match['target']} does not exist")
        for match in _LINK.finditer(text):
            target = match["target"]
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part) if file_part else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: link {target} points at nothing")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(
                    f"{path.relative_to(ROOT)}: link {target}: no such heading in {file_part or path.name}"
                )
    assert not broken, "\n".join(broken)


def test_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move reference material into docs/"


@pytest.mark.parametrize("chain", _chain_params(slow=False))
def test_documented_commands_run(chain: Chain, tmp_path: Path) -> None:
    _run_chain(chain, tmp_path, _FAST_TIMEOUT_S)


@pytest.mark.slow
@pytest.mark.parametrize("chain", _chain_params(slow=True))
def test_documented_slow_commands_run(chain: Chain, tmp_path: Path) -> None:
    _run_chain(chain, tmp_path, _SLOW_TIMEOUT_S)


def _page(tmp_path: Path, body: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(body, encoding="utf-8")
    return page


def test_markers_are_read_from_the_lines_above_a_block(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "Intro.\n\n"
        "<!-- docs-test: slow -->\n"
        '<!-- docs-test: expect "ETA=1.0000" -->\n'
        '<!-- docs-test: expect-file runs/r.md "| answer | 3 |" -->\n'
        "```bash\necho one\n```\n\n"
        "<!-- docs-test: skip (needs an API key) -->\n"
        "```bash\npython x.py --api-config-path a.json\n```\n\n"
        "<!-- docs-test: continues -->\n```sh\necho two\n```\n\n```python\nprint('not a command')\n```\n",
    )
    first, skipped, third = command_blocks(page)
    assert (first.slow, first.expect, first.expect_files) == (
        True,
        ("ETA=1.0000",),
        (("runs/r.md", "| answer | 3 |"),),
    )
    assert skipped.skip == "needs an API key" and offline_problem(skipped) == "an API key"
    assert third.continues and third.line == 16
    (chain,) = chains_of([first, skipped, third])
    assert [block.line for block in chain.blocks] == [6, 16] and chain.slow


@pytest.mark.parametrize(
    ("marker", "message"),
    [("skip", "needs a reason"), ("fast please", "unknown docs-test marker"), ('expect "a" "b"', "expect")],
)
def test_unreadable_markers_are_errors(tmp_path: Path, marker: str, message: str) -> None:
    page = _page(tmp_path, f"<!-- docs-test: {marker} -->\n```bash\necho hi\n```\n")
    with pytest.raises(DocsMarkerError, match=message):
        command_blocks(page)


@pytest.mark.parametrize(
    ("command", "need"),
    [
        ("python run.py --api-config-path api_config.json", "an API key"),
        ("curl https://example.org/data.json", "a network endpoint"),
        ("python run.py DIR mem0", "a placeholder to fill in"),
        ("python -m annotation_interface --data examples/faultbench", "a server that never exits"),
        (
            "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && python -m pytest -q",
            "the test suite itself",
        ),
        ("python -m annotation_interface.export --data x --annotations a.json --out b  # [--split s]", None),
        ("python3 -m venv .venv && . .venv/bin/activate && pip install -e . && python run.py x", None),
    ],
)
def test_unmarked_blocks_that_need_more_than_the_machine_are_found(
    tmp_path: Path, command: str, need: str | None
) -> None:
    (block,) = command_blocks(_page(tmp_path, f"```bash\n{command}\n```\n"))
    assert offline_problem(block) == need


def test_install_steps_are_dropped_and_their_extras_read() -> None:
    text = 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev,local]" && python a.py\npip install -e ".[viewer]"\npython b.py'
    assert runnable_script(text) == "python a.py\npython b.py"
    assert install_extras(text) == ["dev", "local", "viewer"]


def test_a_chain_fails_on_a_missing_output_text_and_writes_nothing_into_the_repository(
    tmp_path: Path,
) -> None:
    page = _page(
        tmp_path,
        '<!-- docs-test: before "mkdir -p runs" -->\n<!-- docs-test: expect "done" -->\n'
        "```bash\nls README.md > runs/listing.txt && echo done\n```\n\n"
        '<!-- docs-test: continues -->\n<!-- docs-test: expect-file runs/listing.txt "README.md" -->\n'
        "```bash\ntest -f runs/listing.txt\n```\n",
    )
    (chain,) = chains_of(command_blocks(page))
    _run_chain(chain, tmp_path / "ok", _FAST_TIMEOUT_S)
    assert not (ROOT / "runs" / "listing.txt").exists()

    failing = _page(
        tmp_path, '<!-- docs-test: expect "never printed" -->\n```bash\necho something else\n```\n'
    )
    (chain,) = chains_of(command_blocks(failing))
    with pytest.raises(AssertionError, match="lacks 'never printed'"):
        _run_chain(chain, tmp_path / "bad", _FAST_TIMEOUT_S)


def test_a_documented_command_cannot_reach_the_network(tmp_path: Path) -> None:
    page = _page(
        tmp_path,
        "```bash\npython -c \"import socket; socket.create_connection(('192.0.2.1', 80), timeout=1)\"\n```\n",
    )
    (chain,) = chains_of(command_blocks(page))
    with pytest.raises(AssertionError, match="allows no network connection"):
        _run_chain(chain, tmp_path / "net", _FAST_TIMEOUT_S)
