"""Reading attribution outputs for the report: validation, and one :class:`ReportRecord` per case.

The report accepts what ``run_error_attribution.py`` writes — the whole output object
(``split``, ``results``, ``metrics`` …) — or only its ``results`` list, and several such files at
once (their records are concatenated, each keeping the memory system of its file). Anything else
is refused with one line that names the file and says what was expected.

A record whose attribution failed (``attribution_failure`` set, or no usable
``error_attribution_result``) is kept for the statistics and the list of failures but is never sent
to the model.

A record that the attributor recognised as a *non-memory* error (an ``LLMAsAJudgeError``
candidate: the judge said WRONG to an answer that states the gold; an ``AnnotationError``
candidate: no message supports the gold answer) carries that label as its verdict
(:attr:`ReportRecord.non_memory`); it has no operation, is counted in a row of its own and is
never blamed on a memory operation. The label is read from the record's ``evidence_flow.triage``
(``{"status", "kind", "reason"}``, what ``evidence_flow`` writes and :mod:`toolkits.metrics` counts),
else from its ``evidence_flow.status`` (``llm_judge_error``, ``annotation_error`` or another spelling
of either), or from an ``error_attribution_result.error_type`` of that name (:func:`non_memory_label`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smartcomment.runtime.errors import MemTraceError

__all__ = [
    "AttributionInput",
    "ReportInputError",
    "ReportRecord",
    "NON_MEMORY_ERROR_TYPES",
    "golden_answer_text",
    "load_attribution_inputs",
    "non_memory_label",
    "records_from_json",
]


NON_MEMORY_ERROR_TYPES: tuple[str, ...] = ("LLMAsAJudgeError", "AnnotationError")
"""Verdicts that are not memory errors (MemTraceBench's names); counted apart, never blamed on an op."""


class ReportInputError(MemTraceError, ValueError):
    """The input file is missing, unreadable, or not an attribution output."""


@dataclass(frozen=True, kw_only=True)
class ReportRecord:
    """One case of the input, as the report needs it."""

    index: int
    """0-based position over all input records (all files, in order)."""
    raw: Mapping[str, Any] = field(repr=False)
    """The record as read (annotation keys, ``error_attribution_result``, costs …)."""
    source_file: str
    """The input file the record came from."""
    split: str | None
    """The memory system named by the input file (its ``split``), if any."""
    query_id: str
    query: str
    golden_answer: str
    prediction: str
    source_evidence_ids: tuple[str, ...]
    graph_path: str | None
    error_type: str | None
    """Predicted error type; None when the attribution failed."""
    op_id: str | None
    """Attributed operation id ('' when a type was found but no operation)."""
    reason: str
    failure: str | None
    """Why the attribution failed (None for an attributed case and for a non-memory verdict)."""
    non_memory: str | None = None
    """``LLMAsAJudgeError`` or ``AnnotationError`` when the verdict is a non-memory error (then
    ``error_type`` holds the same label and ``op_id`` is None)."""

    @property
    def attributed(self) -> bool:
        """True when the record blames a memory operation (a usable memory-error attribution)."""
        return self.failure is None and self.non_memory is None

    @property
    def verdict(self) -> str | None:
        """The error type the record ends with: a memory error type, a non-memory label, or None
        when the attribution failed."""
        return self.error_type if self.failure is None else None


@dataclass(frozen=True, kw_only=True)
class AttributionInput:
    """Everything read from the input files."""

    records: tuple[ReportRecord, ...]
    files: tuple[str, ...]
    splits: tuple[str, ...]
    """The distinct ``split`` values named by whole-output files, in first-seen order."""
    strategies: tuple[str, ...]
    """The distinct ``exploration_strategy`` values, in first-seen order."""
    incomplete_files: tuple[str, ...]
    """Files whose output says ``"complete": false`` (an attribution run still going or stopped)."""


def golden_answer_text(golden_answers: Any) -> str:
    """The golden answer as one line: a list is joined with ``", "``, a string is kept whole.

    The reference joined a string character by character (spec §12.14).
    """
    if isinstance(golden_answers, list | tuple):
        return ", ".join(str(a) for a in golden_answers)
    return "" if golden_answers is None else str(golden_answers)


def _describe(data: Any) -> str:
    if isinstance(data, dict):
        keys = ", ".join(sorted(map(str, data))[:8]) or "no keys"
        return f"an object with keys {keys}"
    if isinstance(data, list):
        return f"a list of {len(data)} item(s)"
    names = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
    return f"a JSON {names.get(type(data), type(data).__name__)}"


def _non_memory_name(text: Any) -> str | None:
    """``LLMAsAJudgeError``/``AnnotationError`` for any spelling of either (a status such as
    ``llm_as_a_judge_error_candidate`` or ``annotation_error``), else None."""
    if not isinstance(text, str):
        return None
    key = "".join(ch for ch in text.lower() if ch.isalnum())
    if "judge" in key and "error" in key:
        return "LLMAsAJudgeError"
    if "annotation" in key and "error" in key:
        return "AnnotationError"
    return None


def non_memory_label(record: Mapping[str, Any]) -> str | None:
    """The non-memory verdict of a record (see the module docstring), or None."""
    from toolkits.metrics import non_memory_kind

    kind = non_memory_kind(record)
    if kind:
        return kind
    flow = record.get("evidence_flow")
    if isinstance(flow, Mapping):
        label = _non_memory_name(flow.get("status"))
        if label:
            return label
    prediction = record.get("error_attribution_result")
    if isinstance(prediction, Mapping) and prediction.get("error_type") in NON_MEMORY_ERROR_TYPES:
        return str(prediction["error_type"])
    return None


def _non_memory_reason(record: Mapping[str, Any]) -> str:
    flow = record.get("evidence_flow")
    triage = flow.get("triage") if isinstance(flow, Mapping) else None
    if isinstance(triage, Mapping) and triage.get("reason"):
        return str(triage["reason"])
    prediction = record.get("error_attribution_result")
    if isinstance(prediction, Mapping) and prediction.get("reason"):
        return str(prediction["reason"])
    flow = record.get("evidence_flow")
    if isinstance(flow, Mapping) and flow.get("reason"):
        return str(flow["reason"])
    return str(record.get("attribution_failure") or "")


def _failure_of(record: Mapping[str, Any]) -> str | None:
    failure = record.get("attribution_failure")
    if failure:
        return str(failure)
    prediction = record.get("error_attribution_result")
    if not isinstance(prediction, Mapping):
        return "no error_attribution_result in the record"
    error_type = prediction.get("error_type")
    if not isinstance(error_type, str) or not error_type.strip():
        return str(prediction.get("reason") or "the attribution has no error type")
    return None


_STRING_OR_NULL = ("attribution_failure", "graph_path")
_RESULT_STRING_OR_NULL = ("error_type", "op_id", "reason")


def _check_types(raw: Mapping[str, Any], where: str) -> None:
    """Refuse values of a type ``run_error_attribution.py`` never writes (a wrong file, or hand edits).

    Without this, an ``error_attribution_result`` that is a string would quietly count every case as
    a failed attribution.
    """
    for key in _STRING_OR_NULL:
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise ReportInputError(f"{where}: '{key}' is {_describe(value)}, expected a string or null")
    prediction = raw.get("error_attribution_result")
    if prediction is None:
        return
    if not isinstance(prediction, Mapping):
        raise ReportInputError(
            f"{where}: 'error_attribution_result' is {_describe(prediction)}, expected an object "
            "{\"error_type\": ..., \"op_id\": ..., \"reason\": ...}"
        )
    for key in _RESULT_STRING_OR_NULL:
        value = prediction.get(key)
        if value is not None and not isinstance(value, str):
            raise ReportInputError(
                f"{where}: 'error_attribution_result.{key}' is {_describe(value)}, expected a string or null"
            )


def _to_record(raw: Mapping[str, Any], *, index: int, where: str, split: str | None, source_file: str) -> ReportRecord:
    if "error_attribution_result" not in raw and "attribution_failure" not in raw:
        raise ReportInputError(
            f"{where} has no 'error_attribution_result': the input must be the output of "
            "run_error_attribution.py (or its 'results' list), not a benchmark or annotation file"
        )
    if "query_id" not in raw and "query" not in raw:
        raise ReportInputError(f"{where} has neither 'query_id' nor 'query'")
    _check_types(raw, where)
    failure = _failure_of(raw)
    prediction = raw.get("error_attribution_result")
    prediction = prediction if isinstance(prediction, Mapping) else {}
    evidence = raw.get("source_evidence_ids")
    if isinstance(evidence, str):
        evidence = [evidence]
    elif not isinstance(evidence, list | tuple):
        evidence = []  # missing or malformed: the case is rendered without source evidence
    record_split = raw.get("split") if isinstance(raw.get("split"), str) else None
    graph_path = raw.get("graph_path")
    non_memory = non_memory_label(raw)
    if non_memory is not None:
        failure = None
    return ReportRecord(
        index=index,
        raw=raw,
        source_file=source_file,
        split=record_split or split,
        query_id=str(raw.get("query_id") or ""),
        query=str(raw.get("query") or ""),
        golden_answer=golden_answer_text(raw.get("golden_answers", raw.get("golden_answer"))),
        prediction=str(raw.get("prediction") or ""),
        source_evidence_ids=tuple(str(e) for e in evidence),
        graph_path=str(graph_path) if graph_path else None,
        error_type=non_memory or (None if failure else str(prediction.get("error_type")).strip()),
        op_id=None if failure or non_memory else str(prediction.get("op_id") or "").strip(),
        reason=_non_memory_reason(raw) if non_memory else "" if failure else str(prediction.get("reason") or ""),
        failure=failure,
        non_memory=non_memory,
    )


def records_from_json(
    data: Any, *, source_file: str = "<input>", start_index: int = 0
) -> tuple[list[ReportRecord], dict[str, Any]]:
    """Turn a parsed attribution output (object or ``results`` list) into records.

    Args:
        data: The parsed JSON.
        source_file: Name used in error messages and on each record.
        start_index: Index of the first record (records of several files are numbered on).

    Returns:
        ``(records, header)`` where ``header`` holds the output's top-level fields other than
        ``results`` (empty for a bare list).

    Raises:
        ReportInputError: If ``data`` is not an attribution output.
    """
    header: dict[str, Any] = {}
    if isinstance(data, dict):
        if not isinstance(data.get("results"), list):
            raise ReportInputError(
                f"{source_file!r} is not an attribution output: expected the JSON written by "
                f"run_error_attribution.py (an object with a 'results' list) or its 'results' list, "
                f"got {_describe(data)}"
            )
        header = {k: v for k, v in data.items() if k != "results"}
        results = data["results"]
    elif isinstance(data, list):
        results = data
    else:
        raise ReportInputError(
            f"{source_file!r} is not an attribution output: expected an object with a 'results' list "
            f"or that list, got {_describe(data)}"
        )
    if not results:
        raise ReportInputError(f"{source_file!r} holds no attribution records")
    split = header.get("split") if isinstance(header.get("split"), str) else None
    records: list[ReportRecord] = []
    for offset, raw in enumerate(results):
        where = f"{source_file!r} record {offset}"
        if not isinstance(raw, dict):
            raise ReportInputError(f"{where} is {_describe(raw)}, not an attribution record (an object)")
        records.append(
            _to_record(raw, index=start_index + offset, where=where, split=split, source_file=source_file)
        )
    return records, header


def load_attribution_inputs(paths: Sequence[str | Path]) -> AttributionInput:
    """Read one or more attribution outputs.

    Raises:
        ReportInputError: A file is missing, is not JSON, is not an attribution output, or is
            given twice.
    """
    if not paths:
        raise ReportInputError("no input file given")
    records: list[ReportRecord] = []
    splits: list[str] = []
    strategies: list[str] = []
    incomplete: list[str] = []
    seen: dict[Path, str] = {}
    for path in paths:
        name = str(path)
        key = Path(path).resolve()
        if key in seen:
            raise ReportInputError(
                f"input file {name!r} is given twice (also as {seen[key]!r}); its records would be counted twice"
            )
        seen[key] = name
        try:
            text = Path(path).read_text(encoding="utf-8-sig")  # a byte-order mark is tolerated
        except FileNotFoundError:
            raise ReportInputError(f"input file {name!r} not found") from None
        except UnicodeDecodeError as exc:
            raise ReportInputError(
                f"input file {name!r} is not UTF-8 text (byte {exc.start}: {exc.reason}); expected the JSON "
                "written by run_error_attribution.py"
            ) from None
        except OSError as exc:
            raise ReportInputError(f"input file {name!r} cannot be read: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReportInputError(
                f"{name!r} is not JSON ({exc.msg}, line {exc.lineno}); expected the output of run_error_attribution.py"
            ) from None
        found, header = records_from_json(data, source_file=name, start_index=len(records))
        records.extend(found)
        split = header.get("split")
        if isinstance(split, str) and split not in splits:
            splits.append(split)
        strategy = header.get("exploration_strategy")
        if isinstance(strategy, str) and strategy not in strategies:
            strategies.append(strategy)
        if header.get("complete") is False:
            incomplete.append(name)
    return AttributionInput(
        records=tuple(records),
        files=tuple(str(p) for p in paths),
        splits=tuple(splits),
        strategies=tuple(strategies),
        incomplete_files=tuple(incomplete),
    )

