"""A message buffer that turns a message stream into documents (spec §4.3, MessageBufferMixin).

Eager mode: each message yields the document "kept buffer + message", then the buffer keeps the
last `num_overlap_msgs` messages (None = all) within `max_tokens`. Deferred mode: messages
accumulate; when the next one would overflow `max_tokens`, the buffer is emitted as a document
(without the new message), trimmed to the overlap, and the message is appended.
"""

from __future__ import annotations

from membase.utils.tokens import count_tokens

__all__ = ["MessageBufferMixin"]


class MessageBufferMixin:
    """Adds `_buffer_*` methods; call `_init_buffer` in `__init__`."""

    _buffer: list[str]
    _buffer_tokens: list[int]

    def _init_buffer(
        self,
        num_overlap_msgs: int | None = 0,
        max_tokens: int | None = None,
        model_for_tokenizer: str | None = None,
        deferred: bool = False,
        separator: str = "\n",
    ) -> None:
        if deferred and max_tokens is None:
            raise ValueError("a deferred message buffer needs max_tokens")
        self._buffer = []
        self._buffer_tokens = []
        self._buffer_overlap = num_overlap_msgs
        self._buffer_max_tokens = max_tokens
        self._buffer_model = model_for_tokenizer
        self._buffer_deferred = deferred
        self._buffer_separator = separator

    @property
    def buffer_messages(self) -> list[str]:
        """The buffered message texts (a copy)."""
        return list(self._buffer)

    @property
    def buffer_total_tokens(self) -> int:
        """Token count of the buffered texts (separators not counted)."""
        return sum(self._buffer_tokens)

    @property
    def buffer_text(self) -> str:
        """The buffer joined by the separator."""
        return self._buffer_separator.join(self._buffer)

    def _append(self, text: str) -> None:
        self._buffer.append(text)
        self._buffer_tokens.append(count_tokens(text, self._buffer_model))

    def _trim(self, *, keep_overlap: bool) -> None:
        if keep_overlap and self._buffer_overlap is not None:
            keep = max(self._buffer_overlap, 0)
            drop = len(self._buffer) - keep
            if drop > 0:
                del self._buffer[:drop]
                del self._buffer_tokens[:drop]
        if self._buffer_max_tokens is not None:
            # The newest message always stays, even when it alone exceeds the budget.
            while len(self._buffer) > 1 and sum(self._buffer_tokens) > self._buffer_max_tokens:
                del self._buffer[0]
                del self._buffer_tokens[0]

    def _buffer_and_get_doc(self, message_text: str | None = None) -> str | None:
        """Feed one message text; return the document it completes, if any.

        With no message, return the whole buffer joined (None when empty).
        """
        if message_text is None:
            return self.buffer_text if self._buffer else None
        if not self._buffer_deferred:
            doc = self._buffer_separator.join([*self._buffer, message_text])
            self._append(message_text)
            self._trim(keep_overlap=True)
            return doc
        new_tokens = count_tokens(message_text, self._buffer_model)
        doc = None
        if self._buffer and sum(self._buffer_tokens) + new_tokens > self._buffer_max_tokens:  # type: ignore[operator]
            doc = self.buffer_text
            self._trim(keep_overlap=True)
            if self._buffer_overlap is None:  # "keep all" cannot apply after emitting a document
                self._buffer.clear()
                self._buffer_tokens.clear()
        self._append(message_text)
        return doc

    def _flush_buffer(self) -> str | None:
        """Deferred mode: emit the remaining buffer as a document and empty it (eager: None)."""
        if not self._buffer_deferred or not self._buffer:
            return None
        doc = self.buffer_text
        self._buffer.clear()
        self._buffer_tokens.clear()
        return doc

    def _buffer_state(self) -> dict:
        """JSON-ready snapshot (for persistence and tracing)."""
        return {"buffer_total_tokens": self.buffer_total_tokens, "message_buffer": list(self._buffer)}

    def _restore_buffer(self, messages: list[str]) -> None:
        self._buffer = []
        self._buffer_tokens = []
        for text in messages:
            self._append(text)
