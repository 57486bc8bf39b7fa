"""Reading a dataset file once, with one clear error for each way it can be unreadable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from membase.exceptions import DatasetError

__all__ = ["read_json_file", "record_error"]


def read_json_file(path: str | Path, label: str, hint: str) -> Any:
    """Parse the JSON file at `path`.

    Args:
        path: the file.
        label: what the file is, for messages (`"LongMemEval file"`).
        hint: what to pass instead, appended to "not found" messages.

    Raises:
        DatasetError: a folder, a missing or unreadable file, not UTF-8, not JSON.
    """
    path = Path(path)
    where = f"{label} {str(path)!r}"
    if path.is_dir():
        raise DatasetError(f"{where} is a folder; {hint}")
    if not path.is_file():
        raise DatasetError(f"{where} not found; {hint}")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{where} is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise DatasetError(f"{where} cannot be read ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where} is not valid JSON ({exc})") from None


def record_error(path: str | Path, record: str, field: str, problem: str) -> DatasetError:
    """`DatasetError` naming the file, the record and the field: `file 'x': record 3: field 'y': problem`."""
    return DatasetError(f"{str(path)!r}: {record}: field {field!r}: {problem}")
