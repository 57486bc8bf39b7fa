"""The annotator's save killed for real (SIGKILL) while it holds the lock and writes the array.

The earlier records stay whole, and the next save — from another process — is not blocked by
the dead one's lock and lands after them.
"""

from __future__ import annotations

import json

import pytest

from tests.resume import _process


@pytest.mark.parametrize(("when", "kept"), [("before", 2), ("after", 3)], ids=["before-the-rename", "after-the-rename"])
def test_a_save_killed_while_writing_keeps_every_earlier_record_and_blocks_no_later_one(tmp_path, when, kept):
    out = tmp_path / "annotations é.json"
    calls = tmp_path / "calls.log"
    ended = _process.run("_annotation_driver", [str(out), "5"], tmp_path, calls=calls, kill=f"{when}:{out.name}:3")
    assert ended.killed, ended.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == [{"n": i} for i in range(1, kept + 1)]

    ended = _process.finish(_process.start("_annotation_driver", [str(out), "1"], tmp_path, calls=calls), timeout=60)
    assert ended.returncode == 0, ended.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == [{"n": i} for i in range(1, kept + 1)] + [{"n": 1}]
