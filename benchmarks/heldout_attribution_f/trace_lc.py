"""Long-Context: one memory unit holding the whole conversation, trimmed to a token window."""

from __future__ import annotations

from typing import Any

from benchmarks.heldout_attribution_f.runtime_env import Hooks
from benchmarks.heldout_attribution_f.textsim import count_tokens
from benchmarks.heldout_attribution_f.trace_utils import Entry, op_of
from smartcomment import comment_mutation, comment_op


class LongContextLayer:
    layer_type = "Long-Context"
    split = "long_context"
    top_k = 10

    def __init__(self, hooks: Hooks, context_window: int = 16000, separator: str = "\n") -> None:
        self.hooks = hooks
        self.context_window = context_window
        self.separator = separator
        self.entries: list[str] = []

    @property
    def config(self) -> dict[str, Any]:
        return {"context_window": self.context_window, "message_separator": self.separator,
                "llm_model": "gpt-4.1-mini"}

    def text(self) -> str:
        return self.separator.join(self.entries)

    def _fit(self, entries: list[str]) -> list[str]:
        while len(entries) > 1 and count_tokens(self.separator.join(entries)) > self.context_window:
            entries = entries[1:]
        return entries

    def add_message(self, message_rv: Any, msg_id: str, content: str, **_: Any) -> None:
        new = self._fit(self.entries + [content])
        new = self.hooks("append", msg_id, new, before=list(self.entries), content=content)
        with comment_mutation(
            target=self, inputs=[message_rv], id_strategy=lambda _l: "memory-unit", encoding_fn=LongContextLayer.text,
            category="memory_entry", comment="The long-context memory: the conversation so far as one text.",
            mutation_name="memory_system.memory_update", mutation_category="update",
            mutation_metadata={"context_window": self.context_window, "message_separator": self.separator,
                               "llm_model_for_tokenizer": "gpt-4.1-mini"},
        ) as mutation:
            self.entries = list(new)
        self.hooks.mark("append", msg_id, op_of(mutation.result))

    def flush(self) -> None:
        return None

    def retrieve(self, query_rv: Any, qa_id: str, question: Any, k: int) -> list[Entry]:
        text = self.text()
        op = comment_op(
            inputs=[query_rv],
            outputs=[(text, {"id_strategy": lambda _t: "memory-unit", "encoding_fn": lambda t: t,
                             "category": "memory_entry"})],
            op_name="memory_system.retrieve", category="retrieval", metadata={"top_k": k},
        )
        self.hooks.mark("retrieve", qa_id, op.op_id)
        return [Entry("memory-unit", text, f"<long_context_memory>\n{text}\n</long_context_memory>")]

    def store_texts(self) -> list[str]:
        return [self.text()]
