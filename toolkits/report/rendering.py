"""Case rendering for the report model: one text chunk per attributed case (spec §8.1).

Each chunk shows the attribution (type, op id, reason, the ``evidence_flow`` trail in one line when
the record has one), the question, golden answer and wrong
prediction, the source-evidence texts found in the graph, and the XML of the attributed
operation's subgraph. The XML is bounded to ``max_op_xml_tokens`` tokens (tiktoken
``o200k_base``, or four UTF-8 bytes per token when the encoding cannot be loaded offline) by
keeping its **last** tokens, where the operation's outputs are.

All cases are rendered before any model call; a case whose graph cannot be loaded is returned as
*unrenderable* with the reason, and the other cases go on.
"""

from __future__ import annotations

import functools
import json
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .funnel import find_trail, trail_summary
from .graphs import GraphStore
from .inputs import ReportRecord

__all__ = ["RenderedCase", "Unrenderable", "keep_last_tokens", "number_case", "render_case", "render_cases"]

ENCODING_NAME = "o200k_base"


@dataclass(frozen=True, kw_only=True)
class RenderedCase:
    """One case ready for a model batch."""

    index: int
    """Index of the record in the input."""
    query_id: str
    text: str
    """The chunk (its ``#### Failed Case`` heading is numbered at batch time)."""
    xml_truncated: bool


@dataclass(frozen=True, kw_only=True)
class Unrenderable:
    """A case that cannot be shown to the model, and why."""

    index: int
    query_id: str
    graph_path: str | None
    reason: str


@functools.cache
def _encoding() -> Any | None:
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception:  # noqa: BLE001 - offline without the cached BPE file: fall back to the estimate
        return None


def keep_last_tokens(text: str, limit: int) -> tuple[str, bool]:
    """Keep at most the last ``limit`` tokens of ``text``.

    Returns:
        ``(text, truncated)``.
    """
    encoding = _encoding()
    if encoding is None:
        data = text.encode("utf-8")
        if len(data) <= 4 * limit:
            return text, False
        return data[-4 * limit :].decode("utf-8", errors="ignore"), True
    tokens = encoding.encode(text, disallowed_special=())
    if len(tokens) <= limit:
        return text, False
    return encoding.decode(tokens[-limit:]), True


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return str(value)


def _evidence_texts(graph: Any, ids: Sequence[str], query_id: str) -> list[str]:
    texts = []
    for node_id in ids:
        try:
            texts.append(_value_text(graph.get_variable(node_id).value))
        except KeyError:
            warnings.warn(
                f"source evidence {node_id!r} of {query_id!r} is not in its graph; left out of the report prompt",
                stacklevel=3,
            )
    return texts


def render_case(record: ReportRecord, graph: Any, *, max_op_xml_tokens: int) -> RenderedCase:
    """Render one attributed case against its loaded graph."""
    op_id = record.op_id or ""
    xml = graph.filter_by_operation(op_id).to_xml() if op_id else ""
    truncated = False
    if not xml or xml.strip() == "<graph />":
        warnings.warn(
            f"attributed operation {op_id!r} of {record.query_id!r} is not in its graph; the case is shown without it",
            stacklevel=2,
        )
        xml = (
            f"(Operation {op_id!r} does not exist in the execution graph, so this attribution is invalid; "
            "judge the case from its question, answers and evidence only.)"
        )
    else:
        xml, truncated = keep_last_tokens(xml, max_op_xml_tokens)
        if truncated:
            xml = f"(The beginning of this XML was cut to its last {max_op_xml_tokens} tokens.)\n{xml}"
    evidence = _evidence_texts(graph, record.source_evidence_ids, record.query_id)
    if evidence:
        evidence_block = "\n\n".join(f"Source Evidence {i}:\n{text}" for i, text in enumerate(evidence, start=1))
    else:
        evidence_block = "(No source evidence was found for this case.)"
    trail = trail_summary(find_trail(record.raw), limit=12)
    text = "\n".join(
        [
            f"Error type: {record.error_type}",
            f"Attributed operation id: {op_id or '(none)'}",
            f"Error reason: {record.reason}",
            *([f"Evidence-flow trail (+ still present, - lost): {trail}"] if trail else []),
            "",
            f"Question:\n{record.query}",
            f"Golden answer:\n{record.golden_answer}",
            f"Model prediction:\n{record.prediction}",
            f"Source evidence:\n{evidence_block}",
            "Subgraph of the attributed operation (XML):",
            xml,
        ]
    )
    return RenderedCase(index=record.index, query_id=record.query_id, text=text, xml_truncated=truncated)


def render_cases(
    records: Sequence[ReportRecord], graphs: GraphStore, *, max_op_xml_tokens: int
) -> tuple[list[RenderedCase], list[Unrenderable]]:
    """Render every attributed record; failed attributions are skipped (they are listed elsewhere).

    Returns:
        ``(rendered, unrenderable)`` in input order.
    """
    rendered: list[RenderedCase] = []
    unrenderable: list[Unrenderable] = []
    for record in graphs.by_graph(r for r in records if r.attributed):  # graph by graph, each file read once
        graph = graphs.graph_for(record)
        if graph is None:
            unrenderable.append(
                Unrenderable(
                    index=record.index,
                    query_id=record.query_id,
                    graph_path=record.graph_path,
                    reason=graphs.error_for(record) or "graph unavailable",
                )
            )
            continue
        rendered.append(render_case(record, graph, max_op_xml_tokens=max_op_xml_tokens))
    rendered.sort(key=lambda case: case.index)
    unrenderable.sort(key=lambda case: case.index)
    return rendered, unrenderable


def number_case(case: RenderedCase, position: int) -> str:
    """The chunk with its ``#### Failed Case <position>`` heading (1-based over all sent cases)."""
    return f"#### Failed Case {position}\n{case.text}"
