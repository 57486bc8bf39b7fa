"""Make a file unreadable for the bad-input tests, also when they run as root.

``chmod 000`` is what a user does; root reads such a file anyway, so under root every ``open``
of that path (builtins and ``io``, which ``pathlib`` uses) also fails with the same
``PermissionError`` the kernel gives everyone else.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
from pathlib import Path

import pytest


def make_unreadable(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``chmod 000`` on ``path`` (and, under root, opening it raises ``PermissionError``)."""
    path.chmod(0)
    if os.geteuid() != 0:
        return
    real_open = io.open
    target = os.path.realpath(path)

    def guarded_open(file, *args, **kwargs):  # noqa: ANN001, ANN202
        if isinstance(file, str | bytes | os.PathLike) and os.path.realpath(os.fsdecode(file)) == target:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fsdecode(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", guarded_open)
    monkeypatch.setattr(builtins, "open", guarded_open)
