"""Failure handling of the Mem0 and EverMemOS layers: fatal client errors stop at once, other
failures are recorded per message, tracing failures are not message failures; token accounting."""

from __future__ import annotations

import itertools

import pytest

from membase.clients.embeddings import FakeEmbedder
from membase.clients.fake import FunctionChatModel
from membase.exceptions import (
    FATAL_ERRORS,
    ConfigError,
    ModelRequestError,
    ModelRequestsBlockedError,
    ModelUnreachableError,
)
from membase.layers.evermemos import EverMemOSConfig, EverMemOSLayer
from membase.layers.evermemos.config import (
    BoundaryDetectionConfig,
    MemoryExtractionConfig,
    OnlineRetrieverConfig,
)
from membase.layers.evermemos.fake import EverMemOSFakeBrain, make_evermemos_fake
from membase.layers.evermemos.manager import OnlineMemoryManager
from membase.layers.evermemos.prompts import TASK_TAGS
from membase.types import Message
from smartcomment import comment_graph, comment_session

TALK = [
    ("Caroline", "I went to an LGBTQ support group yesterday.", "2023-05-08T13:56:00"),
    ("Melanie", "That sounds powerful, I am proud of you!", "2023-05-08T13:57:00"),
    ("Caroline", "It was, I felt accepted and I want to study counseling.", "2023-05-08T13:58:00"),
    ("Melanie", "I painted a lake sunrise last year.", "2023-05-25T13:14:00"),
    ("Caroline", "I moved from Sweden four years ago.", "2023-05-25T13:15:00"),
]
FATAL = [ModelUnreachableError("chat endpoint http://127.0.0.1:9/v1 unreachable"),
         ModelRequestsBlockedError("real chat requests are disabled")]


def _messages():
    return [Message(id=f"U:{i}", name=n, content=t, timestamp=ts) for i, (n, t, ts) in enumerate(TALK, 1)]


def test_fatal_errors_tuple():
    assert {ModelUnreachableError, ModelRequestsBlockedError, ConfigError} <= set(FATAL_ERRORS)
    assert ModelRequestError not in FATAL_ERRORS


# -- EverMemOS ----------------------------------------------------------------------------------
def _task(messages) -> str:
    prompt = str(messages[-1]["content"])
    return next(kind for kind, tag in TASK_TAGS.items() if prompt.startswith(tag))


def _failing(kinds, exc):
    """The EverMemOS fake, raising `exc` for the task kinds in `kinds`."""
    brain = EverMemOSFakeBrain()

    def reply(messages, **kwargs):
        if _task(messages) in kinds:
            raise exc
        return brain(messages, **kwargs)

    return FunctionChatModel(reply)


def _evermemos(tmp_path, chat_model=None, **overrides) -> EverMemOSLayer:
    fields = dict(
        user_id="u",
        save_dir=str(tmp_path / "u"),
        llm_config={"provider": "fake", "model": "evermemos-fake"},
        embedding_config={"provider": "fake", "embedding_dims": 32},
    )
    fields.update(overrides)
    ids = itertools.count()
    return EverMemOSLayer(EverMemOSConfig(**fields), chat_model=chat_model, id_factory=lambda: f"{next(ids):024x}")


@pytest.mark.parametrize("exc", FATAL, ids=lambda e: type(e).__name__)
def test_evermemos_boundary_fatal_error_raises_at_the_first_model_call(tmp_path, exc):
    model = _failing({"boundary"}, exc)
    layer = _evermemos(tmp_path, model)
    msgs = _messages()
    layer.add_message(msgs[0])  # one buffered message: no model call yet
    with pytest.raises(type(exc)):
        layer.add_message(msgs[1])
    assert len(model.calls) == 1  # not retried 5 times
    assert layer.failures == []


def test_evermemos_extraction_fatal_error_is_not_retried_or_recorded(tmp_path):
    model = _failing({"episode"}, FATAL[0])
    layer = _evermemos(tmp_path, model, boundary_config={"hard_message_limit": 3, "use_smart_mask": False})
    msgs = _messages()
    with pytest.raises(ModelUnreachableError):
        for m in msgs:
            layer.add_message(m)
    assert [_task(c.messages) for c in model.calls] == ["boundary", "episode"]
    assert layer.failures == []


def test_evermemos_flush_fatal_error_raises(tmp_path):
    layer = _evermemos(tmp_path, _failing({"episode"}, FATAL[0]))
    for m in _messages()[:2]:
        layer.add_message(m)
    with pytest.raises(ModelUnreachableError):
        layer.flush()
    assert layer.failures == [] and len(layer.manager.buffer) == 2


def test_evermemos_non_fatal_request_errors_are_retried_then_recorded(tmp_path):
    model = _failing({"episode"}, ModelRequestError("HTTP 400"))
    layer = _evermemos(tmp_path, model)
    for m in _messages():
        layer.add_message(m)
    assert [f["message_id"] for f in layer.failures] == ["U:4"]
    assert set(layer.failures[0]) == {"message_id", "error"} and "episode" in layer.failures[0]["error"]
    assert [_task(c.messages) for c in model.calls].count("episode") == 5


def test_evermemos_tracing_failure_is_not_a_message_failure(tmp_path):
    layer = _evermemos(tmp_path)

    def broken_tracer(*args, **kwargs):
        raise RuntimeError("tracer bug")

    layer.tracer.record_ingest = broken_tracer
    layer.tracer.record_flush = broken_tracer
    with comment_graph(user_id="u", project_id="EverMemOS"), comment_session(category="memory_construction"):
        for m in _messages():
            layer.add_message(m)
        layer.flush()
    assert layer.failures == []
    assert len(layer.tracing_errors) == len(TALK) + 1 and "tracer bug" in layer.tracing_errors[0]
    assert len(layer.manager.memcells) == 2


def test_evermemos_failed_flush_keeps_the_buffer(tmp_path):
    ids = itertools.count()
    manager = OnlineMemoryManager(
        llm=make_evermemos_fake(broken=["episode"]),
        embedder=FakeEmbedder(32),
        boundary=BoundaryDetectionConfig(),
        extraction=MemoryExtractionConfig(),
        retrieval=OnlineRetrieverConfig(),
        id_factory=lambda: f"{next(ids):024x}",
    )
    for n, t, ts in TALK[:2]:
        manager.add_message(role="user", name=n, content=t, timestamp=ts)
    record = manager.flush()
    assert record.memcell.failure and record.buffer_after_reset is None
    assert [m["content"] for m in manager.buffer] == [TALK[0][1], TALK[1][1]]
    assert manager.memcells == [] and len(manager.index) == 0

    layer = _evermemos(tmp_path, make_evermemos_fake(broken=["episode"]))
    for m in _messages()[:2]:
        layer.add_message(m)
    layer.flush()
    assert [f["message_id"] for f in layer.failures] == ["<flush>"]
    assert len(layer.manager.buffer) == 2


def test_evermemos_token_usage_comes_from_the_chat_model(tmp_path):
    layer = _evermemos(tmp_path)
    for m in _messages():
        layer.add_message(m)
    layer.flush()
    usage = layer.token_usage()
    assert set(usage) == {"llm"}  # the fake embedder keeps no counters
    llm = usage["llm"]
    assert llm["model"] == "evermemos-fake"
    assert llm["requests"] == len(layer.chat_model.model.calls) > 0
    assert llm["input_tokens"] > 0 and llm["output_tokens"] > 0
    assert llm["total_tokens"] == llm["input_tokens"] + llm["output_tokens"]


def test_evermemos_agentic_retrieval_fatal_error_is_raised(tmp_path):
    brain = EverMemOSFakeBrain(sufficiency="never")
    dead = {"on": False}

    def reply(messages, **kwargs):
        if dead["on"]:
            raise ModelUnreachableError("chat endpoint unreachable")
        return brain(messages, **kwargs)

    layer = _evermemos(tmp_path, FunctionChatModel(reply), retrieval_config={"retrieval_mode": "agentic"})
    for m in _messages():
        layer.add_message(m)
    layer.flush()
    assert layer.retrieve("Where did Caroline move from?", k=2)
    dead["on"] = True
    with pytest.raises(ModelUnreachableError):
        layer.retrieve("Where did Caroline move from?", k=2)
