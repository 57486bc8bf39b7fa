"""Long-Context layer: the memory is the conversation itself, cut to a context window (spec §4.4).

No LLM or embedding calls. One memory node `memory-unit` gets a new version per message (v1 is
the empty buffer); retrieval returns the whole buffer as a single entry.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from membase.layers.base import MemBaseConfig, MemBaseLayer
from membase.layers.buffer import MessageBufferMixin
from membase.layers.parameters import ParameterTracer
from membase.layers.tracing import query_variable, trace_message, tracing_active
from membase.types import MemoryEntry, Message
from membase.utils.io import atomic_write_json

__all__ = ["LongContextConfig", "LongContextLayer", "format_message"]

MEMORY_UNIT = "memory-unit"
STATE_FILENAME = "long_context_memory.json"


def format_message(message: Message) -> str:
    """The text Long-Context and NaiveRAG store for one message."""
    return (
        f"Speaker {message.name} (role: {message.role}) says: {message.content}\n"
        f"Timestamp: {message.timestamp}"
    )


class LongContextConfig(MemBaseConfig):
    """Config of the Long-Context layer."""

    message_separator: str = "\n"
    context_window: int = Field(128000, ge=1, strict=True)
    """Token budget of the buffer; the oldest messages are dropped beyond it."""
    llm_model: str = "gpt-4.1-mini"
    """Only names the tokenizer (recorded in traces)."""


class LongContextLayer(MessageBufferMixin, MemBaseLayer):
    """Keeps the latest `context_window` tokens of the conversation."""

    layer_type = "Long-Context"
    config_cls = LongContextConfig
    config: LongContextConfig

    def __init__(self, config: LongContextConfig) -> None:
        super().__init__(config)
        self._init_buffer(
            num_overlap_msgs=None,
            max_tokens=config.context_window,
            model_for_tokenizer=config.llm_model,
            deferred=False,
            separator=config.message_separator,
        )
        self._parameters = ParameterTracer(self.layer_type)

    def add_message(self, message: Message, **kwargs: Any) -> None:
        """Append one message to the buffer (traced as a mutation of `memory-unit`)."""
        text = format_message(message)
        if not tracing_active():
            self._buffer_and_get_doc(text)
            return
        from smartcomment import comment_mutation

        message_rv = trace_message(message, text)
        context_window = self._parameters.handles({"context_window": self.config.context_window})
        with comment_mutation(
            target=self,
            inputs=[message_rv, *context_window],
            id_strategy=lambda _layer: MEMORY_UNIT,
            encoding_fn=lambda layer: layer.buffer_text,
            category="memory_entry",
            comment="The whole conversation kept in the context window.",
            mutation_name="memory_system.memory_update",
            mutation_comment="The new message is appended to the long-context memory.",
            mutation_category="update",
            mutation_metadata={
                "context_window": self.config.context_window,
                "message_separator": self.config.message_separator,
                "llm_model_for_tokenizer": self.config.llm_model,
            },
        ):
            self._buffer_and_get_doc(text)

    def retrieve(self, query: str, k: int = 10, **kwargs: Any) -> list[MemoryEntry]:
        """Return the whole buffer as one entry (`k` is ignored)."""
        text = self.buffer_text
        query_rv = query_variable()
        if query_rv is not None:
            from smartcomment import comment_op

            comment_op(
                inputs=[query_rv],
                outputs=[(text, {"id_strategy": lambda _text: MEMORY_UNIT, "encoding_fn": lambda t: t,
                                 "category": "memory_entry"})],
                op_name="memory_system.retrieve",
                comment="The query reads the whole long-context memory.",
                category="retrieval",
                metadata={"top_k": k},
            )
        return [
            MemoryEntry(
                content=text,
                formatted_content=f"<long_context_memory>\n{text}\n</long_context_memory>",
                metadata={"trace_id": MEMORY_UNIT},
            )
        ]

    def delete(self, memory_id: str) -> bool:
        """Long-Context has no addressable units; always False."""
        return False

    def update(self, memory_id: str, **kwargs: Any) -> bool:
        """Long-Context has no addressable units; always False."""
        return False

    def save_memory(self) -> None:
        """Write the config and the buffered texts under `save_dir`."""
        self._write_config_file()
        atomic_write_json(self.save_path / STATE_FILENAME, {"message_buffer": self.buffer_messages})

    def load_memory(self, user_id: str | None = None) -> bool:
        """Restore the buffer saved by `save_memory`; False when nothing is saved."""
        if not self._check_config_file(user_id):
            return False
        path = self.save_path / STATE_FILENAME
        if not path.is_file():
            return False
        self._restore_buffer(json.loads(path.read_text(encoding="utf-8"))["message_buffer"])
        return True
