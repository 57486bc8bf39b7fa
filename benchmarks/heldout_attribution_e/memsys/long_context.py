"""Long-Context: one memory unit holding the whole conversation, a new version per message."""

from __future__ import annotations

from benchmarks.heldout_attribution_e.memsys.common import Entry, Faithful, active_query, record_message
from benchmarks.heldout_attribution_e.memsys.model import Message
from benchmarks.heldout_attribution_e.memsys.text import count_tokens
from smartcomment import comment_mutation, comment_op, current_graph

SEPARATOR = "\n"


class LongContext:
    layer_type = "Long-Context"

    def __init__(self, hooks: Faithful, speakers: tuple[str, str], context_window: int = 128000) -> None:
        self.hooks = hooks
        self.speakers = speakers
        self.context_window = context_window
        self.lines: list[tuple[str, str]] = []

    def buffer_text(self) -> str:
        return SEPARATOR.join(line for _, line in self.lines)

    def add_message(self, msg: Message) -> None:
        node = record_message(msg, "buffer", self.speakers)
        with comment_mutation(
            target=self, inputs=[node], id_strategy=lambda _v: "memory-unit", category="memory_entry",
            encoding_fn=LongContext.buffer_text, comment="The long-context memory: the conversation so far.",
            mutation_name="memory_system.memory_update", mutation_category="update",
            mutation_metadata={"context_window": self.context_window, "message_separator": SEPARATOR,
                               "llm_model_for_tokenizer": "gpt-4.1-mini"},
        ) as update:
            lines = [*self.lines, (msg.id, msg.line())]
            while len(lines) > 1 and count_tokens(SEPARATOR.join(t for _, t in lines)) > self.context_window:
                lines.pop(0)
            self.lines = self.hooks.edit("lc.update", msg.id, lines)
        ops = current_graph().get_operations_by_variable(update.result.full_node_id)
        self.hooks.bind("lc.update", msg.id, ops[0].op_id)

    def flush(self) -> None:
        return None

    def retrieve(self, query: str, k: int) -> list[Entry]:
        query_node = active_query()
        text = self.buffer_text()
        comment_op(
            inputs=[query_node],
            outputs=[(text, {"id_strategy": lambda _v: "memory-unit", "encoding_fn": lambda s: s,
                             "category": "memory_entry"})],
            op_name="memory_system.retrieve", category="retrieval", metadata={"top_k": k},
        )
        return [Entry(text, f"<long_context_memory>\n{text}\n</long_context_memory>", "memory-unit")]

    def store_texts(self) -> list[str]:
        return [self.buffer_text()]
