"""``CCTraceNotebook``: the four tools an agent uses to read a flat operation log (spec §4.3).

Every tool returns one JSON text block and the same payload as metadata. Bad arguments never
raise into the agent loop: they come back as ``{"tool": <name>, "error": "Error: …",
"arguments": {…}}`` so the model can correct itself. ``finish_attribution`` (not a tool)
validates a final answer against the log; the agent applies it on every path.

By default the notebook is the paper's flat-log ablation: the log carries no variable ids and
no graph structure, and the hint shows each starting evidence by its content and creation time
only — the agent finds operation ids by searching the log's blocks. ``identities=True`` (ours,
not the paper's) shows every variable's full node id in the log, and each evidence's id and the
operations whose edges touch it (lineage read from the graph) in the hint.
"""

from __future__ import annotations

import copy
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from obstrace._flatten import flatten_execution_graph
from obstrace._index import TraceIndex, block_preview
from obstrace.exceptions import ObstraceError
from obstrace.prompts import OBS_HINT_ACTIVE, OBS_HINT_START, REASON_REQUIREMENT

__all__ = [
    "ERROR_TYPES",
    "MAX_WINDOW_CHARS",
    "CCTraceNotebook",
    "EvidenceRow",
    "check_attribution",
    "evidence_rows_from_graph",
]

ERROR_TYPES: tuple[str, ...] = ("ExtractionError", "UpdateError", "DeletionError", "RetrievalError", "ResponseError")
MAX_WINDOW_CHARS = 128_000
DEFAULT_WINDOW_CHARS = 32_000
MAX_GREP_MATCHES = 200
MAX_SURROUNDING_CHARS = 2_000
MIN_REASON_CHARS = 40
PREVIEW_COUNT = 8
MAX_HINT_EVIDENCE = 8
MAX_HINT_VALUE_CHARS = 2_000


@dataclass(frozen=True, kw_only=True)
class EvidenceRow:
    """One source-evidence entry shown in the hint."""

    rank: int
    """1-based rank in the evidence list."""
    created_at: str
    value: str
    full_node_id: str | None = None
    """Variable id (shown in the hint only with ``identities=True``)."""
    op_ids: tuple[str, ...] = ()
    """Operations whose edges touch the evidence variable, in execution order (shown only with
    ``identities=True``)."""


def evidence_rows_from_graph(graph: Any, evidence_nodes: Sequence[Any] | None) -> list[EvidenceRow]:
    """Build evidence rows from full node ids (or variable handles) of a graph.

    Unknown ids are skipped with a warning.

    Args:
        graph: The execution graph.
        evidence_nodes: Full node ids or ``RuntimeVariable`` handles, in rank order.

    Returns:
        The rows, ranked from 1.
    """
    rows: list[EvidenceRow] = []
    for item in evidence_nodes or ():
        node_id = item if isinstance(item, str) else item.full_node_id
        try:
            variable = graph.get_variable(node_id)
            ops = graph.get_operations_by_variable(node_id)
        except (KeyError, LookupError):
            warnings.warn(f"source evidence {node_id!r} is not in the graph; skipped", stacklevel=2)
            continue
        raw = getattr(variable, "raw_value", None)
        rows.append(
            EvidenceRow(
                rank=len(rows) + 1,
                created_at=variable.created_at,
                value=raw if raw is not None else variable.value,
                full_node_id=node_id,
                op_ids=tuple(op.op_id for op in ops),
            )
        )
    return rows


def check_attribution(error_type: Any, op_id: Any, reason: Any, has_op: Callable[[str], bool]) -> dict[str, Any]:
    """Validate a final attribution.

    Checks: ``error_type`` is one of the five types; ``op_id`` is non-empty and ``has_op``
    accepts it (surrounding whitespace is ignored); ``reason`` has at least 40 characters once
    trimmed, as it must explain the local fault.

    Args:
        error_type: Claimed error type.
        op_id: Claimed operation id.
        reason: Claimed explanation.
        has_op: Membership test for the operation ids that may be named.

    Returns:
        ``{"error_type", "op_id", "reason"}`` (op id stripped when valid), plus ``"error"`` (an
        ``Error: …`` line) when the answer is invalid.
    """
    result: dict[str, Any] = {"error_type": error_type, "op_id": op_id, "reason": reason}
    if error_type not in ERROR_TYPES:
        result["error"] = f"Error: error_type must be one of {list(ERROR_TYPES)}, got {error_type!r}"
    elif not isinstance(op_id, str) or not op_id.strip():
        result["error"] = "Error: op_id must be a non-empty operation id from the trace"
    elif not has_op(op_id.strip()):
        result["error"] = (
            f"Error: operation {op_id!r} is not in the trace; answer with an op id exactly as the trace shows it"
        )
    elif not isinstance(reason, str) or len(reason.strip()) < MIN_REASON_CHARS:
        result["error"] = (
            f"Error: the reason is too short (at least {MIN_REASON_CHARS} characters); {REASON_REQUIREMENT}"
        )
    else:
        result["op_id"] = op_id.strip()
    return result


class _ArgumentError(ObstraceError):
    """A tool argument is malformed (message already names the argument and the fix)."""


def _int_arg(args: Mapping[str, Any], name: str, default: Any, minimum: int) -> int:
    value = args.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _ArgumentError(f"`{name}` must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise _ArgumentError(f"`{name}` must be >= {minimum}, got {value}")
    return value


def _bool_arg(args: Mapping[str, Any], name: str, default: bool) -> bool:
    value = args.get(name, default)
    if not isinstance(value, bool):
        raise _ArgumentError(f"`{name}` must be true or false, got {value!r}")
    return value


def _window(text: str, offset: int, limit: int) -> tuple[str, str]:
    start = offset - 1
    total = len(text)
    if start >= total:
        return "", f"No content from char {offset}; total chars={total}."
    end = min(start + limit, total)
    status = f"Characters {start + 1}-{end} of {total} returned."
    if end < total:
        status += f" Call again with offset={end + 1}."
    return text[start:end], status


_TOOL_SPECS: dict[str, dict[str, Any]] = {
    "inspect_trace": {
        "description": (
            "Summarise the flattened execution trace: number of operations, number of characters, "
            "and previews (op id, order, character range, time, name, category, comment) of the "
            "first and last 8 operation blocks. Call this first."
        ),
        "schema": {"type": "object", "properties": {}},
    },
    "grep_log": {
        "description": (
            "Search the whole trace for a text and list the matches in log order, each with its "
            "operation id, 1-based character positions in the log and a snippet of context "
            "('...' marks clipped context). Literal and case-insensitive by default."
        ),
        "schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Text (or regular expression) to find; non-empty."},
                "regex": {"type": "boolean", "description": "Treat pattern as a regular expression. Default false."},
                "case_sensitive": {"type": "boolean", "description": "Match case exactly. Default false."},
                "max_matches": {
                    "type": "integer",
                    "description": f"Maximum matches to return, 1-{MAX_GREP_MATCHES}. Default 40.",
                },
                "surrounding_chars": {
                    "type": "integer",
                    "description": f"Context characters on each side of a match, 0-{MAX_SURROUNDING_CHARS}. Default 120.",
                },
            },
            "required": ["pattern"],
        },
    },
    "view_log_window": {
        "description": (
            "Read a window of the whole trace by character position. Offsets are 1-based; the "
            f"status line says how to continue. limit is capped at {MAX_WINDOW_CHARS}."
        ),
        "schema": {
            "type": "object",
            "properties": {
                "offset": {"type": "integer", "description": "1-based first character to return."},
                "limit": {
                    "type": "integer",
                    "description": f"Number of characters (default {DEFAULT_WINDOW_CHARS}, at most {MAX_WINDOW_CHARS}).",
                },
            },
            "required": ["offset"],
        },
    },
    "view_operation": {
        "description": (
            "Read one operation block, chosen by op_id or by op_index (0-based position in the "
            "log; op_id wins when both are given), paginated by 1-based character offset within "
            f"the block. limit is capped at {MAX_WINDOW_CHARS}."
        ),
        "schema": {
            "type": "object",
            "properties": {
                "op_id": {"type": "string", "description": "Operation id exactly as the trace shows it."},
                "op_index": {"type": "integer", "description": "0-based position of the operation in the log."},
                "offset": {"type": "integer", "description": "1-based first character of the block to return. Default 1."},
                "limit": {
                    "type": "integer",
                    "description": f"Number of characters (default {DEFAULT_WINDOW_CHARS}, at most {MAX_WINDOW_CHARS}).",
                },
            },
        },
    },
}


class CCTraceNotebook:
    """A flat operation log, its index, the evidence rows and the agent's tool state.

    Args:
        trace_text: The flattened log.
        evidence_rows: Source-evidence rows shown in the hint (up to 8 are shown).
        grep_timeout_s: Time budget of one ``grep_log`` call.
        max_payload_chars: Cap on the JSON size of a ``grep_log`` answer (matches beyond it are
            dropped and ``truncated`` is set).
        identities: Show each evidence's node id and the operations touching it in the hint
            (ours; off = the paper's ablation, content and time only).
    """

    def __init__(
        self,
        trace_text: str,
        evidence_rows: Sequence[EvidenceRow] = (),
        *,
        grep_timeout_s: float = 2.0,
        max_payload_chars: int = MAX_WINDOW_CHARS,
        identities: bool = False,
    ) -> None:
        self.index = TraceIndex(trace_text)
        self.evidence_rows = list(evidence_rows)
        self.grep_timeout_s = grep_timeout_s
        self.max_payload_chars = max_payload_chars
        self.identities = identities
        self.step = 0

    @classmethod
    def from_graph(
        cls,
        graph: Any,
        source_evidence_nodes: Sequence[Any] | None = None,
        *,
        identities: bool = False,
        **kwargs: Any,
    ) -> CCTraceNotebook:
        """Flatten a whole graph (no token limit) and attach its evidence rows.

        Args:
            graph: The execution graph.
            source_evidence_nodes: Evidence full node ids (or handles), in rank order.
            identities: Ours, not the paper's: variable ids in the log, evidence ids and lineage
                in the hint. Off (default): the paper's identity-free log and content-only hint.
            **kwargs: Passed to the constructor.
        """
        text = flatten_execution_graph(graph, include_variable_ids=identities)
        return cls(text, evidence_rows_from_graph(graph, source_evidence_nodes), identities=identities, **kwargs)

    def fresh(self) -> CCTraceNotebook:
        """A notebook over the same log and evidence with its step counter at 0 (one per case)."""
        clone = copy.copy(self)
        clone.step = 0
        return clone

    @property
    def text(self) -> str:
        """The (stripped) log the tools read."""
        return self.index.text

    # -- tools -----------------------------------------------------------------------------

    def _run(self, name: str, arguments: Mapping[str, Any], body: Callable[[dict[str, Any]], dict[str, Any]]):
        self.step += 1
        args = dict(arguments)
        allowed = set(_TOOL_SPECS[name]["schema"]["properties"])
        unknown = sorted(set(args) - allowed)
        try:
            if unknown:
                raise _ArgumentError(
                    f"unknown argument(s) {unknown}; {name} accepts {sorted(allowed) or 'no arguments'}"
                )
            return body(args)
        except ObstraceError as exc:
            return {"tool": name, "error": f"Error: {exc}", "arguments": args}

    def inspect_trace(self, **arguments: Any) -> dict[str, Any]:
        """Tool: size of the log and previews of its first and last 8 blocks."""

        def body(_: dict[str, Any]) -> dict[str, Any]:
            blocks = self.index.blocks
            return {
                "operation_count": len(blocks),
                "log_char_count": len(self.text),
                "first_ops": [block_preview(b) for b in blocks[:PREVIEW_COUNT]],
                "last_ops": [block_preview(b) for b in blocks[-PREVIEW_COUNT:]],
            }

        return self._run("inspect_trace", arguments, body)

    def grep_log(self, **arguments: Any) -> dict[str, Any]:
        """Tool: search the whole log (see the tool description)."""

        def body(args: dict[str, Any]) -> dict[str, Any]:
            pattern = args.get("pattern")
            if not isinstance(pattern, str) or not pattern:
                raise _ArgumentError(f"`pattern` must be a non-empty string, got {pattern!r}")
            is_regex = _bool_arg(args, "regex", False)
            case_sensitive = _bool_arg(args, "case_sensitive", False)
            max_matches = min(_int_arg(args, "max_matches", 40, 1), MAX_GREP_MATCHES)
            surrounding = min(_int_arg(args, "surrounding_chars", 120, 0), MAX_SURROUNDING_CHARS)
            found = self.index.grep(
                pattern,
                fields=("full",),
                regex=is_regex,
                case_sensitive=case_sensitive,
                max_matches=max_matches,
                surrounding_chars=surrounding,
                timeout_s=self.grep_timeout_s,
            )
            matches: list[dict[str, Any]] = []
            size = 0
            truncated = False
            for match in found:
                item = match.to_dict()
                size += len(json.dumps(item, ensure_ascii=False))
                if size > self.max_payload_chars:
                    truncated = True
                    break
                matches.append(item)
            payload: dict[str, Any] = {
                "pattern": pattern,
                "match_count": len(matches),
                "matched_op_ids": list(dict.fromkeys(m["op_id"] for m in matches)),
                "matches": matches,
            }
            if truncated:
                payload["truncated"] = (
                    f"more matches exist but the answer is capped at {self.max_payload_chars} characters; "
                    "use a narrower pattern or fewer surrounding_chars"
                )
            return payload

        return self._run("grep_log", arguments, body)

    def view_log_window(self, **arguments: Any) -> dict[str, Any]:
        """Tool: a character window of the whole log."""

        def body(args: dict[str, Any]) -> dict[str, Any]:
            if "offset" not in args:
                raise _ArgumentError("`offset` is required (1-based character position)")
            offset = _int_arg(args, "offset", None, 1)
            limit = min(_int_arg(args, "limit", DEFAULT_WINDOW_CHARS, 1), MAX_WINDOW_CHARS)
            content, status = _window(self.text, offset, limit)
            return {"content": content, "status": status}

        return self._run("view_log_window", arguments, body)

    def view_operation(self, **arguments: Any) -> dict[str, Any]:
        """Tool: one operation block by id or 0-based index, paginated."""

        def body(args: dict[str, Any]) -> dict[str, Any]:
            op_id = args.get("op_id")
            op_index = args.get("op_index")
            offset = _int_arg(args, "offset", 1, 1)
            limit = min(_int_arg(args, "limit", DEFAULT_WINDOW_CHARS, 1), MAX_WINDOW_CHARS)
            count = len(self.index)
            if op_id is not None:
                if not isinstance(op_id, str) or not op_id.strip():
                    raise _ArgumentError(f"`op_id` must be a non-empty string, got {op_id!r}")
                block = self.index.get(op_id.strip())
                if block is None:
                    raise _ArgumentError(
                        f"operation {op_id!r} is not in the trace; use an op id from inspect_trace or grep_log"
                    )
            elif op_index is not None:
                if isinstance(op_index, bool) or not isinstance(op_index, int):
                    raise _ArgumentError(f"`op_index` must be an integer, got {op_index!r}")
                if not 0 <= op_index < count:
                    raise _ArgumentError(
                        f"op_index {op_index} is out of range; operation_count={count}, so use 0..{count - 1}"
                    )
                block = self.index.blocks[op_index]
            else:
                raise _ArgumentError("give `op_id` or `op_index` to choose an operation")
            content, status = _window(block.full_text, offset, limit)
            return {**block_preview(block), "content": content, "status": status}

        return self._run("view_operation", arguments, body)

    # -- answer validation and hints ----------------------------------------------------------

    def finish_attribution(self, error_type: Any, op_id: Any, reason: Any) -> dict[str, Any]:
        """Validate a final answer against the log (see ``check_attribution``)."""
        return check_attribution(error_type, op_id, reason, self.index.has_op)

    def hint(self) -> str:
        """The hint shown before the next model call (changes after the first tool call)."""
        parts = [OBS_HINT_START if self.step == 0 else OBS_HINT_ACTIVE]
        if self.evidence_rows:
            parts.append("Source evidence:")
            for row in self.evidence_rows[:MAX_HINT_EVIDENCE]:
                lines = [f"### Source Evidence {row.rank}"]
                if self.identities and row.full_node_id:
                    lines.append(f"full_node_id: {row.full_node_id}")
                lines.append(f"created_at: {row.created_at}")
                if self.identities and row.op_ids:
                    lines.append(f"operations touching it: {', '.join(row.op_ids)}")
                value = row.value
                if len(value) > MAX_HINT_VALUE_CHARS:
                    value = value[:MAX_HINT_VALUE_CHARS] + f"... [{len(row.value) - MAX_HINT_VALUE_CHARS} more characters]"
                lines.append(f"value: {value}")
                parts.append("\n".join(lines))
        return "<system-hint>\n" + "\n\n".join(parts) + "\n</system-hint>"

    # -- agentscope tools -------------------------------------------------------------------

    def tools(self) -> list[Any]:
        """The four tools as agentscope ``FunctionTool`` objects (permission: always allowed)."""
        from agentscope.message import TextBlock, ToolResultState
        from agentscope.permission import PermissionBehavior, PermissionDecision
        from agentscope.tool import FunctionTool, ToolChunk

        allow = PermissionDecision(behavior=PermissionBehavior.ALLOW, message="read-only trace tool")

        def wrap(name: str, method: Callable[..., dict[str, Any]]) -> Callable[..., ToolChunk]:
            def call(**arguments: Any) -> ToolChunk:
                payload = method(**arguments)
                state = ToolResultState.ERROR if "error" in payload else ToolResultState.SUCCESS
                return ToolChunk(
                    content=[TextBlock(text=json.dumps(payload, ensure_ascii=False))],
                    state=state,
                    metadata=payload,
                )

            call.__name__ = name
            return call

        return [
            FunctionTool(
                wrap(name, getattr(self, name)),
                name=name,
                description=spec["description"],
                input_schema=spec["schema"],
                is_read_only=True,
                is_concurrency_safe=False,
                permission=allow,
            )
            for name, spec in _TOOL_SPECS.items()
        ]

