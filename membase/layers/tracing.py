"""Tracing helpers shared by the layers (the conventions of spec §4.6).

Every helper is a no-op when tracing is disabled or no graph is active, so layers run untraced
outside the runners. smartcomment is imported lazily: importing a layer stays cheap.
"""

from __future__ import annotations

import json
from typing import Any

from membase.types import Message

__all__ = [
    "MESSAGE_COMMENT",
    "json_encode",
    "memory_unit_identity",
    "memory_unit_options",
    "message_node_value",
    "query_variable",
    "trace_message",
    "tracing_active",
]

MESSAGE_COMMENT = "A conversational message given to the memory layer."
MEMORY_UNIT_COMMENT = "A unit stored in the memory layer."


def json_encode(value: Any) -> str:
    """The JSON encoding of message and memory-unit nodes (sorted keys, indent 4, not ASCII-escaped)."""
    return json.dumps(value, ensure_ascii=False, indent=4, sort_keys=True)


def tracing_active() -> bool:
    """True when smartcomment is recording and a graph is open."""
    try:
        from smartcomment import current_graph, is_tracing_enabled
    except ImportError:
        return False
    return bool(is_tracing_enabled()) and current_graph() is not None


def memory_unit_identity(value: dict) -> str:
    """Identity `memory-unit-<id>` of a memory-unit dict with an `id` key."""
    if not isinstance(value, dict):
        raise TypeError(f"memory unit must be a dict, got {type(value).__name__}")
    if "id" not in value:
        raise ValueError(f"memory unit dict has no 'id' key: {sorted(value)!r}")
    return f"memory-unit-{value['id']}"


def memory_unit_options(**overrides: Any) -> dict[str, Any]:
    """Value options for a memory-unit dict slot of `comment_op`/`comment_link`."""
    return {
        "id_strategy": memory_unit_identity,
        "encoding_fn": json_encode,
        "decoding_fn": json.loads,
        "category": "memory_entry",
        "comment": MEMORY_UNIT_COMMENT,
        **overrides,
    }


def message_node_value(message: Message, content: str) -> dict[str, Any]:
    """The dict recorded for a message node: `{content, name, role, timestamp}`."""
    return {"content": content, "name": message.name, "role": message.role, "timestamp": message.timestamp}


def trace_message(
    message: Message,
    content: str,
    *,
    variable_name: str | None = None,
    speaker_key: str = "speakers",
    comment: str = MESSAGE_COMMENT,
) -> Any:
    """Record the message node (name = `message.id`, category `message`, no class_name).

    Args:
        message: the message as given to the layer.
        content: the content the layer actually ingests (layer specific, §4.6).
        variable_name: register the node in the current context under this name.
        speaker_key: metadata key for the speaker name (`speakers`; EverMemOS uses `speaker`).
        comment: node comment.

    Returns:
        The `RuntimeVariable`, or None when not tracing.
    """
    if not tracing_active():
        return None
    from smartcomment import comment_variable

    message_id = message.id
    return comment_variable(
        message_node_value(message, content),
        to_runtime=True,
        variable_name=variable_name,
        id_strategy=lambda _value: message_id,
        encoding_fn=json_encode,
        decoding_fn=json.loads,
        category="message",
        comment=comment,
        metadata={**message.metadata, "timestamp": message.timestamp, speaker_key: message.name},
    )


def query_variable() -> Any:
    """The `query` node the search runner registered, or None when not tracing.

    Raises:
        NameError: tracing is on but the runner registered no `query` (a runner bug).
    """
    if not tracing_active():
        return None
    from smartcomment import current_context

    ctx = current_context()
    if ctx is None:
        return None
    return ctx.get_variable("query")
