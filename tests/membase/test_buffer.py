from __future__ import annotations

import pytest

from membase.layers.buffer import MessageBufferMixin


class Buf(MessageBufferMixin):
    def __init__(self, **kw):
        self._init_buffer(**kw)


def test_eager_buffer_keeps_overlap():
    buf = Buf(num_overlap_msgs=1)
    assert buf._buffer_and_get_doc("a b") == "a b"
    assert buf._buffer_and_get_doc("c") == "a b\nc"
    assert buf._buffer_and_get_doc("d") == "c\nd"
    assert buf._flush_buffer() is None  # eager mode has nothing pending


def test_eager_unlimited_overlap_drops_oldest_beyond_max_tokens():
    buf = Buf(num_overlap_msgs=None, max_tokens=4)
    for text in ["one two", "three", "four five"]:
        buf._buffer_and_get_doc(text)
    assert buf.buffer_messages == ["three", "four five"]
    assert buf.buffer_total_tokens == 3
    buf._buffer_and_get_doc("six seven eight nine ten")
    assert buf.buffer_messages == ["six seven eight nine ten"]  # the newest message is never dropped


def test_deferred_buffer_emits_when_full_and_flushes_rest():
    buf = Buf(max_tokens=3, deferred=True)
    assert buf._buffer_and_get_doc("a b") is None
    assert buf._buffer_and_get_doc("c") is None
    assert buf._buffer_and_get_doc("d") == "a b\nc"
    assert buf.buffer_messages == ["d"]
    assert buf._flush_buffer() == "d"
    assert buf.buffer_messages == []
    with pytest.raises(ValueError, match="max_tokens"):
        Buf(deferred=True)
