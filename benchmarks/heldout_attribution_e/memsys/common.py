"""What every simulated layer shares: the hook protocol, message nodes and retrieved entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchmarks.heldout_attribution_e.memsys.model import Message
from benchmarks.heldout_attribution_e.memsys.text import dumps
from smartcomment import comment_variable, current_context

LLM_MODEL = "gpt-4.1-mini"
EMBEDDING_MODEL = "bag-of-words-cosine"
MEM0_SUFFIX = "\nBelow is this message's metadata:\nSpeaker Name: {name}\nSpeaker Role: {role}\n"


class Faithful:
    """The hooks of a healthy system: every decision point returns what the system computed.

    Layers call ``edit(site, key, value)`` where a model or a store produces a value, and
    ``bind(site, key, op_id)`` once the operation that recorded it exists.
    """

    def edit(self, site: str, key: str, value: Any) -> Any:
        return value

    def bind(self, site: str, key: str, op_id: str) -> None:
        return None


@dataclass(frozen=True)
class Entry:
    """One retrieved memory, as the answering step receives it."""

    content: str
    formatted: str | None
    trace_id: str


def record_message(msg: Message, style: str, speakers: tuple[str, str], variable_name: str | None = None) -> Any:
    """The message node of spec-tracer §4.6; ``style`` is ``buffer``, ``mem0`` or ``evermemos``."""
    if style == "buffer":
        content = f"Speaker {msg.name} (role: {msg.role}) says: {msg.content}\nTimestamp: {msg.timestamp}"
    elif style == "mem0":
        content = msg.content + MEM0_SUFFIX.format(name=msg.name, role=msg.role)
    else:
        content = msg.content
    value = {"content": content, "name": msg.name, "role": msg.role, "timestamp": msg.timestamp}
    metadata: dict[str, Any] = {"speaker_tag": msg.speaker_tag, "dia_id": msg.dia_id, "timestamp": msg.timestamp}
    if style == "evermemos":
        metadata["speaker"] = msg.name
    else:
        metadata["speakers"] = list(speakers)
    return comment_variable(
        value, to_runtime=True, variable_name=variable_name, id_strategy=lambda _v: msg.id, encoding_fn=dumps,
        category="message", comment="A message of the conversation, as the memory system received it.",
        metadata=metadata,
    )


def active_query() -> Any:
    """The query node the search runner registered for this retrieval."""
    return current_context().get_variable("query")
